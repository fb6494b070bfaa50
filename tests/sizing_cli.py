"""Run the real `sizing` CLI in a subprocess, the way users do, for the end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# The object `sizing ask --json` prints (Reply.public_json()): a public contract, fields may only be added.
REPLY_JSON_FIELDS = {"answer", "language", "mode", "notice", "calculations", "sources", "missing", "handoff"}


def run_sizing(
    *args: str, env: dict[str, str], timeout: float = 180, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m assistant ARGS` (what the `sizing` command runs) from the repository root with exactly
    `env`, `stdin` as its input; output captured as text."""
    command = [sys.executable, "-m", "assistant", *args]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout
    )
