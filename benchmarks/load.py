"""Load benchmark: many concurrent chat sessions against the running web app, through gradio_client.

Run (starts its own offline `sizing serve` on a free loopback port, warms the index first):
    .venv/bin/python benchmarks/load.py
Against an app that is already running (e.g. the compose stack or a port-forwarded pod):
    .venv/bin/python benchmarks/load.py --url http://127.0.0.1:7860
Options: --sessions 50 --messages 5 (defaults), --json for one machine-readable line,
--data-dir DIR to keep the started app's index between runs.

Each session is one gradio_client.Client (its own session hash, so its own gr.State on the
server, like one browser tab) holding a sizing conversation of --messages turns through the
app's `chat` API; all sessions start together. A reply counts as an error when the call
raises, the answer lacks GB figures (every question is a sizing question), or it does not
name the model the session is talking about (follow-ups name none, so this also catches a
conversation state served to the wrong session). Before the run it times single messages,
one at a time, over Gradio's plain HTTP API and through gradio_client, to separate the
server's time from the client library's. Prints p50/p95/max latency per message,
throughput and errors; exits 1 when any message failed. Target: 0 errors and
p95 <= 3 s with the server on 2 cores (client and server share the machine when started here).
Only loopback or the --url you give is contacted; the started server ignores SIZING_* from the
environment and runs offline (no LLM) on an embedded index in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# For tests.servers (imported where it is used) when run as `python benchmarks/load.py`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# A sizing conversation as visitors hold it, in English and Spanish. Session n talks about
# SESSION_MODELS[n % len]: messages 2 and 3 name no model, so a correct answer shows that the
# server kept THIS session's conversation (a state mixed up between sessions names another
# model). Message 4 asks about a different model, message 5 returns to the session's own.
SESSION_MODELS = (
    "Qwen2.5 14B",
    "Mistral 7B",
    "Llama 3.1 70B",
    "Qwen2.5 32B",
    "Gemma 2 27B",
    "Llama 3.1 8B",
    "Mixtral 8x7B",
)
CONVERSATION = (
    ("What GPU do I need to serve {own}?", "own"),
    ("And for 16 concurrent users at 8k context?", "own"),
    ("¿Y si lo cuantizo a int4?", "own"),
    ("¿Cuánta VRAM necesita {other} con 32k de contexto?", "other"),
    ("Will {own} fit on a 24 GB card in bf16?", "own"),
)
# Every answer to a sizing question carries its arithmetic in GB (decimal, as the engine prints).
ARITHMETIC = re.compile(r"\d\s*GB\b")
SERVER_START_SECONDS = 180.0
TARGET_P95_SECONDS = 3.0


@dataclass
class SessionOutcome:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextmanager
def started_app(omp_threads: int, data_dir: Path | None) -> Iterator[tuple[str, int]]:
    """An offline `sizing serve` on a free loopback port; yields its URL and pid.

    `data_dir` None: a throwaway folder. A folder you pass keeps its index between runs
    (ingest is idempotent, so a second run skips the embedding work).
    """
    from tests.servers import sizing_serve

    sizing = Path(sys.executable).parent / "sizing"
    if not sizing.exists():
        raise SystemExit(f"{sizing} not found: run from the project's virtual environment (make install)")
    workdir = Path(tempfile.mkdtemp(prefix="sizing-load-"))
    # The default single-process shape: embedded Chroma in a throwaway folder, no LLM. Other
    # shapes (a Chroma server, an LLM) are measured with --url against them.
    env = {name: value for name, value in os.environ.items() if not name.startswith("SIZING_")}
    env["SIZING_DATA_DIR"] = str(data_dir or workdir / "data")
    # The simulated visitors all come from loopback: one address, so lift the per-address limit.
    env["SIZING_CLIENT_RATE_LIMIT_PER_MINUTE"] = "100000"
    # As deploy/Dockerfile sets it (see the reason there); --omp-threads measures other values.
    env["OMP_NUM_THREADS"] = str(omp_threads)
    env["GRADIO_ANALYTICS_ENABLED"] = "False"
    # Like the container image: the index is built before serving, not by the first visitor.
    subprocess.run([str(sizing), "ingest"], env=env, check=True, capture_output=True, timeout=600)
    try:
        with sizing_serve([str(sizing)], env, workdir, SERVER_START_SECONDS) as (url, server):
            yield url, server.pid
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def session_message(number: int, turn: int) -> tuple[str, str]:
    """The turn-th message of session `number`, and the model name its answer must show."""
    from tools import resolve_model

    own = SESSION_MODELS[number % len(SESSION_MODELS)]
    other = SESSION_MODELS[(number + 3) % len(SESSION_MODELS)]
    template, subject = CONVERSATION[turn % len(CONVERSATION)]
    message = template.format(own=own, other=other)
    return message, resolve_model(own if subject == "own" else other).name


def needs_tls_verification(url: str) -> bool:
    """Certificate checks apply to https only.

    gradio_client opens a new httpx client for every request, and with verification on each
    one loads the CA bundle: measured here, 53 ms of client CPU per `predict` against 5 ms
    without. Over plain http there is no certificate to check, so the load generator skips
    that cost instead of measuring it.
    """
    return not url.lower().startswith("http://")


def run_session(
    url: str, number: int, messages: int, start: threading.Barrier, timeout: float
) -> SessionOutcome:
    from gradio_client import Client

    outcome = SessionOutcome()
    try:
        client = Client(
            url,
            verbose=False,
            analytics_enabled=False,
            download_files=False,
            httpx_kwargs={"timeout": timeout},
            ssl_verify=needs_tls_verification(url),
        )
    except Exception as exc:  # a session that cannot even open counts every message as failed
        outcome.errors.extend([f"session {number}: connect: {exc}"] * messages)
        start.abort()
        return outcome
    # A broken barrier (another session failed to connect) just means: start now.
    with suppress(threading.BrokenBarrierError):
        start.wait(timeout=SERVER_START_SECONDS)
    for turn in range(messages):
        message, expected_model = session_message(number, turn)
        began = time.perf_counter()
        try:
            answer = client.predict(message, api_name="/chat")
        except Exception as exc:
            outcome.errors.append(f"session {number} message {turn + 1}: {type(exc).__name__}: {exc}")
            continue
        outcome.latencies.append(time.perf_counter() - began)
        if not isinstance(answer, str) or not ARITHMETIC.search(answer) or expected_model not in answer:
            outcome.errors.append(
                f"session {number} message {turn + 1}: expected {expected_model} and GB figures, "
                f"got {str(answer)[:200]!r}"
            )
    client.close()
    return outcome


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (no interpolation): the value a fraction of messages stayed under."""
    ordered = sorted(values)
    rank = max(1, round(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a local process (Linux /proc), or None when it is not ours to read."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    # After the ")" closing the command name, utime and stime are the 12th and 13th fields.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


BASELINE_CALLS = 10
BASELINE_QUESTION = "What GPU do I need to serve Qwen2.5 14B?"


def baseline(url: str, timeout: float) -> dict[str, float]:
    """Median latency of one message at a time: plain HTTP (the server's own time) vs gradio_client."""
    from gradio_client import Client

    from tests.servers import gradio_chat

    expected = "Qwen2.5 14B"
    raw: list[float] = []
    for _ in range(BASELINE_CALLS):
        began = time.perf_counter()
        answer = gradio_chat(url, BASELINE_QUESTION, timeout)
        raw.append(time.perf_counter() - began)
        if expected not in answer:
            raise SystemExit(f"baseline: unexpected answer {answer[:200]!r}")
    client = Client(
        url,
        verbose=False,
        analytics_enabled=False,
        download_files=False,
        ssl_verify=needs_tls_verification(url),
    )
    library: list[float] = []
    for _ in range(BASELINE_CALLS):
        began = time.perf_counter()
        client.predict(BASELINE_QUESTION, api_name="/chat")
        library.append(time.perf_counter() - began)
    client.close()
    return {
        "single_raw_http_p50_s": round(statistics.median(raw), 3),
        "single_gradio_client_p50_s": round(statistics.median(library), 3),
    }


def run_sessions(
    url: str, numbers: list[int], messages: int, start: Any, timeout: float, results: Any
) -> None:
    """One load-generator process: its sessions run in threads; outcomes go back on `results`."""
    outcomes: dict[int, SessionOutcome] = {}

    def worker(number: int) -> None:
        outcomes[number] = run_session(url, number, messages, start, timeout)

    threads = [threading.Thread(target=worker, args=(n,), name=f"session-{n}") for n in numbers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put([(o.latencies, o.errors) for o in outcomes.values()])


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def drive(
    url: str,
    sessions: int,
    messages: int,
    timeout: float,
    server_pid: int | None = None,
    workers: int = 1,
) -> dict[str, object]:
    alone = baseline(url, timeout)
    # gradio_client spends several times the server's CPU per message, all of it under one
    # GIL when every session is a thread of this process: with one process the generator,
    # not the app, sets the latency. Sessions are dealt round-robin to `workers` processes
    # that start together on one barrier.
    workers = max(1, min(workers, sessions))
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(sessions)
    results = context.Queue()
    shares = [list(range(sessions))[index::workers] for index in range(workers)]
    processes = [
        context.Process(target=run_sessions, args=(url, share, messages, start, timeout, results))
        for share in shares
    ]
    # The load generator shares the machine with a server started here: report what it used.
    client_cpu_before = time.process_time() + children_cpu_seconds()
    server_cpu_before = process_cpu_seconds(server_pid)
    began = time.perf_counter()
    for process in processes:
        process.start()
    outcomes: list[SessionOutcome] = []
    for _ in processes:
        for latencies, errors in results.get(timeout=SERVER_START_SECONDS + timeout * messages):
            outcomes.append(SessionOutcome(latencies=latencies, errors=errors))
    for process in processes:
        process.join()
    wall = time.perf_counter() - began
    client_cpu = time.process_time() + children_cpu_seconds() - client_cpu_before
    server_cpu_after = process_cpu_seconds(server_pid)
    server_cpu = (
        server_cpu_after - server_cpu_before
        if server_cpu_before is not None and server_cpu_after is not None
        else None
    )
    latencies = [latency for outcome in outcomes for latency in outcome.latencies]
    errors = [error for outcome in outcomes for error in outcome.errors]
    report: dict[str, object] = {
        "url": url,
        "sessions": sessions,
        "messages_per_session": messages,
        "client_processes": workers,
        "messages": sessions * messages,
        "answered": len(latencies),
        "errors": len(errors),
        "p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "p95_s": round(percentile(latencies, 0.95), 3) if latencies else None,
        "max_s": round(max(latencies), 3) if latencies else None,
        "wall_s": round(wall, 1),
        "messages_per_s": round(len(latencies) / wall, 2) if wall else None,
        **alone,
        "cpus": os.cpu_count(),
        "client_cpu_s": round(client_cpu, 1),
        # Server CPU per answered message: the cost that sizes replicas, whatever else runs here.
        "server_cpu_s": round(server_cpu, 1) if server_cpu is not None else None,
        "server_cpu_ms_per_message": round(1000 * server_cpu / len(latencies))
        if server_cpu is not None and latencies
        else None,
        "load_average_1min": round(os.getloadavg()[0], 1),
        "error_samples": errors[:5],
    }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", help="an app that is already running (default: start one here)")
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions (default 50)")
    parser.add_argument("--messages", type=int, default=5, help="messages per session (default 5)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one message may take")
    parser.add_argument(
        "--omp-threads",
        type=int,
        default=1,
        help="OMP_NUM_THREADS of the started app (default 1, as the image)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="index folder for the started app, kept between runs (default: temporary)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="load-generator processes the sessions are spread over (default: one per CPU)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON line")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.messages < 1 or args.workers < 1:
        parser.error("--sessions, --messages and --workers must be at least 1")

    if args.url:
        report = drive(args.url.rstrip("/"), args.sessions, args.messages, args.timeout, workers=args.workers)
    else:
        with started_app(args.omp_threads, args.data_dir) as (url, pid):
            report = drive(
                url, args.sessions, args.messages, args.timeout, server_pid=pid, workers=args.workers
            )

    if args.json:
        print(json.dumps(report))
    else:
        print(f"target        {report['url']} ({report['cpus']} CPUs on this machine)")
        print(
            f"sessions      {report['sessions']} concurrent x {report['messages_per_session']} messages, "
            f"from {report['client_processes']} client processes"
        )
        print(f"answered      {report['answered']} / {report['messages']}   errors {report['errors']}")
        print(f"latency       p50 {report['p50_s']} s   p95 {report['p95_s']} s   max {report['max_s']} s")
        print(f"throughput    {report['messages_per_s']} messages/s over {report['wall_s']} s")
        print(
            f"one at a time p50 {report['single_raw_http_p50_s']} s over plain HTTP, "
            f"{report['single_gradio_client_p50_s']} s through gradio_client ({BASELINE_CALLS} calls each)"
        )
        if report["server_cpu_s"] is not None:
            print(
                f"server CPU    {report['server_cpu_s']} CPU-s = "
                f"{report['server_cpu_ms_per_message']} ms per answered message"
            )
        print(
            f"machine       client used {report['client_cpu_s']} CPU-s; 1-min load average at the end "
            f"{report['load_average_1min']} (other processes share these CPUs)"
        )
        p95 = report["p95_s"]
        met = report["errors"] == 0 and isinstance(p95, float) and p95 <= TARGET_P95_SECONDS
        print(f"target        0 errors, p95 <= {TARGET_P95_SECONDS} s: {'met' if met else 'NOT met'}")
        for sample in report["error_samples"]:  # type: ignore[attr-defined]
            print(f"  error: {sample}")
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
