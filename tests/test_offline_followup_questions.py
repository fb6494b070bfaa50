"""A follow-up that only changes a slot asks the last question again.

"and with 32 users?" after "how many tokens per second?" is the speed at 32 users, "and at 4
bits?" after "the cheapest card" the cheapest card at 4 bits; a concept question or another
question of its own is not a follow-up.
"""

from __future__ import annotations

import pytest

from tests.conversation_scoring import ask_turns

SPEED = "tokens/s per user"


def test_a_speed_follow_up_with_more_users_gives_the_speed_at_that_load() -> None:
    *_, after = ask_turns("llama 3.1 8b on an l40s", "how many tokens per second?", "and with 32 users?")
    lead = after.answer.split("\n\n")[0]
    assert SPEED in lead and "32 requests at once" in lead


def test_a_latency_follow_up_on_another_card_in_spanish() -> None:
    _, after = ask_turns("¿qué latencia tiene qwen2.5 7b en una l4?", "¿y en una 4090?")
    lead = after.answer.split("\n\n")[0]
    assert lead.startswith("**RTX 4090") and "primer token en" in lead


@pytest.mark.parametrize(
    ("first", "then", "expected"),
    [
        ("how many h100s for llama 3.1 70b?", "and with 50 users?", "is the smallest count that holds it"),
        ("the cheapest card for llama 3.1 8b", "and at 4 bits?", "holds Llama 3.1 8B at 4-bit (INT4)"),
        ("how much context fits with llama 3.1 8b on a 4090", "and with int4?", "tokens of context for 1"),
    ],
)
def test_a_follow_up_asks_the_last_question_again(first: str, then: str, expected: str) -> None:
    _, after = ask_turns(first, then)
    assert expected in after.answer.split("\n\n")[0]


def test_a_concept_question_after_a_speed_answer_is_no_speed_question() -> None:
    *_, after = ask_turns("how many tokens per second for llama 3.1 8b on an l40s", "what is fp8?")
    assert SPEED not in after.answer.split("\n\n")[0]


def test_another_question_replaces_the_last_one() -> None:
    *_, after = ask_turns(
        "how many tokens per second for llama 3.1 8b on an l40s",
        "how many l40s for llama 3.1 70b?",
        "and at 4 bits?",
    )
    lead = after.answer.split("\n\n")[0]
    assert "the smallest count that holds it" in lead or "holds it" in lead
    assert SPEED not in lead
    assert after.state.last_question == "gpu_count"


@pytest.mark.parametrize(
    "message",
    [
        "is an H100 fast enough for 50 users chatting with llama 3.3 70b in fp8?",
        "will 50 users get a responsive chat with llama 3.1 70b awq on 2 l40s?",
    ],
)
def test_a_speed_question_on_a_card_too_small_gives_the_speed_where_it_fits(message: str) -> None:
    (reply,) = ask_turns(message)
    lead = reply.answer.split("\n\n")[0]
    # No card class holds it: the speed is the smallest hardware beyond them that does.
    assert "does not fit it; the speed is for 2× H200" in lead
    assert "**2× H200:" in lead and SPEED in lead and "50 requests at once" in lead
