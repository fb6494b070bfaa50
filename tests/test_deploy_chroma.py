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


def test_ingest_then_search_use_the_server_not_the_disk(chroma_server: str, tmp_path: Path) -> None:
    env = server_env(chroma_server, tmp_path / "data")

    first = as_json(sizing("ingest", "--json", env=env))
    assert first["chunks"] > 0
    assert first["added"] == first["chunks"]

    # Idempotent against the server too: a second run (another replica's init container) adds nothing.
    second = as_json(sizing("ingest", "--json", env=env))
    assert second == {"chunks": first["chunks"], "added": 0, "updated": 0, "removed": 0}

    passages = as_json(sizing("search", "what GPU for a 70B model?", "--json", env=env))
    assert passages, "the server-side index returned nothing"
    assert all(passage["path"] and passage["text"] for passage in passages)

    # Nothing was written to the embedded index under the data folder.
    assert not (tmp_path / "data" / "chroma").exists()
