"""Tell the sales team about a new lead: a JSON POST to a webhook and/or an e-mail over SMTP.

Both are optional (settings `notify_webhook_url`, `smtp_host` + `notify_email_from/to`). A failed
notification is logged and reported as False; the lead is stored either way.
"""

from __future__ import annotations

import logging
import smtplib
from email.message import EmailMessage
from typing import Any

from assistant.desk.store import LeadRecord

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_S = 5.0


def lead_payload(lead: LeadRecord) -> dict[str, Any]:
    """What the team gets: who, what they asked, and the conversation's sizing (no IP, no cookies)."""
    return {"event": "lead", **lead.public_json()}


def notify_lead(settings: Any, lead: LeadRecord) -> bool:
    """Send every configured notification; True when at least one was configured and all went out."""
    sent: list[bool] = []
    if settings.notify_webhook_url:
        sent.append(_post_webhook(settings.notify_webhook_url, lead))
    if settings.smtp_host and settings.notify_email_to and settings.notify_email_from:
        sent.append(_send_email(settings, lead))
    return bool(sent) and all(sent)


def _post_webhook(url: str, lead: LeadRecord) -> bool:
    import httpx

    try:
        response = httpx.post(url, json=lead_payload(lead), timeout=WEBHOOK_TIMEOUT_S)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        log.warning("lead webhook failed: %s", exc)
        return False
    return True


def _send_email(settings: Any, lead: LeadRecord) -> bool:
    turns = "\n".join(f"{turn.get('role')}: {turn.get('content')}" for turn in lead.transcript)
    try:
        message = EmailMessage()
        message["Subject"] = f"New lead: {lead.name} ({lead.company or lead.email})"
        message["From"] = settings.notify_email_from
        message["To"] = settings.notify_email_to
        message["Reply-To"] = lead.email
        message.set_content(
            f"{lead.name} <{lead.email}>, {lead.company}\nLanguage: {lead.language}\n\n{lead.message}\n\n"
            f"Conversation:\n{turns}\n"
        )
        with smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=WEBHOOK_TIMEOUT_S) as smtp:
            smtp.send_message(message)
    except (OSError, ValueError, smtplib.SMTPException) as exc:  # ValueError: a header the policy refuses
        log.warning("lead e-mail failed: %s", exc)
        return False
    return True
