"""A family and a size that several catalog models match: the one whose name says that size is
sized ("qwen 30b" is Qwen3 30B-A3B), and of equals the others with another architecture are named
(tests/golden/conversation_names.jsonl, written before the code: 7/10 before it, 10/10 after)."""

from __future__ import annotations

import pytest

from assistant.offline.understanding import understand
from tests.conversation_scoring import assert_share_passed, load, score_singles

CASES = load("conversation_names.jsonl")


def test_the_family_size_questions_are_sized_as_the_model_meant() -> None:
    scores = score_singles(CASES)
    assert_share_passed(scores, 0.9)


@pytest.mark.parametrize(
    ("message", "model"),
    [
        ("qwen 30b", "qwen3-30b-a3b"),  # Qwen2.5 32B is within 10 % too; the name says 30
        ("qwen 8b", "qwen3-8b"),  # not Qwen2.5 7B, also within 10 %
        ("qwen 7b", "qwen2.5-7b"),
        ("qwen 32b", "qwen2.5-32b"),  # equals: the first in the catalog
        ("mixtral 47b", "mixtral-8x7b"),  # an expert count is no size: its parameters are
    ],
)
def test_the_name_that_says_the_size_wins(message: str, model: str) -> None:
    assert understand(message).model == model


@pytest.mark.parametrize(
    ("message", "named"),
    [("qwen 32b", "Qwen3 32B"), ("gemma 27b", "Gemma 3 27B"), ("gemma de 27b", "Gemma 3 27B")],
)
def test_another_architecture_of_the_same_size_is_named(message: str, named: str) -> None:
    notes = understand(message, "es" if " de " in message else "en").notes
    assert any(named in reading_note.text("en") for reading_note in notes)


@pytest.mark.parametrize("message", ["llama 70b", "qwen 30b", "not qwen 32b, llama 3.1 8b"])
def test_the_same_architecture_or_a_model_ruled_out_is_not_noted(message: str) -> None:
    assert not [n for n in understand(message).notes if n.key == "model_same_size"]


@pytest.mark.parametrize(
    "message",
    ["not qwen 32b, llama 3.1 8b", "llama 3.1 8b, not qwen 32b", "no qwen 32b sino llama 3.1 8b"],
)
def test_a_family_and_size_ruled_out_is_not_the_model(message: str) -> None:
    # The correction is read before the family word, not only right before the size.
    reading = understand(message)
    assert reading.model == "llama-3.1-8b" and "qwen2.5-32b" not in reading.other_models


@pytest.mark.parametrize(
    ("message", "others"),
    [
        ("deepseek v3 on 8 h200", None),  # one model named: the family's distill is no V3
        ("qwen2.5 on an l4", "Qwen2.5 14B, Qwen2.5 32B, Qwen2.5 72B"),
        ("mixtral on 2 a100", "Mixtral 8x22B"),
    ],
)
def test_a_name_with_no_size_lists_only_the_models_that_name_could_mean(
    message: str, others: str | None
) -> None:
    notes = [n.text("en") for n in understand(message).notes if n.key == "model_default_size"]
    assert notes == ([] if others is None else [notes[0]]) and (others is None or others in notes[0])


@pytest.mark.parametrize(
    ("message", "model", "card_count"),
    [
        ("q necesito pa correr un llama de 70 con 10 usuarios", "llama-3.1-70b", None),
        ("a llama of 70 for 10 users", "llama-3.1-70b", None),
        ("llama 3.1 de 70 en dos h100", "llama-3.1-70b", None),
        ("qwen 2.5 of 72 on 2 h100", "qwen2.5-72b", None),
        ("un qwen de 14", "qwen2.5-14b", None),
        ("llama de 8 gpus", None, 8),  # a count of cards, not Llama 3.1 8B
        ("un llama de 3 tarjetas", None, 3),
    ],
)
def test_a_size_after_de_or_of_is_the_familys_model(
    message: str, model: str | None, card_count: int | None
) -> None:
    reading = understand(message, "es")
    assert (reading.model, reading.card_count) == (model, card_count)


def test_a_context_after_de_is_no_size() -> None:
    reading = understand("qwen3 de 32k de contexto", "es")
    assert reading.context == 32768 and reading.model == "qwen3-8b"  # the name's default, not a 32B
