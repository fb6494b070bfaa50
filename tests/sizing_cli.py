"""Run the real `sizing` CLI in a subprocess, the way users do, for the end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_sizing(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`python -m assistant ARGS` from the repository root with exactly `env`; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
    )
