"""Fine-tuning memory: each part worked by hand, the CLI flags, and every bad input."""

from __future__ import annotations

import pytest

from tools import SizingRequest, SizingResult, calculate_vram
from tools.architecture import architecture_from_config
from tools.calibration import all_results
from tools.errors import InvalidInputError, UnknownChoiceError
from tools.finetune import FinetuneSpec, activation_bytes_per_token_layer, lora_params, training_memory

LLAMA2_7B = architecture_from_config(
    {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32000,
        "tie_word_embeddings": False,
    }
)


def calc(**kwargs: object) -> SizingResult:
    return calculate_vram(SizingRequest(**kwargs))  # type: ignore[arg-type]


def test_full_fine_tuning_is_weights_gradients_and_two_adamw_states() -> None:
    params = LLAMA2_7B.total_params()
    memory = training_memory(LLAMA2_7B, params, FinetuneSpec(method="full", optimizer="adamw"))
    assert memory.weights == params * 2 and memory.gradients == params * 2
    assert memory.optimizer == params * 4  # exp_avg + exp_avg_sq in bf16
    eight_bit = training_memory(LLAMA2_7B, params, FinetuneSpec(method="full", optimizer="adamw8bit"))
    assert eight_bit.optimizer == params * 2
    assert training_memory(LLAMA2_7B, params, FinetuneSpec(method="full", optimizer="sgd")).optimizer == 0


def test_lora_trains_rank_times_in_plus_out_per_projection() -> None:
    # Q and V of Llama-2-7B: 32 layers × 2 matrices × 8 × (4096 + 4096).
    assert lora_params(LLAMA2_7B, 8, ("attn_q", "attn_v")) == 32 * 2 * 8 * 8192
    spec = FinetuneSpec(method="lora", lora_rank=8, targets=("attn_q", "attn_v"))
    memory = training_memory(LLAMA2_7B, LLAMA2_7B.total_params(), spec)
    trainable = 32 * 2 * 8 * 8192
    assert memory.trainable_params == trainable
    assert memory.adapters == trainable * 4 and memory.gradients == trainable * 4
    assert memory.optimizer == trainable * 8  # fp32 AdamW states
    assert memory.weights == LLAMA2_7B.total_params() * 2  # the frozen base in bf16


def test_qlora_stores_the_base_in_nf4() -> None:
    lora = calc(model="llama-3.1-8b", finetune=FinetuneSpec(method="lora"))
    qlora = calc(model="llama-3.1-8b", finetune=FinetuneSpec(method="qlora"))
    assert qlora.finetune and lora.finetune
    assert qlora.finetune.weights_gb < 0.4 * lora.finetune.weights_gb
    assert qlora.below_16_bit and qlora.caveat and "NF4" in qlora.caveat


def test_gradient_checkpointing_keeps_only_layer_inputs() -> None:
    on = FinetuneSpec(method="lora", seq=4096, gradient_checkpointing=True)
    off = on.model_copy(update={"gradient_checkpointing": False})
    params = LLAMA2_7B.total_params()
    with_ckpt = training_memory(LLAMA2_7B, params, on).activations
    without = training_memory(LLAMA2_7B, params, off).activations
    per_layer = activation_bytes_per_token_layer(LLAMA2_7B)
    assert without == 4096 * 32 * per_layer
    assert with_ckpt == 4096 * (32 * 2 * 4096 + 2 * per_layer)
    assert without > 5 * with_ckpt


def test_total_is_the_training_total_and_the_breakdown_adds_up() -> None:
    result = calc(model="llama-3.1-8b", finetune=FinetuneSpec(method="full"), gpu="h100-80gb")
    ft = result.finetune
    assert ft is not None and result.total_gb == ft.total_gb
    parts = (
        ft.weights_gb + ft.gradients_gb + ft.optimizer_gb + ft.adapters_gb + ft.activations_gb + ft.logits_gb
    )
    assert parts + ft.overhead_gb == pytest.approx(ft.total_gb, abs=0.03)
    line = next(line for line in result.arithmetic if line.startswith("Per GPU:"))
    numbers = [float(x) for x in line.split(": ", 1)[1].split(" (")[0].split(" + ")]
    assert sum(numbers) == pytest.approx(ft.total_gb, abs=0.03)


def test_more_gpus_shard_the_states_and_raise_the_batch() -> None:
    one = calc(model="llama-3.1-8b", finetune=FinetuneSpec(method="full"), gpu="h100-80gb")
    four = calc(model="llama-3.1-8b", finetune=FinetuneSpec(method="full"), gpu="h100-80gb:4")
    assert four.finetune and one.finetune
    assert four.finetune.optimizer_gb == pytest.approx(one.finetune.optimizer_gb / 4, abs=0.01)
    assert four.options[0].max_concurrent_sequences > one.options[0].max_concurrent_sequences
    assert "FSDP" in " ".join(four.arithmetic)


def test_when_it_does_not_fit_the_suggestions_are_computed() -> None:
    result = calc(model="llama-3.1-70b", finetune=FinetuneSpec(method="full"), gpu="h100-80gb")
    assert result.recommended is None
    text = " ".join(result.suggestions)
    assert "LoRA instead of full fine-tuning" in text and "QLoRA" in text and "8-bit AdamW" in text
    qlora = calc(model="llama-3.1-70b", finetune=FinetuneSpec(method="qlora"), gpu="h100-80gb")
    assert qlora.options[0].fits and "QLoRA (the base model in NF4)" in text
    es = calc(model="llama-3.1-70b", finetune=FinetuneSpec(method="full"), gpu="h100-80gb", lang="es")
    assert es.recommendation.startswith("Ajuste completo de") and "Vea las sugerencias" in es.recommendation


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (FinetuneSpec(method="dpo"), "unknown fine-tuning method 'dpo'"),
        (FinetuneSpec(optimizer="lion"), "unknown optimizer 'lion'"),
        (FinetuneSpec(lora_rank=0), "lora rank must be"),
        (FinetuneSpec(batch=0), "batch must be"),
        (FinetuneSpec(seq=10**9), "seq must be"),
    ],
)
def test_bad_fine_tuning_input_is_one_clear_error(spec: FinetuneSpec, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        calc(model="llama-3.1-8b", finetune=spec)


def test_a_serving_engine_with_finetune_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="not for the serving engine 'vllm'"):
        calc(model="llama-3.1-8b", engine="vllm", finetune=FinetuneSpec())
    assert calc(model="llama-3.1-8b", engine="transformers", finetune=FinetuneSpec()).finetune
    assert isinstance(UnknownChoiceError("x", "y", ["z"]), InvalidInputError)


def test_held_out_fine_tuning_cases_stay_within_their_band() -> None:
    """No constant was fit to these; the median error is reported by benchmarks/accuracy.py."""
    rows = [r for r in all_results() if r.kind == "finetune"]
    assert len(rows) >= 8
    errors = sorted(abs(r.error) for r in rows)
    assert errors[len(errors) // 2] < 0.15
    assert max(errors) < 0.5
