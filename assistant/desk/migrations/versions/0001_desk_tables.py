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


def _created_at() -> sa.Column:
    return sa.Column("created_at", sa.DateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "leads",
        sa.Column("id", sa.Integer, primary_key=True),
        _created_at(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("company", sa.String(200), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("consent", sa.Boolean, nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("transcript", sa.JSON, nullable=False),
        sa.Column("calculations", sa.JSON, nullable=False),
        sa.Column("notified", sa.Boolean, nullable=False),
    )
    op.create_index("ix_leads_created_at", "leads", ["created_at"])
    op.create_index("ix_leads_email", "leads", ["email"])
    op.create_table(
        "questions",
        sa.Column("id", sa.Integer, primary_key=True),
        _created_at(),
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
    )
    op.create_index("ix_questions_created_at", "questions", ["created_at"])
    op.create_index("ix_questions_answer_digest", "questions", ["answer_digest"])
    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer, primary_key=True),
        _created_at(),
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
    )
    op.create_index("ix_feedback_created_at", "feedback", ["created_at"])
    op.create_index("ix_feedback_answer_digest", "feedback", ["answer_digest"])


def downgrade() -> None:
    op.drop_table("feedback")
    op.drop_table("questions")
    op.drop_table("leads")
