"""The desk's widgets in the app: the Admin tab only with a token, the panels built, inert lead tables."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import gradio as gr
from pydantic import SecretStr

from assistant.desk.store import LeadRecord
from assistant.settings import Settings
from assistant.ui.admin_tab import leads_markdown, token_ok
from tests.ui_apps import build_app  # built inside a running loop, so Gradio leaks none
from tests.ui_fakes import FakeAssistant


def tab_ids(demo: gr.Blocks) -> set[object]:
    return {block.id for block in demo.blocks.values() if isinstance(block, gr.Tab)}


def elem_ids(demo: gr.Blocks) -> set[object]:
    return {getattr(block, "elem_id", None) for block in demo.blocks.values()}


def test_the_admin_tab_exists_only_with_a_token(tmp_path: Path) -> None:
    assert "admin" not in tab_ids(build_app(FakeAssistant(), Settings(data_dir=tmp_path)))
    with_token = build_app(FakeAssistant(), Settings(data_dir=tmp_path, admin_token=SecretStr("s3cret")))
    assert "admin" in tab_ids(with_token)
    settings = Settings(data_dir=tmp_path, admin_token=SecretStr("s3cret"))
    assert token_ok(settings, "s3cret") and not token_ok(settings, "s3cre") and not token_ok(settings, "")
    assert not token_ok(Settings(data_dir=tmp_path), "")


def test_the_chat_has_thumbs_a_handoff_and_the_sales_panel(tmp_path: Path) -> None:
    demo = build_app(FakeAssistant(), Settings(data_dir=tmp_path))
    chatbot = next(block for block in demo.blocks.values() if isinstance(block, gr.Chatbot))
    assert list(chatbot.feedback_options or []) == ["Like", "Dislike"]
    expected = {"handoff", "handoff-send", "feedback-comment", "sales-paste", "sales-draft-preview"}
    assert expected <= elem_ids(demo)
    assert (tmp_path / "desk.sqlite3").exists()  # the default store: SQLite in the data folder


def test_an_unreachable_database_leaves_the_chat_working(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url="postgresql://nobody@127.0.0.1:1/none")
    demo = build_app(FakeAssistant(), settings)
    assert isinstance(demo, gr.Blocks)


def test_lead_tables_show_visitor_text_inert() -> None:
    lead = LeadRecord(
        id=1,
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
        name="<script>x</script>",
        email="a@b.co",
        company="[x](javascript:alert(1))",
        message="| broken | table",
        consent=True,
        language="en",
        transcript=[],
        calculations=[],
        notified=False,
    )
    table = leads_markdown([lead])
    assert "<script>" not in table and not re.search(r"(?<!\\)\]\(", table) and "\\| broken" in table
    assert leads_markdown([]) == "_No leads._"
