"""The Admin tab: leads and the coverage report, behind `SIZING_ADMIN_TOKEN`."""

from __future__ import annotations

import hmac
import logging
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from assistant.desk.errors import DeskUnavailableError
from assistant.desk.export import leads_csv
from assistant.desk.report import build_report, report_markdown
from assistant.desk.store import DeskStore, LeadRecord
from assistant.sales import plain
from assistant.settings import Settings
from assistant.ui.desk_texts import desk_text, label

log = logging.getLogger(__name__)


def token_ok(settings: Settings, given: str) -> bool:
    expected = settings.admin_token.get_secret_value() if settings.admin_token else ""
    return bool(expected) and hmac.compare_digest(expected.encode(), (given or "").encode())


def leads_markdown(leads: list[LeadRecord]) -> str:
    if not leads:
        return "_No leads._"
    rows = ["| When | Name | E-mail | Company | Language | Message |", "|---|---|---|---|---|---|"]
    for lead in reversed(leads):
        cells = [
            lead.created_at.strftime("%Y-%m-%d %H:%M"),
            lead.name,
            lead.email,
            lead.company,
            lead.language,
            lead.message,
        ]
        rows.append("| " + " | ".join(plain(cell, 160) for cell in cells) + " |")
    return "\n".join(rows)


def build_admin_tab(settings: Settings, desk: DeskStore | None, browser_lang: Any) -> None:
    folder = Path(tempfile.mkdtemp(prefix="sizing-admin-"))
    token = gr.Textbox(label=label("Admin token"), type="password", elem_id="admin-token")
    open_button = gr.Button(label("Open"), elem_id="admin-open")
    status = gr.Markdown()
    leads_view = gr.Markdown(elem_id="admin-leads")
    report_view = gr.Markdown(elem_id="admin-report")
    export = gr.DownloadButton(label("Export leads (CSV)"), visible=False)

    def show(given: str, request: gr.Request) -> tuple[Any, ...]:
        lang = browser_lang(request)
        if not token_ok(settings, given):
            return desk_text("bad_token", lang), "", "", gr.DownloadButton(visible=False)
        if desk is None:
            return desk_text("desk_unavailable", lang), "", "", gr.DownloadButton(visible=False)
        try:
            leads = desk.leads()
            report = build_report(desk)
        except DeskUnavailableError as exc:
            log.warning("admin: %s", exc)
            return desk_text("desk_unavailable", lang), "", "", gr.DownloadButton(visible=False)
        path = Path(tempfile.mkdtemp(dir=folder)) / "leads.csv"
        path.write_text(leads_csv(leads), encoding="utf-8")
        return (
            "",
            leads_markdown(leads),
            report_markdown(report),
            gr.DownloadButton(value=str(path), visible=True),
        )

    gr.on(
        triggers=[open_button.click, token.submit],
        fn=show,
        inputs=[token],
        outputs=[status, leads_view, report_view, export],
        api_visibility="private",
    )
