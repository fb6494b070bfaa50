"""`tools` is pure: importing it pulls in no framework and reads no environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_tools_leaves_frameworks_out() -> None:
    code = (
        "import sys, tools\n"
        "from tools import calculate_vram, SizingRequest\n"
        "calculate_vram(SizingRequest(model='llama-3.1-8b'))\n"
        "bad = [m for m in ('langchain', 'langchain_core', 'gradio', 'chromadb') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
