"""`sizing report`: the coverage gaps the question log and feedback show.

Top questions, models and cards asked for that the catalog lacks, answers where nothing fit,
questions whose best retrieved passage scored low, and thumbs-down with their comments: what
should become new articles, catalog entries and golden questions.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assistant.desk.store import DeskStore

TOP = 10
# The knowledge store's hybrid score (knowledge/ranking.py: e5 cosine + 0.05 × BM25) of the best
# passage: questions the articles answer score above it, off-topic ones below it. Measured by
# benchmarks/coverage_threshold.py (covered ≥ 0.884, uncovered ≤ 0.858 on its 16 questions).
LOW_RETRIEVAL_SCORE = 0.87


def question_key(question: str) -> str:
    """Questions that differ only in case, spacing or punctuation count as one."""
    return " ".join(re.sub(r"[^\w\s.]+", " ", question.lower()).split())


@dataclass(frozen=True)
class Report:
    since: datetime | None
    questions: int
    feedback_up: int
    feedback_down: int
    top_questions: list[tuple[str, int]] = field(default_factory=list)
    unknown_models: list[tuple[str, int]] = field(default_factory=list)
    unknown_cards: list[tuple[str, int]] = field(default_factory=list)
    nothing_fit: list[tuple[str, int]] = field(default_factory=list)
    low_retrieval: list[tuple[str, float]] = field(default_factory=list)
    thumbs_down: list[dict[str, str]] = field(default_factory=list)
    low_score_threshold: float = LOW_RETRIEVAL_SCORE

    def public_json(self) -> dict[str, Any]:
        def counted(pairs: list[tuple[str, int]], name: str) -> list[dict[str, Any]]:
            return [{name: value, "count": count} for value, count in pairs]

        return {
            "since": self.since.isoformat() if self.since else None,
            "questions": self.questions,
            "feedback": {"up": self.feedback_up, "down": self.feedback_down},
            "top_questions": counted(self.top_questions, "question"),
            "unknown_models": counted(self.unknown_models, "model"),
            "unknown_cards": counted(self.unknown_cards, "card"),
            "nothing_fit": counted(self.nothing_fit, "question"),
            "low_retrieval": [{"question": q, "top_score": s} for q, s in self.low_retrieval],
            "low_score_threshold": self.low_score_threshold,
            "thumbs_down": self.thumbs_down,
        }


def build_report(
    store: DeskStore, since: datetime | None = None, low_score: float = LOW_RETRIEVAL_SCORE
) -> Report:
    questions = store.questions(since)
    feedback = store.feedback(since)
    asked: Counter[str] = Counter()
    shown: dict[str, str] = {}
    for record in questions:
        key = question_key(record.question)
        asked[key] += 1
        shown.setdefault(key, record.question.strip())
    nothing: Counter[str] = Counter(question_key(r.question) for r in questions if r.nothing_fit)
    low: dict[str, float] = {}
    for record in questions:
        score = record.top_retrieval_score
        if score is not None and score < low_score:
            key = question_key(record.question)
            low[key] = min(score, low.get(key, score))
    return Report(
        since=since,
        questions=len(questions),
        feedback_up=sum(1 for f in feedback if f.rating == "up"),
        feedback_down=sum(1 for f in feedback if f.rating == "down"),
        top_questions=[(shown[key], count) for key, count in asked.most_common(TOP)],
        unknown_models=Counter(r.unknown_model for r in questions if r.unknown_model).most_common(TOP),
        unknown_cards=Counter(r.unknown_card for r in questions if r.unknown_card).most_common(TOP),
        nothing_fit=[(shown[key], count) for key, count in nothing.most_common(TOP)],
        low_retrieval=sorted(((shown[key], score) for key, score in low.items()), key=lambda item: item[1])[
            :TOP
        ],
        thumbs_down=[
            {"question": f.question, "comment": f.comment, "at": f.created_at.isoformat(timespec="seconds")}
            for f in feedback
            if f.rating == "down"
        ],
        low_score_threshold=low_score,
    )


def report_markdown(report: Report) -> str:
    """The report for a person (CLI and Admin tab); questions are shown as inline code, never rendered."""

    def quoted(text: str) -> str:
        return "`" + " ".join(text.split()).replace("`", "'")[:160] + "`"

    lines = [
        f"**{report.questions}** questions, **{report.feedback_up}** thumbs up, **{report.feedback_down}** thumbs down"
        + (f" since {report.since.date().isoformat()}" if report.since else ""),
        "",
    ]
    sections: list[tuple[str, list[str]]] = [
        ("Top questions", [f"{count}× {quoted(q)}" for q, count in report.top_questions]),
        (
            "Models asked for that are not in the catalog",
            [f"{count}× {quoted(m)}" for m, count in report.unknown_models],
        ),
        (
            "Cards asked for that are not in the catalog",
            [f"{count}× {quoted(c)}" for c, count in report.unknown_cards],
        ),
        ("Answers where nothing fit", [f"{count}× {quoted(q)}" for q, count in report.nothing_fit]),
        (
            f"Questions whose best passage scored below {report.low_score_threshold}",
            [f"{score:.3f} {quoted(q)}" for q, score in report.low_retrieval],
        ),
        (
            "Thumbs down",
            [
                f"{quoted(f['question'])} — {quoted(f['comment']) if f['comment'] else '(no comment)'}"
                for f in report.thumbs_down
            ],
        ),
    ]
    for title, items in sections:
        lines += [f"### {title}", ""]
        lines += [f"- {item}" for item in items] if items else ["- none"]
        lines.append("")
    return "\n".join(lines)
