"""`sizing report` and `sizing leads` on a seeded log: the coverage gaps, the leads, erasure."""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from assistant.desk.models import QuestionRecord
from assistant.desk.report import build_report, question_key, report_markdown
from assistant.desk.store import DeskStore, FeedbackEntry, LeadForm, QuestionEntry
from tests.sizing_cli import run_sizing

SEED = [
    # question, answer, unknown model, unknown card, nothing fit, retrieval scores
    # (scores as the shipped index gives them: see benchmarks/coverage_threshold.py)
    ("What GPU for a 70B?", "a1", None, None, False, [0.9494]),
    ("what gpu for a 70b", "a1", None, None, False, [0.9494]),
    ("What GPU for a 70B?!", "a1", None, None, False, [0.9431]),
    ("Falcon 180B con 10 usuarios", "a2", "falcon 180b", None, False, [0.91]),
    ("Falcon 180B on 2 cards", "a3", "falcon 180b", None, False, [0.9]),
    ("Llama 70B on an RTX 5090", "a4", None, "rtx 5090", False, [0.92]),
    ("405B at bf16 for 8 users", "a5", None, None, True, [0.93]),
    ("how do I pay by invoice?", "a6", None, None, False, [0.8295, 0.81]),
]


def seed(store: DeskStore) -> None:
    for question, answer, model, card, nothing, scores in SEED:
        store.log_question(
            QuestionEntry(
                question=question,
                answer_markdown=answer,
                language="en",
                mode="offline",
                unknown_model=model,
                unknown_card=card,
                nothing_fit=nothing,
                retrieval_scores=scores,
            )
        )
    store.add_feedback(FeedbackEntry(rating="down", answer_markdown="a6", comment="no answer about invoices"))
    store.add_feedback(FeedbackEntry(rating="up", answer_markdown="a1"))


@pytest.fixture
def store(tmp_path: Path) -> DeskStore:
    desk = DeskStore.open(f"sqlite:///{tmp_path / 'desk.sqlite3'}")
    seed(desk)
    return desk


def test_the_report_shows_the_gaps_of_the_seeded_log(store: DeskStore) -> None:
    report = build_report(store)
    assert report.questions == len(SEED) and (report.feedback_up, report.feedback_down) == (1, 1)
    assert report.top_questions[0] == ("What GPU for a 70B?", 3)  # case and punctuation folded
    assert report.unknown_models == [("falcon 180b", 2)] and report.unknown_cards == [("rtx 5090", 1)]
    assert report.nothing_fit == [("405B at bf16 for 8 users", 1)]
    assert report.low_retrieval == [("how do I pay by invoice?", 0.8295)]
    assert report.thumbs_down[0]["question"] == "how do I pay by invoice?"
    assert report.thumbs_down[0]["comment"] == "no answer about invoices"
    markdown = report_markdown(report)
    assert "3× `What GPU for a 70B?`" in markdown and "`falcon 180b`" in markdown


def test_since_keeps_only_the_recent_rows(store: DeskStore) -> None:
    with store.engine.begin() as connection:
        connection.execute(
            update(QuestionRecord)
            .where(QuestionRecord.question.like("Falcon%"))
            .values(created_at=datetime.now(UTC) - timedelta(days=10))
        )
    report = build_report(store, since=datetime.now(UTC) - timedelta(days=1))
    assert report.questions == len(SEED) - 2 and report.unknown_models == []


def test_question_key_folds_what_does_not_change_the_question() -> None:
    assert question_key("  What GPU, for a 70B?? ") == question_key("what gpu for a 70b")
    assert question_key("70B") != question_key("8B")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIZING_")}
    env.update(
        SIZING_DATA_DIR=str(tmp_path),
        SIZING_DATABASE_URL=f"sqlite:///{tmp_path / 'desk.sqlite3'}",
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    return env


@pytest.mark.e2e
def test_cli_report_leads_export_and_delete(tmp_path: Path, store: DeskStore) -> None:
    store.add_lead(
        LeadForm(name="Ana", email="ana@example.com", message="=HYPERLINK(1)", consent=True), language="es"
    )
    store.add_lead(LeadForm(name="Bob", email="bob@example.com", consent=True), language="en")
    env = _env(tmp_path)
    report = run_sizing("report", "--json", env=env)
    assert report.returncode == 0, report.stderr
    body = json.loads(report.stdout)
    assert body["unknown_models"] == [{"model": "falcon 180b", "count": 2}]
    assert body["thumbs_down"][0]["comment"] == "no answer about invoices"
    listed = run_sizing("leads", "list", env=env)
    assert listed.returncode == 0 and "Ana <ana@example.com>" in listed.stdout and "Bob" in listed.stdout
    exported = run_sizing("leads", "export", "--csv", env=env)
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert [row["email"] for row in rows] == ["ana@example.com", "bob@example.com"]
    assert rows[0]["message"] == "'=HYPERLINK(1)"  # a spreadsheet would run it as a formula
    as_json = json.loads(run_sizing("leads", "export", "--json", env=env).stdout)
    assert as_json[0]["language"] == "es" and "transcript" in as_json[0]
    deleted = run_sizing("leads", "delete", "--email", "ANA@example.com", env=env)
    assert deleted.returncode == 0 and "deleted 1 lead for ana@example.com" in deleted.stdout
    assert "ana@" not in run_sizing("leads", "list", env=env).stdout
    bad = run_sizing("report", "--since", "yesterday", env=env)
    assert (
        bad.returncode == 2
        and "--since 'yesterday'" in bad.stderr
        and len(bad.stderr.strip().splitlines()) == 1
    )
