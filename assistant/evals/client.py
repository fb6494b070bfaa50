"""Timed chat calls to an OpenAI-compatible endpoint that never raise for endpoint faults.

An endpoint that errors, times out, drops the connection or answers something that is
not JSON yields an `Answer` with `error` set: in an eval a failing endpoint is a result,
not a crash. Clients are built by `open_client`, called by the commands, never at import.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError

from assistant.evals.errors import EvalOptionError

# Errors of the wire, as opposed to bugs in this program. Recent openai releases speak
# through httpx2, older ones through httpx; a fault mid-stream surfaces unwrapped.
_TRANSPORT_ERRORS: tuple[type[Exception], ...] = (httpx.HTTPError, OSError)
try:
    import httpx2

    _TRANSPORT_ERRORS += (httpx2.HTTPError,)
except ImportError:  # pragma: no cover - depends on the openai release installed
    pass

# Servers that need no key (vLLM, llama.cpp, Ollama) still get a non-empty one: the
# openai client refuses to start without it.
NO_KEY = "not-needed"
ERROR_TEXT_LIMIT = 300
# Largest response body read: a 512-token answer is a few KB, 100k tokens well under this.
MAX_BODY_BYTES = 8_000_000


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests: a base URL ending in /v1 (usually) and a model name."""

    url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise EvalOptionError(f"endpoint URL must start with http:// or https://, got {self.url!r}")
        if not self.model.strip():
            raise EvalOptionError(f"no model name given for {self.url}")
        if self.timeout_s <= 0:
            raise EvalOptionError("timeout must be positive")

    @property
    def label(self) -> str:
        return f"{self.model} @ {self.url}"


class Answer(BaseModel):
    """What one call produced, and how long it took."""

    output: str = ""
    latency_ms: float | None = None
    ttft_ms: float | None = None  # time to the first content token; streaming calls only
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens_counted_from_chunks: bool = False  # the server sent no usage; one chunk taken as one token
    finish_reason: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def open_client(endpoint: Endpoint) -> openai.OpenAI:
    # No retries: a retried request would hide the fault and distort the latency measured.
    return openai.OpenAI(
        base_url=endpoint.url, api_key=endpoint.api_key or NO_KEY, timeout=endpoint.timeout_s, max_retries=0
    )


def chat(
    client: openai.OpenAI,
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    deadline: float | None = None,
) -> Answer:
    """One non-streaming chat completion, timed end to end.

    `endpoint.timeout_s` bounds the whole call, not each read: the body is read piece by piece
    and the call gives up once that time (or the `deadline`, a time.perf_counter() value) has
    passed, so an endpoint that trickles a byte at a time cannot hold it. No read waits longer
    than the time that was left when the call began."""
    started = time.perf_counter()
    stop_at = (
        started + endpoint.timeout_s if deadline is None else min(deadline, started + endpoint.timeout_s)
    )
    try:
        remaining = stop_at - started
        if remaining <= 0:
            raise _Expired(endpoint.timeout_s)
        with client.with_options(timeout=remaining).chat.completions.with_streaming_response.create(
            **_request(endpoint, messages, max_tokens, temperature)
        ) as response:
            body = bytearray()
            for piece in response.iter_bytes():
                body += piece
                if len(body) > MAX_BODY_BYTES:
                    raise _TooLarge()
                if time.perf_counter() > stop_at:
                    raise _Expired(stop_at - started)
        completion = ChatCompletion.model_validate_json(bytes(body))
        latency_ms = (time.perf_counter() - started) * 1000
        if not completion.choices:
            return Answer(latency_ms=latency_ms, error="the response had no choices")
        choice = completion.choices[0]
        usage = completion.usage
        return Answer(
            output=choice.message.content or "",
            latency_ms=latency_ms,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            finish_reason=choice.finish_reason,
        )
    except Exception as exc:
        if not _is_endpoint_fault(exc):
            raise
        return Answer(latency_ms=(time.perf_counter() - started) * 1000, error=describe_fault(exc, endpoint))


def _request(
    endpoint: Endpoint, messages: list[dict[str, str]], max_tokens: int, temperature: float
) -> dict[str, Any]:
    """What every chat call sends besides how it wants the answer delivered."""
    return {
        "model": endpoint.model,
        "messages": messages,  # plain dicts, the wire shape of the message params
        "max_tokens": max_tokens,
        "temperature": temperature,
    }


class _Expired(Exception):
    """The call's wall-clock time ran out while the endpoint was still sending."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:.3g} s")


class _TooLarge(Exception):
    def __init__(self) -> None:
        super().__init__(f"the response is larger than {MAX_BODY_BYTES // 1_000_000} MB")


def chat_streaming(
    client: openai.OpenAI,
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    extra_body: dict[str, Any] | None = None,
) -> Answer:
    """One streaming chat completion at temperature 0: time to first token, end-to-end latency,
    output tokens."""
    started = time.perf_counter()
    ttft_ms: float | None = None
    pieces: list[str] = []
    chunks_with_content = 0
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    try:
        stream = client.chat.completions.create(
            **_request(endpoint, messages, max_tokens, temperature=0.0),
            stream=True,
            stream_options={"include_usage": True},
            extra_body=extra_body,
        )
        for chunk in stream:
            if chunk.usage is not None:
                prompt_tokens = chunk.usage.prompt_tokens
                completion_tokens = chunk.usage.completion_tokens
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            if choice.delta.content:
                if ttft_ms is None:
                    ttft_ms = (time.perf_counter() - started) * 1000
                pieces.append(choice.delta.content)
                chunks_with_content += 1
            if choice.finish_reason:
                finish_reason = choice.finish_reason
    except Exception as exc:
        if not _is_endpoint_fault(exc):
            raise
        return Answer(
            output="".join(pieces),
            latency_ms=(time.perf_counter() - started) * 1000,
            ttft_ms=ttft_ms,
            error=describe_fault(exc, endpoint),
        )
    latency_ms = (time.perf_counter() - started) * 1000
    counted = completion_tokens is None
    return Answer(
        output="".join(pieces),
        latency_ms=latency_ms,
        ttft_ms=ttft_ms,
        prompt_tokens=prompt_tokens,
        completion_tokens=chunks_with_content if counted else completion_tokens,
        tokens_counted_from_chunks=counted,
        finish_reason=finish_reason,
    )


def _is_endpoint_fault(exc: Exception) -> bool:
    """Faults of the far end or of the wire, as opposed to bugs in this program."""
    # A body that is not JSON (or not a completion) surfaces as a ValueError.
    return isinstance(exc, (openai.OpenAIError, ValueError, _Expired, _TooLarge, *_TRANSPORT_ERRORS))


def describe_fault(exc: Exception, endpoint: Endpoint) -> str:
    """One line saying what went wrong, short enough for a table cell."""
    if isinstance(exc, openai.APITimeoutError):
        text = f"timed out after {endpoint.timeout_s:g} s"
    elif isinstance(exc, _Expired | _TooLarge):
        text = str(exc)
    elif isinstance(exc, ValidationError):
        text = f"malformed response (not a chat completion: {exc.error_count()} problems)"
    elif isinstance(exc, openai.APIStatusError):
        text = f"HTTP {exc.status_code}: {_status_message(exc)}"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        text = f"connection failed ({type(cause).__name__ if cause else 'no response'})"
    elif isinstance(exc, ValueError):
        text = f"malformed response ({type(exc).__name__}: {exc})"
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"


def _status_message(exc: openai.APIStatusError) -> str:
    # The openai client unwraps {"error": {...}} into exc.body when the server sent that shape.
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return exc.message
