"""Starting and talking to the servers tests and benchmarks run on loopback: a free port, a wait
until a server answers, a stop, `sizing serve` in a subprocess, the web app on uvicorn in a thread,
and one `chat` call over Gradio's plain HTTP API.

Standard library only at import (uvicorn is imported by the one helper that uses it), and no
pytest: the benchmarks import it too.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Looked up here, in the parent: the child between fork and exec should not load libraries.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with_parent() -> None:
    """A `preexec_fn` for a server subprocess: on Linux the kernel sends it SIGTERM when the test
    process dies, however it dies (a timeout's kill, a CI job cancelled), so no server outlives
    its run holding a port and a core. Elsewhere it does nothing but the next point.

    It also gives the child SIGINT's default action: a suite started as a background job
    (`bash .ci/run &`) inherits SIGINT ignored, and a Python child then never raises
    KeyboardInterrupt, so neither a server's clean stop nor a CLI's interrupt could be tested."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    """A loopback TCP port that was free a moment ago and that nothing listens on now.

    For a server a test starts (a small race with other processes, accepted in tests) or for an
    address that must refuse connections.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerDidNotStart(RuntimeError):
    """The process exited, or its URL did not answer in time; the message ends with its log."""


def wait_until_answering(
    url: str,
    process: subprocess.Popen[bytes] | subprocess.Popen[str] | None = None,
    *,
    timeout_s: float,
    log_path: Path | None = None,
    what: str = "the server",
    interval_s: float = 0.3,
) -> bytes:
    """GET `url` until it answers 200 and return the body; raise ServerDidNotStart when `process`
    exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise ServerDidNotStart(f"{what} exited with {process.returncode}:\n{_log_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=min(5.0, timeout_s)) as response:
                if response.status == 200:
                    return bytes(response.read())
        except OSError:
            pass
        time.sleep(interval_s)
    raise ServerDidNotStart(f"{what} did not answer {url} within {timeout_s:.0f} s:\n{_log_tail(log_path)}")


def _log_tail(log_path: Path | None) -> str:
    if log_path is None or not log_path.exists():
        return "(no log)"
    return log_path.read_text(encoding="utf-8", errors="replace")[-4000:]


def stop_process(
    process: subprocess.Popen[bytes] | subprocess.Popen[str],
    stop_with: signal.Signals = signal.SIGINT,
    timeout_s: float = 15,
) -> None:
    """Ask the process to stop (SIGINT: a server shuts down cleanly), and kill it if it does not."""
    if process.poll() is not None:
        return
    process.send_signal(stop_with)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@contextmanager
def sizing_serve(
    sizing: list[str], env: dict[str, str], log_dir: Path, timeout_s: float, cwd: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`<sizing> serve` on a free loopback port (`sizing` is the command: the console script, or
    `python -m assistant` with `cwd` the checkout), its output in `log_dir`/serve-<port>.log; yields
    its URL and process once /healthz answers, and stops it (SIGINT) at the end."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = log_dir / f"serve-{port}.log"
    with log_path.open("wb") as log:  # the child keeps its own descriptor
        server = subprocess.Popen(
            [*sizing, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
    try:
        wait_until_answering(
            f"{url}/healthz", server, timeout_s=timeout_s, log_path=log_path, what="sizing serve"
        )
        yield url, server
    finally:
        stop_process(server, timeout_s=20)


@contextmanager
def app_in_thread(
    build_app: Callable[[], Any], port: int, lifespan: Literal["auto", "on", "off"] = "auto"
) -> Iterator[str]:
    """The ASGI app `build_app()` makes, built inside the server's event loop as `sizing serve` builds
    it, served by uvicorn on a thread at `port`; yields its URL once /healthz answers."""
    import uvicorn

    servers: list[uvicorn.Server] = []

    def serve() -> None:
        async def main() -> None:
            config = uvicorn.Config(
                build_app(), host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan
            )
            servers.append(server := uvicorn.Server(config))
            await server.serve()

        asyncio.run(main())

    thread = threading.Thread(target=serve, name="app-in-thread", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{url}/healthz", timeout_s=60, what="the in-process app", interval_s=0.1)
        yield url
    finally:
        for server in servers:
            server.should_exit = True
        thread.join(timeout=15)


def gradio_chat(url: str, message: str, timeout_s: float) -> str:
    """One `chat` call over Gradio's plain HTTP API (POST, then read the SSE result), no client
    library, so each call is a fresh session. Given up after `timeout_s` in all: Gradio's
    heartbeats keep the stream alive, so a read timeout alone would never fire."""
    gives_up = time.monotonic() + timeout_s
    request = urllib.request.Request(
        f"{url}/gradio_api/call/chat",
        data=json.dumps({"data": [message]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        event_id = json.loads(response.read())["event_id"]
    event = ""
    with urllib.request.urlopen(f"{url}/gradio_api/call/chat/{event_id}", timeout=timeout_s) as stream:
        for raw_line in stream:
            if time.monotonic() > gives_up:
                raise TimeoutError(f"no answer within {timeout_s:g} s")
            line = raw_line.decode().strip()
            if line.startswith("event:"):
                event = line.partition(":")[2].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                if event == "error":
                    raise RuntimeError(f"chat API error: {line[:200]}")
                return str(json.loads(line.partition(":")[2])[0])
    raise RuntimeError(f"chat API stream ended without a result (last event {event!r})")
