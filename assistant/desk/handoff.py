"""A visitor asks to talk to an engineer: store the lead with the conversation, then notify the team."""

from __future__ import annotations

from typing import Any

from assistant.desk.notify import notify_lead
from assistant.desk.store import DeskStore, LeadForm, LeadRecord


def submit_lead(
    store: DeskStore,
    settings: Any,
    form: LeadForm,
    language: str,
    transcript: list[dict[str, str]],
    calculations: list[dict[str, Any]],
) -> LeadRecord:
    """Validate and store the lead (InvalidLeadError names a bad field), then send the notifications."""
    lead_id = store.add_lead(form, language=language, transcript=transcript, calculations=calculations)
    lead = store.lead(lead_id)
    assert lead is not None  # just written in its own committed transaction
    if notify_lead(settings, lead):
        store.mark_notified(lead_id)
        lead = store.lead(lead_id) or lead
    return lead
