"""A question with no slot about the model already named: "how fast is it?", "what's the
latency?", "any cheaper option?", "¿y cuánto tarda en responder?" (tests/golden/
conversation_asked_turns.jsonl, written before the code: 4/10 before it, once the crash it found
was fixed, 10/10 after)."""

from __future__ import annotations

import pytest

from assistant.offline.understanding import understand
from assistant.schemas import ConversationState
from tests.conversation_scoring import (
    _assistant,
    assert_share_passed,
    load,
    recording_store,
    score_conversations,
)

CONVERSATIONS = load("conversation_asked_turns.jsonl")
CAPACITY = load("conversation_capacity.jsonl") + load("conversation_capacity_fresh.jsonl")


def test_the_questions_about_the_model_named_are_answered() -> None:
    scores = score_conversations(CONVERSATIONS)
    assert_share_passed(scores, 0.9)


@pytest.mark.parametrize(
    ("message", "question"),
    [
        ("any cheaper option?", "cheapest"),
        ("something more affordable", "cheapest"),
        ("¿hay algo más económico?", "cheapest"),
        ("can we do it for less?", "cheapest"),
        ("¿y cuánto tarda en responder?", "latency"),
        ("what's the response time?", "latency"),
        ("how long will it take to process 10,000 documents?", None),  # a batch job, not latency
    ],
)
def test_the_question_is_read(message: str, question: str | None) -> None:
    assert understand(message).question == question


@pytest.mark.parametrize("case", CAPACITY, ids=lambda case: case["id"])
def test_the_state_after_a_capacity_question_survives_the_web_apps_round_trip(case: dict) -> None:
    # The web app stores the state as JSON and validates it on the next turn; a last question the
    # schema did not list ("capacity") made that fail, and the conversation silently restarted.
    reply = _assistant(recording_store()).answer(case["q"], ConversationState())
    again = ConversationState.model_validate_json(reply.state.model_dump_json())
    assert again.last_question == reply.state.last_question


def test_every_golden_questions_state_survives_the_round_trip() -> None:
    # Any field set without validation (model_copy) and outside its schema would restart a web
    # conversation; every single question of every golden split is asked once.
    from tests.conversation_scoring import GOLDEN

    assistant = _assistant(recording_store())
    broken = []
    for path in sorted(GOLDEN.glob("conversation_*.jsonl")):
        if path.name.endswith("_turns.jsonl"):
            continue
        for case in load(path.name):
            state = assistant.answer(case["q"], ConversationState()).state
            try:
                ConversationState.model_validate_json(state.model_dump_json())
            except ValueError as error:
                broken.append((case["id"], str(error).splitlines()[1]))
    assert not broken
