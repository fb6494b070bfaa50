"""The sales-draft panel beside the chat, and the `draft` API endpoint.

The salesperson pastes the customer's e-mail (understood as the chat understands a message), or
drafts from the conversation, or from the calculator when they pick that source. Nothing to draft
says so. The preview, the Markdown to copy and the downloaded file are the same neutralised text.
"""

from __future__ import annotations

import logging
import re
import tempfile
from pathlib import Path
from typing import Any, Literal

import gradio as gr

from assistant.sales import DraftOutcome, Signature, draft_from_message, draft_from_result, draft_from_state
from assistant.settings import Settings
from assistant.ui.desk_texts import label
from assistant.ui.session import VisitorSession
from assistant.ui.texts import Lang
from tools import SizingResult
from tools.errors import SizingError

log = logging.getLogger(__name__)

Source = Literal["conversation", "calculator"]


def make_draft(
    settings: Settings,
    pasted: str,
    source: Source,
    session: VisitorSession,
    calculator_memory: tuple[SizingResult, Lang] | None,
    customer_name: str | None,
    browser_lang: Lang,
) -> DraftOutcome:
    """The draft for the panel or the API. A bad price list is logged and the draft goes without prices."""
    from assistant.quote import price_list_from_settings

    try:
        price_list = price_list_from_settings(settings)
    except SizingError as exc:
        log.error("price list not used: %s", exc)
        price_list = None
    common: dict[str, Any] = {
        "customer_name": (customer_name or "").strip() or None,
        "signature": Signature.from_settings(settings),
        "price_list": price_list,
        "utilization": settings.quote_utilization,
    }
    if (pasted or "").strip():
        return draft_from_message(pasted, session.language or browser_lang, **common)
    if source == "calculator":
        result, lang = calculator_memory or (None, None)
        return draft_from_result(result, lang or browser_lang, **common)
    return draft_from_state(session.conversation, session.language or browser_lang, **common)


def file_name(outcome: DraftOutcome) -> str:
    name = outcome.subject.result.model.name if outcome.subject else "reply"
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "model"
    return f"sizing-reply-{slug}.md"


def build_draft_panel(settings: Settings, session: Any, calculator_memory: Any, browser_lang: Any) -> None:
    """The panel's widgets and its event (call inside the chat tab's side column)."""
    folder = Path(tempfile.mkdtemp(prefix="sizing-drafts-"))
    gr.Markdown("### " + label("Sales draft"))
    gr.Markdown(
        label(
            "Paste the customer's e-mail to draft the reply to it; leave it empty to draft from the "
            "conversation or the calculator."
        )
    )
    customer = gr.Textbox(label=label("Customer name (optional)"), max_length=80)
    pasted = gr.Textbox(
        label=label("Customer's e-mail"), lines=4, max_lines=12, max_length=8000, elem_id="sales-paste"
    )
    source = gr.Radio(
        choices=[(label("Conversation"), "conversation"), (label("Calculator"), "calculator")],
        value="conversation",
        label=label("Draft from"),
        elem_id="sales-source",
    )
    button = gr.Button(label("Draft the customer reply"), variant="primary")
    note = gr.Markdown(elem_id="sales-draft-note")
    preview = gr.Markdown(visible=False, elem_id="sales-draft-preview", container=True, buttons=["copy"])
    with gr.Accordion(label("Markdown source"), open=False, visible=False) as source_box:
        text = gr.Textbox(
            label=label("Reply (Markdown, ready to copy)"),
            lines=10,
            max_lines=30,
            buttons=["copy"],
            elem_id="sales-draft-text",
        )
    download = gr.DownloadButton(label("Download .md"), visible=False, elem_id="sales-draft-download")

    def on_draft(
        state: VisitorSession, memory: Any, name: str, message: str, picked: Source, request: gr.Request
    ) -> tuple[Any, ...]:
        lang = browser_lang(request)
        try:
            outcome = make_draft(settings, message, picked, state, memory, name, lang)
        except SizingError as exc:
            return (
                f"⚠ {exc}",
                gr.Markdown(visible=False),
                gr.Accordion(visible=False),
                "",
                gr.DownloadButton(visible=False),
            )
        if not outcome.drafted:
            hidden = (
                gr.Markdown(visible=False),
                gr.Accordion(visible=False),
                "",
                gr.DownloadButton(visible=False),
            )
            return (f"⚠ {outcome.markdown}", *hidden)
        path = Path(tempfile.mkdtemp(dir=folder)) / file_name(outcome)
        path.write_text(outcome.markdown, encoding="utf-8")
        return (
            f"> {outcome.note_for_salesperson}" if outcome.note_for_salesperson else "",
            gr.Markdown(outcome.markdown, visible=True),
            gr.Accordion(visible=True),
            outcome.markdown,
            gr.DownloadButton(value=str(path), visible=True),
        )

    button.click(
        on_draft,
        inputs=[session, calculator_memory, customer, pasted, source],
        outputs=[note, preview, source_box, text, download],
        api_visibility="private",
    )


def register_draft_api(settings: Settings, session: Any, browser_lang: Any) -> None:
    """`api_name="draft"`: a pasted message (empty: this visitor's conversation) → (Markdown, details)."""
    message = gr.Textbox(visible=False)
    markdown = gr.Textbox(visible=False)
    details = gr.JSON(visible=False)
    trigger = gr.Button(visible=False)

    def draft_api(pasted: str, state: VisitorSession, request: gr.Request) -> tuple[str, dict[str, Any]]:
        try:
            outcome = make_draft(settings, pasted, "conversation", state, None, None, browser_lang(request))
        except SizingError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return outcome.markdown, outcome.public_json()

    trigger.click(
        draft_api,
        inputs=[message, session],
        outputs=[markdown, details],
        api_name="draft",
        api_description=(
            "Draft the reply to a pasted customer message (empty: this visitor's conversation). "
            "Returns the Markdown draft and its details (missing slots, calculations, quote)."
        ),
    )
