"""LLM mode against a real local model: llama.cpp's `llama-server --jinja` serving
SmolLM2-135M-Instruct (the test lane's build, `tests/llm_real/build_llama_server.sh`).

Run from the repository root after building the lane (about ten minutes the first time,
cached after that); the benchmark itself takes a few minutes on two cores:

    bash tests/llm_real/build_llama_server.sh
    .venv/bin/python benchmarks/llm_real.py
    .venv/bin/python benchmarks/llm_real.py --timeout 60 --max-tokens 300

For each question it prints the mode of the answer (llm, or offline with the reason), the
model calls, the wall time, the tokens the model generated (the server's own count), the
prompt size (the app's estimate and the server's tokenizer on the same text) and what the
guardrail removed, by reason. Then totals. Nothing is asserted; the figures go to docs/llm.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Plain sizing questions (one model call expected), follow-ups, a general question, a card named,
# Spanish, off topic. Not a calibration set: nothing is fitted to them.
QUESTIONS: list[tuple[str, str]] = [
    ("sizing", "What GPU do I need for Llama 3.1 8B at 4 bits with 4 users?"),
    ("sizing", "How much VRAM for Qwen2.5 7B at 8 bits with 8k context?"),
    ("sizing, no precision", "What GPU for a 70B model?"),
    ("card named", "Does Llama 3.1 70B fit on one H100 at 4 bits with 4 users?"),
    ("sizing es", "¿Qué GPU necesito para Llama 3.1 70B a 8 bits con 10 usuarios?"),
    ("card named es", "¿Cabe Mistral 7B a 16 bits en una RTX 4090?"),
    ("general", "What is the KV cache?"),
    ("off topic", "Write me a poem about the sea."),
]
FOLLOW_UP = ("follow-up", "and with 20 users?")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=90.0, help="SIZING_LLM_TIMEOUT (default 90 s)")
    parser.add_argument("--max-tokens", type=int, default=200, help="SIZING_LLM_MAX_TOKENS (default 200)")
    arguments = parser.parse_args()

    from assistant.agent import build_chat_model
    from assistant.service import build_assistant
    from assistant.settings import Settings
    from tests.llm_real.server import CONTEXT_TOKENS, LaneUnavailable, LlamaServer

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="sizing-llm-real-") as folder:
        try:
            server = LlamaServer.start(Path(folder) / "llama-server.log")
        except LaneUnavailable as missing:
            print(f"the real-model lane is not built: {missing}")
            return 2
        with server:
            settings = Settings(
                data_dir=Path(folder) / "data",
                llm_base_url=server.url,
                llm_model=server.model,
                llm_timeout=arguments.timeout,
                llm_max_tokens=arguments.max_tokens,
                llm_context_tokens=CONTEXT_TOKENS,
            )
            probe = Probe(server)
            chat_model = build_chat_model(settings).model_copy(update={"callbacks": [probe.handler]})
            assistant = build_assistant(settings, chat_model=chat_model)
            assistant.answer("warm-up: what GPU for a 7B?")  # imports, article index, server cache
            print(
                f"llama-server + SmolLM2-135M-Instruct Q4_1, --jinja, ctx {CONTEXT_TOKENS}, "
                f"timeout {arguments.timeout:g} s, max_tokens {arguments.max_tokens}"
            )
            rows = []
            state = None
            for kind, question in [*QUESTIONS[:4], FOLLOW_UP, *QUESTIONS[4:]]:
                probe.reset()
                started = time.perf_counter()
                reply = assistant.answer(question, state if kind == "follow-up" else None)
                seconds = time.perf_counter() - started
                if kind == "card named":
                    state = reply.state
                rows.append(row(kind, question, reply, seconds, probe))
                print(json.dumps(rows[-1], ensure_ascii=False))
            print_totals(rows)
            print_token_ratio(server)
    return 0


class Probe:
    """Counts model calls and the tokens the server says it generated, through LangChain callbacks."""

    def __init__(self, server: Any) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        probe = self

        class Handler(BaseCallbackHandler):
            def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
                probe.calls += 1

            def on_llm_end(self, response: Any, **kwargs: Any) -> None:
                for generations in response.generations:
                    for generation in generations:
                        usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
                        probe.generated += int(usage.get("output_tokens", 0))
                        probe.prompt = max(probe.prompt, int(usage.get("input_tokens", 0)))

        self.handler = Handler()
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.generated = 0
        self.prompt = 0


def row(kind: str, question: str, reply: Any, seconds: float, probe: Probe) -> dict[str, Any]:
    guard = next((step for step in reply.steps if step.kind == "guardrail"), None)
    fallback = next((step for step in reply.steps if step.kind == "fallback"), None)
    return {
        "kind": kind,
        "question": question,
        "mode": reply.mode,
        "notice": reply.notice,
        "model_calls": probe.calls,
        "seconds": round(seconds, 1),
        "tokens_generated": probe.generated,
        "prompt_tokens_server": probe.prompt,
        "guardrail": guard.detail if guard else (fallback.detail if fallback else None),
        "answer_start": reply.answer[:120],
    }


def print_totals(rows: list[dict[str, Any]]) -> None:
    modes = collections.Counter(
        r["mode"] + (" (" + r["notice"][:40] + "…)" if r["notice"] else "") for r in rows
    )
    seconds = [r["seconds"] for r in rows]
    print(f"answers: {len(rows)}; modes: {dict(modes)}")
    print(
        f"time per answer: median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s; "
        f"model calls: {sum(r['model_calls'] for r in rows)}; "
        f"tokens generated: {sum(r['tokens_generated'] for r in rows)}"
    )
    removed = collections.Counter()
    for r in rows:
        detail = r["guardrail"] or ""
        if ": " in detail and detail.split(" ")[0] in ("removed", "eliminadas"):
            for reason in detail.split(": ", 1)[1].split(", "):
                removed[reason] += 1
    print(f"answers where the guardrail removed something, by reason: {dict(removed) or 'none'}")


def print_token_ratio(server: Any) -> None:
    """The prompt budget's estimate against the served model's own tokenizer, on real prompt parts."""
    from assistant.prompt_budget import estimate_tokens
    from tests.llm_real.prompt_samples import prompt_samples

    print("prompt part: bytes, SmolLM2 tokens, the budget's estimate (estimate / real)")
    for name, text in prompt_samples().items():
        real = server.tokens(text)
        estimate = estimate_tokens(text)
        print(
            f"  {name}: {len(text.encode())} bytes, {real} tokens, estimate {estimate} ({estimate / real:.2f})"
        )


if __name__ == "__main__":
    raise SystemExit(main())
