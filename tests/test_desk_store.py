"""The desk store on SQLite and on a real PostgreSQL server: leads, feedback, question log, retention."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import inspect, update

from assistant.desk.errors import DeskUnavailableError, InvalidLeadError
from assistant.desk.models import Feedback, Lead, QuestionRecord
from assistant.desk.store import DeskStore, FeedbackEntry, LeadForm, QuestionEntry
from tests.postgres_server import postgres_bin, running_postgres


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    if postgres_bin() is None:
        pytest.fail("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)")
    with running_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.e2e)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DeskStore]:
    if request.param == "sqlite":
        desk = DeskStore.open(f"sqlite:///{tmp_path / 'desk.sqlite3'}")
    else:
        desk = DeskStore.open(request.getfixturevalue("postgres_url"))
        _empty(desk)
    yield desk
    desk.close()


def _empty(desk: DeskStore) -> None:
    with desk.engine.begin() as connection:
        for table in ("feedback", "questions", "leads"):
            connection.exec_driver_sql(f"DELETE FROM {table}")


def _age(desk: DeskStore, model: type, days: float) -> None:
    with desk.engine.begin() as connection:
        connection.execute(update(model).values(created_at=datetime.now(UTC) - timedelta(days=days)))


def test_a_lead_keeps_the_conversation_and_its_calculations(store: DeskStore) -> None:
    transcript = [
        {"role": "user", "content": "70B para 20 usuarios"},
        {"role": "assistant", "content": "2× 80GB"},
    ]
    lead_id = store.add_lead(
        LeadForm(
            name=" Ana Pérez ", email="Ana@Example.COM", company="ACME", message="¿Precio?", consent=True
        ),
        language="es",
        transcript=transcript,
        calculations=[{"model": {"id": "llama-3.1-70b"}, "total_gb": 140.1}],
    )
    [lead] = store.leads()
    assert lead.id == lead_id and lead.name == "Ana Pérez" and lead.email == "ana@example.com"
    assert lead.transcript == transcript and lead.calculations[0]["total_gb"] == 140.1
    assert lead.language == "es" and lead.consent and not lead.notified
    assert lead.created_at.tzinfo is not None
    store.mark_notified(lead_id)
    assert store.lead(lead_id).notified  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("form", "named"),
    [
        (LeadForm(name="", email="a@b.co", consent=True), "name"),
        (LeadForm(name="Ana", email="not-an-address", consent=True), "not-an-address"),
        (LeadForm(name="Ana", email="a@b.co", consent=False), "consent"),
        (LeadForm(name="Ana", email="a@b.co", message="x" * 5000, consent=True), "message"),
    ],
)
def test_a_bad_form_is_one_line_naming_the_field_and_stores_nothing(
    store: DeskStore, form: LeadForm, named: str
) -> None:
    with pytest.raises(InvalidLeadError) as caught:
        store.add_lead(form, language="en")
    assert named in str(caught.value) and "\n" not in str(caught.value)
    assert store.leads() == []


def test_delete_by_email_erases_only_that_visitor(store: DeskStore) -> None:
    for email in ("ana@example.com", "ANA@example.com", "bob@example.com"):
        store.add_lead(LeadForm(name="x", email=email, consent=True), language="en")
    assert store.delete_leads(" Ana@Example.com ") == 2
    assert [lead.email for lead in store.leads()] == ["bob@example.com"]
    assert store.delete_leads("ana@example.com") == 0


def test_feedback_finds_its_question_through_the_answer(store: DeskStore) -> None:
    question_id = store.log_question(
        QuestionEntry(
            question="70b en 48 GB?",
            answer_markdown="**No cabe.**\n\nFuentes: x",
            language="es",
            mode="offline",
            slots={"model": "70b"},
            outcome={"recommended": None, "fits": False},
            nothing_fit=True,
            retrieval_scores=[0.91, 0.4],
        )
    )
    feedback_id = store.add_feedback(
        FeedbackEntry(rating="down", answer_markdown="**No cabe.**\n\nFuentes: x\n")
    )
    store.comment_feedback(feedback_id, "  quería saber el precio  ")
    [feedback] = store.feedback()
    assert feedback.question_id == question_id and feedback.question == "70b en 48 GB?"
    assert feedback.slots == {"model": "70b"} and feedback.outcome["fits"] is False
    assert (
        feedback.retrieval_scores == [0.91, 0.4] and feedback.language == "es" and feedback.mode == "offline"
    )
    assert feedback.comment == "quería saber el precio"
    [question] = store.questions()
    assert question.top_retrieval_score == 0.91 and question.nothing_fit


def test_feedback_on_an_unlogged_answer_keeps_what_the_page_knew(store: DeskStore) -> None:
    store.add_feedback(
        FeedbackEntry(
            rating="up", answer_markdown="hello", question="hi", language="en", mode="llm", slots={"users": 3}
        )
    )
    [feedback] = store.feedback()
    assert feedback.question_id is None and feedback.question == "hi" and feedback.slots == {"users": 3}
    with pytest.raises(InvalidLeadError, match="'meh'"):
        store.add_feedback(FeedbackEntry(rating="meh", answer_markdown="hello"))


def test_retention_deletes_what_is_older_than_the_setting(store: DeskStore) -> None:
    store.add_lead(LeadForm(name="old", email="old@example.com", consent=True), language="en")
    store.log_question(QuestionEntry(question="old", answer_markdown="a", language="en", mode="offline"))
    store.add_feedback(FeedbackEntry(rating="up", answer_markdown="a"))
    for model in (Lead, QuestionRecord, Feedback):
        _age(store, model, days=40)
    store.add_lead(LeadForm(name="new", email="new@example.com", consent=True), language="en")
    purged = store.purge(retention_days=30)
    assert (purged.leads, purged.questions, purged.feedback) == (1, 1, 1)
    assert [lead.name for lead in store.leads()] == ["new"]
    assert store.questions() == [] and store.feedback() == []


def test_opening_again_migrates_nothing_and_no_column_holds_an_address(store: DeskStore) -> None:
    again = DeskStore.open(str(store.engine.url.render_as_string(hide_password=False)))
    columns = {
        table: {column["name"] for column in inspect(again.engine).get_columns(table)}
        for table in ("leads", "questions", "feedback")
    }
    again.close()
    assert "alembic_version" in inspect(store.engine).get_table_names()
    every = set().union(*columns.values())
    assert not {name for name in every if "ip" in name.split("_") or "address" in name or "agent" in name}


def test_an_unreachable_database_is_one_line() -> None:
    with pytest.raises(DeskUnavailableError) as caught:
        DeskStore.open("postgresql://nobody@127.0.0.1:1/none")
    assert "\n" not in str(caught.value)
    with pytest.raises(DeskUnavailableError, match="not a SQLAlchemy URL"):
        DeskStore.open("desk.sqlite3")


def test_a_long_running_store_expires_old_rows_as_it_writes(
    store: DeskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assistant.desk.store as store_module

    store.add_lead(LeadForm(name="old", email="old@example.com", consent=True), language="en")
    _age(store, Lead, days=40)
    store.keep_for(30)
    assert store.leads() == []
    store.add_lead(LeadForm(name="old2", email="old2@example.com", consent=True), language="en")
    _age(store, Lead, days=40)
    # Within the hour nothing is re-checked; after it, the next write expires the old row.
    store.log_question(QuestionEntry(question="q", answer_markdown="a", language="en", mode="offline"))
    assert [lead.name for lead in store.leads()] == ["old2"]
    monkeypatch.setattr(store_module, "PURGE_EVERY_S", 0.0)
    store.log_question(QuestionEntry(question="q", answer_markdown="a", language="en", mode="offline"))
    assert store.leads() == []


def test_name_and_company_are_one_line(store: DeskStore) -> None:
    form = LeadForm(
        name="Ana\r\nBcc: everyone@example.com", email="a@b.co", company="ACME\nInc", consent=True
    )
    store.add_lead(form, language="en")
    [lead] = store.leads()
    assert lead.name == "Ana Bcc: everyone@example.com" and lead.company == "ACME Inc"


def test_writes_from_many_threads_all_land(store: DeskStore) -> None:
    import threading

    failures: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for number in range(10):
                entry = QuestionEntry(
                    question=f"q{worker}-{number}", answer_markdown="a", language="en", mode="offline"
                )
                store.log_question(entry)
        except BaseException as exc:  # collected for the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures and len(store.questions()) == 80
