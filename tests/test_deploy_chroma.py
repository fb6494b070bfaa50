"""The scaled-out shape, end to end: the real `sizing` CLI against a real Chroma server.

The compose stack and the Kubernetes manifests point the app at a Chroma server through
SIZING_CHROMA_URL; here the same commands (`sizing ingest`, `sizing search`, `sizing ask`)
run as subprocesses against `chroma run` on loopback (the `chroma_server` fixture).
Run: `.venv/bin/pytest tests/test_deploy_chroma.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SIZING = Path(sys.executable).parent / "sizing"


def sizing(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SIZING), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def server_env(chroma_url: str, data_dir: Path) -> dict[str, str]:
    """The environment a deployed app container gets: settings only, no LLM (offline mode)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SIZING_")}
    env.update(
        SIZING_CHROMA_URL=chroma_url,
        SIZING_DATA_DIR=str(data_dir),
        # The fixture's server lives for the whole session: a collection per test keeps them apart.
        SIZING_COLLECTION=f"deploy-{uuid.uuid4().hex[:12]}",
    )
    return env


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    return json.loads(result.stdout)


@dataclass(frozen=True)
class IngestedServer:
    env: dict[str, str]
    data_dir: Path
    first: dict[str, int]
    second: dict[str, int]


@pytest.fixture(scope="module")
def ingested(chroma_server: str, tmp_path_factory: pytest.TempPathFactory) -> IngestedServer:
    """The articles loaded into the Chroma server twice, as two replicas' init containers would."""
    data_dir = tmp_path_factory.mktemp("deploy-app") / "data"
    env = server_env(chroma_server, data_dir)
    first = as_json(sizing("ingest", "--json", env=env))
    second = as_json(sizing("ingest", "--json", env=env))
    return IngestedServer(env, data_dir, first, second)


def test_ingest_fills_the_server_once(ingested: IngestedServer) -> None:
    assert ingested.first["chunks"] > 0
    assert ingested.first["added"] == ingested.first["chunks"]
    # Idempotent against the server too: the second run adds, changes and removes nothing.
    assert ingested.second == {"chunks": ingested.first["chunks"], "added": 0, "updated": 0, "removed": 0}


def test_search_reads_the_server_index(ingested: IngestedServer) -> None:
    passages = as_json(sizing("search", "what GPU for a 70B model?", "--json", env=ingested.env))
    assert passages, "the server-side index returned nothing"
    assert all(passage["path"] and passage["text"] for passage in passages)
    spanish = as_json(
        sizing("search", "¿cuánta memoria ocupa la caché KV?", "--lang", "es", "--json", env=ingested.env)
    )
    assert spanish and all(passage["lang"] == "es" for passage in spanish)


def test_ask_answers_with_arithmetic_and_server_sources(ingested: IngestedServer) -> None:
    reply = as_json(sizing("ask", "What GPU do I need to serve Llama 3.1 70B?", "--json", env=ingested.env))
    assert reply["mode"] == "offline"
    assert reply["calculations"], "a sizing question must carry the calculator's result"
    assert reply["sources"], "the answer cites no article from the server"
    assert "GB" in reply["answer"]


def test_nothing_was_written_to_an_embedded_index(ingested: IngestedServer) -> None:
    # Runs after the other tests of this module touched the server through every command.
    assert not (ingested.data_dir / "chroma").exists()
