"""The desk's tables. Change them only together with a new Alembic revision in migrations/versions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utc_now() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Lead(Base):
    """A visitor who asked to talk to an engineer, with what the conversation held."""

    __tablename__ = "leads"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now, index=True)
    name: Mapped[str] = mapped_column(String(200))
    email: Mapped[str] = mapped_column(String(320), index=True)
    company: Mapped[str] = mapped_column(String(200), default="")
    message: Mapped[str] = mapped_column(Text, default="")
    consent: Mapped[bool] = mapped_column(Boolean)
    language: Mapped[str] = mapped_column(String(8))
    transcript: Mapped[list[Any]] = mapped_column(JSON, default=list)
    calculations: Mapped[list[Any]] = mapped_column(JSON, default=list)
    notified: Mapped[bool] = mapped_column(Boolean, default=False)


class QuestionRecord(Base):
    """One answered chat question: what was understood and how the answer went."""

    __tablename__ = "questions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now, index=True)
    question: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(String(8))
    mode: Mapped[str] = mapped_column(String(16))
    slots: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Names the visitor used that the catalog does not know (a model, a card).
    unknown_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    unknown_card: Mapped[str | None] = mapped_column(String(200), nullable=True)
    outcome: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    nothing_fit: Mapped[bool] = mapped_column(Boolean, default=False)
    retrieval_scores: Mapped[list[Any]] = mapped_column(JSON, default=list)
    top_retrieval_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    # sha256 of the answer as the chat shows it, so a thumbs click finds its question.
    answer_digest: Mapped[str] = mapped_column(String(64), index=True)


class Feedback(Base):
    """A thumbs up or down on one answer, with an optional comment and the answer's context."""

    __tablename__ = "feedback"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now, index=True)
    rating: Mapped[str] = mapped_column(String(8))  # "up" | "down"
    comment: Mapped[str] = mapped_column(Text, default="")
    question: Mapped[str] = mapped_column(Text, default="")
    answer_digest: Mapped[str] = mapped_column(String(64), index=True)
    question_id: Mapped[int | None] = mapped_column(
        ForeignKey("questions.id", ondelete="SET NULL"), nullable=True
    )
    slots: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    outcome: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    retrieval_scores: Mapped[list[Any]] = mapped_column(JSON, default=list)
    language: Mapped[str] = mapped_column(String(8))
    mode: Mapped[str] = mapped_column(String(16))
