"""KV-cache bytes: per token, per sequence, per GPU.

Per token and full-attention layer a standard (GQA) model stores a key and a value vector for
each KV head: 2 × kv_heads × head_dim elements. Sliding-window layers (Gemma 2/3, gpt-oss) stop
growing at their window. DeepSeek's MLA caches one compressed latent (kv_lora_rank) plus the
rotary key (qk_rope_head_dim) per layer, shared by all heads. Under tensor parallelism each GPU
holds kv_heads / tp heads, and at least one: when tp > kv_heads the heads are replicated (vLLM
and TensorRT-LLM both do this); the MLA latent is replicated on every GPU.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from tools.architecture import Architecture
from tools.errors import UnknownChoiceError
from tools.gguf import GGML_TYPES

KV_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "q8_0", "q4_0")

# (elements per block, bytes per block). q8_0 and q4_0 are llama.cpp cache types, laid out as
# ggml's blocks: 32 values share one fp16 scale (block_q8_0 = 34 bytes, block_q4_0 = 18 bytes).
KV_BLOCKS: dict[str, tuple[int, int]] = {
    "bf16": GGML_TYPES["BF16"],
    "fp16": GGML_TYPES["F16"],
    "fp8": (1, 1),
    "q8_0": GGML_TYPES["Q8_0"],
    "q4_0": GGML_TYPES["Q4_0"],
}


def check_kv_dtype(kv_dtype: str | None) -> str:
    name = (kv_dtype or "bf16").strip().lower()
    aliases = {"f16": "fp16", "float16": "fp16", "bfloat16": "bf16", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}
    name = aliases.get(name, name)
    if name not in KV_BLOCKS:
        raise UnknownChoiceError("kv dtype", str(kv_dtype), KV_DTYPES)
    return name


def _bytes(elements: int, kv_dtype: str) -> int:
    per_block, block_bytes = KV_BLOCKS[kv_dtype]
    return math.ceil(elements / per_block) * block_bytes


class KvLayout(BaseModel):
    """How many cache bytes one token adds, split by layer kind, on one GPU."""

    model_config = ConfigDict(frozen=True)

    full_layers: int
    sliding_layers: int
    bytes_per_token_per_layer: int
    sliding_window: int | None
    elements_per_token_per_layer: int
    heads_per_gpu: int
    mla: bool

    @property
    def full_bytes_per_token(self) -> int:
        """Bytes each token adds for as long as the sequence grows (full-attention layers)."""
        return self.full_layers * self.bytes_per_token_per_layer

    @property
    def sliding_bytes_per_token(self) -> int:
        return self.sliding_layers * self.bytes_per_token_per_layer

    def sequence_bytes(self, context: int, sliding_cells: int | None = None) -> int:
        """Bytes one sequence of `context` tokens holds; sliding layers keep at most their window."""
        window_tokens = 0
        if self.sliding_layers:
            cap = sliding_cells if sliding_cells is not None else (self.sliding_window or context)
            window_tokens = min(context, cap)
        return self.full_bytes_per_token * context + self.sliding_bytes_per_token * window_tokens


def kv_layout(arch: Architecture, kv_dtype: str, tensor_parallel: int = 1) -> KvLayout:
    """The cache layout on one GPU of a tensor-parallel group."""
    if arch.is_mla:
        heads = 1
        elements = arch.kv_lora_rank + arch.qk_rope_head_dim  # latent + rotary key, no separate V
    else:
        heads = max(1, math.ceil(arch.num_kv_heads / tensor_parallel))
        elements = 2 * heads * arch.head_dim
    return KvLayout(
        full_layers=arch.layers_of_kind("full"),
        sliding_layers=arch.layers_of_kind("sliding"),
        bytes_per_token_per_layer=_bytes(elements, kv_dtype),
        sliding_window=arch.sliding_window,
        elements_per_token_per_layer=elements,
        heads_per_gpu=heads,
        mla=arch.is_mla,
    )
