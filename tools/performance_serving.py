"""A served workload in steady state: N users, each sending its next request when the last ends.

Continuous batching (vLLM, TensorRT-LLM, llama.cpp's server slots) runs the prompts of new
requests inside the same engine steps as the answers being generated, so decoders wait for
prefills and a new prompt shares the GPU with the running answers. The steady state is a fixed
point: how many sequences decode at once, and how often a prompt interrupts them, depend on
TTFT and TPOT, which depend on both (Little's law: N = rate × (TTFT + (answer − 1) × TPOT)).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from tools.performance_physics import Factors, Hardware, ModelFacts, step_s

# Prompt tokens one engine step takes (the prefill chunk): vLLM's max_num_batched_tokens default
# (8192 on cards of 70 GiB and more, 2048 below; tools/engines.py), TensorRT-LLM's max_num_tokens
# default 8192, llama.cpp's micro-batch n_ubatch 512 (tools/engines.py LLAMACPP_UBATCH).
LARGE_GPU_BYTES = 70 * 2**30


def prefill_chunk(engine: str, card_memory_bytes: float) -> float:
    if engine == "vllm":
        return 8192 if card_memory_bytes >= LARGE_GPU_BYTES else 2048
    if engine == "trtllm":
        return 8192
    if engine in ("llamacpp", "ollama"):
        return 512
    return math.inf  # transformers' generate() runs the whole prompt at once


class Operating(NamedTuple):
    """One operating point, in seconds and per second."""

    concurrency: float
    ttft_s: float
    tpot_s: float
    e2e_s: float
    output_tok_s_total: float
    requests_per_s: float

    @property
    def output_tok_s_per_user(self) -> float:
        return 1.0 / self.tpot_s


def _prefill_time(
    model: ModelFacts,
    hw: Hardware,
    engine: str,
    factors: Factors,
    tokens: float,
    prompt: float,
    decoding: float,
    context: float,
    chunk: float,
) -> float:
    """Time to push `tokens` prompt tokens through, chunk by chunk, each chunk in a step that also
    carries the `decoding` running answers."""
    chunks = max(1, math.ceil(tokens / chunk - 1e-9)) if math.isfinite(chunk) else 1
    per_chunk = tokens / chunks
    return chunks * step_s(model, hw, engine, factors, decoding, context, per_chunk, prompt / 2)


def next_times(
    model: ModelFacts,
    hw: Hardware,
    engine: str,
    factors: Factors,
    prompt: int,
    answer: int,
    users: float,
    chunk: float,
    ttft: float,
    tpot: float,
) -> tuple[float, float]:
    """One round of the fixed point: TTFT and TPOT given the load that `ttft` and `tpot` imply.

    Of a user's cycle (TTFT + (answer − 1) × TPOT) the share spent generating sets how many
    sequences decode at once. A prompt runs in steps that also carry those decoders ("mixed"
    steps); a decoder's answer slows by the extra time of the mixed steps of the other users'
    prompts that fall inside it, and a new prompt waits for the prompts already in line."""
    context = prompt + answer / 2
    steps = max(answer - 1, 0)
    e2e = ttft + steps * tpot
    decoding_share = steps * tpot / e2e if e2e > 0 else 0.0
    decoding = users * decoding_share
    others = max(users - 1.0, 0.0)
    t_decode = step_s(model, hw, engine, factors, decoding, context)
    prefill = _prefill_time(model, hw, engine, factors, prompt, prompt, decoding, context, chunk)
    chunks = max(1, math.ceil(prompt / chunk - 1e-9)) if math.isfinite(chunk) else 1
    extra = max(prefill - chunks * t_decode, 0.0)
    new_tpot = t_decode + (others * decoding_share * extra / steps if steps else 0.0)
    in_line = others * prefill / e2e if e2e > 0 else 0.0
    new_ttft = factors.request_overhead_s + prefill * (1.0 + in_line)
    return new_ttft, new_tpot


def steady_state(
    model: ModelFacts,
    hw: Hardware,
    engine: str,
    factors: Factors,
    prompt: int,
    answer: int,
    users: float,
    chunk: float,
) -> Operating:
    """N users in a closed loop (each sends its next request as soon as the last answer ends)."""
    context = prompt + answer / 2
    tpot = step_s(model, hw, engine, factors, users, context)
    ttft = factors.request_overhead_s + _prefill_time(model, hw, engine, factors, prompt, prompt, 0, 0, chunk)
    for _ in range(100):
        new_ttft, new_tpot = next_times(model, hw, engine, factors, prompt, answer, users, chunk, ttft, tpot)
        done = abs(new_tpot - tpot) <= 1e-7 * tpot and abs(new_ttft - ttft) <= 1e-7 * ttft
        ttft, tpot = 0.5 * (ttft + new_ttft), 0.5 * (tpot + new_tpot)
        if done:
            break
    e2e = ttft + max(answer - 1, 0) * tpot
    rate = users / e2e
    return Operating(users, ttft, tpot, e2e, rate * answer, rate)


def offline_batch(
    model: ModelFacts,
    hw: Hardware,
    engine: str,
    factors: Factors,
    prompt: int,
    answer: int,
    batch: int,
    chunk: float,
) -> Operating:
    """`batch` requests submitted together (vLLM's `bench latency`, llama-bench): every prompt is
    prefilled, then all answers are generated side by side."""
    context = prompt + answer / 2
    ttft = _prefill_time(model, hw, engine, factors, prompt * batch, prompt, 0, 0, chunk)
    tpot = step_s(model, hw, engine, factors, batch, context)
    e2e = ttft + max(answer - 1, 0) * tpot
    rate = batch / e2e
    return Operating(batch, ttft, tpot, e2e, rate * answer, rate)
