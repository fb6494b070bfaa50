"""A served workload in steady state: N users, each sending its next request when the last ends.

Continuous batching (vLLM, TensorRT-LLM, llama.cpp's server slots) runs the prompts of new
requests inside the same engine steps as the answers being generated, so decoders wait for
prefills and a new prompt shares the GPU with the running answers. The steady state is a fixed
point: how many sequences decode at once, and how often a prompt interrupts them, depend on
TTFT and TPOT, which depend on both (Little's law: N = rate × (TTFT + (answer − 1) × TPOT)).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from tools.performance_physics import Factors, Hardware, ModelFacts, first_pass_s, request_latency_s, step_s

# Prompt tokens one engine step takes (the prefill chunk): vLLM's max_num_batched_tokens default
# (8192 on cards of 70 GiB and more, 2048 below; tools/engines.py), TensorRT-LLM's max_num_tokens
# default 8192, SGLang's chunked_prefill_size (8192 on large cards, smaller below, read like
# vLLM's), llama.cpp's micro-batch n_ubatch 512 (tools/engines.py LLAMACPP_UBATCH).
LARGE_GPU_BYTES = 70 * 2**30
# Guards of `next_times` (one round from measured figures, used by the fit): a measured run is never
# saturated, so these only keep a bad figure from dividing by zero.
MIN_DECODE_SHARE = 0.02
MAX_PREFILL_BUSY = 0.98
# The fixed points below stop when a step changes the answer by less than this share: far below
# any measurement's precision, and it keeps the fit's thousands of evaluations fast.
RELATIVE_TOLERANCE = 1e-7
FIXED_POINT_ROUNDS = 30
# Engines that run a prompt in a prefill batch of its own while the running answers wait, instead
# of inside the steps that carry them: SGLang mixes the two only with --enable-mixed-chunk, off by
# default (server_args.py: `enable_mixed_chunk: bool = False`), and captures CUDA graphs for decode
# batches only (a prefill graph is opt-in), so a prefill batch's launch-bound first pass
# (`first_pass_s`) holds the GPU: the running answers wait for it too.
SEPARATE_PREFILL_ENGINES = ("sglang",)


def prefill_chunk(engine: str, card_memory_bytes: float) -> float:
    if engine in ("vllm", "sglang"):
        return 8192 if card_memory_bytes >= LARGE_GPU_BYTES else 2048
    if engine == "trtllm":
        return 8192
    if engine in ("llamacpp", "ollama"):
        return 512
    return math.inf  # transformers' generate() runs the whole prompt at once


def chunk_count(tokens: float, chunk: float) -> float:
    """Engine steps a prompt takes. Fractional: the leftover of the last chunk rides in a step the
    running answers need anyway (chunked prefill fills each step's token budget), so 2,049
    tokens cost one chunk and a sliver, not two."""
    return max(1.0, tokens / chunk) if math.isfinite(chunk) else 1.0


@dataclass(frozen=True)
class Served:
    """One engine serving one model on one node with given efficiency factors: what every
    timing of this module needs, whatever the load."""

    model: ModelFacts
    hw: Hardware
    engine: str
    factors: Factors
    chunk: float  # prompt tokens one engine step takes (`prefill_chunk`)
    chat: bool = True  # answers streamed by a chat endpoint (what a chat client sees), not raw tokens

    def step(
        self, decoding: float, context: float, prefill_tokens: float = 0.0, prefill_context: float = 0.0
    ) -> float:
        return step_s(
            self.model, self.hw, self.engine, self.factors, decoding, context, prefill_tokens, prefill_context
        )

    @property
    def separate_prefill(self) -> bool:
        return self.engine in SEPARATE_PREFILL_ENGINES

    @property
    def request_latency(self) -> float:
        """A served request's fixed wait for its first token (`request_latency_s`); where prompts run
        in batches of their own the first pass's wait is GPU time, counted in `prefill` instead."""
        if self.separate_prefill:
            return self.factors.request_overhead_s
        return request_latency_s(self.model, self.factors)

    def first_seen(self, ttft: float, tpot: float) -> float:
        """The first token a client sees: the engine's first, or on a chat endpoint the first after
        the header tokens the stream hides (gpt-oss's harmony channel header), one TPOT each."""
        return ttft + (self.model.chat_header_tokens * tpot if self.chat else 0.0)

    def prefill(self, tokens: float, prompt: float, decoding: float, context: float) -> float:
        """Time to push `tokens` prompt tokens through, chunk by chunk, each chunk in a step that
        also carries the `decoding` running answers."""
        chunks = chunk_count(tokens, self.chunk)
        step = self.step(decoding, context, tokens / chunks, prompt / 2)
        if self.separate_prefill:  # each prefill batch is a launch-bound first pass
            step += first_pass_s(self.model, self.factors)
        return chunks * step

    def interrupted(self, prompt: int, decoding: float, context: float) -> tuple[float, float, float]:
        """(decode step, one prompt's prefill, what that prefill costs the decoders beyond the
        decode steps it replaces) with `decoding` answers running. Where prompts run in batches of
        their own (`SEPARATE_PREFILL_ENGINES`) the prefill carries no decoder and gives none a
        token: all of it is a stall."""
        t_decode = self.step(decoding, context)
        if self.separate_prefill:
            prefill = self.prefill(prompt, prompt, 0.0, context)
            return t_decode, prefill, prefill
        prefill = self.prefill(prompt, prompt, decoding, context)
        return t_decode, prefill, max(prefill - chunk_count(prompt, self.chunk) * t_decode, 0.0)


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


def _ttft(served: Served, prefill: float, busy: float) -> float:
    """A new prompt waits for the prompts ahead of it: M/D/1 queueing on the prefill work,
    W = ρ / (2 (1 − ρ)) × prefill with ρ the share of time the GPU spends on other prompts."""
    return served.request_latency + prefill * (1.0 + busy / (2.0 * (1.0 - busy)))


def next_times(
    served: Served, prompt: int, answer: int, users: float, ttft: float, tpot: float
) -> tuple[float, float]:
    """One round of the fixed point: TTFT and TPOT given the load that `ttft` and `tpot` imply.

    Of a user's cycle (TTFT + (answer − 1) × TPOT) the share spent generating sets how many
    sequences decode at once. A prompt runs in steps that also carry those decoders ("mixed"
    steps), so every step, mixed or not, gives each decoder one token; the other users' prompts
    arrive at rate λ_o and each costs `extra` seconds more than the decode steps it replaces,
    so decode steps get 1 − λ_o × extra of every second: TPOT = t_decode / (1 − λ_o × extra).
    The queue in front of a new prompt (`_ttft`) keeps the request rate below what the GPU can
    prefill."""
    context = prompt + answer / 2
    steps = max(answer - 1, 0)
    e2e = ttft + steps * tpot
    decoding = users * steps * tpot / e2e if e2e > 0 else 0.0
    others_rate = max(users - 1.0, 0.0) / e2e if e2e > 0 else 0.0  # the other users' requests per second
    t_decode, prefill, extra = served.interrupted(prompt, decoding, context)
    new_tpot = t_decode / max(1.0 - others_rate * extra, MIN_DECODE_SHARE)
    ttft = _ttft(served, prefill, min(others_rate * prefill, MAX_PREFILL_BUSY))
    return served.first_seen(ttft, new_tpot), new_tpot


def _times_at_rate(
    served: Served, prompt: int, answer: int, users: float, rate: float
) -> tuple[float, float]:
    """TTFT and TPOT when requests complete at `rate` per second (inf when the GPU cannot keep up).
    Little's law on the decode phase gives the decoders at once: rate × (answer − 1) × TPOT."""
    context = prompt + answer / 2
    steps = max(answer - 1, 0)
    others_rate = rate * max(users - 1.0, 0.0) / users
    tpot = served.step(0.0, context)
    prefill = tpot
    for _ in range(100):
        t_decode, prefill, extra = served.interrupted(prompt, rate * steps * tpot, context)
        share = 1.0 - others_rate * extra
        if share <= 0:
            return math.inf, math.inf
        new_tpot = t_decode / share
        done = abs(new_tpot - tpot) <= 1e-9 + RELATIVE_TOLERANCE * tpot
        tpot = new_tpot
        if done:
            break
    busy = others_rate * prefill
    if busy >= 1.0:
        return math.inf, math.inf
    return _ttft(served, prefill, busy), tpot


def steady_state(served: Served, prompt: int, answer: int, users: float) -> Operating:
    """N users in a closed loop (each sends its next request as soon as the last answer ends):
    the request rate λ with N = λ × (TTFT(λ) + (answer − 1) × TPOT(λ)), found by bisection. TTFT and
    TPOT grow with λ, so more users never make anything faster."""
    steps = max(answer - 1, 0)

    def latency(rate: float) -> float:
        ttft, tpot = _times_at_rate(served, prompt, answer, users, rate)
        return ttft + steps * tpot

    # Regula falsi (Illinois variant) on f(λ) = λ × latency(λ) − N, increasing in λ: a few
    # evaluations where bisection needs twenty; bisection where f is infinite (past capacity).
    low, high = 0.0, users / latency(0.0)
    f_low, f_high = -users, high * latency(high) - users
    while f_high < 0:
        low, f_low, high = high, f_high, high * 2
        f_high = high * latency(high) - users
    side = 0
    while high - low > RELATIVE_TOLERANCE * high:
        middle = (
            (low * f_high - high * f_low) / (f_high - f_low) if math.isfinite(f_high) else (low + high) / 2
        )
        f_middle = middle * latency(middle) - users
        if f_middle == 0:  # the root itself
            low = high = middle
            break
        if f_middle < 0:
            low, f_low = middle, f_middle
            if side == -1:
                f_high /= 2
            side = -1
        else:
            high, f_high = middle, f_middle
            if side == 1:
                f_low /= 2
            side = 1
    rate = low
    ttft, tpot = _times_at_rate(served, prompt, answer, users, rate)
    return Operating(users, served.first_seen(ttft, tpot), tpot, ttft + steps * tpot, rate * answer, rate)


def open_loop(
    served: Served, prompt: int, answer: int, rate: float, max_users: float
) -> tuple[Operating, bool]:
    """Requests arriving at `rate` per second whatever the answers (a load generator's
    --request-rate): the users at once are Little's law on the latency at that rate (`users_at_rate`;
    they enter only as the share of arrivals that are someone else's). Returns (the operating
    point, saturated): saturated when the GPU cannot keep up with the rate or it would take more
    than `max_users` at once; the point is then the one at `max_users` in a closed loop."""
    steps = max(answer - 1, 0)

    def times(users: float) -> tuple[float, float]:
        return _times_at_rate(served, prompt, answer, max(users, 1.0), rate)

    def latency(users: float) -> float:
        ttft, tpot = times(users)
        return ttft + steps * tpot

    users, saturated = users_at_rate(latency, rate, max_users)
    if saturated:
        return steady_state(served, prompt, answer, max_users), True
    users = max(users, 1.0)
    ttft, tpot = times(users)
    return Operating(
        users, served.first_seen(ttft, tpot), tpot, ttft + steps * tpot, rate * answer, rate
    ), False


def offline_batch(served: Served, prompt: int, answer: int, batch: int) -> Operating:
    """`batch` requests submitted together (vLLM's `bench latency`, llama-bench): every prompt is
    prefilled, then all answers are generated side by side."""
    context = prompt + answer / 2
    ttft = served.prefill(prompt * batch, prompt, 0, 0)
    tpot = served.step(batch, context)
    e2e = ttft + max(answer - 1, 0) * tpot
    rate = batch / e2e
    return Operating(batch, ttft, tpot, e2e, rate * answer, rate)


def wave(served: Served, prompt: int, answer: int, users: int) -> Operating:
    """`users` requests of one length sent at once, again and again (a load generator with a
    concurrency cap and no arrival rate, e.g. `vllm bench serve --max-concurrency N` on fixed
    random lengths): the prompts are prefilled together, chunk after chunk, then the answers run
    in lockstep. The median request gets its first token with the chunk that ends its prompt,
    about halfway through the wave's prefill, and its answer waits for the rest of it. TTFT and TPOT are the median request's."""
    context = prompt + answer / 2
    steps = max(answer - 1, 0)
    prefill = served.prefill(prompt * users, prompt, 0, 0)
    # The median request's prompt ends with the chunk that holds its last token.
    median_share = chunk_count((users // 2 + 1) * prompt, served.chunk) / chunk_count(
        prompt * users, served.chunk
    )
    tpot = served.step(users, context) + (prefill * (1 - median_share) / steps if steps else 0.0)
    e2e = served.request_latency + prefill + steps * served.step(users, context)
    rate = users / e2e
    ttft = served.request_latency + prefill * median_share
    return Operating(users, served.first_seen(ttft, tpot), tpot, e2e, rate * answer, rate)


def users_at_rate(latency: Callable[[float], float], rate: float, max_users: float) -> tuple[float, bool]:
    """Little's law as a fixed point: the users N with N = rate × latency(N), where latency(N) is the
    request latency with N users. Returns (N, saturated): saturated when even `max_users` cannot
    absorb the rate (requests would queue)."""

    def excess(users: float) -> float:
        return rate * latency(users) - users

    if excess(max_users) > 0:
        return max_users, True
    # Latency grows slowly with the users, so N ← rate × latency(N) converges in a few rounds from
    # below (it climbs to the smallest fixed point); bisection where it crawls (near saturation).
    users = rate * latency(1.0)
    for _ in range(FIXED_POINT_ROUNDS):
        following = rate * latency(max(users, 1e-6))
        if abs(following - users) <= RELATIVE_TOLERANCE * following:
            return following, False
        users = following
    low, high = 1e-6, max_users
    for _ in range(40):
        middle = math.sqrt(low * high)
        if excess(middle) > 0:
            low = middle
        else:
            high = middle
    return high, False
