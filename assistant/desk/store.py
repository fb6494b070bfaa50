"""`DeskStore`: write and read leads, the question log and feedback; erase and expire them.

    store = DeskStore.open("sqlite:///desk.sqlite3")      # or postgresql+psycopg://...
    store.add_lead(LeadForm(name="Ana", email="ana@example.com", consent=True), language="es")

Opening upgrades the schema with Alembic (idempotent, safe for several replicas starting at
once on PostgreSQL: the migration runs in one transaction). No IP address is ever stored.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, delete, event, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from assistant.desk.errors import DeskUnavailableError, InvalidLeadError
from assistant.desk.models import Feedback, Lead, QuestionRecord

_Logged = TypeVar("_Logged", QuestionRecord, Feedback)  # the append-only log tables

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

# Deliberately loose: one @, a dot in the domain, no spaces (RFC 5322 is for mail servers to judge).
EMAIL_SHAPE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# The form's text fields, with the most characters each may hold.
FIELD_LIMITS = {"name": 200, "email": 320, "company": 200, "message": 4000}
# A transcript longer than this many messages keeps its last ones (the recent ask is what matters).
TRANSCRIPT_MESSAGES = 40
PURGE_EVERY_S = 3600.0


def answer_digest(answer_markdown: str) -> str:
    """The key a thumbs click uses to find its question: sha256 of the answer as shown."""
    return hashlib.sha256(answer_markdown.strip().encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LeadForm:
    """What the "talk to an engineer" form sends."""

    name: str
    email: str
    company: str = ""
    message: str = ""
    consent: bool = False

    def validated(self) -> LeadForm:
        # Name and company are one line each: they go into e-mail headers and CSV rows.
        name, email = " ".join(self.name.split()), self.email.strip()
        if not name:
            raise InvalidLeadError(
                "name is empty; write the name the engineer should ask for", code="no_name"
            )
        if not EMAIL_SHAPE.fullmatch(email):
            raise InvalidLeadError(
                f"e-mail {email!r} is not an address like name@company.com", code="bad_email", email=email
            )
        if not self.consent:
            raise InvalidLeadError(
                "consent is not given; the details are stored only with consent", code="no_consent"
            )
        values = {
            "name": name,
            "email": email,
            "company": " ".join(self.company.split()),
            "message": self.message,
        }
        for key, limit in FIELD_LIMITS.items():
            if len(values[key]) > limit:
                raise InvalidLeadError(f"{key} is {len(values[key])} characters; at most {limit}")
        return LeadForm(
            name=name,
            email=email.lower(),
            company=values["company"],
            message=self.message.strip(),
            consent=True,
        )


@dataclass(frozen=True)
class QuestionEntry:
    """One answered chat question, as the question log keeps it."""

    question: str
    answer_markdown: str
    language: str
    mode: str
    slots: dict[str, Any] = field(default_factory=dict)
    unknown_model: str | None = None
    unknown_card: str | None = None
    outcome: dict[str, Any] = field(default_factory=dict)
    nothing_fit: bool = False
    retrieval_scores: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class FeedbackEntry:
    """A thumbs click; the rest of the context is filled from the question log when it has the answer."""

    rating: str  # "up" | "down"
    answer_markdown: str
    comment: str = ""
    question: str = ""
    language: str = "en"
    mode: str = "offline"
    slots: dict[str, Any] = field(default_factory=dict)
    outcome: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LeadRecord:
    id: int
    created_at: datetime
    name: str
    email: str
    company: str
    message: str
    consent: bool
    language: str
    transcript: list[Any]
    calculations: list[Any]
    notified: bool

    def public_json(self) -> dict[str, Any]:
        values = {attribute.name: getattr(self, attribute.name) for attribute in fields(self)}
        return {**values, "created_at": self.created_at.isoformat()}


@dataclass(frozen=True)
class Purged:
    leads: int
    questions: int
    feedback: int


def normalise_url(url: str) -> str:
    """SQLAlchemy's plain postgresql:// means psycopg2; this project ships psycopg 3."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _aware(moment: datetime) -> datetime:
    # SQLite returns naive datetimes for timezone-aware columns; every stored time is UTC.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class DeskStore:
    """Leads, feedback and the question log in one database."""

    def __init__(self, engine: Engine, retention_days: int | None = None) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        # With a retention period, writes also expire old rows, at most once per PURGE_EVERY_S:
        # a server that runs for months keeps to the period without a cron job.
        self.retention_days = retention_days
        self._purged_at = 0.0

    @classmethod
    def open(cls, url: str) -> DeskStore:
        """Connect and bring the schema to the latest revision."""
        url = normalise_url(url)
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise DeskUnavailableError(
                f"database URL {url!r} is not a SQLAlchemy URL such as sqlite:///desk.sqlite3 "
                "or postgresql+psycopg://user:pass@host/db"
            ) from None
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        try:
            engine = create_engine(url, pool_pre_ping=True)
        except (ArgumentError, ImportError, SQLAlchemyError) as exc:
            raise DeskUnavailableError(f"cannot use database {parsed!r}: {_one_line(exc)}") from None
        if parsed.get_backend_name() == "sqlite":
            event.listen(engine, "connect", _sqlite_foreign_keys)
        store = cls(engine)
        store.migrate()
        return store

    def migrate(self) -> None:
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        try:
            with self.engine.begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        except SQLAlchemyError as exc:
            raise DeskUnavailableError(
                f"cannot open the desk database {self.engine.url!r}: {_one_line(exc)}"
            ) from None

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        try:
            with self._sessions.begin() as session:
                yield session
        except SQLAlchemyError as exc:
            raise DeskUnavailableError(f"desk database error: {_one_line(exc)}") from None

    def _insert(self, row: Lead | QuestionRecord) -> int:
        """Write one new row (expiring old ones first, at most every PURGE_EVERY_S) and return its id."""
        self._expire_old_rows()
        with self._session() as session:
            session.add(row)
            session.flush()
            return int(row.id)

    # ---- leads

    def add_lead(
        self,
        form: LeadForm,
        language: str,
        transcript: list[dict[str, str]] | None = None,
        calculations: list[dict[str, Any]] | None = None,
    ) -> int:
        form = form.validated()
        lead = Lead(
            **{key: getattr(form, key) for key in FIELD_LIMITS},
            consent=True,
            language=language,
            transcript=list(transcript or [])[-TRANSCRIPT_MESSAGES:],
            calculations=list(calculations or []),
            notified=False,
        )
        return self._insert(lead)

    def mark_notified(self, lead_id: int) -> None:
        with self._session() as session:
            lead = session.get(Lead, lead_id)
            if lead is not None:
                lead.notified = True

    def leads(self, since: datetime | None = None) -> list[LeadRecord]:
        query = select(Lead).order_by(Lead.created_at, Lead.id)
        if since is not None:
            query = query.where(Lead.created_at >= since)
        with self._session() as session:
            return [_lead_record(lead) for lead in session.scalars(query)]

    def lead(self, lead_id: int) -> LeadRecord | None:
        with self._session() as session:
            lead = session.get(Lead, lead_id)
            return _lead_record(lead) if lead is not None else None

    def delete_leads(self, email: str) -> int:
        """Erase every lead with this e-mail (a visitor's right to erasure); returns how many."""
        with self._session() as session:
            result = session.execute(delete(Lead).where(Lead.email == email.strip().lower()))
            return int(result.rowcount or 0)  # type: ignore[attr-defined]

    # ---- question log and feedback

    def log_question(self, entry: QuestionEntry) -> int:
        scores = [round(float(score), 4) for score in entry.retrieval_scores]
        record = QuestionRecord(
            question=entry.question[:4000],
            language=entry.language,
            mode=entry.mode,
            slots=dict(entry.slots),
            unknown_model=entry.unknown_model,
            unknown_card=entry.unknown_card,
            outcome=dict(entry.outcome),
            nothing_fit=entry.nothing_fit,
            retrieval_scores=scores,
            top_retrieval_score=max(scores) if scores else None,
            answer_digest=answer_digest(entry.answer_markdown),
        )
        return self._insert(record)

    def add_feedback(self, entry: FeedbackEntry) -> int:
        """Store a thumbs click; the question, slots, outcome and scores come from the logged answer."""
        if entry.rating not in ("up", "down"):
            raise InvalidLeadError(f"rating {entry.rating!r} must be 'up' or 'down'")
        digest = answer_digest(entry.answer_markdown)
        with self._session() as session:
            # The same answer can follow different questions: prefer the one the page says was asked.
            candidates = list(
                session.scalars(
                    select(QuestionRecord)
                    .where(QuestionRecord.answer_digest == digest)
                    .order_by(QuestionRecord.id.desc())
                    .limit(50)
                )
            )
            asked = entry.question.strip()
            logged = next((c for c in candidates if c.question.strip() == asked), None) or next(
                iter(candidates), None
            )
            if logged is None and asked:
                # An answer rewritten on the page (a later edit, a different rendering): the
                # latest logged answer to the same question is the best context there is.
                logged = session.scalars(
                    select(QuestionRecord)
                    .where(QuestionRecord.question == asked[:4000])
                    .order_by(QuestionRecord.id.desc())
                    .limit(1)
                ).first()
            feedback = Feedback(
                rating=entry.rating,
                comment=entry.comment.strip()[:2000],
                question=logged.question if logged else entry.question[:4000],
                # The logged answer's key, also when the page showed it rewritten (folded blocks).
                answer_digest=logged.answer_digest if logged else digest,
                question_id=logged.id if logged else None,
                slots=dict(logged.slots) if logged else dict(entry.slots),
                outcome=dict(logged.outcome) if logged else dict(entry.outcome),
                retrieval_scores=list(logged.retrieval_scores) if logged else [],
                language=logged.language if logged else entry.language,
                mode=logged.mode if logged else entry.mode,
            )
            session.add(feedback)
            session.flush()
            return int(feedback.id)

    def comment_feedback(self, feedback_id: int, comment: str) -> None:
        """Attach the optional comment a visitor writes after the click."""
        with self._session() as session:
            feedback = session.get(Feedback, feedback_id)
            if feedback is not None:
                feedback.comment = comment.strip()[:2000]

    def questions(self, since: datetime | None = None) -> list[QuestionRecord]:
        return self._rows(QuestionRecord, since)

    def feedback(self, since: datetime | None = None) -> list[Feedback]:
        return self._rows(Feedback, since)

    def _rows(self, table: type[_Logged], since: datetime | None) -> list[_Logged]:
        """Every row of a log table in the order written, from `since` on."""
        query = select(table).order_by(table.id)
        if since is not None:
            query = query.where(table.created_at >= since)
        with self._session() as session:
            return list(session.scalars(query))

    # ---- retention

    def keep_for(self, retention_days: int) -> Purged:
        """Set the retention period and delete what is already past it."""
        self.retention_days = retention_days
        self._purged_at = time.monotonic()
        return self.purge(retention_days)

    def _expire_old_rows(self) -> None:
        if self.retention_days is None or time.monotonic() - self._purged_at < PURGE_EVERY_S:
            return
        self._purged_at = time.monotonic()
        self.purge(self.retention_days)

    def purge(self, retention_days: int, now: datetime | None = None) -> Purged:
        """Delete every row older than the retention period."""
        cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
        with self._session() as session:
            feedback = session.execute(delete(Feedback).where(Feedback.created_at < cutoff))
            questions = session.execute(delete(QuestionRecord).where(QuestionRecord.created_at < cutoff))
            leads = session.execute(delete(Lead).where(Lead.created_at < cutoff))
            return Purged(
                leads=int(leads.rowcount or 0),  # type: ignore[attr-defined]
                questions=int(questions.rowcount or 0),  # type: ignore[attr-defined]
                feedback=int(feedback.rowcount or 0),  # type: ignore[attr-defined]
            )


def open_desk(settings: Any) -> DeskStore:
    """The store the settings name, with rows past the retention period already deleted."""
    store = DeskStore.open(settings.desk_database_url)
    store.keep_for(settings.retention_days)
    return store


def _lead_record(lead: Lead) -> LeadRecord:
    """The row as a plain record, detached from its session: the lists copied, the time made aware."""
    values = {attribute.name: getattr(lead, attribute.name) for attribute in fields(LeadRecord)}
    return LeadRecord(
        **{
            **values,
            "created_at": _aware(lead.created_at),
            "transcript": list(lead.transcript or []),
            "calculations": list(lead.calculations or []),
        }
    )


def _sqlite_foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
