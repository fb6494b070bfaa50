"""Serving-engine memory profiles: what each engine puts on the GPU besides weights and KV.

Every constant names the measurement it comes from (tools/data/calibration.json holds the
source log lines). Memory is in bytes; GiB = 2^30 where a source printed GiB.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

from tools.architecture import Architecture
from tools.errors import UnknownChoiceError
from tools.kv_cache import KvLayout, kv_layout

ENGINES: tuple[str, ...] = ("vllm", "llamacpp", "ollama", "transformers")
EngineName = Literal["vllm", "llamacpp", "ollama", "transformers"]
# How each engine's name is written in every text.
ENGINE_LABELS = {"vllm": "vLLM", "llamacpp": "llama.cpp", "ollama": "Ollama", "transformers": "transformers"}
GIB = 2**30
MIB = 2**20

# CUDA context + driver state a process holds outside any allocator: measured on an H200,
# torch total_memory 150,109,880,320 B vs mem_get_info free after init 149,557,477,376 B
# = 527 MiB (calibration.json C19).
CUDA_CONTEXT_BYTES = 527 * MIB

# --- vLLM (V1 engine) -------------------------------------------------------------------------
# vLLM claims gpu_memory_utilization × total and carves, per GPU: weights, the activation peak
# of a profiling run, non-torch memory (NCCL, cuBLAS workspaces); the rest is the KV pool
# (vllm/v1/worker/gpu_worker.py determine_available_memory). The five-figure logs of
# llm-d-planner (calibration.json V3, V4, V5, V7, V9, V10) balance exactly this way.
VLLM_BLOCK_SIZE = 16  # tokens per KV block (vLLM's CUDA default)
# Non-torch memory: 0.13-0.14 GiB at TP1 (V3, V4, V7, V9), 0.54 GiB at TP2 with NCCL (V5).
VLLM_NON_TORCH_TP1 = 0.13 * GIB
VLLM_NON_TORCH_TP = 0.54 * GIB
# The profiling peak is the larger of the dummy forward pass and the dummy sampler run. The
# sampler holds fp32 logits, probabilities and sort buffers for max_num_seqs × vocab: 4.76 GiB
# for Llama-3.1-8B (vocab 128,256), 5.56/5.64 GiB for Qwen3-0.6B/32B (151,936), 7.38 GiB for
# gpt-oss-20b (201,088), all at 1024 sequences on an H100 (V3, V9, V4, V7): 38.6 bytes each.
VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB = 38.6
# The forward pass keeps ~3 × (FFN width + hidden) bf16 activations per batched token: gate/up
# output, the gated product and the residual stream. Fits the V0 logs of vllm#10517 (C1/C2:
# peak torch memory minus 14.99 GiB of weights = 2.10 GiB at 20,000 profiled tokens and
# 3.02 GiB at 29,000 on Llama-3.1-8B: 110 kB/token, formula 111 kB).
VLLM_FORWARD_BYTES_PER_ELEMENT = 2 * 3
# Scheduler defaults of `vllm serve` (vllm/engine/arg_utils.py): GPUs of 70 GiB or more other
# than the A100 get max_num_seqs 1024 and max_num_batched_tokens 8192; the rest 256 and 2048.
VLLM_LARGE_GPU_BYTES = 70 * GIB
VLLM_LARGE_DEFAULTS = (1024, 8192)
VLLM_SMALL_DEFAULTS = (256, 2048)
# CUDA graphs are captured after the KV pool is allocated, in the (1 - utilization) slack:
# 0.65 GiB for gemma-3-4b (V16, vllm PR #21489); with the CUDA context it must fit there.
VLLM_CUDA_GRAPH_BYTES = int(0.65 * GIB)

# --- llama.cpp / Ollama -----------------------------------------------------------------------
# llama.cpp sizes the compute buffer for one micro-batch (n_ubatch = 512, llama.cpp default):
# fp32 logits n_ubatch × vocab plus the FFN intermediate; without flash attention it adds the
# n_ubatch × n_ctx × heads fp32 attention scores (C16: 8,480 MiB at n_ctx 131,072 on Llama-3.1-8B,
# of which 8,192 MiB are those scores). Flash attention is on by default for CUDA builds.
LLAMACPP_UBATCH = 512
LLAMACPP_SWA_PAD = 256  # sliding-window cache cells: pad(window + n_ubatch, 256) per sequence (C13, G7)

# --- transformers ------------------------------------------------------------------------------
# `generate()` runs the whole prompt batch through at once: the same per-token activations as
# the vLLM forward pass over users × context tokens, plus fp32 logits for the last position.
TRANSFORMERS_LOGIT_BYTES = 8  # fp32 logits + their softmax, per sequence × vocab

# Share of peak memory bandwidth single-stream decode reaches: 79.3 tok/s measured for a bf16
# Llama-3-8B (16.06 GB read per token) on an A100-80GB (2,039 GB/s) = 62 % (calibration V11).
DECODE_BANDWIDTH_EFFICIENCY = 0.62


class Hardware(NamedTuple):
    gpus: int  # in all, over every node
    usable_bytes_per_gpu: int
    bandwidth_gbps: float | None
    card_id: str
    nodes: int = 1  # vLLM: pipeline-parallel stages, one node of gpus / nodes GPUs each
    # "cuda" (NVIDIA and ROCm), "metal" (Apple unified memory) or "cpu" (system RAM)
    accelerator: str = "cuda"


class ServedModel(NamedTuple):
    """What an engine holds for one request besides its own overhead: the model, its weights in
    bytes, the KV cache type, the tokens per sequence, the sequences at once, and the layers of a
    draft model or MTP heads whose cache shares the pool."""

    arch: Architecture
    weights_bytes: int
    kv_dtype: str
    context: int
    users: int
    extra_kv: tuple[Architecture, ...] = ()


class Estimate(NamedTuple):
    """One engine on one hardware option. Byte figures are summed over all GPUs."""

    engine: str
    gpus: int
    budget_bytes: int  # memory the engine may use
    weights_bytes: int  # weights on the GPUs
    overhead_bytes: int  # everything that is neither weights nor KV cache
    overhead_parts: list[tuple[str, int]]  # (label key, bytes per GPU)
    kv_bytes_per_token: int  # full-attention layers, all GPUs
    kv_bytes_per_sequence: int  # one sequence at the asked context, all GPUs
    kv_room_bytes: int  # what is left for the KV cache
    max_concurrent_sequences: int
    fits: bool
    headroom_bytes: int
    slack_ok: bool  # vLLM: the 1 - utilization slack holds the CUDA context and graphs
    scheduler: tuple[int, int] | None  # vLLM (max_num_seqs, max_num_batched_tokens)
    pipeline: int = 1  # pipeline-parallel stages (nodes); gpus / pipeline is the TP degree


def check_engine(engine: str) -> str:
    name = (engine or "").strip().lower().replace(".", "").replace("-", "").replace("_", "")
    name = {"llamacpp": "llamacpp", "llama": "llamacpp", "hf": "transformers"}.get(name, name)
    if name not in ENGINES:
        raise UnknownChoiceError("engine", engine, ENGINES)
    return name


def vllm_scheduler_defaults(usable_bytes_per_gpu: int, card_id: str) -> tuple[int, int]:
    large = usable_bytes_per_gpu >= VLLM_LARGE_GPU_BYTES and not card_id.startswith("a100")
    return VLLM_LARGE_DEFAULTS if large else VLLM_SMALL_DEFAULTS


def vllm_activation_bytes(arch: Architecture, max_num_seqs: int, batched_tokens: int, tp: int) -> int:
    """Peak of vLLM's profiling run on one GPU: the larger of the forward pass and the sampler run."""
    sampler = VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB * max_num_seqs * arch.vocab_size
    width = arch.ffn_width_per_token / tp + arch.hidden_size
    forward = VLLM_FORWARD_BYTES_PER_ELEMENT * width * batched_tokens
    return int(max(sampler, forward))


def _blocks(tokens: int) -> int:
    return math.ceil(tokens / VLLM_BLOCK_SIZE) * VLLM_BLOCK_SIZE


def estimate_vllm(
    served: ServedModel, hw: Hardware, utilization: float, v0_profile: bool = False
) -> Estimate:
    """vLLM on `hw.gpus` GPUs in tensor parallel. v0_profile reproduces the V0 engine (removed in
    vLLM 0.10), whose profiling run pushed max_model_len tokens through at once (calibration C1/C2)."""
    arch, weights_bytes, kv_dtype, context, users, extra_kv = served
    pp = max(1, hw.nodes)
    tp = hw.gpus // pp
    layout = kv_layout(arch, kv_dtype, tp)
    if v0_profile:
        default_seqs, batched = VLLM_SMALL_DEFAULTS[0], max(context, VLLM_SMALL_DEFAULTS[1])
    else:
        default_seqs, batched = vllm_scheduler_defaults(hw.usable_bytes_per_gpu, hw.card_id)
    # Serving `users` sequences at once needs --max-num-seqs of at least that; the sampler grows with it.
    max_num_seqs = max(default_seqs, users)
    budget = int(utilization * hw.usable_bytes_per_gpu)
    activation = vllm_activation_bytes(arch, max_num_seqs, batched, tp)
    non_torch = int(VLLM_NON_TORCH_TP1 if hw.gpus == 1 else VLLM_NON_TORCH_TP)
    weights_per_gpu = math.ceil(weights_bytes / hw.gpus)
    pool = budget - weights_per_gpu - activation - non_torch
    # Pipeline stages split the layers, so each GPU holds 1/pp of the sequence's cache.
    per_sequence = layout.sequence_bytes(_blocks(context), sliding_cells=_sliding_cells_vllm(layout))
    for extra in extra_kv:  # a draft model's or MTP layers' cache, in the same pool
        other = kv_layout(extra, kv_dtype, tp)
        per_sequence += other.sequence_bytes(_blocks(context), sliding_cells=_sliding_cells_vllm(other))
    seq = math.ceil(per_sequence / pp)
    max_seqs = max(0, pool // seq) if seq else 0
    slack = hw.usable_bytes_per_gpu - budget
    outside = CUDA_CONTEXT_BYTES + VLLM_CUDA_GRAPH_BYTES
    slack_ok = slack >= outside
    needed = users * seq
    # vLLM refuses a TP degree that does not divide the attention heads (parallel_state check).
    fits = pool > 0 and pool >= needed and slack_ok and arch.num_heads % tp == 0
    parts = [
        ("activation", activation),
        ("non_torch", non_torch),
        ("cuda_context", CUDA_CONTEXT_BYTES),
        ("cuda_graphs", VLLM_CUDA_GRAPH_BYTES),
    ]
    gpus = hw.gpus
    return Estimate(
        engine="vllm",
        gpus=gpus,
        budget_bytes=budget * gpus,
        weights_bytes=weights_per_gpu * gpus,
        overhead_bytes=sum(b for _, b in parts) * gpus,
        overhead_parts=parts,
        kv_bytes_per_token=layout.full_bytes_per_token * tp,
        kv_bytes_per_sequence=seq * gpus,
        kv_room_bytes=pool * gpus,
        max_concurrent_sequences=int(max_seqs),
        fits=fits,
        headroom_bytes=(pool - needed) * gpus,
        slack_ok=slack_ok,
        scheduler=(max_num_seqs, batched),
        pipeline=pp,
    )


def _sliding_cells_vllm(layout: KvLayout) -> int | None:
    # vLLM keeps the window plus the block being written for sliding-window layers.
    return layout.sliding_window + VLLM_BLOCK_SIZE if layout.sliding_window else None


def llamacpp_sliding_cells(layout: KvLayout, n_ubatch: int = LLAMACPP_UBATCH) -> int | None:
    if not layout.sliding_window:
        return None
    return math.ceil((layout.sliding_window + n_ubatch) / LLAMACPP_SWA_PAD) * LLAMACPP_SWA_PAD


def llamacpp_compute_buffer_bytes(
    arch: Architecture, n_ctx: int, flash_attention: bool = True, n_ubatch: int = LLAMACPP_UBATCH
) -> int:
    buffer = n_ubatch * 4 * (arch.vocab_size + arch.ffn_width_per_token)
    if not flash_attention:
        buffer += n_ubatch * n_ctx * arch.num_heads * 4
    return buffer


def estimate_llamacpp(
    served: ServedModel, embedding_bytes: int, hw: Hardware, engine: str = "llamacpp"
) -> Estimate:
    """Weights (less the input embedding, which llama.cpp keeps in host RAM) + KV for
    context × parallel slots + compute buffer + CUDA context, split by layers over the GPUs."""
    arch, weights_bytes, kv_dtype, context, users, extra_kv = served
    layout = kv_layout(arch, kv_dtype, 1)
    # On a CPU the input embedding is in the same RAM as everything else.
    host_embedding = 0 if arch.tie_embeddings or hw.accelerator == "cpu" else embedding_bytes
    on_gpu = weights_bytes - host_embedding
    seq = layout.sequence_bytes(context, sliding_cells=llamacpp_sliding_cells(layout))
    for extra in extra_kv:
        other = kv_layout(extra, kv_dtype, 1)
        seq += other.sequence_bytes(context, sliding_cells=llamacpp_sliding_cells(other))
    compute = llamacpp_compute_buffer_bytes(arch, context * users)
    parts = [("compute_buffer", compute)]
    if hw.accelerator == "cuda":
        parts.append(("cuda_context", CUDA_CONTEXT_BYTES))
    overhead = sum(b for _, b in parts) * hw.gpus
    room = hw.usable_bytes_per_gpu * hw.gpus - on_gpu - overhead
    return _whole_card(engine, hw, on_gpu, overhead, parts, layout, seq, room, seq, users)


def estimate_transformers(served: ServedModel, hw: Hardware) -> Estimate:
    """Weights + KV + the prefill activation peak + CUDA context (device_map="auto" over GPUs)."""
    arch, weights_bytes, kv_dtype, context, users, extra_kv = served
    layout = kv_layout(arch, kv_dtype, 1)
    seq = layout.sequence_bytes(context) + sum(
        kv_layout(a, kv_dtype, 1).sequence_bytes(context) for a in extra_kv
    )
    per_token = VLLM_FORWARD_BYTES_PER_ELEMENT * (arch.ffn_width_per_token + arch.hidden_size)
    per_sequence_activation = per_token * context + TRANSFORMERS_LOGIT_BYTES * arch.vocab_size
    activation = per_sequence_activation * users
    context_bytes = CUDA_CONTEXT_BYTES if hw.accelerator == "cuda" else 0
    parts = [("prefill_activation", activation)]
    if context_bytes:
        parts.append(("cuda_context", context_bytes))
    overhead = activation + context_bytes * hw.gpus
    room = hw.usable_bytes_per_gpu * hw.gpus - weights_bytes - context_bytes * hw.gpus
    per_sequence = seq + per_sequence_activation  # the prefill activations grow with each sequence
    return _whole_card(
        "transformers", hw, weights_bytes, overhead, parts, layout, seq, room, per_sequence, users
    )


def _whole_card(
    engine: str,
    hw: Hardware,
    weights_bytes: int,
    overhead: int,
    parts: list[tuple[str, int]],
    layout: KvLayout,
    seq: int,
    room: int,
    per_sequence: int,
    users: int,
) -> Estimate:
    """An engine with no memory budget of its own (llama.cpp, transformers): the whole usable
    memory less weights and fixed overhead is the room; each sequence takes `per_sequence` of it."""
    needed = users * per_sequence
    return Estimate(
        engine=engine,
        gpus=hw.gpus,
        budget_bytes=hw.usable_bytes_per_gpu * hw.gpus,
        weights_bytes=weights_bytes,
        overhead_bytes=overhead,
        overhead_parts=parts,
        kv_bytes_per_token=layout.full_bytes_per_token,
        kv_bytes_per_sequence=seq,
        kv_room_bytes=room,
        max_concurrent_sequences=int(max(0, room // per_sequence)) if per_sequence else 0,
        fits=room > 0 and room >= needed,
        headroom_bytes=room - needed,
        slack_ok=True,
        scheduler=None,
    )


def decode_tokens_per_s(read_bytes_per_token: int, hw: Hardware, engine: str) -> float | None:
    """Single-stream decode rate: every generated token reads the active weights and the sequence's
    KV once, at ~62 % of peak bandwidth. Tensor parallelism (vLLM) reads from all GPUs at once;
    llama.cpp's layer split and transformers' device_map read them one after another."""
    if not hw.bandwidth_gbps or read_bytes_per_token <= 0:
        return None
    # Pipeline stages (nodes) read one after another; only the TP group reads at once.
    parallel = hw.gpus // max(1, hw.nodes) if engine == "vllm" else 1
    rate = DECODE_BANDWIDTH_EFFICIENCY * hw.bandwidth_gbps * 1e9 * parallel / read_bytes_per_token
    return round(rate, 1)
