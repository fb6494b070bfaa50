"""llama.cpp partial offload: what stays in system RAM when the model does not fit the GPU.

llama.cpp can keep whole layers on the CPU (`--n-gpu-layers` below the layer count) or, for a
mixture-of-experts model, only the routed-expert tensors of the first N layers
(`--n-cpu-moe N`, which overrides those tensors to the CPU buffer). Whatever sits in RAM is
read at the RAM's bandwidth on every token, so the decode rate falls to
efficiency / (GPU bytes / GPU bandwidth + RAM bytes / RAM bandwidth).
"""

from __future__ import annotations

from typing import NamedTuple

from tools.architecture import Architecture
from tools.engines import DECODE_BANDWIDTH_EFFICIENCY
from tools.gguf import gguf_tensor_types, tensor_bytes
from tools.precision import FORMATS, gguf_file_type

# RAM assumed when the request names none: dual-channel DDR5-5600, a common desktop
# (tools/data/cards.json cpu-ddr5-64gb: 89.6 GB/s).
DEFAULT_RAM_CARD = "cpu-ddr5-64gb"


class Offload(NamedTuple):
    flag: str  # "--n-cpu-moe" or "--n-gpu-layers"
    value: int
    ram_bytes: int  # weights moved to system RAM
    decode_tokens_per_s: float | None


def _per_layer_bytes(arch: Architecture, precision: str, scale: float) -> dict[int, tuple[int, int]]:
    """Per layer: (routed-expert bytes, every other weight byte) in the file llama.cpp loads."""
    file_type = gguf_file_type(precision, gguf=True)
    if file_type is not None:
        typed = [(t, tensor_bytes(ggml, t)) for t, ggml in gguf_tensor_types(arch, file_type)]
    else:
        bits = FORMATS[precision].bits
        typed = [(t, round(t.params * bits / 8)) for t in arch.tensors()]
    out: dict[int, tuple[int, int]] = {}
    for tensor, size in typed:
        if tensor.layer is None:
            continue
        experts, other = out.get(tensor.layer, (0, 0))
        size = round(size * scale)
        out[tensor.layer] = (experts + size, other) if tensor.routed_expert else (experts, other + size)
    return out


def plan_offload(
    arch: Architecture,
    precision: str,
    scale: float,
    short_bytes: int,
    gpu_weights_bytes: int,
    gpu_bandwidth_gbps: float | None,
    ram_bandwidth_gbps: float | None,
) -> Offload | None:
    """The least offload that frees `short_bytes` of GPU memory, or None when even every layer
    in RAM would not. MoE models move experts first (attention stays on the GPU)."""
    if short_bytes <= 0:
        return None
    layers = _per_layer_bytes(arch, precision, scale)
    ordered = [layers[i] for i in sorted(layers)]
    if arch.is_moe:
        moved, count = 0, 0
        for experts, _ in ordered:
            if moved >= short_bytes:
                break
            moved, count = moved + experts, count + 1
        if moved >= short_bytes:
            share = arch.experts_per_token / arch.num_experts  # a token reads its top-k experts
            read_ram = moved * share
            read_gpu = (gpu_weights_bytes - moved) * share  # close enough: attention is small
            return Offload(
                "--n-cpu-moe", count, moved, _rate(read_gpu, read_ram, gpu_bandwidth_gbps, ram_bandwidth_gbps)
            )
    per_layer = [experts + other for experts, other in ordered]
    moved, count = 0, 0
    for size in reversed(per_layer):  # llama.cpp offloads the last layers to the GPU first
        if moved >= short_bytes:
            break
        moved, count = moved + size, count + 1
    if moved < short_bytes:
        return None
    read_share = arch.active_params() / arch.total_params()
    rate = _rate(
        (gpu_weights_bytes - moved) * read_share, moved * read_share, gpu_bandwidth_gbps, ram_bandwidth_gbps
    )
    return Offload("--n-gpu-layers", len(per_layer) - count, moved, rate)


def _rate(gpu_bytes: float, ram_bytes: float, gpu_bw: float | None, ram_bw: float | None) -> float | None:
    if not gpu_bw or not ram_bw:
        return None
    seconds = max(0.0, gpu_bytes) / (gpu_bw * 1e9) + ram_bytes / (ram_bw * 1e9)
    return round(DECODE_BANDWIDTH_EFFICIENCY / seconds, 1) if seconds > 0 else None


__all__ = ["DEFAULT_RAM_CARD", "Offload", "plan_offload"]
