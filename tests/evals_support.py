"""Shared pieces of the evals tests: a small task file and stub endpoints that answer it.

Four kinds of endpoint, as the issue asks: one right, one wrong, one failing, one slow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.openai_stub import Reply, StubOpenAI, error, slow, text

TASKS: list[dict[str, Any]] = [
    {
        "id": "card",
        "category": "qa",
        "prompt": "Which card class serves a 70B at 4 bits?",
        "expected": "48 GB",
    },
    {
        "id": "route",
        "category": "cls",
        "prompt": "Route: 'my invoice is wrong'",
        "scorer": "exact",
        "expected": "billing",
    },
    {
        "id": "weights",
        "category": "qa",
        "prompt": "Weights of a 70B at 8 bits?",
        "scorer": "regex",
        "expected": r"\b70\s?GB\b",
    },
    {
        "id": "extract",
        "category": "extract",
        "prompt": "Extract precision and users as JSON from: 'int4, 20 users'",
        "scorer": "json",
        "schema": {"type": "object", "required": ["precision", "users"]},
        "expected": {"precision": "int4", "users": 20},
    },
    {"id": "open", "prompt": "Say something kind about GPUs."},
]

RIGHT_ANSWERS = {
    "Which card class serves a 70B at 4 bits?": "The 48 GB class (L40S).",
    "Route: 'my invoice is wrong'": "Billing",
    "Weights of a 70B at 8 bits?": "About 70 GB.",
    "Extract precision and users as JSON from: 'int4, 20 users'": '{"precision": "int4", "users": 20}',
    "Say something kind about GPUs.": "They work hard.",
}
WRONG_ANSWER = "I do not know."


def write_tasks(folder: Path, tasks: list[dict[str, Any]] | None = None) -> Path:
    path = folder / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(task) for task in (tasks or TASKS)) + "\n", encoding="utf-8")
    return path


def last_user_message(request: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")


def right(request: dict[str, Any]) -> Reply:
    return text(RIGHT_ANSWERS.get(last_user_message(request), WRONG_ANSWER))


def right_after(seconds: float) -> Any:
    def reply(request: dict[str, Any]) -> Reply:
        return slow(seconds, right(request))

    return reply


def right_stub() -> StubOpenAI:
    return StubOpenAI(right, models=("model-bf16",))


def wrong_stub() -> StubOpenAI:
    return StubOpenAI([text(WRONG_ANSWER)], models=("model-int4",))


def failing_stub() -> StubOpenAI:
    return StubOpenAI([error(500, "the GPU caught fire")])


def slow_stub(seconds: float) -> StubOpenAI:
    return StubOpenAI(right_after(seconds))
