"""This checkout's code in a subprocess: the real `sizing` CLI the way users run it, and `python -c`
for what must hold in a fresh interpreter (lazy imports, settings read at start)."""

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


def run_python(
    code: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` in a fresh interpreter from the repository root (`env` None: this one's)."""
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
