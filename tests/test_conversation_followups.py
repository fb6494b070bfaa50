"""Short replies to what the assistant itself asked: "20" after "how many concurrent users?",
"users" after "32 of what?", and "8 bits" that does not switch the conversation's language
(tests/golden/conversation_followups_turns.jsonl, written before the code: 1/10 before it, 9/10
after; the miss expects "fp8 with 20 users" to keep a Spanish conversation Spanish, which the
marker words do not do)."""

from __future__ import annotations

import pytest

from assistant.offline.sizing import read_as_answer
from assistant.offline.understanding import detect_language, understand
from assistant.schemas import ConversationState
from tests.conversation_scoring import (
    _assistant,
    assert_share_passed,
    load,
    recording_store,
    score_conversations,
)

CONVERSATIONS = load("conversation_followups_turns.jsonl")


def test_the_followup_conversations_are_answered() -> None:
    scores = score_conversations(CONVERSATIONS)
    assert_share_passed(scores, 0.9)


@pytest.mark.parametrize(
    ("message", "asked", "users", "context"),
    [
        ("20", ["users"], 20, None),
        ("about 10", ["tasks", "context", "users"], 10, None),
        ("serán unos 12", ["users"], 12, None),
        ("~30 or so", ["users"], 30, None),
        ("veinte", ["users"], 20, None),
        ("16384", ["context", "users"], None, 16384),  # a context-sized number, when both were asked
        ("4096", ["context"], None, 4096),
        ("8", ["context"], None, 8),  # only the context was asked: that is what it answers
        ("20", [], None, None),  # nothing asked: the number stays bare, and is asked about
        ("20", ["precision"], None, None),
        ("and with 20?", ["users"], None, None),  # a what-if, not an answer: cards or users is asked
    ],
)
def test_a_bare_number_answers_the_slot_that_was_asked(
    message: str, asked: list[str], users: int | None, context: int | None
) -> None:
    state = ConversationState(model="llama-3.1-8b", asked=asked)  # type: ignore[arg-type]
    reading = read_as_answer(message, state, understand(message, "en"))
    assert (reading.users, reading.context) == (users, context)
    assert reading.bare_number == (None if users or context else understand(message).bare_number)


@pytest.mark.parametrize(
    ("message", "users", "card_count"),
    [("users", 32, None), ("usuarios", 32, None), ("gpus", None, 32), ("tarjetas", None, 32)],
)
def test_the_unit_said_after_a_bare_number_completes_it(
    message: str, users: int | None, card_count: int | None
) -> None:
    state = ConversationState(model="llama-3.1-8b", pending_count=32)
    reading = read_as_answer(message, state, understand(message, "en"))
    assert (reading.users, reading.card_count) == (users, card_count)


def test_a_message_that_names_something_else_does_not_take_the_pending_number() -> None:
    state = ConversationState(model="llama-3.1-8b", pending_count=32)
    reading = read_as_answer("at 4 bits then", state, understand("at 4 bits then", "en"))
    assert reading.users is None and reading.card_count is None and reading.precisions == ("int4",)


def test_the_pending_number_lasts_one_turn() -> None:
    assistant = _assistant(recording_store())
    state = assistant.answer("how much vram for llama 3.1 8b", ConversationState()).state
    asked = assistant.answer("and with 32?", state)
    assert asked.state.pending_count == 32 and "32" in asked.answer
    moved_on = assistant.answer("what about at 8 bits?", asked.state)
    assert moved_on.state.pending_count is None
    users = assistant.answer("users", moved_on.state)
    assert users.state.users != 32 and all(result.users != 32 for result in users.calculations)


def test_what_the_answer_asked_is_kept_in_the_state_it_returns() -> None:
    assistant = _assistant(recording_store())
    reply = assistant.answer("llama 3.1 8b on an h100 for chat with 8k context", ConversationState())
    assert reply.state.asked == ["precision", "users"] or reply.state.asked == ["users"]
    again = ConversationState.model_validate_json(reply.state.model_dump_json())
    answered = assistant.answer("20", again)
    assert any(result.users == 20 for result in answered.calculations)
    assert "users" not in answered.state.asked


@pytest.mark.parametrize(
    ("message", "default", "language"),
    [
        ("4 bits", "en", "en"),  # "bits" is English too: it marks neither language
        ("8 bits", "es", "es"),
        ("a 4 bits", "es", "es"),
        ("con tres?", "en", "es"),  # one Spanish word in a fragment is still Spanish
        ("can it run on an l40s instead?", "es", "en"),
    ],
)
def test_a_word_both_languages_write_does_not_switch_the_conversation(
    message: str, default: str, language: str
) -> None:
    assert detect_language(message, default)[0] == language  # type: ignore[arg-type]
