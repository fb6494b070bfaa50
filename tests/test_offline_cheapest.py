""" "The cheapest card" with no precision named is answered at each of the three common
precisions: the least memory that holds it at each, the cheapest of them first, with the quality
caveat below 16 bits; with a precision named, that precision's alone. No price is invented."""

from __future__ import annotations

import pytest

from tests.conversation_scoring import ask_turns
from tools import SizingRequest
from tools.reverse import fewest_gpus, smallest_card


def _smallest(model: str, precision: str) -> str:
    found = smallest_card(SizingRequest(model=model, precision=precision))
    assert found is not None
    return found.options[0].label


@pytest.mark.parametrize(
    ("question", "model"),
    [
        ("cheapest way to run llama 70b", "llama-3.1-70b"),
        ("cual es la tarjeta mas barata para qwen 2.5 32b?", "qwen2.5-32b"),
    ],
)
def test_no_precision_gives_the_smallest_card_at_each(question: str, model: str) -> None:
    (reply,) = ask_turns(question)
    lead = reply.answer.split("\n\n")[0]
    at_four, at_sixteen = _smallest(model, "int4"), _smallest(model, "bf16")
    assert at_four in lead and at_sixteen in reply.answer
    assert lead.index(at_four) < lead.index(at_sixteen) if at_sixteen in lead else True
    assert {result.precision for result in reply.calculations} >= {"int4", "bf16"}
    assert "quality" in reply.answer or "calidad" in reply.answer
    assert "$" not in reply.answer and "€" not in reply.answer


def test_a_named_precision_gives_its_smallest_card_alone() -> None:
    (reply,) = ask_turns("the cheapest card for llama 3.1 8b at 4 bits")
    assert {result.precision for result in reply.calculations} == {"int4"}
    assert _smallest("llama-3.1-8b", "int4") in reply.answer.split("\n\n")[0]


@pytest.mark.parametrize(
    ("question", "model", "precision"),
    [
        ("cheapest card for llama 3.1 405b", "llama-3.1-405b", "int4"),
        ("la tarjeta mas barata para llama 405b en fp8", "llama-3.1-405b", "fp8"),
    ],
)
def test_no_single_card_gives_the_fewest_cards_that_hold_it(
    question: str, model: str, precision: str
) -> None:
    (reply,) = ask_turns(question)
    found = fewest_gpus(SizingRequest(model=model, precision=precision))
    assert found.result is not None and found.count and found.count > 1
    lead = reply.answer.split("\n\n")[0]
    assert found.result.options[0].label in lead
    assert any(result.options[0].fits for result in reply.calculations)
