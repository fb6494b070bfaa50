"""`tools` is pure: importing it pulls in no framework and reads no environment."""

from __future__ import annotations

from tests.sizing_cli import run_python


def test_importing_tools_leaves_frameworks_out() -> None:
    code = (
        "import sys, tools\n"
        "from tools import calculate_vram, SizingRequest\n"
        "calculate_vram(SizingRequest(model='llama-3.1-8b'))\n"
        "bad = [m for m in ('langchain', 'langchain_core', 'gradio', 'chromadb') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
