"""What a weights format is: "what is fp8?", "¿qué es awq?", "explain nf4" answered with the
format's definition (assistant/offline/data/formats.yaml) and the calculator's own count of its
bits, alone or before the model's sizing at that format (tests/golden/conversation_concepts*.jsonl,
written before the code: 3/10 before it, 10/10 after)."""

from __future__ import annotations

import pytest

import tools
from assistant.offline.texts import format_definition
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
from tools.texts import text as tool_text

SINGLES = load("conversation_concepts.jsonl")
CONVERSATIONS = load("conversation_concepts_turns.jsonl")


def test_the_format_questions_are_answered() -> None:
    scores = score_singles(SINGLES) + score_conversations(CONVERSATIONS)
    assert_share_passed(scores, 0.9)


@pytest.mark.parametrize("precision", tools.PRECISIONS)
@pytest.mark.parametrize("language", ["en", "es"])
def test_every_precision_the_calculator_knows_is_defined_in_both_languages(
    precision: str, language: str
) -> None:
    definition = format_definition(precision, language)  # type: ignore[arg-type]
    assert definition and precision.upper().replace("_", "") in definition.upper().replace("_", "")
    assert "{" not in definition


@pytest.mark.parametrize(
    ("message", "asked"),
    [
        ("what is fp8?", True),
        ("whats fp16", True),
        ("¿qué significa q4_k_m?", True),
        ("explain nf4", True),
        ("what is an fp8 kv cache?", True),
        ("what does mxfp4 mean?", True),
        ("what is the memory for llama 3.1 70b at fp8", False),
        ("what is llama 3.1 8b at int4 on an l4", False),
        ("fp8 please", False),
        ("what is llama at fp8", True),  # read as one, but a model named makes it a sizing
    ],
)
def test_a_format_question_is_only_the_format_asked_about(message: str, asked: bool) -> None:
    assert understand(message).format_question is asked


def test_the_definition_carries_the_calculators_own_count_of_the_bits() -> None:
    assistant = _assistant(recording_store())
    reply = assistant.answer("what is awq?", ConversationState())
    assert tool_text("fmt_awq", "en") in reply.answer
    assert "sizing compare" in reply.answer  # below 16 bits: where its quality cost is measured
    assert not reply.calculations and reply.state.missing_slots()[0] == "model"
    sixteen = assistant.answer("what is bf16?", ConversationState())
    assert "sizing compare" not in sixteen.answer


def test_after_a_model_the_definition_comes_before_its_sizing_at_that_format() -> None:
    assistant = _assistant(recording_store())
    state = assistant.answer("llama 3.1 8b on an l4", ConversationState()).state
    reply = assistant.answer("what is q4_k_m?", state)
    assert reply.answer.index("k-quants") < reply.answer.index("Llama 3.1 8B")
    assert {result.precision for result in reply.calculations} == {"q4_k_m"}


def test_an_fp8_kv_cache_is_defined_without_a_weights_note() -> None:
    reply = _assistant(recording_store()).answer("¿qué es una caché kv fp8?", ConversationState())
    assert "1 byte en lugar de 2" in reply.answer
    assert "La calculadora lo cuenta" not in reply.answer


def test_a_model_named_in_the_question_makes_it_a_sizing() -> None:
    reply = _assistant(recording_store()).answer("what is llama 3.1 8b at fp8", ConversationState())
    assert "E4M3" not in reply.answer and reply.calculations
