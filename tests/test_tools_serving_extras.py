"""Serving extras counted where the engine counts them: vLLM LoRA slots, a draft model and its
cache, DeepSeek MTP heads, a vision tower from config.json; bad values are one clear error."""

from __future__ import annotations

import pytest

from tools import SizingRequest, SizingResult, calculate_vram
from tools.calibration import load_cases
from tools.catalog import resolve
from tools.errors import InvalidInputError
from tools.finetune import lora_params
from tools.kv_cache import kv_layout
from tools.serving_extras import vision_tower_params


def calc(**kwargs: object) -> SizingResult:
    return calculate_vram(SizingRequest(**kwargs))  # type: ignore[arg-type]


def test_lora_slots_are_max_loras_times_rank_sized_adapters_in_bf16() -> None:
    base = calc(model="llama-3.1-8b", gpu="l40s")
    with_slots = calc(model="llama-3.1-8b", gpu="l40s", max_loras=8, max_lora_rank=32)
    arch = resolve("llama-3.1-8b").arch
    slots = 8 * lora_params(arch, 32) * 2
    assert with_slots.total_gb == pytest.approx(base.total_gb + slots / 1e9, abs=0.02)
    assert with_slots.options[0].headroom_gb == pytest.approx(
        base.options[0].headroom_gb - slots / 1e9, abs=0.02
    )
    assert "8 LoRA slots at rank 32" in " ".join(with_slots.arithmetic)


def test_a_draft_model_adds_its_weights_and_its_cache() -> None:
    base = calc(model="llama-3.1-70b", precision="fp8", gpu="h100-80gb:2")
    spec = calc(model="llama-3.1-70b", precision="fp8", gpu="h100-80gb:2", draft_model="llama-3.2-1b")
    draft_kv = kv_layout(resolve("llama-3.2-1b").arch, "bf16", 2).full_bytes_per_token * 2
    assert spec.kv_cache_gb == pytest.approx(base.kv_cache_gb + draft_kv * 8192 / 1e9, abs=0.01)
    assert spec.total_gb > base.total_gb + 1.0  # ~1.5 GB of fp8 draft weights
    assert spec.options[0].max_concurrent_sequences < base.options[0].max_concurrent_sequences


def test_mtp_heads_are_one_more_layer() -> None:
    base = calc(model="deepseek-v3", precision="fp8", gpu="h200:8")
    mtp = calc(model="deepseek-v3", precision="fp8", gpu="h200:8", mtp=True)
    # DeepSeek-V3's MTP module is ~11.5B parameters in the 685B checkpoint (671B + 14B with its head).
    assert 9 < mtp.total_gb - base.total_gb - (mtp.kv_cache_gb - base.kv_cache_gb) < 16
    line = next(line for line in mtp.arithmetic if line.startswith("plus the MTP cache"))
    assert "1 layers = 9,216 bytes per token" in line


def test_vision_tower_from_config_is_counted_for_vllm_not_llamacpp() -> None:
    config = load_cases()["configs"]["mistral-small-3.2-24b"]  # Pixtral tower + Mistral-Small text
    assert vision_tower_params(config) == pytest.approx(0.43e9, rel=0.05)
    vllm = calc(model="mistral-small-3.2", config=config, gpu="h100-80gb")
    llamacpp = calc(
        model="mistral-small-3.2", config=config, gpu="h100-80gb", engine="llamacpp", precision="q8_0"
    )
    assert "vision tower at 16 bits 0.87 GB" in " ".join(vllm.arithmetic)
    assert not any("vision tower" in line for line in llamacpp.arithmetic)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_loras": -1}, "max_loras must be"),
        ({"max_loras": 2, "max_lora_rank": 4096}, "max_lora_rank must be"),
        ({"draft_model": "qwen2.5-7b"}, "same tokenizer"),
        ({"draft_model": "no-such-draft"}, "unknown model 'no-such-draft'"),
        ({"mtp": True}, "no multi-token-prediction heads"),
        ({"mtp": True, "draft_model": "llama-3.2-1b"}, "not both"),
    ],
)
def test_bad_extras_are_one_clear_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        calc(model="llama-3.1-70b", precision="fp8", **kwargs)


def test_gemma_3_from_the_catalog_carries_its_siglip_tower() -> None:
    """google/gemma-3-27b-it: 27.43B parameters, 27.01B of them the language model."""
    vllm = calc(model="gemma-3-27b")
    line = next(line for line in vllm.arithmetic if line.startswith("Serving extras"))
    tower_gb = float(line.split("vision tower at 16 bits ")[1].split(" GB")[0])
    assert tower_gb == pytest.approx(2 * 0.42, abs=0.05)
    gguf = calc(model="gemma-3-27b", precision="q4_k_m", engine="llamacpp")
    assert not any(line.startswith("Serving extras") for line in gguf.arithmetic)  # mmproj is separate
