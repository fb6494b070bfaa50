""" "Talk to an engineer": the form under the chat and the `handoff` API endpoint.

Offered (shown) after the first answer; opened by itself when nothing fit or when the visitor asks
for a person. The lead is stored with the conversation's transcript, its calculations and the
language, then the sales team is notified (assistant/desk/notify.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from assistant.desk.errors import DeskUnavailableError, InvalidLeadError
from assistant.desk.handoff import notify_team
from assistant.desk.store import DeskStore, LeadForm
from assistant.sales import plain
from assistant.settings import Settings
from assistant.ui.desk_texts import desk_text, label
from assistant.ui.feedback import message_text
from assistant.ui.session import VisitorSession
from assistant.ui.texts import Lang

log = logging.getLogger(__name__)


def transcript_from_history(history: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The visitor's questions and the final answers (the collapsible step messages left out)."""
    return [
        {"role": str(message.get("role")), "content": message_text(message.get("content"))}
        for message in history
        if message.get("role") in ("user", "assistant") and not (message.get("metadata") or {}).get("title")
    ]


def transcript_from_session(session: VisitorSession) -> list[dict[str, str]]:
    """For API callers, whose conversation lives only in the session's short history."""
    if session.conversation is None:
        return []
    return [{"role": turn.role, "content": turn.text} for turn in session.conversation.history]


def calculations_of(session: VisitorSession) -> list[dict[str, Any]]:
    return [session.last_result.model_dump(mode="json")] if session.last_result is not None else []


@dataclass(frozen=True)
class HandoffResult:
    stored: bool
    message: str
    lead_id: int | None = None

    def public_json(self) -> dict[str, Any]:
        return {"stored": self.stored, "message": self.message, "lead_id": self.lead_id}


def lead_form(texts: Sequence[str | None], consent: bool | None) -> LeadForm:
    """The name, e-mail, company and message boxes and the consent box as a LeadForm (an API caller
    may send None for a box left empty)."""
    name, email, company, message = (value or "" for value in texts)
    return LeadForm(name=name, email=email, company=company, message=message, consent=bool(consent))


def hand_off(
    desk: DeskStore | None,
    settings: Settings,
    form: LeadForm,
    lang: Lang,
    transcript: list[dict[str, str]],
    calculations: list[dict[str, Any]],
) -> HandoffResult:
    """Store (InvalidLeadError names a bad field) and notify; every failure comes back as one line
    in the visitor's language."""
    if desk is None:
        return HandoffResult(False, desk_text("desk_unavailable", lang))
    try:
        lead_id = desk.add_lead(form, language=lang, transcript=transcript, calculations=calculations)
        lead = notify_team(desk, settings, lead_id)
    except InvalidLeadError as exc:
        return HandoffResult(
            False, desk_text("lead_invalid", lang, reason=plain(lead_reason(exc, lang), 300))
        )
    except DeskUnavailableError as exc:
        log.warning("handoff: %s", exc)
        return HandoffResult(False, desk_text("desk_unavailable", lang))
    return HandoffResult(
        True, desk_text("lead_stored", lang, name=plain(lead.name), email=plain(lead.email)), lead.id
    )


def offer(history: list[dict[str, Any]], session: VisitorSession, lang: Lang) -> tuple[bool, bool, str]:
    """(shown, opened, line): shown after the first answer, opened when the last reply offers it
    (`Reply.handoff`: nothing fit, a person was asked for, or the LLM agent offered it)."""
    answered = any(message.get("role") == "assistant" for message in history)
    if not answered:
        return False, False, ""
    if session.handoff is None:
        return True, False, desk_text("handoff_offer", lang)
    key = "handoff_offer_nothing_fit" if session.handoff.why == "nothing_fit" else "handoff_offer"
    return True, True, desk_text(key, lang)


@dataclass(frozen=True)
class HandoffWidgets:
    box: Any
    line: Any


def build_handoff(
    desk: DeskStore | None, settings: Settings, chatbot: Any, session: Any, browser_lang: Any
) -> HandoffWidgets:
    """The form (hidden until the first answer) and its submit event."""
    with gr.Accordion(label("Talk to an engineer"), open=False, visible=False, elem_id="handoff") as box:
        line = gr.Markdown(elem_id="handoff-offer")
        gr.Markdown(label("Leave your details and an engineer will contact you about this conversation."))
        with gr.Row():
            name = gr.Textbox(label=label("Name"), max_length=200, elem_id="handoff-name")
            email = gr.Textbox(label=label("E-mail"), max_length=320, elem_id="handoff-email")
            company = gr.Textbox(label=label("Company"), max_length=200, elem_id="handoff-company")
        message = gr.Textbox(label=label("Message"), lines=2, max_length=4000, elem_id="handoff-message")
        consent = gr.Checkbox(
            label=label(
                "I agree that my details and this conversation are stored so an engineer can contact me."
            ),
            elem_id="handoff-consent",
        )
        send = gr.Button(label("Send to an engineer"), variant="primary", elem_id="handoff-send")
        status = gr.Markdown(elem_id="handoff-status")

    def submit(
        name: str,
        email: str,
        company: str,
        message: str,
        consent: bool,
        history: list[dict[str, Any]],
        state: VisitorSession,
        request: gr.Request,
    ) -> str:
        lang = state.language or browser_lang(request)
        form = lead_form((name, email, company, message), consent)
        result = hand_off(
            desk, settings, form, lang, transcript_from_history(history or []), calculations_of(state)
        )
        return result.message

    send.click(
        submit,
        inputs=[name, email, company, message, consent, chatbot, session],
        outputs=[status],
        api_visibility="private",
    )
    return HandoffWidgets(box, line)


def under_the_chat(
    desk: DeskStore | None, settings: Settings, chatbot: Any, session: Any, browser_lang: Any
) -> dict[str, Any]:
    """The form below the chat (`build_chat_panel`'s `after_turn`): lays it out and gives the
    event, run after each answer, that offers it."""
    engineer = build_handoff(desk, settings, chatbot, session, browser_lang)

    def offer_engineer(
        history: list[dict[str, Any]], state: VisitorSession, request: gr.Request
    ) -> tuple[Any, Any]:
        shown, opened, line = offer(history or [], state, browser_lang(request))
        return gr.Accordion(visible=shown, open=opened), line

    return {
        "fn": offer_engineer,
        "inputs": [chatbot, session],
        "outputs": [engineer.box, engineer.line],
        "queue": False,
        "api_visibility": "private",
    }


def register_handoff_api(desk: DeskStore | None, settings: Settings, session: Any, browser_lang: Any) -> None:
    """`api_name="handoff"`: name, email, company, message, consent; attaches this visitor's conversation."""
    fields = [gr.Textbox(visible=False) for _ in range(4)]
    consent = gr.Checkbox(visible=False)
    result = gr.JSON(visible=False)
    trigger = gr.Button(visible=False)

    def handoff_api(
        name: str,
        email: str,
        company: str,
        message: str,
        consent: bool,
        state: VisitorSession,
        request: gr.Request,
    ) -> dict[str, Any]:
        lang = state.language or browser_lang(request)
        form = lead_form((name, email, company, message), consent)
        return hand_off(
            desk, settings, form, lang, transcript_from_session(state), calculations_of(state)
        ).public_json()

    trigger.click(
        handoff_api,
        inputs=[*fields, consent, session],
        outputs=[result],
        api_name="handoff",
        api_description="Ask for an engineer: name, email, company, message, consent; stores this visitor's conversation.",
    )


def lead_reason(exc: InvalidLeadError, lang: Lang) -> str:
    """Why the form was refused, in the visitor's language where the error has a code."""
    try:
        return desk_text(f"lead_error_{exc.code}", lang, **exc.values) if exc.code else str(exc)
    except KeyError:  # a code without a sentence in data/desk.yaml
        return str(exc)
