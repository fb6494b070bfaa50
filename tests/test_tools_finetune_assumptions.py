"""Full fine-tuning states its precision assumption and computes what fp32 master weights would add."""

from __future__ import annotations

import pytest

from tools import SizingRequest, calculate_vram
from tools.finetune import FinetuneSpec, full_bytes_per_param


def _full(gpu: str, lang: str = "en", optimizer: str = "adamw"):  # type: ignore[no-untyped-def]
    spec = FinetuneSpec(method="full", optimizer=optimizer)
    return calculate_vram(SizingRequest(model="llama-3.1-8b", gpu=gpu, finetune=spec, lang=lang))  # type: ignore[arg-type]


def test_bytes_per_parameter_follow_the_optimizer_states() -> None:
    assert full_bytes_per_param("adamw") == 8  # bf16 weights 2 + bf16 gradients 2 + two bf16 states 4
    assert full_bytes_per_param("adamw", master_weights=True) == 16  # + fp32 master 4 + fp32 states 8
    assert full_bytes_per_param("adamw8bit", master_weights=True) == 10
    assert full_bytes_per_param("sgd") == 4


@pytest.mark.parametrize(
    ("lang", "words"), [("en", "no fp32 master copy"), ("es", "sin copia maestra en fp32")]
)
def test_full_fine_tuning_states_its_assumption(lang: str, words: str) -> None:
    result = _full("h100-80gb", lang)
    line = next(line for line in result.arithmetic if words in line)
    assert "8" in line and "16" in line
    assert words in result.recommendation
    # 8.03 B parameters × 8 more bytes = 64.24 GB on top of the 68.00 GB bf16 total: 132.25 GB.
    assert result.total_gb == pytest.approx(68.0, abs=0.01)
    assert ("132.25" if lang == "en" else "132,25") in line and "+64" in line


def test_master_weights_are_sharded_with_the_rest() -> None:
    result = _full("h100-80gb:2")
    line = next(line for line in result.arithmetic if line.startswith("Assumed"))
    assert "+32.12 GB" in line and "sharded over 2 GPUs" in line


def test_lora_states_no_full_fine_tuning_assumption() -> None:
    spec = FinetuneSpec(method="lora")
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="h100-80gb", finetune=spec))
    assert not any("master" in line for line in result.arithmetic)
