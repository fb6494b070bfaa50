"""Published figures vs the calculator: the cases of tools/data/calibration_cases.json.

Used by benchmarks/accuracy.py (which prints every error and the medians) and by
tests/test_tools_calibration.py (which holds each case to a tolerance).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from tools.architecture import Architecture, architecture_from_config
from tools.cards import card_facts
from tools.catalog import resolve
from tools.engines import (
    VLLM_BLOCK_SIZE,
    Estimate,
    Hardware,
    ServedModel,
    decode_tokens_per_s,
    estimate_vllm,
    llamacpp_compute_buffer_bytes,
    llamacpp_sliding_cells,
)
from tools.finetune import FinetuneSpec, check_spec, training_memory
from tools.kv_cache import check_kv_dtype, kv_layout
from tools.precision import token_embedding_bytes, weights
from tools.serving_extras import vision_tower_params

UNITS = {"GB": 1e9, "GiB": 2**30, "MiB": 2**20}


class CaseResult(NamedTuple):
    kind: str
    id: str
    published: float
    predicted: float
    unit: str

    @property
    def error(self) -> float:
        """Signed relative error of the prediction."""
        return (self.predicted - self.published) / self.published


@cache
def load_cases() -> dict[str, Any]:
    text = resources.files("tools").joinpath("data", "calibration_cases.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def _model(case: dict[str, Any]) -> tuple[Architecture, int | None]:
    if "config" in case:
        return architecture_from_config(load_cases()["configs"][case["config"]]), None
    resolved = resolve(case["model"])
    return resolved.arch, resolved.params_override


def weights_case(case: dict[str, Any]) -> CaseResult:
    arch, override = _model(case)
    gguf = bool(case.get("gguf"))  # the GGUF file llama.cpp loads, not the safetensors checkpoint
    predicted_bytes = weights(arch, case["precision"], override, gguf=gguf).bytes
    if case.get("vision"):  # the vision tower vLLM loads next to the language model, at 16 bits
        predicted_bytes += 2 * vision_tower_params(load_cases()["configs"][case["config"]])
    predicted = predicted_bytes / UNITS[case["unit"]]
    return CaseResult("weights", case["id"], case["value"], predicted, case["unit"])


def _vllm_hardware(case: dict[str, Any]) -> Hardware:
    if "hardware_gib" in case:
        usable = int(case["hardware_gib"] * 2**30)
    else:
        usable = card_facts(case["card"]).usable_bytes
    return Hardware(int(case["tp"]), usable, None, case["card"])


def vllm_estimate(case: dict[str, Any]) -> Estimate:
    arch, override = _model(case)
    w = weights(arch, case["precision"], override).bytes
    served = ServedModel(arch, w, "bf16", int(case["context"]), users=1)
    return estimate_vllm(
        served, _vllm_hardware(case), float(case["utilization"]), v0_profile=bool(case.get("v0_profile"))
    )


def vllm_pool_case(case: dict[str, Any]) -> CaseResult:
    est = vllm_estimate(case)
    pool = est.kv_room_bytes / (est.gpus if case.get("per_gpu") else 1)
    return CaseResult("vllm_kv_pool", case["id"], case["value"], pool / UNITS[case["unit"]], case["unit"])


def vllm_concurrency_case(case: dict[str, Any]) -> CaseResult:
    pool_case = next(c for c in load_cases()["vllm_kv_pool"] if c["id"] == case["pool_case"])
    arch, _ = _model(pool_case)
    est = vllm_estimate(pool_case)
    per_gpu_token = kv_layout(arch, "bf16", int(pool_case["tp"])).full_bytes_per_token
    pool_per_gpu = est.kv_room_bytes // est.gpus
    # vLLM: "Maximum concurrency for N tokens per request" = KV tokens (whole blocks) / N.
    tokens = pool_per_gpu // (VLLM_BLOCK_SIZE * per_gpu_token) * VLLM_BLOCK_SIZE
    return CaseResult("vllm_concurrency", case["id"], case["value"], tokens / pool_case["context"], "x")


def kv_case(case: dict[str, Any]) -> CaseResult:
    arch, _ = _model(case)
    kv_dtype = check_kv_dtype(case["kv_dtype"])
    layout = kv_layout(arch, kv_dtype, 1)
    if case.get("layers") == "full":
        total = layout.full_bytes_per_token * case["context"] * case["users"]
    elif case["engine"] in ("llamacpp", "ollama"):
        total = layout.sequence_bytes(case["context"], llamacpp_sliding_cells(layout)) * case["users"]
    else:
        total = layout.sequence_bytes(case["context"]) * case["users"]
    return CaseResult("kv_cache", case["id"], case["value"], total / UNITS[case["unit"]], case["unit"])


def compute_buffer_case(case: dict[str, Any]) -> CaseResult:
    arch, _ = _model(case)
    buffer = llamacpp_compute_buffer_bytes(arch, case["n_ctx"], flash_attention=case["flash_attention"])
    return CaseResult(
        "llamacpp_compute_buffer", case["id"], case["value"], buffer / UNITS[case["unit"]], case["unit"]
    )


def finetune_case(case: dict[str, Any]) -> CaseResult:
    arch, override = _model(case)
    spec = check_spec(
        FinetuneSpec(
            method=case["method"],
            lora_rank=int(case.get("lora_rank", 16)),
            batch=int(case["batch"]),
            seq=int(case["seq"]),
            optimizer=case["optimizer"],
            gradient_checkpointing=bool(case["gradient_checkpointing"]),
            targets=tuple(case.get("targets", ["all"])),
        )
    )
    memory = training_memory(arch, override or arch.total_params(), spec)
    return CaseResult("finetune", case["id"], case["value"], memory.total / UNITS[case["unit"]], case["unit"])


def decode_case(case: dict[str, Any]) -> CaseResult:
    """llama.cpp single-stream decode: every token reads the weights (less the embedding lookup
    table) and the sequence's cache once, at the engine's bandwidth efficiency."""
    arch, override = _model(case)
    w = weights(arch, case["precision"], override, gguf=True).bytes
    read = w - (0 if arch.tie_embeddings else token_embedding_bytes(arch, case["precision"], gguf=True))
    read += kv_layout(arch, "fp16", 1).sequence_bytes(int(case["context"]))
    hw = Hardware(1, 0, float(case["bandwidth_gbps"]), case["host"], accelerator=case["host"])
    rate = decode_tokens_per_s(int(read), hw, "llamacpp") or 0.0
    return CaseResult("decode_" + case["host"], case["id"], case["value"], rate, case["unit"])


def all_results() -> list[CaseResult]:
    cases = load_cases()
    return [
        *(weights_case(c) for c in cases["weights"]),
        *(vllm_pool_case(c) for c in cases["vllm_kv_pool"]),
        *(vllm_concurrency_case(c) for c in cases["vllm_concurrency"]),
        *(kv_case(c) for c in cases["kv_cache"]),
        *(compute_buffer_case(c) for c in cases["llamacpp_compute_buffer"]),
        *(finetune_case(c) for c in cases.get("finetune", [])),
        *(decode_case(c) for c in cases.get("decode", [])),
    ]


__all__ = ["CaseResult", "all_results", "load_cases"]
