"""Chroma server outage under a running web app: answers keep coming, and sources come back.

The deployed shape is `sizing serve` with SIZING_CHROMA_URL pointing at a separate Chroma
server. This test runs exactly that (two real processes on loopback), talks to the app the
way a browser session does (gradio_client, one session throughout), kills the Chroma server
with SIGKILL mid-conversation, then restarts it on the same port and data folder.
The `chroma_server` fixture cannot be killed and restarted, so the test owns its server.
Run: `.venv/bin/pytest tests/test_deploy_chroma_outage.py`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers import free_port, sizing_serve, stop_process, wait_until_answering

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BIN = Path(sys.executable).parent
START_SECONDS = 120.0
QUESTION = "What GPU do I need to serve Llama 3.1 70B?"
# The assistant caches the articles it cites per answer topic (70B or not, quantized or not,
# language) for minutes, and a cited passage stays valid while Chroma is down. The question
# asked during the outage therefore has a topic not searched before it: a bf16 model under 70B.
OUTAGE_QUESTION = "What GPU do I need to serve Qwen2.5 14B in bf16?"
ARITHMETIC = re.compile(r"\d\s*GB\b")
SOURCES_LINE = "**Sources:**"


def get_json(url: str) -> tuple[int, Any]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, json.loads(response.read())


class ChromaServer:
    """`chroma run` on a fixed loopback port and folder, so it can be killed and started again."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = self.folder / f"chroma-{self.starts}.log"
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    str(BIN / "chroma"),
                    "run",
                    "--path",
                    str(self.folder / "data"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_until_answering(
            f"{self.url}/api/v2/heartbeat",
            self.process,
            timeout_s=START_SECONDS,
            log_path=log,
            what="chroma run",
        )

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)  # a crash, not a clean shutdown
        self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, signal.SIGTERM, timeout_s=10)
            self.process = None


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def app_url(chroma: ChromaServer, tmp_path: Path) -> Iterator[str]:
    """`sizing serve` (offline, no LLM) against the Chroma server, after `sizing ingest` loaded it."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SIZING_")}
    env.update(
        SIZING_CHROMA_URL=chroma.url,
        SIZING_DATA_DIR=str(tmp_path / "app-data"),
        GRADIO_ANALYTICS_ENABLED="False",
        # The recovery loop below asks repeatedly in one session; the visitor limit is not under test.
        SIZING_RATE_LIMIT_PER_MINUTE="600",
    )
    ingest = subprocess.run(
        [str(BIN / "sizing"), "ingest"], env=env, capture_output=True, text=True, timeout=300
    )
    assert ingest.returncode == 0, ingest.stderr
    with sizing_serve([str(BIN / "sizing")], env, tmp_path, START_SECONDS) as (url, _):
        yield url


def test_chroma_outage_degrades_answers_and_recovers(chroma: ChromaServer, app_url: str) -> None:
    from gradio_client import Client

    session = Client(app_url, verbose=False, analytics_enabled=False, download_files=False)
    try:
        before = session.predict(QUESTION, api_name="/chat")
        assert ARITHMETIC.search(before) and SOURCES_LINE in before
        assert get_json(f"{app_url}/healthz")[1]["chroma_reachable"] is True

        chroma.kill()

        # The calculator needs no retrieval: the same session still gets the arithmetic, and is
        # told the article sources are unavailable instead of being shown an error.
        during = session.predict(OUTAGE_QUESTION, api_name="/chat")
        assert ARITHMETIC.search(during), during
        assert "unavailable" in during.lower(), during
        assert SOURCES_LINE not in during
        status, health = get_json(f"{app_url}/healthz")
        assert status == 200 and health["chroma_reachable"] is False

        chroma.start()

        # Recovery needs no restart of the app: the same question cites articles again.
        deadline = time.monotonic() + 60
        after = session.predict(OUTAGE_QUESTION, api_name="/chat")
        while SOURCES_LINE not in after and time.monotonic() < deadline:
            time.sleep(2)
            after = session.predict(OUTAGE_QUESTION, api_name="/chat")
        assert ARITHMETIC.search(after) and SOURCES_LINE in after, after
        assert "unavailable" not in after.lower()
        assert get_json(f"{app_url}/healthz")[1]["chroma_reachable"] is True
    finally:
        session.close()
