"""A number between a model family and a card is read once: as the family's version where the
catalog has that version ("qwen 3 h100": Qwen3 on one H100), as the card count where it has
not and a card follows ("deepseek 8 h200": eight H200s, and the answer says so), else as a size
written without its "b" ("gpt oss 20"); beyond one node's 8 cards a number that is a family
model's size is that size ("qwen3 32 h100": Qwen3 32B on one H100). A card count may have a count
noun or the maker between it and the card ("8 gpus h100", "4 tarjetas l40s", "two nvidia h100")."""

from __future__ import annotations

import pytest

from assistant.offline.understanding import understand
from tests.conversation_scoring import ask_turns


@pytest.mark.parametrize(
    ("text", "gpu"),
    [
        ("llama 3.1 70b on 8 gpus h100", "h100-80gb:8"),
        ("llama 3.1 70b con 4 tarjetas l40s", "l40s:4"),
        ("llama 3.1 70b en 2 gpus a100 de 80gb", "a100-80gb:2"),
        ("llama 3.1 70b on two nvidia h100", "h100-80gb:2"),
        ("llama 3.1 70b en 4 gráficas rtx 4090", "rtx-4090:4"),
        ("qwen2.5 32b on 2 x rtx 4090", "rtx-4090:2"),
        ("llama 3.1 70b on 3 users h100", "h100-80gb"),  # users are no count of cards
    ],
)
def test_a_count_noun_or_maker_between_count_and_card_keeps_the_count(text: str, gpu: str) -> None:
    assert understand(text).gpu == gpu


@pytest.mark.parametrize(
    ("text", "model", "family", "gpu"),
    [
        ("qwen 3 h100", "qwen3-8b", None, "h100-80gb"),
        ("phi 4 l4", "phi-4", None, "l4"),
        ("gemma 3 4090", None, "gemma 3", "rtx-4090"),
        ("llama 2 70b a100", "llama-3.1-70b", None, "a100-80gb"),
        ("gemma 2 27b 2 rtx 4090", "gemma-2-27b", None, "rtx-4090:2"),
        ("deepseek 8 h200", None, "deepseek", "h200:8"),
        ("quiero qwen 4 l40s para 20 usuarios", None, "qwen", "l40s:4"),
        ("llama 8 h100", None, "llama", "h100-80gb:8"),  # a card right after: the count
        # No version and no card after it: a family model's size written without its "b".
        ("gpt oss 20 on a 4090", "gpt-oss-20b", None, "rtx-4090"),
        ("qwen 72 on 2 h100", "qwen2.5-72b", None, "h100-80gb:2"),
        ("mistral 24 on a 4090", "mistral-small-24b", None, "rtx-4090"),
        ("llama3.1 70 en 2 a100", "llama-3.1-70b", None, "a100-80gb:2"),
        # Beyond one node's 8 cards, a number that is a family model's size is the size.
        ("qwen3 32 h100", "qwen3-32b", None, "h100-80gb"),
        ("deepseek 16 h100", None, "deepseek", "h100-80gb:16"),  # no 16B DeepSeek: 16 cards
    ],
)
def test_a_number_after_a_family_is_its_version_or_the_card_count(
    text: str, model: str | None, family: str | None, gpu: str
) -> None:
    reading = understand(text)
    assert (reading.model, reading.family, reading.gpu) == (model, family, gpu)


def test_a_number_read_as_the_count_says_so() -> None:
    (reply,) = ask_turns("deepseek 8 h200")
    assert "8× H200" in reply.answer
    assert "The catalog has no DeepSeek 8 model, so 8 is read as the number of cards." in reply.answer
    (reply,) = ask_turns("quiero qwen 4 l40s para 20 usuarios")
    assert reply.language == "es"
    assert "leo 4 como el número de tarjetas" in reply.answer
    assert "4× L40S" in reply.answer


def test_a_version_with_no_card_after_it_is_still_a_version() -> None:
    reading = understand("can I run gemma 4?")
    assert reading.unknown_model == "Gemma 4" and reading.gpu is None


@pytest.mark.parametrize(
    ("turns", "model"),
    [
        (("phi-3 mini", "the 14b"), "phi-4"),
        (("gemma 4", "the 27b"), "gemma-2-27b"),
        (("can I run gemma 4 on a 4090?", "what about the 9b"), "gemma-2-9b"),
    ],
)
def test_a_size_after_an_unknown_version_is_the_familys_model(turns: tuple[str, ...], model: str) -> None:
    first, second = ask_turns(*turns)
    assert not first.calculations
    assert "Which model do you want to run?" in first.answer  # the note lists the models once
    assert first.answer.count(first.answer.split("; of that family it has ")[1].split(".")[0]) == 1
    assert second.calculations and second.calculations[0].model.id == model
