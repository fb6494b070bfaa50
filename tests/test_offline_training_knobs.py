"""A training question is sized with the knobs it gives: micro-batch, sequence length, optimizer
and gradient checkpointing, in English and Spanish, written the way people and training scripts
write them. A knob said is stated as said, the rest as assumed; a training follow-up ("and on an
L40S?", "¿y con lote de 8?") changes one knob of the same training; a batch figure in a serving
question stays a number of users."""

from __future__ import annotations

import re

import pytest

from assistant.offline.understanding import understand
from assistant.service import Assistant, build_assistant
from assistant.settings import Settings
from tools import SizingRequest, calculate_vram
from tools.finetune import FinetuneSpec

READINGS = [
    # message, (micro-batch, sequence, optimizer, checkpointing)
    ("full fine-tune llama 3.1 8b, micro-batch size 2, seq len 8k", (2, 8192, None, None)),
    ("lora on qwen2.5 7b with bs=4 and max_seq_length 2048", (4, 2048, None, None)),
    ("qlora mistral 7b, --per_device_train_batch_size 8 --max_seq_length 1024", (8, 1024, None, None)),
    ("LoRA llama 3.1 8b with 4096-token sequences and paged_adamw_8bit", (None, 4096, "adamw8bit", None)),
    ("full finetune of gemma 2 9b with SGD and no gradient checkpointing", (None, None, "sgd", False)),
    ("train a lora on qwen2.5 14b, 16 sequences per step, 8-bit Adam", (16, None, "adamw8bit", None)),
    ("fine-tune llama 3.2 3b with gradient checkpointing on and a batch of 2", (2, None, None, True)),
    ("fine-tune llama 3.1 8b with 16k context", (None, 16384, None, None)),
    # A global (effective) batch is not the micro-batch each GPU holds.
    ("full fine-tune llama 3.1 8b, global batch 64 with micro-batch 4", (4, None, None, None)),
    ("lora on llama 3.1 8b, effective batch size 32, per-device batch 2", (2, None, None, None)),
    ("ajuste fino completo de llama 3.1 8b con lote de 4 y secuencias de 2048 tokens", (4, 2048, None, None)),
    ("LoRA de qwen2.5 7b, tamaño de lote 16, longitud de secuencia 4096", (16, 4096, None, None)),
    ("qlora de mistral 7b con adamw de 8 bits, sin gradient checkpointing", (None, None, "adamw8bit", False)),
    # A batch said in words is the same knob.
    ("full fine-tune of phi-3 mini with a batch of eight", (8, None, None, None)),
    ("lora de llama 3.1 8b con lote de cuatro y secuencias de 1024 tokens", (4, 1024, None, None)),
]


@pytest.mark.parametrize(("message", "knobs"), READINGS, ids=lambda v: str(v)[:40])
def test_a_training_message_gives_its_knobs(message: str, knobs: tuple) -> None:
    reading = understand(message)
    said = (reading.train_batch, reading.train_seq, reading.train_optimizer, reading.gradient_checkpointing)
    assert said == knobs
    # The figures are the training's, not a serving load, a context or a weights precision.
    assert reading.users is None
    assert "int8" not in reading.precisions and "fp8" not in reading.precisions


def test_a_batch_in_a_serving_question_stays_users() -> None:
    reading = understand("serve llama 3.1 8b on vllm with batch size 8")
    assert reading.users == 8
    assert reading.tasks != "finetuning"


def test_a_name_is_not_an_optimizer() -> None:
    reading = understand("Hi, I'm Adam. We need llama 3.1 8b for 20 users on an L40S")
    assert reading.tasks != "finetuning" and reading.train_optimizer is None and reading.users == 20


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    data = tmp_path_factory.mktemp("data")
    return build_assistant(Settings(data_dir=data, llm_base_url=None, llm_model=None, chroma_url=None))


def _expected(model: str, gpu: str | None = None, **knobs: object) -> float:
    request = SizingRequest(model=model, engine="transformers", gpu=gpu, finetune=FinetuneSpec(**knobs))
    result = calculate_vram(request)
    assert result.finetune is not None
    return result.finetune.total_gb


def _lead(answer: str) -> str:
    return answer.split("\n\n", 1)[0]


def test_the_knobs_said_are_sized_and_said(assistant: Assistant) -> None:
    reply = assistant.answer("full fine-tune llama 3.1 8b, batch 4, seq 4096, 8-bit adam, on an h100", None)
    full = next(r for r in reply.calculations if r.finetune and r.finetune.method == "full")
    assert full.finetune is not None
    assert (full.finetune.batch, full.finetune.seq, full.finetune.optimizer) == (4, 4096, "adamw8bit")
    per_gpu = _expected("llama-3.1-8b", "h100-80gb", method="full", batch=4, seq=4096, optimizer="adamw8bit")
    lead = _lead(reply.answer)
    assert f"{per_gpu:,.2f} GB" in lead
    told = re.search(r"As you said: ([^.]+)\.", lead)
    assert told, lead
    assert (
        "4 sequences" in told.group(1) and "4,096 tokens" in told.group(1) and "8-bit AdamW" in told.group(1)
    )
    assumed = lead[lead.index("Assumed:") :]
    assert "micro-batch" not in assumed and "AdamW states in bf16" not in assumed
    assert "gradient checkpointing" in assumed  # not said: the default, stated as assumed


def test_nothing_said_keeps_the_defaults_and_says_them(assistant: Assistant) -> None:
    lead = _lead(assistant.answer("full fine-tune of llama 3.1 8b, how much memory?", None).answer)
    assert "As you said" not in lead
    assert "a micro-batch of 1 sequence per GPU" in lead and "2,048 tokens per sequence" in lead


def test_a_sharded_training_is_said_per_gpu(assistant: Assistant) -> None:
    reply = assistant.answer("full fine-tune llama 3.1 8b on 4 A100 80GB, batch 8 per GPU, seq 4096", None)
    per_gpu = _expected("llama-3.1-8b", "a100-80gb:4", method="full", batch=8, seq=4096)
    lead = _lead(reply.answer)
    assert f"{per_gpu:,.2f} GB per GPU on 4 GPUs" in lead
    assert "on one GPU" not in lead


def test_a_card_after_a_training_question_resizes_the_training(assistant: Assistant) -> None:
    first = assistant.answer("full fine-tune of llama 3.1 8b, batch 4, seq 4096", None)
    reply = assistant.answer("and on an L40S?", first.state)
    trained = [r for r in reply.calculations if r.finetune is not None]
    assert trained, reply.answer[:300]
    assert all(r.finetune.batch == 4 and r.finetune.seq == 4096 for r in trained if r.finetune)
    assert all(option.card == "l40s" for r in trained for option in r.options)


def test_a_spanish_batch_follow_up_changes_the_batch(assistant: Assistant) -> None:
    first = assistant.answer("lora de qwen2.5 7b, lote de 2, secuencias de 8192 tokens", None)
    reply = assistant.answer("¿y con lote de 8?", first.state)
    lora = next(r for r in reply.calculations if r.finetune and r.finetune.method == "lora")
    assert lora.finetune is not None and (lora.finetune.batch, lora.finetune.seq) == (8, 8192)
    assert "Según indica" in _lead(reply.answer)


def test_a_card_after_a_serving_question_stays_serving(assistant: Assistant) -> None:
    first = assistant.answer("llama 3.1 8b in bf16 for 10 users", None)
    reply = assistant.answer("and on an L40S?", first.state)
    assert reply.calculations and all(r.finetune is None for r in reply.calculations)


def test_users_after_a_training_answer_ask_for_serving(assistant: Assistant) -> None:
    first = assistant.answer("lora on llama 3.1 8b with batch 4", None)
    reply = assistant.answer("and serving it to 20 users in fp8?", first.state)
    assert reply.calculations and all(r.finetune is None for r in reply.calculations)
