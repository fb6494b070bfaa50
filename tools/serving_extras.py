"""What a serving engine loads besides the model: LoRA adapter slots, a speculative-decoding
draft model or MTP heads (with their own KV cache), and a multimodal model's vision tower.

- vLLM `--enable-lora --max-loras N --max-lora-rank R` preallocates, on every GPU, N slots of
  A (R × in) and B (out × R) for each linear layer it can adapt, in the model dtype
  (vllm/lora/layers: `lora_a_stacked` / `lora_b_stacked` are allocated at init for max_loras).
- A draft model (`--speculative-config '{"model": ...}'`) is a second set of weights with its
  own layers in the same KV pool; DeepSeek-V3's multi-token-prediction module
  (`num_nextn_predict_layers`, method "mtp" / "deepseek_mtp") is one more decoder layer
  (weights and a cache layer) plus its embedding/head projection (2 × hidden²).
- A vision tower (config.json `vision_config`) stays at 16 bits in every format (AWQ, FP8 and
  GGUF conversions leave it unquantized); llama.cpp loads it from a separate mmproj file only
  when asked, so only vLLM and transformers count it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tools.architecture import Architecture
from tools.errors import InvalidInputError
from tools.finetune import lora_params

MAX_LORAS = 256
MAX_LORA_RANK = 512  # vLLM accepts ranks up to 512 (LoRAConfig max_lora_rank choices)
_BF16 = 2


class Extras(NamedTuple):
    lora_slot_bytes: int = 0
    max_loras: int = 0
    max_lora_rank: int = 0
    draft_name: str | None = None
    draft_weights_bytes: int = 0
    draft_arch: Architecture | None = None  # its KV layers sit in the same pool
    mtp_layers: int = 0
    mtp_weights_bytes: int = 0
    vision_bytes: int = 0

    @property
    def requested_bytes(self) -> int:
        """The weights of the extras a request asks for: LoRA slots, a draft model, MTP layers."""
        return self.lora_slot_bytes + self.draft_weights_bytes + self.mtp_weights_bytes

    @property
    def weights_bytes(self) -> int:
        """Every extra's weights: those requested and the model's own vision tower."""
        return self.requested_bytes + self.vision_bytes

    def kv_archs(self, arch: Architecture) -> tuple[Architecture, ...]:
        """Extra cache layers: the draft model's and the MTP layers (shaped like the main model's)."""
        out: list[Architecture] = []
        if self.draft_arch is not None:
            out.append(self.draft_arch)
        if self.mtp_layers:
            out.append(
                arch.model_copy(
                    update={"num_layers": self.mtp_layers, "layer_kinds": ("full",) * self.mtp_layers}
                )
            )
        return tuple(out)


def check_lora(max_loras: int, max_lora_rank: int) -> None:
    for name, value, limit in (
        ("max_loras", max_loras, MAX_LORAS),
        ("max_lora_rank", max_lora_rank, MAX_LORA_RANK),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
            raise InvalidInputError(f"{name} must be a whole number from 0 to {limit}, got {value!r}")


def lora_slot_bytes(arch: Architecture, max_loras: int, max_lora_rank: int, tp: int = 1) -> int:
    """vLLM's preallocated adapter slots, all GPUs together (each GPU holds 1/tp of each)."""
    if not max_loras:
        return 0
    return max_loras * lora_params(arch, max_lora_rank) * _BF16


def mtp_weights_bytes(arch: Architecture, layers: int, bytes_per_weight: float) -> int:
    """One decoder layer per MTP depth plus its 2h → h projection (DeepSeek-V3 eh_proj)."""
    if not layers:
        return 0
    per_layer = sum(t.params for t in arch.tensors() if t.layer == arch.num_layers - 1)
    projection = 2 * arch.hidden_size * arch.hidden_size
    return round(layers * (per_layer + projection) * bytes_per_weight)


def vision_tower_params(config: dict[str, Any] | None) -> int:
    """ViT parameters from `vision_config`: per block q, k, v, o (4h²) and an MLP (2hf, or 3hf
    when gated), the patch embedding, and a projector into the language model's width."""
    config = config or {}
    vision = config.get("vision_config")
    if not isinstance(vision, dict):
        return 0
    h = int(vision.get("hidden_size") or vision.get("embed_dim") or 0)
    depth = int(vision.get("num_hidden_layers") or vision.get("depth") or 0)
    f = int(vision.get("intermediate_size") or 4 * h)
    patch = int(vision.get("patch_size") or 14)
    channels = int(vision.get("num_channels") or vision.get("in_chans") or 3)
    if not h or not depth:
        return 0
    gated = str(vision.get("hidden_act") or "") == "silu"
    block = 4 * h * h + (3 if gated else 2) * h * f
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    out = int((text or {}).get("hidden_size") or h)
    temporal = int(vision.get("temporal_patch_size") or 1)
    # Gemma 3 projects with one matrix (mm_input_projection); LLaVA-style models (Mistral-3,
    # Qwen2.5-VL's merger) with a two-layer MLP.
    gemma = str(config.get("model_type") or (text or {}).get("model_type") or "").startswith("gemma3")
    projector = h * out if gemma else h * out + out * out
    return depth * block + channels * patch * patch * temporal * h + projector


__all__ = [
    "MAX_LORAS",
    "MAX_LORA_RANK",
    "Extras",
    "check_lora",
    "lora_slot_bytes",
    "mtp_weights_bytes",
    "vision_tower_params",
]
