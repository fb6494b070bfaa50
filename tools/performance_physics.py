"""The roofline of LLM serving: how long a decode step and a prefill take on given hardware.

Pure arithmetic on plain numbers; the efficiency factors come from tools/performance_fit.py.

- Decode is bound by memory traffic: every step reads the weights once (for a mixture of experts
  only the experts the batch's tokens route to) plus the KV cache of every running sequence; or by
  compute (2 FLOPs per active parameter per token) when the batch is large. Whichever is larger,
  divided by the share of peak the engine reaches, plus a fixed per-step cost (scheduling,
  sampling), a fixed cost per layer (its norm, projections, attention and activation kernels each
  take a few microseconds to launch and ramp up however small their matrices: the floor a small
  model hits, where a 2-billion-parameter model's step is mostly these) and, for a mixture of
  experts, a fixed cost per routed layer (gating, top-k, sorting tokens by expert: several small
  kernels whatever the batch). Sources: the roofline analyses of LLM-Viewer (Yuan et al. 2024, "LLM
  Inference Unveiled") and GenZ (Bambhaniya et al. 2024).
- Prefill is compute bound: 2 × active parameters × prompt tokens, plus attention
  (2 FLOPs per multiply-add of QK^T and of AV: 2 × heads × (key width + value width) per token
  pair and layer, over half the prompt for a causal one, and at most the window on a sliding
  layer), and never faster than one read of the weights.
- Tensor parallelism (vLLM, TensorRT-LLM, SGLang) splits every matrix over the GPUs, so they read and
  compute in parallel, and adds two all-reduces per layer of the batch's hidden states. llama.cpp's
  layer split and transformers' device_map run the layers one GPU after the other instead.
"""

from __future__ import annotations

from typing import NamedTuple

# All-reduce cost = latency + 2 (g - 1) / g × bytes / bus bandwidth (NCCL's "busbw" convention).
# NVLink: ~6 µs for small messages on 2 × H100 with CUDA graphs (NVIDIA/nccl#1259) and 370 GB/s
# effective bus bandwidth (NVIDIA/nccl-tests#212, NCCL maintainer's figure for H100 NVLink); an
# NVSwitch lets every GPU reach every other in one hop, so the latency stays flat with the count.
# PCIe: a ring of g GPUs takes 2 (g - 1) hops through the root complex or switch, each ~3.2 µs:
# 19.4 µs for a 4 KB all-reduce inside a CUDA graph on 4 GPUs behind a PCIe switch
# (haohervchb/sglang-V100#2) is 6 hops; 8 GPUs (14 hops, 45 µs) measured 40-42 µs on 8 × RTX 4090
# (NVIDIA/nccl#1530) and 54 µs on 8 × RTX 3090 (NVIDIA/nccl#1439) for 8-byte all-reduces. Bus
# bandwidth 28 GB/s on 8 PCIe 5.0 GPUs (NVIDIA/nccl#1639).
ALLREDUCE = {
    "nvlink": (6e-6, 370e9),
    "pcie": (19.4e-6, 28e9),
}
ALLREDUCE_REFERENCE_GPUS = {"nvlink": 2, "pcie": 4}  # the GPU count each latency above was measured on
RING_INTERCONNECTS = ("pcie",)  # latency grows with the ring's hops; NVSwitch stays one hop
LLAMACPP_ENGINES = ("llamacpp", "ollama")
ACTIVATION_BYTES = 2  # bf16 hidden states travel between GPUs
ALLREDUCES_PER_LAYER = 2  # after attention and after the MLP (Megatron-style tensor parallelism)


class Hardware(NamedTuple):
    """One serving node: a card model × count and how the cards talk."""

    card_id: str
    bandwidth_gbps: float
    bf16_tflops: float | None
    fp8: bool
    generation: str
    gpus: int
    interconnect: str  # "nvlink" or "pcie"
    # Tensor rate with FP16 accumulation relative to `bf16_tflops` (FP32 accumulation): 2 on GeForce
    # cards, which halve FP32 accumulation, 1 on professional and datacenter cards.
    fp16_accumulate: float = 1.0


class ModelFacts(NamedTuple):
    """What the roofline needs to know about a model at its served precision."""

    params: int
    active_params: int
    dense_read_bytes: float  # read every step whatever the batch: attention, shared layers, LM head
    expert_bytes: float  # all routed experts together (0 for a dense model)
    num_experts: int
    experts_per_token: int
    layers: int
    moe_layers: int  # layers whose MLP is routed experts
    hidden: int
    kv_full_bytes_per_token: float  # per context token, full-attention layers, all GPUs
    kv_sliding_bytes_per_token: float  # per context token, sliding layers (capped at the window)
    sliding_window: int | None
    fp8_compute: bool  # FP8 weights run on FP8 tensor cores where the card has them
    quantized: bool = False  # integer-quantized weights (GGUF Q*, AWQ, GPTQ...): dequantizing kernels
    # Attention FLOPs per (query token, attended token) pair, summed over the full-attention layers
    # and over the sliding ones; None: 4 × hidden on every layer (heads × head width = hidden).
    attention_full_flops: float | None = None
    attention_sliding_flops: float = 0.0
    # Tokens a chat answer generates before the first one its stream shows (`CHAT_HEADER_TOKENS`).
    chat_header_tokens: int = 0
    mla_layers: int = 0  # layers whose attention is multi-head latent attention (DeepSeek-V2/V3)
    # Of `active_params`, those in the routed experts a token runs through (k of E per layer).
    expert_active_params: int = 0


class Factors(NamedTuple):
    """How close an engine gets to the hardware's peaks (fitted on published measurements)."""

    bandwidth_efficiency: float  # share of peak memory bandwidth a decode step reaches
    step_overhead_s: float  # fixed cost of each decode step
    compute_efficiency: float  # share of peak tensor FLOPs a prefill reaches
    request_overhead_s: float  # fixed cost before the first token (HTTP, tokenizer, scheduling)
    moe_layer_overhead_s: float = 0.0  # fixed cost per mixture-of-experts layer and step (routing)
    quantized_compute: float = 1.0  # prefill speed of integer-quantized weights relative to 16-bit
    layer_overhead_s: float = 0.0  # fixed cost per layer and step (its kernels' launch and ramp)
    # A request's fixed wait for its first token, beyond its prompt's GPU time, in units of the
    # model's fixed cost per step (`fixed_step_s`); see `request_latency_s`.
    first_token_steps: float = 0.0
    # Fixed cost per multi-head-latent-attention layer and step beyond a plain layer's: MLA's decode
    # runs more small kernels per layer (the down- and up-projections of queries and latents, the
    # absorbed key and value products, the latent cache write, the per-group FP8 scaling of each
    # product's input), each a launch however small the batch; engines that fuse them pay less.
    mla_layer_overhead_s: float = 0.0
    # Speed of the routed experts' FLOPs relative to the dense layers' (`compute_efficiency`): a
    # prompt's tokens reach each expert a few dozen at a time (T × k / E: 100 of a 3,200-token
    # prompt on DeepSeek-V3's 256 experts, top 8), so its products are many short grouped GEMMs
    # behind a gather and a scatter of the tokens, not one long GEMM (Gale et al. 2022,
    # MegaBlocks, arXiv:2211.15841).
    moe_compute: float = 1.0


def fixed_step_s(model: ModelFacts, factors: Factors) -> float:
    """What one engine step costs however small the batch: per step, per layer, per routed layer."""
    return (
        factors.step_overhead_s
        + model.layers * factors.layer_overhead_s
        + model.moe_layers * factors.moe_layer_overhead_s
        + model.mla_layers * factors.mla_layer_overhead_s
    )


def anchored(factors: Factors, ratio: float) -> Factors:
    """The factors of a setup whose published runs take `ratio` times the estimated time per decode
    step (tools/performance_anchor.py): the share of peak bandwidth it reaches (at most all of it)
    and its fixed per-step costs scaled; the prefill's compute efficiency is left alone."""
    return factors._replace(
        bandwidth_efficiency=min(1.0, factors.bandwidth_efficiency / ratio),
        step_overhead_s=factors.step_overhead_s * ratio,
        layer_overhead_s=factors.layer_overhead_s * ratio,
        moe_layer_overhead_s=factors.moe_layer_overhead_s * ratio,
        mla_layer_overhead_s=factors.mla_layer_overhead_s * ratio,
    )


def first_pass_s(model: ModelFacts, factors: Factors) -> float:
    """A prompt's pass waits `first_token_steps` of the model's fixed step cost beyond its GPU
    time: it is not the replay of a captured CUDA graph the decode steps are; its kernels are
    launched and its buffers prepared one layer after another, so a deep model, and a deep
    mixture of experts most (gating, sorting and scattering tokens at every routed layer), waits
    longest."""
    return factors.first_token_steps * fixed_step_s(model, factors)


def request_latency_s(model: ModelFacts, factors: Factors) -> float:
    """The fixed part of a served request's time to first token, beyond its prompt's GPU time: the
    front end's constant cost plus the first pass's wait (`first_pass_s`). Where prompts ride in
    the decoders' steps (vLLM, TensorRT-LLM) that wait is latency, not GPU time: at 64 users the
    decoders' TPOT shows no such stall per arriving prompt (S39), so the other users' steps are not
    charged with it (engines that run prompts in batches of their own: see
    `performance_serving.SEPARATE_PREFILL_ENGINES`)."""
    return factors.request_overhead_s + first_pass_s(model, factors)


def tensor_parallel(engine: str) -> bool:
    return engine in ("vllm", "trtllm", "sglang")


def kv_read_bytes(model: ModelFacts, context: float) -> float:
    window = model.sliding_window or context
    return model.kv_full_bytes_per_token * context + model.kv_sliding_bytes_per_token * min(context, window)


def attention_flops(model: ModelFacts, tokens: float, context: float) -> float:
    """QK^T and AV of `tokens` query tokens, each attending to `context` earlier tokens."""
    if model.attention_full_flops is None:
        return 4.0 * model.layers * model.hidden * tokens * context
    window = model.sliding_window or context
    return tokens * (
        model.attention_full_flops * context + model.attention_sliding_flops * min(context, window)
    )


def experts_touched(model: ModelFacts, tokens: float) -> float:
    """Share of routed experts a step reads: each token picks k of E experts per layer, so B tokens
    touch E × (1 - (1 - k/E)^B) distinct experts on average (uniform routing)."""
    if not model.num_experts or tokens <= 0:
        return 0.0
    pick = model.experts_per_token / model.num_experts
    return 1.0 - (1.0 - pick) ** tokens


def peak_flops(hw: Hardware, model: ModelFacts, engine: str) -> float | None:
    if not hw.bf16_tflops:
        return None
    fp8 = 2.0 if model.fp8_compute and hw.fp8 else 1.0
    # llama.cpp multiplies 16-bit weights in half precision (cuBLAS, FP16 accumulation) and
    # quantized ones on INT8 tensor cores: GeForce cards run both at twice the rate their BF16 figure
    # (FP32 accumulation) implies, professional and datacenter cards at the same rate (NVIDIA's
    # GA102 and Ada whitepapers: RTX 3090 71 / 142 TFLOPS, RTX 4090 165 / 330; RTX A6000 and
    # RTX 6000 Ada, the same chips, 155 and 364 either way).
    accumulate = hw.fp16_accumulate if engine in LLAMACPP_ENGINES else 1.0
    return hw.bf16_tflops * 1e12 * fp8 * accumulate


def _parallel(hw: Hardware, engine: str) -> int:
    return hw.gpus if tensor_parallel(engine) else 1


def communication_s(model: ModelFacts, hw: Hardware, engine: str, tokens: float) -> float:
    """Tensor-parallel all-reduces of one forward pass over `tokens` tokens."""
    g = hw.gpus
    if g <= 1 or not tensor_parallel(engine):
        return 0.0
    latency, bus = ALLREDUCE[hw.interconnect]
    if hw.interconnect in RING_INTERCONNECTS:
        latency *= (g - 1) / (ALLREDUCE_REFERENCE_GPUS[hw.interconnect] - 1)
    message = tokens * model.hidden * ACTIVATION_BYTES
    one = latency + 2 * (g - 1) / g * message / bus
    return model.layers * ALLREDUCES_PER_LAYER * one


def step_s(
    model: ModelFacts,
    hw: Hardware,
    engine: str,
    factors: Factors,
    decoding: float,
    context: float,
    prefill_tokens: float = 0.0,
    prefill_context: float = 0.0,
) -> float:
    """One engine step: `decoding` sequences each add a token at average `context`, and
    `prefill_tokens` prompt tokens (average prompt length `prefill_context`) ride along
    (continuous batching with chunked prefill)."""
    tokens = decoding + prefill_tokens
    parallel = _parallel(hw, engine)
    weights = model.dense_read_bytes + model.expert_bytes * experts_touched(model, tokens)
    memory = weights + decoding * kv_read_bytes(model, context)
    t_memory = memory / (hw.bandwidth_gbps * 1e9 * parallel * factors.bandwidth_efficiency)
    flops = 2.0 * (model.active_params - model.expert_active_params) * tokens
    # A prompt token attends on average to half the prompt (causal mask): prefill_context.
    flops += attention_flops(model, prefill_tokens, prefill_context) + attention_flops(
        model, decoding, context
    )
    flops += 2.0 * model.expert_active_params * tokens / factors.moe_compute
    peak = peak_flops(hw, model, engine)
    efficiency = factors.compute_efficiency * (factors.quantized_compute if model.quantized else 1.0)
    t_compute = flops / (peak * parallel * efficiency) if peak else 0.0
    return (
        max(t_memory, t_compute) + fixed_step_s(model, factors) + communication_s(model, hw, engine, tokens)
    )


def prefill_s(model: ModelFacts, hw: Hardware, engine: str, factors: Factors, prompt: float) -> float:
    """One prompt alone on the engine: compute bound, at least one read of the weights."""
    return step_s(model, hw, engine, factors, 0.0, 0.0, prompt, prompt / 2)
