"""An OpenAI-compatible chat server on loopback, scripted by the test that starts it.

Used by the tests of the assistant (LLM mode) and of `sizing compare` / `sizing loadtest`
so that what goes over the wire -- streaming, tool calls, faults -- is exercised for real
without any model. Not run on its own; a test does:

    from tests.openai_stub import StubOpenAI, text, tool_call, error, slow, drop, malformed

    with StubOpenAI([tool_call([("calculate_vram", {"model": "70b"})]), text("done")]) as stub:
        client = openai.OpenAI(base_url=stub.url, api_key="test", max_retries=0)
        ...
        assert stub.requests[0]["model"] == "..."

A script is either a list of replies, consumed one per request in order (the last one
repeats), or a callable that receives the request body (a dict) and returns a reply.
Note that the `openai` client retries on 5xx, 429 and dropped connections by default
(`max_retries=2`): each retry consumes the next scripted reply. Pass `max_retries=0`
to see a fault once.

Replies:
    text("hi", usage=None, chunk_chars=4, chunk_delay=0.0, finish_reason="stop")
    tool_call([("name", {args}), ...], content="")     # arguments streamed over several chunks
    error(status, body)                                 # body: a message (wrapped the OpenAI way) or a dict
    slow(seconds, reply)                                # waits before answering (before the first byte)
    drop()                                              # closes the connection without any response
    malformed()                                         # a body that is not JSON (an SSE chunk when streaming)
    malformed("arguments")                              # a tool call whose arguments are not valid JSON
    keepalive(interval=0.2)                             # SSE `: keep-alive` comments forever, never a token
    trickle(reply, byte_delay=0.2)                      # `reply`, written one byte at a time

Endpoints: POST /v1/chat/completions (with or without "stream": true) and GET /v1/models.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

# ---------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class TextReply:
    content: str
    usage: dict[str, int] | None = None
    chunk_chars: int = 4
    chunk_delay: float = 0.0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ToolCallReply:
    calls: tuple[tuple[str, dict[str, Any]], ...]
    content: str = ""
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class ErrorReply:
    status: int
    body: str | dict[str, Any]


@dataclass(frozen=True)
class SlowReply:
    seconds: float
    reply: Reply


@dataclass(frozen=True)
class DropReply:
    pass


@dataclass(frozen=True)
class MalformedReply:
    kind: Literal["body", "arguments"] = "body"


@dataclass(frozen=True)
class KeepAliveReply:
    interval: float = 0.2


@dataclass(frozen=True)
class TrickleReply:
    reply: Reply
    byte_delay: float = 0.2


Reply = (
    TextReply
    | ToolCallReply
    | ErrorReply
    | SlowReply
    | DropReply
    | MalformedReply
    | KeepAliveReply
    | TrickleReply
)
Script = Sequence[Reply] | Callable[[dict[str, Any]], Reply]


def text(
    content: str,
    usage: dict[str, int] | None = None,
    *,
    chunk_chars: int = 4,
    chunk_delay: float = 0.0,
    finish_reason: str = "stop",
) -> TextReply:
    """An assistant message. Streamed as content deltas of `chunk_chars` characters each."""
    if chunk_chars < 1:
        raise ValueError("chunk_chars must be at least 1")
    return TextReply(content, usage, chunk_chars, chunk_delay, finish_reason)


def tool_call(
    calls: Sequence[tuple[str, dict[str, Any]]], content: str = "", usage: dict[str, int] | None = None
) -> ToolCallReply:
    """One or more tool calls, each a (function name, arguments) pair."""
    if not calls:
        raise ValueError("tool_call needs at least one (name, arguments) pair")
    return ToolCallReply(tuple((name, dict(args)) for name, args in calls), content, usage)


def error(status: int, body: str | dict[str, Any] = "stub error") -> ErrorReply:
    """An HTTP error. A string body is wrapped as {"error": {"message": ...}} like OpenAI does."""
    return ErrorReply(status, body)


def slow(seconds: float, reply: Reply) -> SlowReply:
    """`reply`, after waiting `seconds` before the first byte of the response."""
    return SlowReply(seconds, reply)


def drop() -> DropReply:
    """Close the connection without sending any response."""
    return DropReply()


def malformed(kind: Literal["body", "arguments"] = "body") -> MalformedReply:
    """A broken response: a body that is not JSON, or a tool call whose arguments are not JSON."""
    if kind not in ("body", "arguments"):
        raise ValueError("malformed kind is 'body' or 'arguments'")
    return MalformedReply(kind)


def keepalive(interval: float = 0.2) -> KeepAliveReply:
    """A streamed 200 that sends only SSE comments (`: keep-alive`), every `interval` s, until the client goes."""
    return KeepAliveReply(interval)


def trickle(reply: Reply, byte_delay: float = 0.2) -> TrickleReply:
    """`reply`, its body written one byte every `byte_delay` s: every read gets a byte before any read timeout."""
    return TrickleReply(reply, byte_delay)


# ---------------------------------------------------------------------------- server


@dataclass
class _Counter:
    value: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> int:
        with self.lock:
            self.value += 1
            return self.value


class StubOpenAI:
    """A scripted OpenAI-compatible server on 127.0.0.1:<free port>, served from a thread."""

    def __init__(self, script: Script, models: Sequence[str] = ("stub-model",)) -> None:
        if not callable(script) and not list(script):
            raise ValueError("a stub script needs at least one reply")
        self._script = script if callable(script) else list(script)
        self.models = list(models)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._served = 0
        self._ids = _Counter()
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None  # kept after close, so tests can still name the URL
        # Set when a client closed its connection while a reply was still being written.
        self.client_gone = threading.Event()

    # -- lifecycle

    def start(self) -> StubOpenAI:
        handler = type("_BoundHandler", (_Handler,), {"stub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._port = int(self._server.server_address[1])
        # close() waits for the serving loop's next poll: 0.05 s instead of the default 0.5 s per stub.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> StubOpenAI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the stub was never started")
        return self._port

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients: http://127.0.0.1:PORT/v1"""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script

    def _reply_for(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            index = self._served
            self._served += 1
        if callable(self._script):
            return self._script(body)
        script = self._script
        return script[min(index, len(script) - 1)]

    def _wait(self, seconds: float) -> None:
        # Wakes early when the stub closes so that a test never waits on a sleeping handler.
        self._closing.wait(seconds)

    def _completion_id(self) -> str:
        return f"chatcmpl-stub-{self._ids.next()}"


class _Handler(BaseHTTPRequestHandler):
    stub: StubOpenAI
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers; streams use chunked encoding
    timeout = 30  # an idle kept-alive connection frees its thread after this many seconds

    def log_message(self, format: str, *args: Any) -> None:  # the test output stays clean
        return None

    # -- routing

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            created = int(time.time())
            data = [
                {"id": m, "object": "model", "created": created, "owned_by": "stub"} for m in self.stub.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, _error_body(f"no route GET {self.path}", 404))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, _error_body(f"no route POST {self.path}", 404))
            return
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError:
            self._send_json(400, _error_body("request body is not JSON", 400))
            return
        if not isinstance(body, dict):
            self._send_json(400, _error_body("request body must be a JSON object", 400))
            return
        reply = self.stub._reply_for(body)
        self._answer(body, reply)

    # -- replies

    def _answer(self, body: dict[str, Any], reply: Reply) -> None:
        while isinstance(reply, SlowReply):
            self.stub._wait(reply.seconds)
            reply = reply.reply
        if isinstance(reply, TrickleReply):
            self._trickle_delay = reply.byte_delay
            reply = reply.reply
        if isinstance(reply, KeepAliveReply):
            self._keep_alive(reply)
        elif isinstance(reply, DropReply):
            self._drop()
        elif isinstance(reply, ErrorReply):
            payload = reply.body if isinstance(reply.body, dict) else _error_body(reply.body, reply.status)
            self._send_json(reply.status, payload)
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._complete(body, reply)

    def _complete(self, body: dict[str, Any], reply: Reply) -> None:
        if isinstance(reply, MalformedReply) and reply.kind == "body":
            self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
            return
        message, finish_reason, usage = _message_for(body, reply)
        completion = {
            "id": self.stub._completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "stub-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
            "usage": usage,
        }
        self._send_json(200, completion)

    def _stream(self, body: dict[str, Any], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        completion_id = self.stub._completion_id()
        created = int(time.time())
        model = body.get("model") or "stub-model"

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
            }

        try:
            if isinstance(reply, MalformedReply) and reply.kind == "body":
                self._write_event(json.dumps(chunk({"role": "assistant", "content": ""})))
                self._write_event('{"id": "chatcmpl-broken", "choices": [')
                self._end_chunks()
                return
            _, finish_reason, usage = _message_for(body, reply)
            delay = reply.chunk_delay if isinstance(reply, TextReply) else 0.0
            self._write_event(json.dumps(chunk({"role": "assistant", "content": ""})))
            for delta in _deltas(reply):
                if delay:
                    self.stub._wait(delay)
                self._write_event(json.dumps(chunk(delta)))
            self._write_event(json.dumps(chunk({}, finish_reason)))
            if (body.get("stream_options") or {}).get("include_usage"):
                usage_chunk = chunk({})
                usage_chunk["choices"] = []
                usage_chunk["usage"] = usage
                self._write_event(json.dumps(usage_chunk))
            self._write_event("[DONE]")
            self._end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away mid-stream; nothing left to do

    def _keep_alive(self, reply: KeepAliveReply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not self.stub._closing.is_set():
                comment = b": keep-alive\n\n"
                self.wfile.write(f"{len(comment):x}\r\n".encode() + comment + b"\r\n")
                self.wfile.flush()
                self.stub._wait(reply.interval)
        except (BrokenPipeError, ConnectionResetError):
            self.stub.client_gone.set()
            self.close_connection = True

    # -- wire

    _trickle_delay = 0.0

    def _write(self, data: bytes) -> None:
        """Write `data`, one byte at a time under trickle(); notes a client that went away."""
        try:
            if not self._trickle_delay:
                self.wfile.write(data)
            else:
                for index in range(len(data)):
                    self.wfile.write(data[index : index + 1])
                    self.wfile.flush()
                    self.stub._wait(self._trickle_delay)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.stub.client_gone.set()
            raise

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json")

    def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self._write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _write_event(self, data: str) -> None:
        event = f"data: {data}\n\n".encode()
        self._write(f"{len(event):x}\r\n".encode() + event + b"\r\n")

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client may already have gone
            self.connection.shutdown(socket.SHUT_RDWR)


def _error_body(message: str, status: int) -> dict[str, Any]:
    kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": status}}


def _count_tokens(value: Any) -> int:
    """A rough token count (words) so that usage figures move with the text, as real ones do."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_count_tokens(item) for item in value)
    if isinstance(value, dict):
        return sum(_count_tokens(item) for item in value.values())
    return 0


def _usage(body: dict[str, Any], completion_text: str, given: dict[str, int] | None) -> dict[str, int]:
    if given is not None:
        usage = dict(given)
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        return usage
    prompt = _count_tokens([m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)])
    completion = max(1, len(completion_text.split())) if completion_text else 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_calls_of(reply: ToolCallReply | MalformedReply) -> list[tuple[str, str, str]]:
    """(id, name, arguments text) per call."""
    if isinstance(reply, MalformedReply):
        # Unquoted names: no partial-JSON repair (as LangChain applies to streams) can make this parse.
        return [("call_stub_1", "calculate_vram", '{"model": "70b", precision: int4}')]
    return [(f"call_stub_{i + 1}", name, json.dumps(args)) for i, (name, args) in enumerate(reply.calls)]


def _message_for(body: dict[str, Any], reply: Reply) -> tuple[dict[str, Any], str, dict[str, int]]:
    """The complete assistant message, its finish reason and usage (non-streaming shape)."""
    if isinstance(reply, TextReply):
        said = {"role": "assistant", "content": reply.content, "refusal": None}
        return said, reply.finish_reason, _usage(body, reply.content, reply.usage)
    if isinstance(reply, ToolCallReply | MalformedReply):
        calls = _tool_calls_of(reply)
        content = reply.content if isinstance(reply, ToolCallReply) else ""
        given_usage = reply.usage if isinstance(reply, ToolCallReply) else None
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content or None,
            "refusal": None,
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in calls
            ],
        }
        spoken = content + " " + " ".join(args for _, _, args in calls)
        return message, "tool_calls", _usage(body, spoken, given_usage)
    raise TypeError(f"not a stub reply: {reply!r}")


def _split(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _deltas(reply: Reply) -> Iterator[dict[str, Any]]:
    """Streaming deltas after the role chunk: content pieces, then tool calls with split arguments."""
    if isinstance(reply, TextReply):
        if reply.content:
            for piece in _split(reply.content, reply.chunk_chars):
                yield {"content": piece}
        return
    if isinstance(reply, ToolCallReply) and reply.content:
        for piece in _split(reply.content, 4):
            yield {"content": piece}
    if isinstance(reply, ToolCallReply | MalformedReply):
        for index, (cid, name, args) in enumerate(_tool_calls_of(reply)):
            # The first delta names the call; the arguments follow in at least two pieces.
            yield {
                "tool_calls": [
                    {
                        "index": index,
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
            piece_size = max(1, (len(args) + 2) // 3)
            for piece in _split(args, piece_size):
                yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
