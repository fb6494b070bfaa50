"""`sizing serve`: the web app (chat, calculator, sales draft, API) on http://127.0.0.1:7860.

Run `sizing serve [--host 127.0.0.1] [--port 7860]` (or `make run`). Binds loopback unless
told otherwise (`--host 0.0.0.0` in a container); never opens a public share link.
With `SIZING_LLM_BASE_URL` and `SIZING_LLM_MODEL` set it answers through the LLM; without,
from the deterministic offline mode.
"""

from __future__ import annotations

import argparse
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING

from assistant.cli.options import add_command
from assistant.settings import Settings
from tools.errors import SizingError

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers

log = logging.getLogger(__name__)

# Answered once at start-up, in the background, so models and the index are loaded.
WARM_UP_QUESTION = "What GPU for a 70B model?"


class PortUnavailableError(SizingError):
    """The address cannot be bound (in use, or not an address of this machine)."""


def check_bindable(host: str, port: int) -> None:
    """Fail with one clear line before building anything if the port cannot be bound."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise PortUnavailableError(f"cannot resolve host {host!r}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise PortUnavailableError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc


def register(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "serve", run)
    parser.add_argument("--host", default=None, help="address to bind (default: SIZING_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: SIZING_PORT, 7860)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """run the web app (chat, calculator, sales draft, API)

    Serve the web app. GET /healthz reports the mode and whether the LLM and Chroma answer."""
    import uvicorn

    from assistant.service import build_assistant
    from assistant.ui.app import build_http_app
    from tools.errors import InvalidInputError

    updates = {key: value for key, value in (("host", args.host), ("port", args.port)) if value is not None}
    if "port" in updates and not 1 <= updates["port"] <= 65535:
        raise InvalidInputError(f"--port must be between 1 and 65535, not {updates['port']}")
    settings = settings.model_copy(update=updates)
    check_bindable(settings.host, settings.port)
    assistant = build_assistant(settings)
    http_app = build_http_app(assistant, settings)
    # The first answer loads the embedding model and builds the article index if it is missing
    # (tens of seconds on a small machine); do it now, not while the first visitor waits.
    threading.Thread(target=_warm_up, args=(assistant,), name="sizing-warm-up", daemon=True).start()
    mode = "LLM " + str(settings.llm_model) if settings.llm_configured else "offline"
    print(
        f"Sizing Assistant ({mode}) on http://{settings.host}:{settings.port}  (Ctrl+C stops it)", flush=True
    )
    uvicorn.run(
        http_app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
    )
    return 0


def _warm_up(assistant: object) -> None:
    started = time.monotonic()
    try:
        assistant.answer(WARM_UP_QUESTION)  # type: ignore[attr-defined]
    except Exception as exc:  # a failed warm-up only means the first visitor waits
        log.warning("warm-up answer failed: %s", exc)
        return
    log.info("warmed up in %.1f s", time.monotonic() - started)
