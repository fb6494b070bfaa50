"""Fault injection: every way an endpoint can fail ends in a typed LLMUnavailableError, in time.

Each fault is served by the stub on loopback (or a closed port), both with a plain call
and with streaming, since the two take different paths through the client.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from assistant import errors
from assistant.agent import build_chat_model, run_agent
from assistant.settings import Settings
from tests.openai_stub import StubOpenAI, drop, error, malformed, slow, text, tool_call
from tests.servers import free_port

STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["plain", "streaming"])


def run(url: str, tmp_path: Any, streaming: bool, **overrides: Any) -> Any:
    fields: dict[str, Any] = {"llm_base_url": url, "llm_model": "stub-model", "data_dir": tmp_path}
    fields.update(overrides)
    settings = Settings(**fields)
    return run_agent(
        build_chat_model(settings),
        "What GPU for a 70B at 4 bits?",
        None,
        store=None,
        settings=settings,
        on_event=(lambda event: None) if streaming else None,
    )


@STREAMING
def test_connection_refused(tmp_path: Any, streaming: bool) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(errors.LLMConnectionError) as caught:
        run(url, tmp_path, streaming)
    assert str(caught.value) == f"could not reach {url}"


@STREAMING
def test_dropped_connection(tmp_path: Any, streaming: bool) -> None:
    with StubOpenAI([drop()]) as stub, pytest.raises(errors.LLMConnectionError):
        run(stub.url, tmp_path, streaming)


@STREAMING
@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
def test_http_errors(tmp_path: Any, streaming: bool, status: int) -> None:
    with StubOpenAI([error(status, "stub says no\n<html>details</html>")]) as stub:
        with pytest.raises(errors.LLMHTTPError) as caught:
            run(stub.url, tmp_path, streaming)
        assert len(stub.requests) == 1  # no retries: the offline answer comes at once
    assert caught.value.status == status
    assert f"HTTP {status}" in str(caught.value)
    assert "\n" not in str(caught.value)


@STREAMING
def test_timeout_gives_up_within_the_deadline(tmp_path: Any, streaming: bool) -> None:
    with StubOpenAI([slow(30, text("too late"))]) as stub:
        started = time.monotonic()
        with pytest.raises(errors.LLMTimeoutError, match=r"within 1\.5 s"):
            run(stub.url, tmp_path, streaming, llm_timeout=1.5)
        elapsed = time.monotonic() - started
    assert elapsed < 1.5 + 3


def test_one_deadline_covers_every_model_call(tmp_path: Any) -> None:
    """Two calls of 1 s each against a 1.5 s budget: the second one is cut short."""
    script = [
        slow(1.0, tool_call([("calculate_vram", {"model": "70b", "precision": "int4"})])),
        slow(1.0, text("x")),
    ]
    with StubOpenAI(script) as stub:
        started = time.monotonic()
        with pytest.raises(errors.LLMTimeoutError):
            run(stub.url, tmp_path, False, llm_timeout=1.5)
        elapsed = time.monotonic() - started
    assert elapsed < 1.5 + 3


def test_tokens_trickling_past_the_deadline(tmp_path: Any) -> None:
    """Each chunk arrives before any read timeout, but the whole answer would take 10 s."""
    with StubOpenAI([text("x" * 50, chunk_chars=1, chunk_delay=0.2)]) as stub:
        started = time.monotonic()
        with pytest.raises(errors.LLMTimeoutError):
            run(stub.url, tmp_path, True, llm_timeout=1.0)
        elapsed = time.monotonic() - started
    assert elapsed < 1.0 + 3


@STREAMING
def test_reply_that_is_not_json(tmp_path: Any, streaming: bool) -> None:
    with (
        StubOpenAI([malformed()]) as stub,
        pytest.raises(errors.LLMMalformedReplyError, match="not valid JSON"),
    ):
        run(stub.url, tmp_path, streaming)


@STREAMING
def test_malformed_tool_call_arguments(tmp_path: Any, streaming: bool) -> None:
    with StubOpenAI([malformed("arguments"), text("never reached")]) as stub:
        with pytest.raises(errors.LLMMalformedReplyError, match="calculate_vram"):
            run(stub.url, tmp_path, streaming)
        assert len(stub.requests) == 1


@STREAMING
def test_endless_tool_call_loop_hits_the_step_cap(tmp_path: Any, streaming: bool) -> None:
    loop = tool_call([("calculate_vram", {"model": "70b", "precision": "int4"})])
    with StubOpenAI([loop]) as stub:
        with pytest.raises(errors.LLMStepLimitError, match="after 4 model calls"):
            run(stub.url, tmp_path, streaming, llm_max_steps=4)
        assert len(stub.requests) == 4


def test_empty_answer_is_a_fault(tmp_path: Any) -> None:
    with StubOpenAI([text("")]) as stub, pytest.raises(errors.LLMMalformedReplyError, match="empty"):
        run(stub.url, tmp_path, False)


def test_every_fault_is_an_llm_unavailable_error() -> None:
    for kind in (
        errors.LLMConnectionError,
        errors.LLMHTTPError,
        errors.LLMMalformedReplyError,
        errors.LLMStepLimitError,
        errors.LLMTimeoutError,
    ):
        assert issubclass(kind, errors.LLMUnavailableError)
