"""`sizing loadtest` engine: concurrent streaming users against stub endpoints."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from assistant.evals.client import Answer, Endpoint
from assistant.evals.errors import EvalOptionError
from assistant.evals.loadtest import (
    LoadPlan,
    render_load_text,
    run_loadtest,
    summarize_load,
    synthetic_prompt,
)
from tests.openai_stub import Reply, StubOpenAI, error, slow, text

TWENTY_WORDS = " ".join(f"word{i}" for i in range(20))


def _plan(stub: StubOpenAI, **kwargs: Any) -> LoadPlan:
    kwargs.setdefault("users", 2)
    kwargs.setdefault("requests", 6)
    return LoadPlan(endpoint=Endpoint(stub.url, "model-int4", timeout_s=10), **kwargs)


def test_figures_from_a_streaming_endpoint() -> None:
    reply = slow(
        0.15,
        text(
            TWENTY_WORDS,
            usage={"prompt_tokens": 64, "completion_tokens": 20},
            chunk_chars=6,
            chunk_delay=0.01,
        ),
    )
    with StubOpenAI([reply]) as stub:
        result = run_loadtest(_plan(stub, prompt_tokens=64, max_tokens=20))
    assert (result.requests, result.errors, result.users) == (6, 0, 2)
    assert result.output_tokens == 6 * 20
    assert result.ttft_ms_p50 is not None and result.ttft_ms_p50 >= 150
    assert result.ttft_ms_p95 is not None and result.ttft_ms_p95 >= result.ttft_ms_p50
    assert result.latency_ms_p95 is not None and result.latency_ms_p95 > result.ttft_ms_p95
    assert result.tokens_per_s is not None and result.tokens_per_s > 0
    assert result.tokens_per_s_per_user is not None and result.tokens_per_s_per_user > 0
    assert not result.tokens_counted_from_chunks
    assert result.verdict is None
    # every request streamed, asked for usage, and carried the synthetic prompt and max_tokens
    assert all(r["stream"] is True and r["stream_options"] == {"include_usage": True} for r in stub.requests)
    assert {r["max_tokens"] for r in stub.requests} == {20}
    assert len(stub.requests[0]["messages"][0]["content"].split()) == 64


def test_users_really_run_concurrently() -> None:
    in_flight = 0
    most = 0
    lock = threading.Lock()

    def busy(request: dict[str, Any]) -> Reply:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.15)  # holds this request open while the other users send theirs
        with lock:
            in_flight -= 1
        return text("ok")

    with StubOpenAI(busy) as stub:
        result = run_loadtest(_plan(stub, users=4, requests=8))
    assert result.requests == 8 and len(stub.requests) == 8
    assert most == 4


def test_errors_are_counted_and_sampled() -> None:
    calls = 0
    lock = threading.Lock()

    def flaky(request: dict[str, Any]) -> Reply:
        nonlocal calls
        with lock:
            calls += 1
            failing = calls % 3 == 0
        return error(503, "queue full") if failing else text("fine answer")

    with StubOpenAI(flaky) as stub:
        result = run_loadtest(_plan(stub, users=3, requests=9, target_p95_ms=60_000))
    assert result.requests == 9 and result.errors == 3
    assert result.error_samples == ["HTTP 503: queue full"]
    assert result.verdict == "fail"
    assert "3 of 9 requests failed" in (result.verdict_reason or "")


def test_verdict_against_the_target() -> None:
    with StubOpenAI([slow(0.2, text("answer"))]) as stub:
        missed = run_loadtest(_plan(stub, target_p95_ms=50))
        met = run_loadtest(_plan(stub, target_p95_ms=60_000))
    assert missed.verdict == "fail" and "over the target 50 ms" in (missed.verdict_reason or "")
    assert met.verdict == "pass" and "within the target 60,000 ms" in (met.verdict_reason or "")


def test_an_endpoint_that_always_fails_never_passes() -> None:
    with StubOpenAI([error(500, "down")]) as stub:
        result = run_loadtest(_plan(stub, target_p95_ms=1000))
    assert result.errors == result.requests == 6
    assert result.ttft_ms_p50 is None and result.tokens_per_s is None
    assert (result.verdict, result.verdict_reason) == ("fail", "no request succeeded")


def _ok(latency: float, ttft: float = 10.0, tokens: int = 11) -> Answer:
    return Answer(output="x", latency_ms=latency, ttft_ms=ttft, completion_tokens=tokens)


def test_summary_arithmetic() -> None:
    plan = LoadPlan(endpoint=Endpoint("http://127.0.0.1:9/v1", "m"), users=2, requests=4, target_p95_ms=1000)
    answers = [_ok(110), _ok(210), _ok(310), _ok(410)]
    result = summarize_load(plan, answers, duration_s=2.0)
    assert result.latency_ms_p50 == 260.0
    assert result.latency_ms_p95 == pytest.approx(395.0)
    assert result.output_tokens == 44 and result.tokens_per_s == 22.0
    # per user: (11 - 1) tokens over (latency - ttft): 100, 50, 33.3, 25 tokens/s; median 41.7
    assert result.tokens_per_s_per_user == pytest.approx(41.7)
    # one failure in twenty counts as infinitely slow and pushes the judged p95 over any target
    many = [_ok(100.0) for _ in range(19)] + [Answer(error="HTTP 500")]
    assert summarize_load(plan, many, 1.0).verdict == "fail"
    many = [_ok(100.0) for _ in range(39)] + [Answer(error="HTTP 500")]
    passed = summarize_load(plan, many, 1.0)
    assert passed.verdict == "pass" and "counting 1 failed request as over it" in (
        passed.verdict_reason or ""
    )


def test_plan_checks() -> None:
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m")
    for bad in (
        {"users": 0, "requests": 1},
        {"users": 1, "requests": 0},
        {"users": 1, "requests": 1, "max_tokens": 0},
        {"users": 1, "requests": 1, "target_p95_ms": -5},
    ):
        with pytest.raises(EvalOptionError):
            LoadPlan(endpoint=endpoint, **bad).check()  # type: ignore[arg-type]


def test_text_report_and_prompt_length() -> None:
    plan = LoadPlan(endpoint=Endpoint("http://127.0.0.1:9/v1", "m"), users=1, requests=2, target_p95_ms=1000)
    shown = render_load_text(summarize_load(plan, [_ok(100), Answer(error="HTTP 500: down")], 1.0))
    assert "time to first token:    p50 10 ms" in shown
    assert "errors:                 1" in shown and "error: HTTP 500: down" in shown
    assert shown.rstrip().splitlines()[-1].startswith("Verdict: FAIL")
    assert len(synthetic_prompt(500).split()) == 500
