"""The sales-draft column beside the chat: the last recommendation as a reply to the customer.

`build_draft_panel(session, calculator_memory)` lays it out in the current Column and wires
its button; the draft comes from the chat's last result, else the calculator's.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from assistant.ui import handlers
from assistant.ui.labels import browser_lang, label
from assistant.ui.session import VisitorSession


def build_draft_panel(session: gr.State, calculator_memory: gr.State) -> None:
    draft_folder = Path(tempfile.mkdtemp(prefix="sizing-drafts-"))
    gr.Markdown("## " + label("Sales draft"))
    gr.Markdown(
        label(
            "Turn the conversation's last recommendation into a reply for the customer, "
            "in the customer's language."
        )
    )
    customer = gr.Textbox(label=label("Customer name (optional)"), max_length=80)
    draft_button = gr.Button(label("Draft the customer reply"), variant="primary")
    draft_preview = gr.Markdown(
        visible=False, elem_id="sales-draft-preview", container=True, buttons=["copy"]
    )
    with gr.Accordion(label("Markdown source"), open=False, visible=False) as draft_source:
        draft_text = gr.Textbox(
            label=label("Reply (Markdown, ready to copy)"),
            lines=10,
            max_lines=30,
            buttons=["copy"],
            elem_id="sales-draft-text",
        )
    draft_download = gr.DownloadButton(label("Download .md"), visible=False, elem_id="sales-draft-download")

    def make_draft(
        visitor: VisitorSession, calculator_result: Any, customer_name: str, request: gr.Request
    ) -> tuple[Any, Any, Any, Any]:
        result, result_lang = calculator_result or (None, None)
        try:
            draft = handlers.sales_draft(visitor, result, result_lang, customer_name, browser_lang(request))
        except handlers.NothingToDraftError as exc:
            gr.Warning(str(exc))
            return (
                gr.Markdown(visible=False),
                gr.Accordion(visible=False),
                "",
                gr.DownloadButton(visible=False),
            )
        path = Path(tempfile.mkdtemp(dir=draft_folder)) / draft.file_name
        path.write_text(draft.markdown, encoding="utf-8")
        return (
            gr.Markdown(draft.markdown, visible=True),
            gr.Accordion(visible=True),
            draft.markdown,
            gr.DownloadButton(value=str(path), visible=True),
        )

    draft_button.click(
        make_draft,
        inputs=[session, calculator_memory, customer],
        outputs=[draft_preview, draft_source, draft_text, draft_download],
        api_visibility="private",
    )
