"""A fine-tuning question is answered for what it asked: the method it names leads the answer,
and a LoRA rank it gives is the rank sized (and said), not the default 16. Without either the
answer keeps its defaults (full fine-tuning first, rank 16) and says so."""

from __future__ import annotations

import re

import pytest

from assistant.service import Assistant, build_assistant
from assistant.settings import Settings
from tools import SizingRequest, calculate_vram
from tools.finetune import FinetuneSpec

CASES = [
    # message, model, card, method that leads, rank sized
    ("lora rank 64 on mistral 7b, will it fit my 4090", "mistral-7b", "rtx-4090", "lora", 64),
    ("full fine-tune of llama 3.1 8b on an h100?", "llama-3.1-8b", "h100-80gb", "full", 16),
    ("¿Puedo hacer QLoRA de Qwen2.5 32B en una RTX 4090?", "qwen2.5-32b", "rtx-4090", "qlora", 16),
    (
        "quiero entrenar un LoRA de rango 32 sobre Llama 3.1 8B en una L40S",
        "llama-3.1-8b",
        "l40s",
        "lora",
        32,
    ),
    ("fine-tune gemma 2 9b with lora r=8 on an rtx 4090", "gemma-2-9b", "rtx-4090", "lora", 8),
    ("qlora with rank 128 for qwen2.5 14b on an L4", "qwen2.5-14b", "l4", "qlora", 128),
    ("fine-tune mistral 7b on a 4090", "mistral-7b", "rtx-4090", "full", 16),
]
METHOD_WORDS = {"en": {"full": "full fine-tuning", "lora": r"(?<!Q)LoRA", "qlora": "QLoRA"}}
METHOD_WORDS["es"] = {**METHOD_WORDS["en"], "full": "ajuste fino completo"}


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    data = tmp_path_factory.mktemp("data")
    return build_assistant(Settings(data_dir=data, llm_base_url=None, llm_model=None, chroma_url=None))


def _lead(answer: str) -> str:
    return answer.split("\n\n", 1)[0]


@pytest.mark.parametrize(("message", "model", "card", "method", "rank"), CASES, ids=lambda v: str(v)[:30])
def test_the_method_asked_leads_and_the_rank_asked_is_sized(
    assistant: Assistant, message: str, model: str, card: str, method: str, rank: int
) -> None:
    reply = assistant.answer(message, None)
    lang = reply.language
    lead = _lead(reply.answer)
    # The headline (bold, first) names the method asked.
    headline = re.match(r"\*\*(.+?)\*\*", lead)
    assert headline, lead[:200]
    named = [m for m, pattern in METHOD_WORDS[lang].items() if re.search(pattern, headline.group(1))]
    assert named == [method], headline.group(1)
    # Its figure is the calculator's for that method and rank on the card asked.
    expected = calculate_vram(
        SizingRequest(
            model=model, engine="transformers", gpu=card, finetune=FinetuneSpec(method=method, lora_rank=rank)
        )
    )
    assert any(
        r.finetune is not None and r.finetune.method == method and abs(r.total_gb - expected.total_gb) < 0.006
        for r in reply.calculations
    ), [(r.finetune.method, r.total_gb) for r in reply.calculations if r.finetune]
    total = f"{expected.total_gb:,.2f}"
    if lang == "es":
        total = total.replace(",", "X").replace(".", ",").replace("X", ".")
    assert total in headline.group(1), (total, headline.group(1))
    # The rank sized is the one the answer says it assumed or was told.
    rank_words = f"rank {rank}" if lang == "en" else f"rango {rank}"
    assert rank_words in lead, lead[-600:]


def test_a_rank_alone_after_a_training_question_sizes_that_rank(assistant: Assistant) -> None:
    first = assistant.answer("lora rank 64 on mistral 7b, will it fit my 4090", None)
    totals = []
    state = first.state
    for message, rank in (("and with rank 8?", 8), ("¿y con rango 256?", 256)):
        reply = assistant.answer(message, state)
        state = reply.state
        lora = next(r for r in reply.calculations if r.finetune and r.finetune.method == "lora")
        assert lora.finetune is not None and lora.finetune.lora_rank == rank
        totals.append(lora.total_gb)
    assert totals[0] < totals[1]  # a larger rank trains more adapter parameters


def test_a_rank_in_a_serving_conversation_does_not_start_a_training_answer(assistant: Assistant) -> None:
    first = assistant.answer("llama 3.1 8b on an h100 with 10 users", None)
    reply = assistant.answer("and with rank 8?", first.state)
    assert all(r.finetune is None for r in reply.calculations)
