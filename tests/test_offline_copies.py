"""A model whose heads do not split over the GPUs asked about is served there as copies: the
offline answer says yes, how, and why not as one model, never "does not fit" with room to spare."""

from __future__ import annotations

import re

import pytest

from assistant.schemas import ConversationState
from tests.conversation_scoring import _assistant, recording_store

CASES = [
    ("en", "can I serve qwen2.5 7b on 8 h100 for 30 users?", "Yes, as 8 copies"),
    ("es", "¿puedo servir qwen2.5 7b en 8 h100 para 30 usuarios?", "Sí, como 8 copias"),
    ("en", "qwen 2.5 7b at fp8 on six L40S, 12 users", "Yes, as 6 copies"),
]


@pytest.mark.parametrize(("lang", "question", "lead"), CASES)
def test_copies_answer_yes_with_the_plan(lang: str, question: str, lead: str) -> None:
    reply = _assistant(recording_store()).answer(question)
    answer = reply.answer.split("<details")[0]
    first = answer.strip().splitlines()[0]
    assert lead in first, first
    assert "28" in first  # the heads that do not split
    assert not re.search(r"-\d", first)  # no negative shortfall
    assert "tensor-parallel-size 1" in answer or "tensor-parallel-size 1" in reply.answer


def test_serving_after_training_uses_the_copies() -> None:
    assistant, state = _assistant(recording_store()), ConversationState()
    for question in ("full finetune qwen2.5 7b on 8 h100s", "what about serving it after for 30 users?"):
        reply = assistant.answer(question, state)
        state = ConversationState.model_validate_json(reply.state.model_dump_json())
    first = reply.answer.strip().splitlines()[0]
    assert "Yes, as 8 copies" in first and "does not fit" not in first, first
