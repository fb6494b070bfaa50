"""How long the assistant takes: offline answers, a cold `sizing ask`, and LLM mode's own overhead.

Run from the repository root (no network, no model; about a minute on two cores):

    .venv/bin/python benchmarks/latency.py              # everything
    .venv/bin/python benchmarks/latency.py --runs 50    # more repetitions
    .venv/bin/python benchmarks/latency.py --only llm   # one part: offline, cli or llm

It prints these figures and the targets they are held to (nothing asserts them). Wall-clock
time on a shared machine includes waiting for a CPU, so the load average is printed and the
in-process parts also give CPU time (all threads of this process), which load barely moves:

1. Offline answer in-process, p50/p95 over a mixed es/en question set (target p95 <= 100 ms).
   The article index is built first in a temporary data folder and the first answer is a
   warm-up, so the figures are steady-state answers.
2. `sizing ask "QUESTION"` as a cold process, median of several runs (target <= 2 s): what an
   engineer waits for at the terminal, imports included.
3. LLM mode against the OpenAI-compatible stub on loopback (tests/openai_stub.py), scripted as
   a well-behaved model (an answer built from the tool results the app already put in the
   conversation): model calls per plain sizing question (target 1: the app calculates first)
   and the app's own time per answer outside the model calls (target <= 50 ms). "Inside a model call" is measured by a LangChain
   callback from the chat model's start to its end, so client-side request building and the
   loopback round trip count as model time; everything else (agent graph, tools, guardrail,
   the service around them) is app time. The stub runs in a child process, so the CPU time
   of an answer is this process's alone: the app plus the client side of the model calls.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OFFLINE_QUESTIONS = [
    "What GPU for a 70B?",
    "¿Qué GPU necesito para un modelo de 70B?",
    "Llama 3.1 70B at 4 bits with 32K context for 20 users",
    "Qwen2.5 32B en FP16 para 10 usuarios concurrentes",
    "Can I run Mistral 7B on an RTX 4090 de 24GB?",
    "Llama 3.1 8B Q4_K_M on ollama, 8k context",
    "¿Cabe un 70B en una L40S a 4 bits?",
    "How much VRAM for 13b in int8 with 100 concurrent users?",
    "gpt-oss 120b mxfp4 on an H100",
    "What does quantization cost in quality?",
    "¿Cuánta memoria ocupa la caché KV con 128k tokens?",
    "2x80GB for a 70B at full precision?",
    "Mixtral 8x7B in AWQ for 30 users",
    "¿Y un Qwen2.5 72B en int4 con 64K de contexto?",
    "DeepSeek R1 distill 32B, 4 bits, 16k context, 8 users",
    "Gemma 2 27B fp8 on an L40S",
    "¿Me sirve una A100 de 40GB para Llama 3.1 8B en FP16 con 50 usuarios?",
    "Phi-3 mini on a T4",
    "Which is better, a 70B at 4 bits or a 32B at 16 bits?",
    "¿Qué es la caché KV y por qué crece con los usuarios?",
    "Llama 3.3 70B Q4_K_M on llama.cpp with 2 users",
    "What context can I serve for 10 users with a 13B on one H100?",
    "Mistral Small 24B at bf16 for a RAG chatbot",
    "¿Cuánto cuesta en calidad cuantizar a 4 bits?",
]

# (question, the calculate_vram arguments a model would send for it)
LLM_QUESTIONS: list[tuple[str, dict[str, Any]]] = [
    ("What GPU for Llama 3.1 70B at 4 bits?", {"model": "Llama 3.1 70B", "precision": "int4"}),
    ("¿Qué GPU para un 70B en FP8 con 20 usuarios?", {"model": "70b", "precision": "fp8", "users": 20}),
    ("Qwen2.5 32B at bf16, 32k context", {"model": "qwen2.5:32b", "precision": "bf16", "context": 32768}),
    ("Mistral 7B on an RTX 4090?", {"model": "mistral 7b", "precision": "bf16", "gpu": "rtx-4090"}),
    ("Llama 3.1 8B Q4_K_M on ollama", {"model": "llama3.1:8b", "precision": "q4_k_m", "engine": "ollama"}),
    ("¿Un 13B en int8 para 50 usuarios?", {"model": "13b", "precision": "int8", "users": 50}),
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def offline_figures(settings: Any, runs: int) -> dict[str, list[float]]:
    """Wall and CPU ms per offline answer: each question's first answer, and repeats.

    The assistant remembers calculations and searches, so a repeated question is cheaper; both
    are real traffic, reported apart. The index is built and the embedder loaded by a warm-up
    question that is not in the set.
    """
    from assistant.service import build_assistant

    assistant = build_assistant(settings)
    assistant.answer("Can a 7B run on a laptop GPU?")  # builds the index if missing; not measured
    figures: dict[str, list[float]] = {"first_wall": [], "first_cpu": [], "repeat_wall": [], "repeat_cpu": []}
    for run in range(runs):
        kind = "first" if run == 0 else "repeat"
        for question in OFFLINE_QUESTIONS:
            started, cpu_started = time.perf_counter(), time.process_time()
            assistant.answer(question)
            figures[f"{kind}_wall"].append((time.perf_counter() - started) * 1000)
            figures[f"{kind}_cpu"].append((time.process_time() - cpu_started) * 1000)
    return figures


def cold_cli_figures(data_dir: Path, runs: int) -> tuple[list[float], list[float]]:
    """(wall s, CPU s) of each cold `sizing ask` process, offline, on the index built before."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIZING_")}
    env["SIZING_DATA_DIR"] = str(data_dir)
    sizing = ROOT / ".venv" / "bin" / "sizing"
    command = [str(sizing), "ask", "What GPU for a 70B at 4 bits?"]
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        finished = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if finished.returncode != 0:
            raise SystemExit(f"sizing ask failed: {finished.stderr.strip()}")
    return wall, cpu


class ModelCallTimer:
    """A LangChain callback adding up the wall time between each chat-model start and end."""

    def __init__(self) -> None:
        from langchain_core.callbacks import BaseCallbackHandler

        timer = self

        class Handler(BaseCallbackHandler):
            def on_chat_model_start(
                self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any
            ) -> None:
                timer.started[run_id] = time.perf_counter()
                timer.calls += 1

            def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
                timer.seconds += time.perf_counter() - timer.started.pop(run_id, time.perf_counter())

            def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
                self.on_llm_end(None, run_id=run_id)

        self.started: dict[UUID, float] = {}
        self.seconds = 0.0
        self.calls = 0
        self.handler = Handler()


def well_behaved_model(questions: dict[str, dict[str, Any]]) -> Any:
    """A stub script: an answer made from the calculator's JSON, calling the tool first only when
    the app has not already put its results in the conversation."""
    from tests.openai_stub import text, tool_call

    def reply(request: dict[str, Any]) -> Any:
        messages = request["messages"]
        results = [
            json.loads(m["content"]) for m in messages if m["role"] == "tool" and m["content"].startswith("{")
        ]
        if not results:
            question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
            return tool_call([("calculate_vram", questions[question])])
        parts = []
        for result in results:
            parts.append(
                f"Weights {result['weights_gb']} GB, total {result['total_gb']} GB. {result['recommendation']}"
            )
            parts += [f"- {line}" for line in result.get("arithmetic", [])]
            if result.get("caveat"):
                parts.append(result["caveat"])
        return text("\n".join(parts), chunk_chars=16)

    return reply


def serve_stub() -> int:
    """Child-process mode: serve the well-behaved stub model until stdin closes.

    The stub runs in its own process so that this process's CPU time is the app's alone.
    """
    from tests.openai_stub import StubOpenAI

    with StubOpenAI(well_behaved_model(dict(LLM_QUESTIONS))) as stub:
        print(stub.url, flush=True)
        sys.stdin.read()
    return 0


def llm_figures(settings_fields: dict[str, Any], runs: int) -> dict[str, list[float]]:
    from assistant.agent import build_chat_model
    from assistant.service import build_assistant
    from assistant.settings import Settings

    figures: dict[str, list[float]] = {"calls": [], "app_ms": [], "cpu_ms": [], "total_ms": []}
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve-stub"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        settings = Settings(llm_base_url=url, llm_model="stub-model", **settings_fields)
        timer = ModelCallTimer()
        chat_model = build_chat_model(settings).model_copy(update={"callbacks": [timer.handler]})
        assistant = build_assistant(settings, chat_model=chat_model)
        assistant.answer(LLM_QUESTIONS[0][0])  # warm-up: imports, graph code paths
        for _ in range(runs):
            for question, _args in LLM_QUESTIONS:
                timer.seconds, timer.calls = 0.0, 0
                started, cpu_started = time.perf_counter(), time.process_time()
                reply = assistant.answer(question)
                elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
                if reply.mode != "llm":
                    raise SystemExit(f"LLM mode fell back for {question!r}: {reply.notice}")
                figures["calls"].append(timer.calls)
                figures["total_ms"].append(elapsed * 1000)
                figures["app_ms"].append((elapsed - timer.seconds) * 1000)
                figures["cpu_ms"].append(cpu * 1000)
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=10)
    return figures


def report(name: str, values: list[float], unit: str = "ms") -> str:
    return f"{name} p50 {percentile(values, 0.5):.1f} {unit}, p95 {percentile(values, 0.95):.1f} {unit}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="repetitions of each question set (default 10)")
    parser.add_argument("--cli-runs", type=int, default=5, help="cold `sizing ask` processes (default 5)")
    parser.add_argument(
        "--only", choices=("offline", "cli", "llm"), action="append", help="run only these parts (repeatable)"
    )
    parser.add_argument("--serve-stub", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve_stub:
        return serve_stub()
    parts = set(arguments.only or ("offline", "cli", "llm"))

    from assistant.settings import Settings

    # Wall-clock figures mean little on a busy machine; say how busy it was, and give CPU time too.
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="sizing-latency-") as folder:
        data_dir = Path(folder)
        fields: dict[str, Any] = {"data_dir": data_dir}
        if parts & {"offline", "cli"}:
            offline = offline_figures(Settings(**fields), max(arguments.runs, 2))
            if "offline" in parts:
                for kind, label in (
                    ("first", "first answer to each question"),
                    ("repeat", "repeated questions"),
                ):
                    wall, cpu = offline[f"{kind}_wall"], offline[f"{kind}_cpu"]
                    print(
                        f"offline answer in-process, {label} ({len(wall)}): {report('wall', wall)} "
                        f"(target p95 <= 100 ms); {report('CPU', cpu)}"
                    )
        if "cli" in parts:
            cold, cold_cpu = cold_cli_figures(data_dir, arguments.cli_runs)
            print(
                f"`sizing ask` cold process ({len(cold)} runs): wall median {statistics.median(cold):.2f} s, "
                f"max {max(cold):.2f} s (target median <= 2 s); CPU median {statistics.median(cold_cpu):.2f} s"
            )
        if "llm" in parts:
            llm = llm_figures(fields, arguments.runs)
            print(
                f"LLM mode vs stub ({len(llm['calls'])} plain sizing questions): model calls per question "
                f"max {max(llm['calls']):.0f}, mean {statistics.mean(llm['calls']):.2f} (target 1)"
            )
            print(
                f"LLM mode app time outside model calls: {report('wall', llm['app_ms'])} (target <= 50 ms); "
                f"{report('CPU of the whole answer', llm['cpu_ms'])}; "
                f"whole answer wall p50 {percentile(llm['total_ms'], 0.5):.1f} ms"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
