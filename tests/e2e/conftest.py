"""A real `sizing serve` for the web end-to-end tests, and a real headless Chromium.

The server is the real CLI (`python -m assistant serve`) in a subprocess on a free loopback port, with its data
folder in a temporary directory and no LLM configured (the offline assistant). The browser
is Debian's `chromium` driven by Playwright through `executable_path` (nothing downloaded).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.servers import free_port, stop_process, wait_until_answering

if TYPE_CHECKING:
    from assistant.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "web"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# The first start imports Gradio and the embedding model.
STARTUP_TIMEOUT_S = 120


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a served app: no SIZING_* from the caller, data in a temp folder, offline."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIZING_")}
    env.update(
        SIZING_DATA_DIR=str(data_dir),
        SIZING_LOG_LEVEL="WARNING",
        GRADIO_ANALYTICS_ENABLED="False",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        # Every test visitor comes from 127.0.0.1: the per-address limit (tested on its own in
        # tests/test_client_limits.py) would otherwise count them all as one client.
        SIZING_CLIENT_RATE_LIMIT_PER_MINUTE="100000",
    )
    env.update(extra)
    return env


class ServedApp:
    """One `sizing serve` subprocess; `url` is its address once /healthz answers."""

    def __init__(self, data_dir: Path, log_path: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.rate_limit_per_minute = int(env.get("SIZING_RATE_LIMIT_PER_MINUTE", "30"))
        # `python -m assistant` from the repository root runs this checkout's code.
        command = [sys.executable, "-m", "assistant", "serve", "--port", str(self.port)]
        self._log = log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=server_env(data_dir, **env), stdout=self._log, stderr=subprocess.STDOUT
        )

    def wait_healthy(self, timeout_s: float = STARTUP_TIMEOUT_S) -> dict[str, object]:
        body = wait_until_answering(
            f"{self.url}/healthz",
            self.process,
            timeout_s=timeout_s,
            log_path=self.log_path,
            what="sizing serve",
        )
        return dict(json.loads(body))

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        stop_process(self.process)
        self._log.close()


# The widget's settings in the served app; the embedding page is served from EMBEDDER_PORT.
WIDGET_TITLE = "Acme GPU helper"
WIDGET_COLOR = "#0f766e"
EMBEDDER_PORT = free_port()


@pytest.fixture(scope="session")
def served_app(tmp_path_factory: pytest.TempPathFactory, shipped_index: Settings) -> Iterator[ServedApp]:
    folder = tmp_path_factory.mktemp("web")
    shutil.copytree(shipped_index.data_dir, folder / "data")  # the articles' index, already built
    # A low rate limit so a test can reach it; every browser page and API client is its own session.
    app = ServedApp(
        folder / "data",
        folder / "server.log",
        SIZING_RATE_LIMIT_PER_MINUTE="6",
        SIZING_WIDGET_ALLOWED_ORIGINS=f"http://127.0.0.1:{EMBEDDER_PORT}",
        SIZING_WIDGET_TITLE=WIDGET_TITLE,
        SIZING_WIDGET_PRIMARY_COLOR=WIDGET_COLOR,
    )
    try:
        app.wait_healthy()
        yield app
    finally:
        app.stop()


# Module scope: Playwright's sync API keeps an event loop running in the main thread while it is
# open, which would break later tests in the session that start their own loop (asyncio.run).
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail("Debian's chromium is not installed (apt-get install chromium; .ci/run does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
