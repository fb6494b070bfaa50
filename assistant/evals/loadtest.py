"""`sizing loadtest`: N concurrent users streaming requests to one endpoint.

Each user sends its requests one after another (a closed loop, like a person waiting for
the answer before asking again); together the users send R requests. Reported:

- time to first token (TTFT) p50 / p95: what a user waits before text starts to appear;
- end-to-end latency p50 / p95: request sent to last token;
- output tokens/s per user: the median streaming rate after the first token,
  (output tokens - 1) / (end-to-end - TTFT), what one reader sees;
- output tokens/s in total: all output tokens / wall time of the test, the endpoint's throughput;
- errors, and a verdict when a target p95 is given: failed requests count as over the target.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from assistant.evals.client import Answer, Endpoint, chat_streaming, open_client
from assistant.evals.errors import EvalOptionError
from assistant.evals.stats import counted, percentile, rounded

# Filler for the synthetic prompt: short common words, each about one token in the
# tokenizers of Llama, Mistral and GPT models, so that P words send roughly P tokens.
_FILLER = (
    "the cluster serves a model to many users at once and each request reads the weights "
    "while the cache of keys and values grows with every token of context"
)
_INSTRUCTION = "Continue this text for as long as you can, in plain English:"
MAX_ERROR_SAMPLES = 5


@dataclass(frozen=True)
class LoadPlan:
    endpoint: Endpoint
    users: int
    requests: int
    prompt_tokens: int = 256
    max_tokens: int = 128
    target_p95_ms: float | None = None
    ignore_eos: bool = False  # vLLM's extension: always generate max_tokens, for a fixed output length

    def check(self) -> None:
        if self.users < 1:
            raise EvalOptionError("--users must be at least 1")
        if self.requests < 1:
            raise EvalOptionError("--requests must be at least 1")
        if self.prompt_tokens < 1 or self.max_tokens < 1:
            raise EvalOptionError("--prompt-tokens and --max-tokens must be at least 1")
        if self.target_p95_ms is not None and self.target_p95_ms <= 0:
            raise EvalOptionError("--target-p95-ms must be positive")


class LoadResult(BaseModel):
    """The `sizing loadtest --json` object."""

    url: str
    model: str
    users: int
    requests: int
    errors: int
    prompt_tokens: int  # asked for (approximate words sent)
    max_tokens: int
    duration_s: float
    output_tokens: int
    ttft_ms_p50: float | None
    ttft_ms_p95: float | None
    latency_ms_p50: float | None
    latency_ms_p95: float | None
    tokens_per_s: float | None  # all users together
    tokens_per_s_per_user: float | None  # median streaming rate after the first token
    tokens_counted_from_chunks: bool  # the server sent no usage figures
    target_p95_ms: float | None
    verdict: str | None  # "pass" | "fail" | None without a target
    verdict_reason: str | None
    error_samples: list[str]


def synthetic_prompt(words: int) -> str:
    vocabulary = _FILLER.split()
    count = max(words - len(_INSTRUCTION.split()), 1)
    filler = [vocabulary[i % len(vocabulary)] for i in range(count)]
    return f"{_INSTRUCTION} {' '.join(filler)}"


def run_loadtest(plan: LoadPlan, on_request: Callable[[Answer], None] | None = None) -> LoadResult:
    """Run the load; `on_request` is called (from worker threads) after each request."""
    plan.check()
    client = open_client(plan.endpoint)
    messages = [{"role": "user", "content": synthetic_prompt(plan.prompt_tokens)}]
    extra_body: dict[str, Any] | None = {"ignore_eos": True} if plan.ignore_eos else None
    answers: list[Answer] = []
    lock = threading.Lock()
    remaining = [plan.requests]

    def take_one() -> bool:
        with lock:
            if remaining[0] == 0:
                return False
            remaining[0] -= 1
            return True

    def user() -> None:
        while take_one():
            answer = chat_streaming(
                client, plan.endpoint, messages, max_tokens=plan.max_tokens, extra_body=extra_body
            )
            with lock:
                answers.append(answer)
            if on_request is not None:
                on_request(answer)

    started = time.perf_counter()
    threads = [
        threading.Thread(target=user, name=f"loadtest-user-{i}", daemon=True) for i in range(plan.users)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            # join with a timeout so that Ctrl-C reaches the main thread
            while thread.is_alive():
                thread.join(timeout=0.2)
    finally:
        with lock:
            remaining[0] = 0  # on interrupt, users stop after their current request
        client.close()
    duration_s = time.perf_counter() - started
    return summarize_load(plan, answers, duration_s)


def summarize_load(plan: LoadPlan, answers: list[Answer], duration_s: float) -> LoadResult:
    succeeded = [a for a in answers if a.ok]
    failed = [a for a in answers if not a.ok]
    ttfts = [a.ttft_ms for a in succeeded if a.ttft_ms is not None]
    latencies = [a.latency_ms for a in succeeded if a.latency_ms is not None]
    output_tokens = sum(a.completion_tokens or 0 for a in succeeded)
    rates = [
        (a.completion_tokens - 1) / ((a.latency_ms - a.ttft_ms) / 1000)
        for a in succeeded
        if a.completion_tokens
        and a.completion_tokens > 1
        and a.latency_ms
        and a.ttft_ms is not None
        and a.latency_ms > a.ttft_ms
    ]
    latency_p95 = percentile(latencies, 95)
    verdict, reason = _verdict(plan.target_p95_ms, latencies, len(failed))
    samples: list[str] = []
    for answer in failed:
        if answer.error and answer.error not in samples:
            samples.append(answer.error)
        if len(samples) == MAX_ERROR_SAMPLES:
            break
    return LoadResult(
        url=plan.endpoint.url,
        model=plan.endpoint.model,
        users=plan.users,
        requests=len(answers),
        errors=len(failed),
        prompt_tokens=plan.prompt_tokens,
        max_tokens=plan.max_tokens,
        duration_s=round(duration_s, 3),
        output_tokens=output_tokens,
        ttft_ms_p50=rounded(percentile(ttfts, 50)),
        ttft_ms_p95=rounded(percentile(ttfts, 95)),
        latency_ms_p50=rounded(percentile(latencies, 50)),
        latency_ms_p95=rounded(latency_p95),
        tokens_per_s=rounded(output_tokens / duration_s if duration_s > 0 and succeeded else None),
        tokens_per_s_per_user=rounded(percentile(rates, 50)),
        tokens_counted_from_chunks=any(a.tokens_counted_from_chunks for a in succeeded),
        target_p95_ms=plan.target_p95_ms,
        verdict=verdict,
        verdict_reason=reason,
        error_samples=samples,
    )


def _verdict(target_ms: float | None, latencies: list[float], errors: int) -> tuple[str | None, str | None]:
    if target_ms is None:
        return None, None
    if not latencies:
        return "fail", "no request succeeded"
    # A failed request never met the target: it counts as infinitely slow in the p95 that
    # decides the verdict (the reported p95 is over successful requests only).
    judged_p95 = percentile(latencies + [math.inf] * errors, 95)
    if judged_p95 is None or not math.isfinite(judged_p95):
        requests = len(latencies) + errors
        return "fail", f"{errors} of {requests} requests failed, too many for a p95 within any target"
    note = f", counting {counted(errors, 'failed request')} as over it" if errors else ""
    if judged_p95 > target_ms:
        return "fail", f"end-to-end p95 {judged_p95:,.0f} ms is over the target {target_ms:,.0f} ms{note}"
    return "pass", f"end-to-end p95 {judged_p95:,.0f} ms is within the target {target_ms:,.0f} ms{note}"


def render_load_text(result: LoadResult) -> str:
    def ms(value: float | None) -> str:
        return "—" if value is None else f"{value:,.0f} ms"

    def rate(value: float | None) -> str:
        return "—" if value is None else f"{value:,.1f}"

    lines = [
        f"Load test: {result.model} at {result.url}",
        f"  {result.users} users, {result.requests} requests, prompt ≈ {result.prompt_tokens} tokens, "
        f"max {result.max_tokens} output tokens, {result.duration_s:.1f} s",
        f"  errors:                 {result.errors}",
        f"  time to first token:    p50 {ms(result.ttft_ms_p50)}, p95 {ms(result.ttft_ms_p95)}",
        f"  end-to-end latency:     p50 {ms(result.latency_ms_p50)}, p95 {ms(result.latency_ms_p95)}",
        f"  output tokens/s:        {rate(result.tokens_per_s_per_user)} per user (median), "
        f"{rate(result.tokens_per_s)} in total",
    ]
    if result.tokens_counted_from_chunks:
        lines.append("  (the server sent no token counts; one streamed chunk was counted as one token)")
    for sample in result.error_samples:
        lines.append(f"  error: {sample}")
    if result.verdict:
        lines.append(f"Verdict: {result.verdict.upper()} — {result.verdict_reason}")
    return "\n".join(lines) + "\n"
