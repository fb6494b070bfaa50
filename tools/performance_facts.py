"""From the catalog's architecture and cards to the numbers the roofline needs.

Cards come from tools/data/cards.json (bandwidth, dense BF16 tensor TFLOPS, FP8 support) and
tools/data/perf_hardware.json (GPU generation, NVLink or PCIe between cards).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from tools.architecture import Architecture
from tools.cards import card_facts
from tools.kv_cache import kv_layout
from tools.performance_physics import Hardware, ModelFacts, tensor_parallel
from tools.precision import FORMATS, GGUF_PRECISIONS, _tensor_bits

# Tokens a chat answer starts with that its stream never shows, by model family. gpt-oss answers
# in OpenAI's harmony format: after the prompt's closing `<|start|>assistant` the model writes
# `<|channel|>analysis<|message|>` (three tokens of o200k_harmony) before the first token of its
# reasoning, and a chat endpoint (vLLM's, SGLang's) streams only the message, so the first token a
# chat client sees is the fourth generated (openai/harmony, "The harmony response format"). A
# completions endpoint streams raw tokens and sees the first one.
CHAT_HEADER_TOKENS = {"gpt_oss": 3}


def load_data(name: str) -> Any:
    return json.loads(resources.files("tools").joinpath("data", name).read_text(encoding="utf-8"))


@cache
def _hardware_table() -> dict[str, Any]:
    return dict(load_data("perf_hardware.json"))


def hardware(card_id: str, gpus: int, interconnect: str | None = None) -> Hardware | None:
    """The card × count as the roofline sees it; None when the card's bandwidth is unknown."""
    card = card_facts(card_id).card
    if not card.bandwidth_gbps:
        return None
    row = _hardware_table()["cards"].get(card_id, {})
    return Hardware(
        card_id=card_id,
        bandwidth_gbps=float(card.bandwidth_gbps),
        bf16_tflops=card.bf16_dense_tflops,
        fp8=bool(card.fp8),
        generation=row.get("generation", "unknown"),
        gpus=gpus,
        interconnect=interconnect or row.get("interconnect", "pcie"),
        fp16_accumulate=_fp16_accumulate(card_id),
    )


def _fp16_accumulate(card_id: str) -> float:
    return 2.0 if card_id in _hardware_table()["geforce"] else 1.0


def extra_hardware(card_id: str, spec: dict[str, Any], gpus: int) -> Hardware:
    """A card of the calibration set that the product does not sell (its facts live there)."""
    generation = _hardware_table()["extra_generations"].get(card_id, "unknown")
    return Hardware(
        card_id,
        float(spec["bandwidth_gbps"]),
        spec.get("bf16_dense_tflops"),
        bool(spec.get("fp8")),
        generation,
        gpus,
        "pcie",
        _fp16_accumulate(card_id),
    )


def _expert_bytes(arch: Architecture, precision: str) -> float:
    if not arch.is_moe:
        return 0.0
    if precision in GGUF_PRECISIONS:
        from tools.gguf import gguf_tensor_types, tensor_bytes

        return float(
            sum(
                tensor_bytes(t, tensor)
                for tensor, t in gguf_tensor_types(arch, precision)
                if tensor.routed_expert
            )
        )
    fmt = FORMATS[precision]
    return sum(t.params * _tensor_bits(fmt, t, False) / 8 for t in arch.tensors() if t.routed_expert)


def model_facts(
    arch: Architecture,
    weight_bytes: float,
    embedding_bytes: float,
    precision: str,
    kv_dtype: str,
    engine: str,
    gpus: int,
    params_scale: float = 1.0,
) -> ModelFacts:
    """The served model: which bytes every step reads, which only the routed experts read, and
    the KV cache each context token adds (summed over the GPUs that hold it)."""
    experts = _expert_bytes(arch, precision) * params_scale
    # The input embedding is a lookup (one row per token), not a read of the whole table; a tied
    # table is read in full as the output head.
    lookup = 0.0 if arch.tie_embeddings else embedding_bytes
    tp = gpus if tensor_parallel(engine) else 1
    layout = kv_layout(arch, kv_dtype, tp)
    return ModelFacts(
        params=round(arch.total_params() * params_scale),
        active_params=round(arch.active_params() * params_scale),
        dense_read_bytes=max(weight_bytes - experts - lookup, 0.0),
        expert_bytes=experts,
        num_experts=arch.num_experts,
        experts_per_token=arch.experts_per_token,
        layers=arch.num_layers,
        moe_layers=arch.num_layers - len(arch.dense_layers) if arch.is_moe else 0,
        hidden=arch.hidden_size,
        kv_full_bytes_per_token=float(layout.full_bytes_per_token * tp),
        kv_sliding_bytes_per_token=float(layout.sliding_bytes_per_token * tp),
        sliding_window=layout.sliding_window,
        fp8_compute=precision == "fp8",
        quantized=is_quantized(precision),
        attention_full_flops=float(
            (arch.layers_of_kind("full") if arch.layer_kinds else arch.num_layers) * pair_flops(arch)
        ),
        attention_sliding_flops=float(arch.layers_of_kind("sliding") * pair_flops(arch)),
        chat_header_tokens=CHAT_HEADER_TOKENS.get(arch.model_type, 0),
        mla_layers=arch.num_layers if arch.is_mla else 0,
        expert_active_params=round(_expert_active_params(arch) * params_scale),
    )


def _expert_active_params(arch: Architecture) -> int:
    if not arch.is_moe:
        return 0
    share = arch.experts_per_token / arch.num_experts
    return round(sum(t.params for t in arch.tensors() if t.routed_expert) * share)


def pair_flops(arch: Architecture) -> int:
    """Attention FLOPs of one layer per (query, attended token) pair: 2 × heads × (key + value
    width); linear-attention layers cost no such pairs. MLA counts in its decompressed form (per
    head a 192-wide key of nope + rope parts and a 128-wide value on DeepSeek-V3), the form SGLang,
    vLLM and TensorRT-LLM run prompts in."""
    if arch.is_mla:
        key, value = arch.qk_nope_head_dim + arch.qk_rope_head_dim, arch.v_head_dim
    else:
        key = value = arch.head_dim
    return 2 * arch.num_heads * (key + value)


def is_quantized(precision: str) -> bool:
    """Integer formats whose matrix products run through dequantizing kernels."""
    return precision not in ("fp32", "bf16", "fp16", "fp8")


def plain_model_facts(
    spec: dict[str, Any], weight_bytes: float, precision: str, kv_bytes_per_element: float
) -> ModelFacts:
    """A dense model described by its config numbers alone (calibration models the catalog lacks)."""
    layers, hidden = int(spec["layers"]), int(spec["hidden"])
    kv = 2 * layers * int(spec["kv_heads"]) * int(spec["head_dim"]) * kv_bytes_per_element
    return ModelFacts(
        params=int(spec["params"]),
        active_params=int(spec["active_params"]),
        dense_read_bytes=weight_bytes,
        expert_bytes=0.0,
        num_experts=0,
        experts_per_token=0,
        layers=layers,
        moe_layers=0,
        hidden=hidden,
        kv_full_bytes_per_token=float(kv),
        kv_sliding_bytes_per_token=0.0,
        sliding_window=None,
        fp8_compute=precision == "fp8",
        quantized=is_quantized(precision),
    )
