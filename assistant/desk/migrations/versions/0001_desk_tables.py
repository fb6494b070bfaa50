"""Leads, the question log and answer feedback.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _create_table(name: str, *columns: sa.Column, indexed: tuple[str, ...]) -> None:
    """A desk table: the id and creation time every one has, then its own columns; `created_at` and the
    `indexed` columns get an index each, named ix_<table>_<column>."""
    op.create_table(
        name,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        *columns,
    )
    for column in ("created_at", *indexed):
        op.create_index(f"ix_{name}_{column}", name, [column])


def upgrade() -> None:
    _create_table(
        "leads",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("company", sa.String(200), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("consent", sa.Boolean, nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("transcript", sa.JSON, nullable=False),
        sa.Column("calculations", sa.JSON, nullable=False),
        sa.Column("notified", sa.Boolean, nullable=False),
        indexed=("email",),
    )
    _create_table(
        "questions",
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("slots", sa.JSON, nullable=False),
        sa.Column("unknown_model", sa.String(200), nullable=True),
        sa.Column("unknown_card", sa.String(200), nullable=True),
        sa.Column("outcome", sa.JSON, nullable=False),
        sa.Column("nothing_fit", sa.Boolean, nullable=False),
        sa.Column("retrieval_scores", sa.JSON, nullable=False),
        sa.Column("top_retrieval_score", sa.Float, nullable=True),
        sa.Column("answer_digest", sa.String(64), nullable=False),
        indexed=("answer_digest",),
    )
    _create_table(
        "feedback",
        sa.Column("rating", sa.String(8), nullable=False),
        sa.Column("comment", sa.Text, nullable=False),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("answer_digest", sa.String(64), nullable=False),
        sa.Column(
            "question_id", sa.Integer, sa.ForeignKey("questions.id", ondelete="SET NULL"), nullable=True
        ),
        sa.Column("slots", sa.JSON, nullable=False),
        sa.Column("outcome", sa.JSON, nullable=False),
        sa.Column("retrieval_scores", sa.JSON, nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        indexed=("answer_digest",),
    )


def downgrade() -> None:
    op.drop_table("feedback")
    op.drop_table("questions")
    op.drop_table("leads")
