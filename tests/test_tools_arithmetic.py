"""Every printed arithmetic line multiplies out to the figures printed and to the JSON totals.

The lines are parsed back from the English text, over a grid of models, cards, TP degrees and
engines, so a line that shows a per-GPU figure next to an all-GPU total fails here.
"""

from __future__ import annotations

import math
import re
from itertools import product

import pytest

from tools import SizingRequest, SizingResult, calculate_vram

NUM = r"-?[\d,]+(?:\.\d+)?"


def n(value: str) -> float:
    return float(value.replace(",", ""))


def _check_weights(line: str, result: SizingResult) -> None:
    m = re.search(rf"Weights: ({NUM}) B parameters .* = ({NUM}) GB \(({NUM}) bits per weight", line)
    assert m, line
    params, gb, bpw = map(n, m.groups())
    assert params * bpw / 8 == pytest.approx(gb, rel=2e-3, abs=0.02)
    assert gb == pytest.approx(result.weights_gb, abs=0.01)


def _check_kv_per_token(line: str, result: SizingResult) -> int:
    gqa = re.search(
        rf"(\d+) full-attention layers × 2 \(K and V\) × (\d+) KV heads × (\d+) head_dim × ({NUM}) "
        rf"bytes \(\w+\) = ({NUM}) bytes",
        line,
    )
    mla = re.search(
        rf"(\d+) layers × \((\d+) latent \+ (\d+) rotary\) × ({NUM}) bytes \(\w+\) = ({NUM}) bytes", line
    )
    if gqa:
        layers, heads, head_dim, elem, shown = map(n, gqa.groups())
        assert layers * 2 * heads * head_dim * elem == pytest.approx(shown, rel=1e-3)
    else:
        assert mla, line
        layers, latent, rope, elem, shown = map(n, mla.groups())
        assert layers * (latent + rope) * elem == pytest.approx(shown, rel=1e-3)
    total = shown
    copies = re.search(rf"per GPU, × (\d+) tensor-parallel GPUs that each hold a copy = ({NUM}) bytes", line)
    if copies:
        gpus, total = n(copies.group(1)), n(copies.group(2))
        assert shown * gpus == total
    assert total == result.kv_bytes_per_token  # the JSON figure is what the total uses
    return int(total)


def _check_kv_total(lines: list[str], per_token: int, result: SizingResult) -> None:
    sliding = 0.0
    for line in lines:
        extra = re.search(rf"^plus the .+ cache: \d+ layers = ({NUM}) bytes per token", line)
        if extra:
            per_token += int(n(extra.group(1)))
        m = re.search(
            rf"plus (\d+) sliding-window layers at ({NUM}) bytes per token, capped at ({NUM}) tokens", line
        )
        if m:
            layers, per_layer, cells = map(n, m.groups())
            sliding = layers * per_layer * cells
    line = next(line for line in lines if line.startswith("KV cache: "))
    m = re.search(
        rf"KV cache: ({NUM}) GB per sequence of ({NUM})(?: \(vLLM allocates whole 16-token "
        rf"blocks: ({NUM})\))? tokens × ({NUM}) at once = ({NUM}) GB",
        line,
    )
    assert m, line
    per_seq, context, blocks, users, gb = (n(g) if g else None for g in m.groups())
    assert per_seq is not None and context is not None and users is not None and gb is not None
    tokens = blocks or context
    assert per_token * tokens + sliding == pytest.approx(per_seq * 1e9, abs=0.0006e9, rel=1e-3)
    assert per_seq * users == pytest.approx(gb, abs=0.0005 * users + 0.01)
    assert gb == pytest.approx(result.kv_cache_gb, abs=0.01)


def _check_overhead(line: str, result: SizingResult) -> None:
    def parts_sum(text: str) -> float:
        return sum(n(re.findall(NUM, part)[-1]) for part in text.split(" + "))

    many = re.search(rf"\): \((.+)\) per GPU × (\d+) GPUs(?: \+ (.+?))? = ({NUM}) GB$", line)
    if many:
        per_gpu, gpus, whole, gb = many.groups()
        computed = parts_sum(per_gpu) * int(gpus) + (parts_sum(whole) if whole else 0)
        slack = 0.005 * (per_gpu.count("+") + 1) * int(gpus) + 0.01
    else:
        one = re.search(rf"\): (.+) = ({NUM}) GB$", line)
        assert one, line
        listed, gb = one.groups()
        computed, slack = parts_sum(listed), 0.03
    assert computed == pytest.approx(n(gb), abs=slack)
    assert n(gb) == pytest.approx(result.overhead_gb, abs=0.01)


def _check_total(line: str, result: SizingResult) -> None:
    m = re.search(
        rf"Total: ({NUM}) GB weights \+ (?:({NUM}) GB extras \+ )?({NUM}) GB KV \+ ({NUM}) GB overhead = ({NUM}) GB",
        line,
    )
    assert m, line
    weights, extras, kv, overhead, total = (n(g) if g else 0.0 for g in m.groups())
    assert weights + extras + kv + overhead == pytest.approx(total, abs=0.02)
    assert total == pytest.approx(result.total_gb, abs=0.01)


def _check_option(line: str) -> None:
    vllm = re.search(
        rf"({NUM}) GB usable; vLLM takes (\d+)% = ({NUM}) GB; minus weights ({NUM}) GB and overhead "
        rf"({NUM}) GB leaves ({NUM}) GB of KV",
        line,
    )
    transformers = re.search(
        rf"({NUM}) GB usable; minus weights ({NUM}) GB and CUDA context ({NUM}) GB leaves ({NUM}) GB for KV "
        rf"and prefill activations \(({NUM}) GB per sequence\) → ({NUM}) sequences?",
        line,
    )
    plain = re.search(
        rf"({NUM}) GB usable; minus weights ({NUM}) GB .*and overhead ({NUM}) GB leaves ({NUM}) GB", line
    )
    if vllm:
        usable, util, budget, weights, overhead, room = map(n, vllm.groups())
        assert usable * util / 100 == pytest.approx(budget, abs=0.02 + usable * 0.0001)
        assert budget - weights - overhead == pytest.approx(room, abs=0.03)
    elif transformers:
        usable, weights, context, room, per_seq, seqs = map(n, transformers.groups())
        assert usable - weights - context == pytest.approx(room, abs=0.03)
        assert abs(seqs - max(0, math.floor(room / per_seq))) <= 1
    else:
        assert plain, line
        usable, weights, overhead, room = map(n, plain.groups())
        assert usable - weights - overhead == pytest.approx(room, abs=0.03)


def check_arithmetic(result: SizingResult) -> None:
    lines = [line for line in result.arithmetic if not line.startswith('"')]
    _check_weights(next(line for line in lines if line.startswith("Weights:")), result)
    per_token = _check_kv_per_token(
        next(line for line in lines if line.startswith("KV cache per token")), result
    )
    _check_kv_total(lines, per_token, result)
    _check_overhead(next(line for line in lines if line.startswith("Engine overhead")), result)
    _check_total(next(line for line in lines if line.startswith("Total:")), result)
    for line in lines:
        if " GB usable; " in line:
            _check_option(line)


GRID_MODELS = ["llama-3.1-70b", "deepseek-v3", "gemma-3-27b", "qwen3-30b-a3b", "gpt-oss-120b", "phi-4"]
GRID_GPUS = [None, "h100-80gb:2", "h200:4", "b200:8"]
GRID_ENGINES = [("vllm", "fp8"), ("llamacpp", "q4_k_m"), ("transformers", "bf16")]


@pytest.mark.parametrize(("model", "gpu", "engine"), list(product(GRID_MODELS, GRID_GPUS, GRID_ENGINES)))
def test_every_printed_line_multiplies_out(model: str, gpu: str | None, engine: tuple[str, str]) -> None:
    name, precision = engine
    result = calculate_vram(
        SizingRequest(model=model, precision=precision, engine=name, gpu=gpu, context=10_001, users=3)
    )
    check_arithmetic(result)


@pytest.mark.parametrize(
    "extras",
    [
        {"max_loras": 4, "max_lora_rank": 64},
        {"draft_model": "llama-3.2-1b"},
        {"draft_model": "llama-3.2-1b", "max_loras": 2},
    ],
)
@pytest.mark.parametrize("engine", [("vllm", "fp8"), ("llamacpp", "q4_k_m")])
def test_serving_extras_multiply_out(extras: dict[str, object], engine: tuple[str, str]) -> None:
    name, precision = engine
    result = calculate_vram(
        SizingRequest(model="llama-3.1-70b", precision=precision, engine=name, gpu="h100-80gb:2", **extras)  # type: ignore[arg-type]
    )
    check_arithmetic(result)
    mtp = calculate_vram(SizingRequest(model="deepseek-v3", precision="fp8", gpu="h200:8", mtp=True))
    check_arithmetic(mtp)


def test_replicated_mla_cache_shows_its_copies() -> None:
    """DeepSeek-V3's latent is on every GPU: the line says × N GPUs and the JSON uses all copies."""
    result = calculate_vram(SizingRequest(model="deepseek-v3", precision="fp8", context=32768))
    line = next(line for line in result.arithmetic if line.startswith("KV cache per token"))
    assert "= 70,272 bytes per GPU, × 2 tensor-parallel GPUs that each hold a copy = 140,544 bytes" in line
    assert result.kv_bytes_per_token == 140_544
    assert result.kv_cache_gb == pytest.approx(140_544 * 32768 / 1e9, abs=0.01)
    check_arithmetic(result)


def test_kv_heads_fewer_than_the_tp_degree_are_copies() -> None:
    """Qwen3-30B-A3B has 4 KV heads: on 8 GPUs each holds one head, 8 copies of 4."""
    result = calculate_vram(SizingRequest(model="qwen3-30b-a3b", gpu="h100-80gb:8"))
    line = next(line for line in result.arithmetic if line.startswith("KV cache per token"))
    assert "× 1 KV heads" in line and "× 8 tensor-parallel GPUs" in line
    per_gpu = 48 * 2 * 1 * 128 * 2
    assert result.kv_bytes_per_token == per_gpu * 8
    check_arithmetic(result)


def test_spanish_lines_carry_the_same_copies() -> None:
    result = calculate_vram(SizingRequest(model="deepseek-v3", precision="fp8", context=32768, lang="es"))
    line = next(line for line in result.arithmetic if line.startswith("Caché KV por token"))
    assert "70.272 bytes por GPU, × 2 GPUs en paralelo tensorial" in line and "140.544 bytes" in line
