"""The web app built for a test the way `sizing serve` builds it: inside a running event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gradio as gr

from assistant.settings import Settings
from assistant.ui import app as web_app


def built(factory: Callable[..., Any], *args: Any) -> Any:
    """Run an app factory inside a running event loop, on a thread of its own.

    Gradio's safe_get_lock() opens a fresh asyncio loop, and leaves it unclosed, whenever it is
    called outside a running loop (gradio/utils.py); `sizing serve` does that once, but in a test
    session the leaked loops surface later as ResourceWarnings in unrelated tests. The thread
    keeps this independent of whatever loop the calling thread may have.
    """

    async def inside_a_loop() -> Any:
        return factory(*args)

    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(lambda: asyncio.run(inside_a_loop())).result()


def build_app(assistant: Any, settings: Settings) -> gr.Blocks:
    return built(web_app.build_app, assistant, settings)


def build_http_app(assistant: Any, settings: Settings) -> Any:
    return built(web_app.build_http_app, assistant, settings)
