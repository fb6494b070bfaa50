"""benchmarks/load.py works end to end: a few concurrent gradio_client sessions, no errors.

The benchmark's figures are not asserted (tests never assert wall-clock time); this runs the
script itself in a small configuration, so its server start, its per-session conversations
(which fail if one session is served another's state) and its report stay working.
Run: `.venv/bin/pytest tests/test_deploy_load.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LOAD_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "load.py"


def test_load_benchmark_runs_concurrent_sessions_without_errors() -> None:
    result = subprocess.run(
        [sys.executable, str(LOAD_SCRIPT), "--sessions", "4", "--messages", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["messages"] == 12
    assert report["answered"] == 12 and report["errors"] == 0, report["error_samples"]
    assert 0 < report["p50_s"] <= report["p95_s"] <= report["max_s"]


def test_load_benchmark_rejects_an_empty_run() -> None:
    result = subprocess.run(
        [sys.executable, str(LOAD_SCRIPT), "--sessions", "0"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "--sessions, --messages and --workers must be at least 1" in result.stderr
