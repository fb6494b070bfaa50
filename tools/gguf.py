"""Size of a GGUF file as llama.cpp's quantizer lays it out, tensor by tensor.

A GGUF "Q4_K_M" is not 4 bits everywhere: llama.cpp picks a type per tensor (output head at
Q6_K, half of attn_v and ffn_down at Q6_K, ...) and falls back to a 32-wide block type when a
tensor's row length is not a multiple of 256 (Qwen2.5-72B's ffn_down, 29568 wide). The rules
below follow `llama_tensor_get_type_impl` and `tensor_type_fallback` in llama.cpp's
src/llama-quant.cpp (ggml-org/llama.cpp); block sizes and bytes per block come from ggml's
type traits. The calibration table in tools/data/calibration.json (llama.cpp
tools/quantize/README.md) checks the result: Llama-3.1-8B Q4_K_M comes out at 4.89 bpw.
"""

from __future__ import annotations

from functools import lru_cache

from tools.architecture import Architecture, Tensor

# ggml type -> (elements per block, bytes per block): ggml-common.h block layouts.
GGML_TYPES: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "Q8_0": (32, 34),
    "Q6_K": (256, 210),
    "Q5_K": (256, 176),
    "Q4_K": (256, 144),
    "Q3_K": (256, 110),
    "Q2_K": (256, 84),
    "Q5_1": (32, 24),
    "Q5_0": (32, 22),
    "Q4_1": (32, 20),
    "Q4_0": (32, 18),
    "IQ4_NL": (32, 18),
    "MXFP4": (32, 17),
}

# File type (what `llama-quantize` is asked for) -> default tensor type.
FILE_TYPES: dict[str, str] = {
    "q8_0": "Q8_0",
    "q6_k": "Q6_K",
    "q5_k_m": "Q5_K",
    "q4_k_m": "Q4_K",
    "q4_0": "Q4_0",
    "q3_k_m": "Q3_K",
    "q2_k": "Q2_K",
}

# LLAMA_FTYPE_MOSTLY_MXFP4_MOE (`llama-quantize ... MXFP4_MOE`, the type of gpt-oss's GGUFs):
# 3-D expert stacks at MXFP4, every other quantizable tensor (output head included) at Q8_0.
MXFP4_MOE = "mxfp4"

# tensor_type_fallback(): a 256-block type on a row that is not a multiple of 256.
_FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}

# Tensors llama.cpp never quantizes: norms (1-D, stored F32) and the MoE router.
_KEPT_F32 = {"norm", "ffn_gate_inp"}

# Metadata (tokenizer vocabulary, merges, chat template) written before the tensors; about
# 5 MB for a 128k-token vocabulary (bartowski's Llama-3.1-8B Q4_K_M: 4.92 GB file vs 4.913 GB
# of tensors computed here).
METADATA_BYTES_PER_VOCAB_ENTRY = 40


def _use_more_bits(i_layer: int, n_layers: int) -> bool:
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def _choose_type(arch: Architecture, file_type: str, tensor: Tensor, v_index: int) -> str:
    """The ggml type llama-quantize gives this tensor: llama_tensor_get_type_impl's rules, then
    tensor_type_fallback for rows the chosen block does not divide (also for the output head)."""
    if file_type == MXFP4_MOE:
        # Only 3-D expert stacks (ne[2] > 1) go to MXFP4; the head and everything else to Q8_0.
        out_head = tensor.category == "output" or (arch.tie_embeddings and tensor.category == "token_embd")
        chosen = "MXFP4" if tensor.routed_expert and not out_head else "Q8_0"
    else:
        chosen = _kquant_type(arch, file_type, tensor, v_index)
    block = GGML_TYPES[chosen][0]
    if tensor.ncols % block:
        chosen = _FALLBACK.get(chosen, chosen)
        if tensor.ncols % GGML_TYPES[chosen][0]:
            chosen = "F16"
    return chosen


def _kquant_type(arch: Architecture, file_type: str, tensor: Tensor, v_index: int) -> str:
    base = FILE_TYPES[file_type]
    cat = tensor.category
    n_layers = arch.num_layers
    n_gqa = arch.num_heads // max(1, arch.num_kv_heads)
    eight_experts = arch.num_experts == 8
    if cat == "output" or (arch.tie_embeddings and cat == "token_embd"):
        return "Q8_0" if tensor.ncols % GGML_TYPES[base][0] or base == "Q8_0" else "Q6_K"
    if cat == "token_embd":
        return base
    chosen = base
    layer = tensor.layer if tensor.layer is not None else 0
    if cat in ("attn_v", "attn_kv_b"):
        if file_type == "q2_k":
            chosen = "Q4_K" if n_gqa >= 4 else "Q3_K"
        elif file_type == "q3_k_m":
            chosen = "Q5_K" if v_index < 2 else "Q4_K"
        elif file_type in ("q4_k_m", "q5_k_m") and _use_more_bits(v_index, n_layers):
            chosen = "Q6_K"
        if n_layers == 80 and chosen in ("Q3_K", "Q4_K"):
            chosen = "Q5_K"  # llama.cpp's LLM_TYPE_70B bump: attn_v is 8x smaller than attn_q there
        if eight_experts:
            chosen = "Q8_0"
    elif cat == "attn_k" and eight_experts:
        chosen = "Q8_0"
    elif cat.startswith("ffn_down"):
        if file_type == "q2_k":
            chosen = "Q3_K"
        elif file_type == "q3_k_m":
            chosen = "Q5_K" if layer < n_layers // 16 else "Q4_K"
        elif file_type in ("q4_k_m", "q5_k_m") and _use_more_bits(layer, n_layers):
            chosen = "Q6_K"
    elif cat == "attn_output":
        if eight_experts:
            if file_type in ("q2_k", "q3_k_m", "q4_k_m"):
                chosen = "Q5_K"
        elif file_type == "q2_k":
            chosen = "Q3_K"
        elif file_type == "q3_k_m":
            chosen = "Q4_K"
    return chosen


def tensor_bytes(ggml_type: str, tensor: Tensor) -> int:
    per_block, block_bytes = GGML_TYPES[ggml_type]
    return -(-tensor.ncols // per_block) * block_bytes * tensor.nrows * tensor.copies


# The file size and the embedding's share are read from the same walk, once per file type.
@lru_cache(maxsize=8)
def gguf_tensor_types(arch: Architecture, file_type: str) -> tuple[tuple[Tensor, str], ...]:
    """Each tensor with the ggml type llama-quantize would give it."""
    out: list[tuple[Tensor, str]] = []
    v_index = 0
    for tensor in arch.tensors():
        if tensor.category in _KEPT_F32:
            out.append((tensor, "F32"))
            continue
        out.append((tensor, _choose_type(arch, file_type, tensor, v_index)))
        if tensor.category in ("attn_v", "attn_kv_b"):
            v_index += 1
    return tuple(out)


def gguf_file_bytes(arch: Architecture, file_type: str) -> int:
    """Bytes of the .gguf file: tensors in their chosen types plus the metadata block."""
    tensors = sum(tensor_bytes(t, tensor) for tensor, t in gguf_tensor_types(arch, file_type))
    return tensors + METADATA_BYTES_PER_VOCAB_ENTRY * arch.vocab_size
