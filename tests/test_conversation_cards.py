"""Cards weighed with no model ("h100 or h200?", "diferencia entre l40s y rtx a6000"): each card's
memory, bandwidth, compute, FP8 units and link, what they mean for serving, and a model asked
for; a model said next is sized on each (tests/golden/conversation_cards*.jsonl, written before
the code: 1/10 before it, 10/10 after)."""

from __future__ import annotations

import re

import pytest

import tools
from assistant.offline.understanding import understand
from assistant.schemas import ConversationState
from tests.conversation_scoring import (
    _assistant,
    assert_share_passed,
    load,
    recording_store,
    score_conversations,
    score_singles,
)

SINGLES = load("conversation_cards.jsonl")
CONVERSATIONS = load("conversation_cards_turns.jsonl")
CARDS = {card.id: card for card in tools.list_cards()}


def test_the_card_questions_are_answered() -> None:
    scores = score_singles(SINGLES) + score_conversations(CONVERSATIONS)
    assert_share_passed(scores, 0.9)


@pytest.mark.parametrize(
    ("message", "cards"),
    [
        ("h100 or h200?", ("h100-80gb", "h200")),
        ("l4 vs l40s vs a100", ("l4", "l40s", "a100-80gb")),
        ("b200 vs mi300x", ("b200", "mi300x")),
    ],
)
def test_the_ratios_come_from_the_card_data(message: str, cards: tuple[str, ...]) -> None:
    reply = _assistant(recording_store()).answer(message, ConversationState())
    assert reply.calculations == [] and reply.state.compared_cards == list(cards)
    bandwidths = [CARDS[card].bandwidth_gbps for card in cards]
    fastest = CARDS[cards[bandwidths.index(max(bandwidths))]].name
    ratio = max(bandwidths) / min(bandwidths)  # type: ignore[type-var, operator]
    said = re.search(r"(\S.*?) streams each user's answer up to about ([\d.]+)× faster", reply.answer)
    assert said is not None and said.group(1).endswith(fastest)
    assert float(said.group(2)) == pytest.approx(ratio, abs=0.051)
    for card in cards:  # one row per card
        assert f"| {CARDS[card].name} |" in reply.answer


def test_a_model_after_the_comparison_is_sized_on_each_card() -> None:
    assistant = _assistant(recording_store())
    state = assistant.answer("l40s or a100?", ConversationState()).state
    sized = assistant.answer("for qwen2.5 32b at 4 bits with 10 users", state)
    assert {result.options[0].card for result in sized.calculations} >= {"l40s", "a100-80gb"}
    assert sized.state.compared_cards == []  # one turn


def test_with_a_model_in_the_conversation_the_cards_size_it() -> None:
    assistant = _assistant(recording_store())
    state = assistant.answer("llama 3.1 8b", ConversationState()).state
    reply = assistant.answer("l40s or a100?", state)
    assert reply.calculations and "three figures decide" not in reply.answer


@pytest.mark.parametrize(
    ("message", "cards"),
    [
        ("h100 pcie or sxm?", ("h100-pcie", "h100-80gb")),
        ("difference between an H100 SXM and PCIe", ("h100-80gb", "h100-pcie")),
        ("h100 on pcie", ("h100-80gb",)),  # no "or": one card
        ("llama 70b on an h100 pcie", ("h100-pcie",)),
    ],
)
def test_a_form_factor_alone_after_a_card_is_its_sibling(message: str, cards: tuple[str, ...]) -> None:
    assert understand(message).cards == cards


def test_a_card_without_fp8_units_is_said() -> None:
    reply = _assistant(recording_store()).answer("rtx 4090 vs rtx 3090", ConversationState())
    assert "RTX 3090 has no FP8 units" in reply.answer
    same = _assistant(recording_store()).answer("h100 or h200?", ConversationState())
    assert "no FP8 units" not in same.answer and "about the same speed (989 TFLOPS)" in same.answer
