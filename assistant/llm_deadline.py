"""One wall-clock deadline per LLM answer, enforced under the HTTP client.

A read timeout bounds each wait for bytes, not an answer: a server that trickles one byte
every few seconds, or streams SSE `: keep-alive` comments and never a token, outlasts any
read timeout. So every request an answer makes goes through `DeadlineTransport`, which

- gives each socket wait no more than the time left to the answer,
- checks the deadline after every chunk of body it reads (keep-alive comments included),
- stops a response larger than the answer's byte cap,
- and closes every response still open when the answer is cancelled.

`run_before_deadline(work, deadline)` runs the answer in a worker thread and returns at the
deadline whatever the worker is doing: the caller (and the web app's chat slot) is free at
once, and the worker's HTTP stream is closed, so the server sees the client go away.

The deadline travels in a context variable, so the one chat client built at start-up serves
every visitor, each with their own deadline. Nothing here imports LangChain.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx

from assistant.errors import LLMMalformedReplyError, LLMTimeoutError

T = TypeVar("T")

_CURRENT: contextvars.ContextVar[AnswerDeadline | None] = contextvars.ContextVar(
    "sizing_answer_deadline", default=None
)


class DeadlineExceeded(httpx.ReadTimeout):
    """The answer's deadline passed, or it was cancelled, while a request was in flight.

    A ReadTimeout, so the OpenAI client and LangChain treat it as the timeout it is."""


class ResponseTooLarge(httpx.ReadError):
    """The endpoint sent more bytes for one response than an answer may take."""


class AnswerDeadline:
    """The time and size budget of one LLM answer, shared by every request the answer makes."""

    def __init__(self, seconds: float, max_response_bytes: int) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self.max_response_bytes = max_response_bytes
        self._cancelled = threading.Event()
        self._open: set[_GuardedStream] = set()
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return self.expires - time.monotonic()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        """Raise DeadlineExceeded when the answer may no longer read from the endpoint."""
        if self._cancelled.is_set() or self.remaining() <= 0:
            raise DeadlineExceeded(f"no complete answer from the model within {self.seconds:g} s")

    def cancel(self) -> None:
        """Stop the answer: later reads fail at once and every open response is closed."""
        self._cancelled.set()
        with self._lock:
            streams = list(self._open)
        for stream in streams:
            stream.abort()

    def _track(self, stream: _GuardedStream) -> None:
        with self._lock:
            self._open.add(stream)
        if self._cancelled.is_set():  # cancelled while the headers were on their way
            stream.abort()

    def _untrack(self, stream: _GuardedStream) -> None:
        with self._lock:
            self._open.discard(stream)


def current_deadline() -> AnswerDeadline | None:
    return _CURRENT.get()


class DeadlineTransport(httpx.BaseTransport):
    """Wraps the real transport; requests made outside an answer pass through unchanged."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = _CURRENT.get()
        if deadline is None:
            return self.inner.handle_request(request)
        deadline.check()
        remaining = max(deadline.remaining(), 0.01)
        timeouts = dict(request.extensions.get("timeout") or {})
        request.extensions["timeout"] = {
            name: remaining if timeouts.get(name) is None else min(float(timeouts[name]), remaining)
            for name in ("connect", "read", "write", "pool")
        }
        response = self.inner.handle_request(request)
        guarded = _GuardedStream(response.stream, deadline)  # type: ignore[arg-type]
        deadline._track(guarded)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=guarded,
            extensions=response.extensions,
            request=request,
        )

    def close(self) -> None:
        self.inner.close()


class _GuardedStream(httpx.SyncByteStream):
    """A response body that stops at the deadline, on cancellation and past the byte cap."""

    def __init__(self, inner: httpx.SyncByteStream, deadline: AnswerDeadline) -> None:
        self.inner = inner
        self.deadline = deadline
        self.received = 0
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            # After every chunk, whatever it held: a keep-alive comment counts as no progress.
            self.deadline.check()
            self.received += len(chunk)
            if self.received > self.deadline.max_response_bytes:
                raise ResponseTooLarge(
                    f"the model's answer exceeded {self.deadline.max_response_bytes:,} bytes"
                )
            yield chunk

    def abort(self) -> None:
        """Close the connection from another thread; a blocked read then ends with an error."""
        if not self._closed.is_set():
            # Closing a half-read connection may fail; it is being dropped anyway.
            with contextlib.suppress(Exception):
                self.inner.close()

    def close(self) -> None:
        self._closed.set()
        self.deadline._untrack(self)
        self.inner.close()


class _PooledClient(httpx.Client):
    """Closes its pooled connections when dropped, as the OpenAI client's own default does."""

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the pool may already be gone
            self.close()


def build_http_client(timeout: float) -> httpx.Client:
    """The chat client's HTTP client: the default transport, under the deadline."""
    return _PooledClient(transport=DeadlineTransport(httpx.HTTPTransport()), timeout=timeout)


def run_before_deadline(work: Callable[[], T], deadline: AnswerDeadline) -> T:
    """`work()` under `deadline`, in a worker thread; LLMTimeoutError the moment the deadline passes.

    On expiry the answer is cancelled (its open HTTP responses closed) and the worker is left
    to finish on its own: every read it makes fails at once from then on.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        _CURRENT.set(deadline)
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the caller, raised there
            outcome["error"] = error

    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(target,), name="llm-answer", daemon=True)
    worker.start()
    worker.join(timeout=max(deadline.remaining(), 0))
    if worker.is_alive():
        deadline.cancel()
        raise LLMTimeoutError(f"no complete answer from the model within {deadline.seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def too_large(error: BaseException) -> LLMMalformedReplyError | None:
    """The typed fault for an answer stopped at the byte cap, wherever in the cause chain it sits."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ResponseTooLarge):
            return LLMMalformedReplyError(str(seen))
        seen = seen.__cause__ or seen.__context__
    return None
