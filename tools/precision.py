"""Bytes of weights at each precision, counted per tensor.

Real file formats are never "bits/8 per parameter": GPTQ and AWQ store a 16-bit scale (and a
packed 4-bit zero point) per group of 128 weights and keep the embeddings and the output head at
16 bits; MXFP4 stores 32 four-bit values with one shared 8-bit exponent (4.25 bits each) and is
applied to the MoE experts only; GGUF files mix types per tensor (tools/gguf.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from tools.architecture import Architecture, Tensor
from tools.errors import UnknownPrecisionError
from tools.gguf import FILE_TYPES, MXFP4_MOE, gguf_file_bytes, gguf_tensor_types, tensor_bytes

PRECISIONS: tuple[str, ...] = (
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "int8",
    "int4",
    "awq",
    "gptq",
    "nf4",
    "mxfp4",
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "q4_0",
    "q3_k_m",
    "q2_k",
)
GGUF_PRECISIONS: tuple[str, ...] = tuple(FILE_TYPES)

# Tensors every weight-only quantizer here leaves at 16 bits (vLLM/transformers checkpoints of
# GPTQ, AWQ, FP8, INT8 and bitsandbytes keep embeddings, the LM head and norms unquantized; the
# MoE router is tiny and kept too). The AWQ calibration case (hugging-quants Llama-3.1-8B
# AWQ-INT4: 5.73 GB = 4.68 GB of int4 layers + 1.05 GB of 16-bit embeddings) shows this split.
_KEPT_16_BIT = {"token_embd", "output", "norm", "ffn_gate_inp"}


class Format(NamedTuple):
    """Bits per weight of the quantized tensors, and which tensors the format touches."""

    bits: float
    experts_only: bool  # quantize only the routed-expert tensors (MXFP4 on MoE models)
    nominal_bits: int  # what people call it: 16, 8, 4...


_GROUP = 128
# Effective bits per weight of each non-GGUF format (explained to users by texts "fmt_<name>").
FORMATS: dict[str, Format] = {
    "fp32": Format(32.0, False, 32),
    "bf16": Format(16.0, False, 16),
    "fp16": Format(16.0, False, 16),
    # FP8 / INT8 (W8A8, compressed-tensors): one scale per output channel, negligible.
    "fp8": Format(8.0, False, 8),
    "int8": Format(8.0, False, 8),
    # Symmetric W4A16 (compressed-tensors): a 16-bit scale per group of 128.
    "int4": Format(4 + 16 / _GROUP, False, 4),
    # AutoAWQ GEMM and GPTQ: a 16-bit scale and a packed 4-bit zero point per group of 128.
    "awq": Format(4 + (16 + 4) / _GROUP, False, 4),
    "gptq": Format(4 + (16 + 4) / _GROUP, False, 4),
    # bitsandbytes NF4: blocks of 64 with an 8-bit absmax, double-quantized (an fp32 per 256 blocks).
    "nf4": Format(4 + 8 / 64 + 32 / (64 * 256), False, 4),
    # OCP MXFP4: 32 FP4 values share one E8M0 scale byte; gpt-oss ships its experts this way.
    "mxfp4": Format(4.25, True, 4),
}


class Weights(NamedTuple):
    bytes: int
    params: int
    note: str  # key of the format's explanation in tools/texts.py ("fmt_" + note)

    @property
    def bits_per_weight(self) -> float:
        return self.bytes * 8 / self.params if self.params else 0.0


def check_precision(precision: str) -> str:
    name = precision.strip().lower()
    if name not in PRECISIONS:
        raise UnknownPrecisionError(precision, PRECISIONS)
    return name


def nominal_bits(precision: str) -> float:
    """Bits per weight people associate with the name (for ordering and the below-16-bit check)."""
    if precision in FORMATS:
        return FORMATS[precision].nominal_bits
    return {"q8_0": 8, "q6_k": 6, "q5_k_m": 5, "q4_k_m": 4, "q4_0": 4, "q3_k_m": 3, "q2_k": 2}[precision]


def _tensor_bits(fmt: Format, tensor: Tensor, dense_model: bool) -> float:
    if tensor.category in _KEPT_16_BIT and fmt.bits < 16:
        return 16.0
    if fmt.experts_only and not tensor.routed_expert and not dense_model:
        return 16.0
    return fmt.bits


def gguf_file_type(precision: str, gguf: bool) -> str | None:
    """The llama-quantize file type behind a precision: every GGUF precision, and MXFP4 when the
    engine loads GGUF files (llama.cpp's MXFP4_MOE keeps the non-expert tensors at Q8_0)."""
    if precision in GGUF_PRECISIONS:
        return precision
    return MXFP4_MOE if gguf and precision == "mxfp4" else None


def weights(
    arch: Architecture, precision: str, params_override: int | None = None, gguf: bool = False
) -> Weights:
    """Bytes of the weights at this precision. params_override scales a reference architecture;
    gguf: the file llama.cpp / Ollama load (changes MXFP4, whose GGUF keeps the rest at Q8_0)."""
    return _weights(arch, check_precision(precision), params_override, gguf)


# One request sizes the same architecture at the same precision many times over (each suggestion
# is a calculation): walking every tensor once per (architecture, precision) is enough.
@lru_cache(maxsize=256)
def _weights(arch: Architecture, precision: str, params_override: int | None, gguf: bool) -> Weights:
    derived = arch.total_params()
    file_type = gguf_file_type(precision, gguf)
    if file_type is not None:
        total = gguf_file_bytes(arch, file_type)
        note = "gguf" if precision in GGUF_PRECISIONS else "gguf_mxfp4"
    else:
        fmt = FORMATS[precision]
        total = round(sum(t.params * _tensor_bits(fmt, t, not arch.is_moe) for t in arch.tensors()) / 8)
        note = precision
    if params_override and params_override != derived:
        total = round(total * params_override / derived)
    return Weights(total, params_override or derived, note)


def token_embedding_bytes(arch: Architecture, precision: str, gguf: bool = False) -> int:
    """Bytes of the input embedding table (llama.cpp keeps it in host memory, not on the GPU)."""
    return _token_embedding_bytes(arch, check_precision(precision), gguf)


@lru_cache(maxsize=256)
def _token_embedding_bytes(arch: Architecture, precision: str, gguf: bool) -> int:
    file_type = gguf_file_type(precision, gguf)
    if file_type is not None:
        return sum(
            tensor_bytes(t, tensor)
            for tensor, t in gguf_tensor_types(arch, file_type)
            if tensor.category == "token_embd"
        )
    bits = max(FORMATS[precision].bits, 16.0)  # quantized formats keep the embeddings at 16 bits
    return round(arch.embedding_params() * bits / 8)
