"""Golden tests: the calculator against published file sizes and engine log lines.

Cases and units live in tools/data/calibration_cases.json; sources in tools/data/calibration.json.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from tools.calibration import CaseResult, all_results
from tools.catalog import resolve
from tools.engines import llamacpp_sliding_cells
from tools.gguf import gguf_file_bytes
from tools.kv_cache import kv_layout

RESULTS = all_results()

# Per-case tolerances, with the reason for every case looser than its kind's default.
DEFAULT_TOLERANCE = {
    "weights": 0.01,
    "vllm_kv_pool": 0.10,
    "vllm_concurrency": 0.10,
    "kv_cache": 0.005,
    "llamacpp_compute_buffer": 0.01,
    # Held-out training peaks: the sources round, and leave sequence length or rank open.
    "finetune": 0.15,
    # Held-out decode rates: one 62 % bandwidth efficiency (an A100 case) for every host.
    "decode_apple": 0.20,
    # CPU cores rarely draw the RAM's peak bandwidth (an M2 Pro's CPU cluster reaches about
    # 60 % of the 200 GB/s its GPU does): the estimate is an upper bound there, kept visible.
    "decode_cpu": 0.60,
}
LOOSER = {
    # vLLM pads gpt-oss's MXFP4 expert tensors for its kernels; the file itself is 12.8 GiB.
    "V7-vllm-gpt-oss-20b-load": 0.06,
    # Mistral-Small-3.2 carries a ~0.4B vision encoder the catalog's text-only 2501 model lacks.
    "V10-vllm-Mistral-Small-24B-load": 0.03,
    # Qwen3-235B-A22B-FP8 on 4×H100 (vllm#21348): 2 GiB per GPU more than the model accounts for
    # (unexplained by the logged figures); kept as a visible outlier in benchmarks/accuracy.py.
    "C6": 0.30,
    # LongLoRA's 8k plain-LoRA row: 5 GB above weights + checkpoints + fp32 logits; its
    # training script keeps more than one layer's activations live.
    "FT-longlora-llama2-7b-lora-8k": 0.25,
    # Unsloth's "absolute minimum" table: Unsloth chunks the loss and offloads checkpoints to
    # CPU RAM, and its 14B row is below the NF4 weights with 16-bit embeddings alone (9.9 GB).
    "FT-unsloth-8b-qlora-min": 0.30,
    "FT-unsloth-14b-qlora-min": 0.50,
}


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: f"{r.kind}:{r.id}")
def test_case_within_tolerance(result: CaseResult) -> None:
    tolerance = LOOSER.get(result.id, DEFAULT_TOLERANCE[result.kind])
    assert abs(result.error) <= tolerance, (
        f"{result.id}: {result.predicted:.3f} vs {result.published} {result.unit}"
    )


def _calibration() -> dict:
    return json.loads(
        resources.files("tools").joinpath("data", "calibration.json").read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("quant", ["Q2_K", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0"])
def test_gguf_mix_reproduces_llamacpp_effective_bpw(quant: str) -> None:
    """llama.cpp's quantize README lists whole-file bits per weight for Llama-3.1-8B."""
    bpw = _calibration()["llama_cpp_bpw"]["table"][quant][0]
    arch = resolve("llama-3.1-8b").arch
    metadata = 40 * arch.vocab_size
    computed = (gguf_file_bytes(arch, quant.lower()) - metadata) * 8 / arch.total_params()
    assert computed == pytest.approx(bpw, rel=0.002)


def test_gpt_oss_sliding_layers_match_the_ollama_log() -> None:
    """C13: 90 MiB for 2 × 1280 SWA cells over 18 layers = 2,048 bytes per cell and layer."""
    layout = kv_layout(resolve("gpt-oss-120b").arch, "fp16")
    assert layout.sliding_layers == 18 and layout.full_layers == 18
    assert 2 * 1280 * layout.sliding_bytes_per_token == 90 * 2**20
    # That run used 1,024-token micro-batches: pad(128 + 1024, 256) = 1,280 cells per sequence.
    assert llamacpp_sliding_cells(layout, n_ubatch=1024) == 1280


def test_qwen3_235b_kv_per_gpu_matches_the_vllm_log() -> None:
    """C6: 4 KV heads over TP4 = one head per GPU = 48,128 bytes per token per GPU."""
    assert kv_layout(resolve("qwen3-235b-a22b").arch, "bf16", 4).full_bytes_per_token == 48128


def test_deepseek_mla_cache_is_the_latent_not_the_heads() -> None:
    layout = kv_layout(resolve("deepseek-v3").arch, "bf16", 8)
    assert layout.full_bytes_per_token == 70272  # 61 × (512 + 64) × 2, replicated on every GPU
