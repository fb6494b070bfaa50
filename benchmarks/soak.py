"""Soak benchmark: memory per visitor session, a long run's RSS and p95, and a stalling LLM endpoint.

Run (starts its own `sizing serve` processes on free loopback ports; nothing else is contacted):
    PYTHONPATH=. .venv/bin/python benchmarks/soak.py                       # 10-minute soak
    PYTHONPATH=. .venv/bin/python benchmarks/soak.py --duration 60 --probe-sessions 100   # quick look
Options: --clients 4 (parallel callers in the soak), --max-sessions 1000 (the server's
SIZING_MAX_SESSIONS), --data-dir DIR (keep the index between runs), --json.

1. Memory per session: RSS of the server before and after --probe-sessions fresh sessions
   that each ask one sizing question (Gradio's plain HTTP API opens a session per call, as a
   client rotating `session_hash` does); then as many sessions again as SIZING_MAX_SESSIONS,
   to show the RSS level off once the cap forgets the oldest.
2. Soak: --clients callers ask sizing questions back to back, each call a fresh session, for
   --duration seconds; RSS is sampled every 15 s. Prints p50/p95/max and the RSS curve.
3. Stall: a second server in LLM mode (SIZING_LLM_TIMEOUT=5) whose endpoint answers GET
   /models at once but trickles a byte every second on a chat completion. As many chats as
   SIZING_CONCURRENCY_LIMIT are sent at once, then one more, each waited on for at most
   --stall-wait seconds; prints how each ended and what /healthz said meanwhile.
The rate limits of the started servers are raised out of the way (one address sends it all).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.servers, run as `python benchmarks/soak.py`

from tests.servers import gradio_chat, sizing_serve  # noqa: E402

QUESTIONS = (
    "What GPU do I need to serve Qwen2.5 14B?",
    "¿Cuánta VRAM necesita Llama 3.1 70B a 4 bits con 8 usuarios?",
    "Will Mistral 7B fit on a 24 GB card in bf16?",
    "Gemma 2 27B with 32k context for 10 users: which card?",
)
SERVER_START_S = 300.0
RSS_EVERY_S = 15.0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@contextmanager
def served(data_dir: Path, extra_env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """`python -m assistant serve` from this checkout on a free loopback port; yields URL and pid."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SIZING_")}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "SIZING_DATA_DIR": str(data_dir),
            "OMP_NUM_THREADS": "1",
            "GRADIO_ANALYTICS_ENABLED": "False",
            "SIZING_RATE_LIMIT_PER_MINUTE": "1000000",
            "SIZING_CLIENT_RATE_LIMIT_PER_MINUTE": "1000000",
            "SIZING_LOG_LEVEL": "WARNING",
            **extra_env,
        }
    )
    python = [sys.executable, "-m", "assistant"]
    subprocess.run([*python, "ingest"], env=env, cwd=ROOT, check=True, capture_output=True, timeout=900)
    with sizing_serve(python, env, data_dir.parent, SERVER_START_S, cwd=ROOT) as (url, server):
        yield url, server.pid


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, round(fraction * len(ordered)))) - 1]


def progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def memory_per_session(url: str, pid: int, probe: int, cap: int) -> dict[str, Any]:
    progress(f"memory: {probe} sessions with a question, then {cap} more")
    for _ in range(5):  # warm every code path before the baseline
        gradio_chat(url, QUESTIONS[0], 120)
    before = rss_mb(pid)
    for number in range(probe):
        gradio_chat(url, QUESTIONS[number % len(QUESTIONS)], 120)
    after = rss_mb(pid)
    for _ in range(cap):  # past the cap: Gradio forgets the least recently used sessions
        gradio_chat(url, "", 120)
    past_cap = rss_mb(pid)
    return {
        "rss_before_mb": round(before, 1),
        "rss_after_probe_mb": round(after, 1),
        "kb_per_session": round((after - before) * 1024 / probe, 1),
        "sessions_opened": probe + cap + 5,
        "rss_past_cap_mb": round(past_cap, 1),
    }


def soak(url: str, pid: int, clients: int, duration: float) -> dict[str, Any]:
    progress(f"soak: {clients} callers for {duration:g} s")
    latencies: list[float] = []
    errors: list[str] = []
    samples: list[tuple[float, float]] = [(0.0, rss_mb(pid))]
    lock = threading.Lock()
    began = time.monotonic()
    ends = began + duration

    def caller(number: int) -> None:
        turn = number
        while time.monotonic() < ends:  # bounded by --duration
            started = time.perf_counter()
            try:
                answer = gradio_chat(url, QUESTIONS[turn % len(QUESTIONS)], 120)
                ok = "GB" in answer
            except Exception as exc:
                answer, ok = f"{type(exc).__name__}: {exc}", False
            with lock:
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors.append(answer[:200])
            turn += clients

    threads = [threading.Thread(target=caller, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    while time.monotonic() < ends:
        time.sleep(min(RSS_EVERY_S, max(0.0, ends - time.monotonic())))
        samples.append((time.monotonic() - began, rss_mb(pid)))
    for thread in threads:
        thread.join(timeout=150)
    return {
        "duration_s": round(time.monotonic() - began),
        "clients": clients,
        "answered": len(latencies),
        "errors": len(errors),
        "p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "p95_s": round(percentile(latencies, 0.95), 3) if latencies else None,
        "max_s": round(max(latencies), 3) if latencies else None,
        "rss_start_mb": round(samples[0][1], 1),
        "rss_end_mb": round(samples[-1][1], 1),
        "rss_max_mb": round(max(rss for _, rss in samples), 1),
        "rss_curve_mb": [round(rss) for _, rss in samples],
        "error_samples": errors[:3],
        "load_average_1min": round(os.getloadavg()[0], 1),
    }


class StallingEndpoint:
    """An OpenAI-compatible endpoint that lists its model at once and trickles every chat completion."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        stop = self.stop

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"object": "list", "data": [{"id": "stall", "object": "model"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                try:
                    while not stop.wait(1.0):  # one byte a second until the benchmark ends
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def stall(data_dir: Path, wait_s: float) -> dict[str, Any]:
    progress(f"stall: chats against a trickling endpoint, each waited on for {wait_s:g} s")
    endpoint = StallingEndpoint()
    slots = 8
    env = {
        "SIZING_LLM_BASE_URL": endpoint.url,
        "SIZING_LLM_MODEL": "stall",
        "SIZING_LLM_TIMEOUT": "5",
        "SIZING_CONCURRENCY_LIMIT": str(slots),
    }
    try:
        with served(data_dir, env) as (url, _pid):

            def timed(message: str) -> tuple[float, str]:
                started = time.perf_counter()
                try:
                    answer = gradio_chat(url, message, wait_s)
                    outcome = "answered" + (" (offline fallback)" if "offline" in answer.lower() else "")
                except Exception as exc:
                    outcome = f"no answer within {wait_s:g} s ({type(exc).__name__})"
                return time.perf_counter() - started, outcome

            with ThreadPoolExecutor(max_workers=slots + 1) as pool:
                held = [pool.submit(timed, QUESTIONS[n % len(QUESTIONS)]) for n in range(slots)]
                time.sleep(2.0)
                extra = pool.submit(timed, QUESTIONS[0])
                with urllib.request.urlopen(f"{url}/healthz", timeout=10) as response:
                    health = json.loads(response.read())
                results = [future.result() for future in held]
                extra_result = extra.result()
    finally:
        endpoint.close()
    outcomes: dict[str, int] = {}
    for _, outcome in results:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return {
        "llm_timeout_s": 5,
        "concurrent_chats": slots,
        "outcomes": outcomes,
        "slowest_s": round(max(seconds for seconds, _ in results), 1),
        "one_more_chat": f"{extra_result[1]} after {extra_result[0]:.1f} s",
        "healthz_meanwhile": health,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of soak (default 600)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--probe-sessions", type=int, default=300)
    parser.add_argument("--max-sessions", type=int, default=1000)
    parser.add_argument("--stall-wait", type=float, default=60.0, help="seconds to wait on each stalled chat")
    parser.add_argument("--skip-stall", action="store_true")
    parser.add_argument("--data-dir", type=Path, help="index folder, kept between runs (default: temporary)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sizing-soak-"))
    data_dir = args.data_dir or workdir / "data"
    report: dict[str, Any] = {"cpus": os.cpu_count()}
    try:
        with served(data_dir, {"SIZING_MAX_SESSIONS": str(args.max_sessions)}) as (url, pid):
            report["memory"] = memory_per_session(url, pid, args.probe_sessions, args.max_sessions)
            report["soak"] = soak(url, pid, args.clients, args.duration)
        if not args.skip_stall:
            report["stall"] = stall(data_dir, args.stall_wait)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(report))
        return 0
    memory, run = report["memory"], report["soak"]
    print(
        f"memory    {memory['kb_per_session']} KB per session (RSS {memory['rss_before_mb']} -> "
        f"{memory['rss_after_probe_mb']} MB over {args.probe_sessions} sessions); "
        f"{memory['sessions_opened']} sessions opened with SIZING_MAX_SESSIONS={args.max_sessions}: "
        f"RSS {memory['rss_past_cap_mb']} MB"
    )
    print(
        f"soak      {run['duration_s']} s, {run['clients']} callers, a fresh session per call: "
        f"{run['answered']} answered, {run['errors']} errors; p50 {run['p50_s']} s, p95 {run['p95_s']} s, "
        f"max {run['max_s']} s"
    )
    print(
        f"          RSS start {run['rss_start_mb']} MB, end {run['rss_end_mb']} MB, max {run['rss_max_mb']} MB; "
        f"every {RSS_EVERY_S:g} s: {run['rss_curve_mb']}"
    )
    print(f"          {report['cpus']} CPUs, 1-min load average at the end {run['load_average_1min']}")
    for sample in run["error_samples"]:
        print(f"  error: {sample}")
    if "stall" in report:
        held = report["stall"]
        print(
            f"stall     {held['concurrent_chats']} chats at once against an endpoint trickling a byte a second "
            f"(SIZING_LLM_TIMEOUT={held['llm_timeout_s']}): {held['outcomes']}, slowest {held['slowest_s']} s; "
            f"one more chat: {held['one_more_chat']}; /healthz meanwhile: {held['healthz_meanwhile']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
