"""Card counts the way people write them: "a pair of 4090s", "un par de 3090", and a count with
no card name in a follow-up ("what about 2 gpus?", "y con cuatro tarjetas?", "2 of them",
"what if we get two?", "one more"), which is the conversation's card, that many. With no card in
the conversation yet, the count is said back and the visitor asked which card."""

from __future__ import annotations

import pytest

from assistant.offline.understanding import understand
from tests.conversation_scoring import ask_turns


@pytest.mark.parametrize(
    ("text", "gpu"),
    [
        ("can a pair of 4090s run llama 3 70b at 4 bit?", "rtx-4090:2"),
        ("se puede correr qwen 2.5 32b en un par de 3090?", "rtx-3090:2"),
        ("llama 3.1 70b fp8 on a couple of a100s", "a100-80gb:2"),
        ("mixtral 8x7b on a pair of rtx 6000 ada", "rtx-6000-ada:2"),
        ("llama 8b on a 4090", "rtx-4090"),  # no count: one card
    ],
)
def test_a_pair_or_a_couple_of_cards_is_two(text: str, gpu: str) -> None:
    assert understand(text).gpu == gpu


def test_a_couple_of_people_is_two_users() -> None:
    reading = understand("llama 3.1 8b on a 4090 for a couple of people at once")
    assert (reading.gpu, reading.users) == ("rtx-4090", 2)


@pytest.mark.parametrize(
    ("first", "then", "gpu", "shown"),
    [
        ("llama 3 70b on an h100", "what about 2 gpus?", "h100-80gb:2", "2× H100"),
        ("qwen2.5 72b on an a100 80gb", "and with 2 cards?", "a100-80gb:2", "2× A100"),
        ("llama 3.1 70b en una h100", "y con cuatro tarjetas?", "h100-80gb:4", "4× H100"),
        ("llama 3 70b on one l40s", "what about 2 of them?", "l40s:2", "2× L40S"),
        ("llama 3 70b on an h100", "what if we get two?", "h100-80gb:2", "2× H100"),
        ("llama 3 70b on 2 l40s", "and one more?", "l40s:3", "3× L40S"),
        ("qwen 2.5 32b en dos 3090", "y si compramos otra?", "rtx-3090:3", "3× RTX 3090"),
        ("llama 3 70b on 2 h100", "what about a single gpu?", "h100-80gb", "H100"),
        ("llama 3.1 70b on a 48gb card", "and 2 of those?", "48gb:2", "2×"),
    ],
)
def test_a_count_with_no_card_name_is_the_conversations_card(
    first: str, then: str, gpu: str, shown: str
) -> None:
    before, after = ask_turns(first, then)
    assert after.state.gpu == gpu
    assert after.state.model == before.state.model
    assert after.calculations and shown in after.answer


def test_users_said_with_of_them_stay_users() -> None:
    _, after = ask_turns("llama 3.1 8b on an l40s for 20 users", "what if 5 of them are at once?")
    assert (after.state.gpu, after.state.users) == ("l40s", 5)


def test_a_count_with_no_card_in_the_conversation_asks_which_card() -> None:
    _, after = ask_turns("llama 3.1 70b at fp8", "what about 2 gpus?")
    assert after.state.gpu is None
    assert "2 cards" in after.answer and "which card" in after.answer.lower()
    _, spanish = ask_turns("llama 3.1 70b en fp8", "y con dos tarjetas?")
    assert "2 tarjetas" in spanish.answer and "qué tarjeta" in spanish.answer.lower()


@pytest.mark.parametrize(
    ("then", "count", "asked"),
    [
        ("con tres?", 3, "¿3 qué: tarjetas o usuarios"),
        ("and with 4?", 4, "4 of what: cards or concurrent users"),
        ("what about 20?", 20, "20 of what"),
    ],
)
def test_a_lone_number_asks_cards_or_users_and_keeps_the_conversation(
    then: str, count: int, asked: str
) -> None:
    before, after = ask_turns("llama 3.1 8b on a 4090", then)
    assert asked in after.answer and not after.calculations
    assert (after.state.model, after.state.gpu, after.state.users) == (
        before.state.model,
        before.state.gpu,
        before.state.users,
    )
    _, _, sized = ask_turns("llama 3.1 8b on a 4090", then, f"{count} users")
    assert sized.state.users == count and sized.calculations


def test_a_lone_number_with_no_model_is_no_sizing_question() -> None:
    (reply,) = ask_turns("3")
    assert "of what" not in reply.answer and not reply.calculations
