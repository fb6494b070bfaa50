"""`sizing compare` and `sizing loadtest` end to end: the real CLI in a subprocess, stub endpoints."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.evals_support import (
    TASKS,
    failing_stub,
    right,
    right_stub,
    slow_stub,
    write_tasks,
    wrong_stub,
)
from tests.openai_stub import Reply, StubOpenAI, error, slow, text
from tests.servers import die_with_parent

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIZING_", "OPENAI_"))}
    env.update({"SIZING_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}, **extra)
    return env


def _sizing(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
        cwd=tmp_path,
        timeout=120,
    )


def _compare_args(a: StubOpenAI, b: StubOpenAI, tasks: Path, *more: str) -> list[str]:
    return [
        "compare",
        *("--a-url", a.url, "--a-model", "model-bf16", "--b-url", b.url, "--b-model", "model-int4"),
        *("--tasks", str(tasks)),
        *more,
    ]


def test_compare_json_and_files(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path)
    out = tmp_path / "reports" / "run.html"
    with right_stub() as a, wrong_stub() as b:
        proc = _sizing(
            tmp_path, *_compare_args(a, b, tasks, "--out", str(out), "--json", "--blind", "--seed", "3")
        )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["a"]["score"] == 1.0 and summary["b"]["score"] == 0.0
    assert summary["a"]["errors"] == 0 and summary["a"]["latency_ms_p50"] > 0
    assert [t["prompt"] for t in summary["tasks"]] == [t["prompt"] for t in TASKS]
    route = summary["tasks"][1]
    assert (route["a"], route["b"], route["a_score"], route["b_score"]) == (
        "Billing",
        "I do not know.",
        1.0,
        0.0,
    )
    files = summary["files"]
    assert files["html"] == str(out)
    html = out.read_text(encoding="utf-8")
    assert "Billing" in html and "I do not know." in html
    assert (
        (tmp_path / "reports" / "run.md").read_text(encoding="utf-8").startswith("# Compare: A = model-bf16")
    )
    results = (tmp_path / "reports" / "run.results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(results) == 1 + len(TASKS)
    key = json.loads((tmp_path / "reports" / "run.blind-key.json").read_text(encoding="utf-8"))
    assert set(key["tasks"]) == {t["id"] for t in TASKS if "id" in t} | {
        k for k in key["tasks"] if k.startswith("task-")
    }
    assert "model-int4" not in (tmp_path / "reports" / "run.blind.html").read_text(encoding="utf-8")
    assert "Traceback" not in proc.stderr


def test_compare_markdown_on_stdout_with_a_failing_endpoint(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path)
    with right_stub() as a, failing_stub() as b:
        proc = _sizing(tmp_path, *_compare_args(a, b, tasks))
    assert proc.returncode == 0, proc.stderr
    assert "| failed calls | 0 | 5 |" in proc.stdout
    assert "HTTP 500: the GPU caught fire" in proc.stdout
    assert (tmp_path / "compare-report.html").exists()  # default location, in the working folder
    assert "Files: html compare-report.html" in proc.stdout


def test_compare_bad_task_line_is_one_clear_error(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"prompt": "fine"}\n{"prompt": "x", "scorer": "exact"}\n', encoding="utf-8")
    with right_stub() as a, right_stub() as b:
        proc = _sizing(tmp_path, *_compare_args(a, b, tasks))
        assert a.requests == []
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"sizing compare: {tasks}:2: scorer 'exact' needs 'expected'"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--judge-url", "http://127.0.0.1:9/v1"), "--judge-url and --judge-model go together"),
        (("--concurrency", "0"), "concurrency must be at least 1"),
        (("--api-key-env", "NO_SUCH_VARIABLE_HERE"), "environment variable NO_SUCH_VARIABLE_HERE"),
    ],
)
def test_compare_bad_options(tmp_path: Path, extra: tuple[str, ...], message: str) -> None:
    tasks = write_tasks(tmp_path)
    with right_stub() as a, right_stub() as b:
        proc = _sizing(tmp_path, *_compare_args(a, b, tasks, *extra))
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_compare_sends_the_key_from_the_named_variable(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path, TASKS[:1])
    with right_stub() as a, right_stub() as b:
        proc = _sizing(
            tmp_path,
            *_compare_args(a, b, tasks, "--api-key-env", "EVAL_KEY", "--json"),
            EVAL_KEY="sk-test-123",
        )
    assert proc.returncode == 0, proc.stderr
    assert "sk-test-123" not in proc.stdout  # never echoed


@pytest.mark.slow
def test_compare_refuses_to_clobber_results_and_resumes_after_an_interrupt(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path)
    results = tmp_path / "compare-report.results.jsonl"
    # B answers two tasks, then holds its third answer until the run has been interrupted: the
    # interrupt lands with tasks left however loaded the machine (with a fixed 0.4 s per answer,
    # a starved polling loop on a busy CI machine once saw the run finish first).
    interrupted = threading.Event()
    answered = itertools.count()

    def b_script(request: dict[str, Any]) -> Reply:
        if next(answered) >= 2:
            interrupted.wait(timeout=60)
        return right(request)

    with right_stub() as a, StubOpenAI(b_script) as b:
        args = _compare_args(a, b, tasks, "--concurrency", "1")
        process = subprocess.Popen(
            [sys.executable, "-m", "assistant", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(tmp_path),
            cwd=tmp_path,
            preexec_fn=die_with_parent,  # and SIGINT at its default, as a terminal user has it
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if results.exists() and len(results.read_text(encoding="utf-8").splitlines()) >= 3:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        time.sleep(1.0)  # the interrupt is handled; then the held answer frees the task in flight
        interrupted.set()
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert "rerun with --resume to finish" in stderr and "Traceback" not in stderr
        assert f"of {len(TASKS)} tasks done" in stderr
        finished = len(results.read_text(encoding="utf-8").splitlines()) - 1
        assert 2 <= finished < len(TASKS)
        assert "Partial report" in (tmp_path / "compare-report.html").read_text(encoding="utf-8")

        again = _sizing(tmp_path, *args)
        assert again.returncode == 2 and "--resume" in again.stderr

        sent_before = len(b.requests)
        resumed = _sizing(tmp_path, *args, "--resume", "--json")
        assert resumed.returncode == 0, resumed.stderr
        assert len(b.requests) - sent_before == len(TASKS) - finished
    summary = json.loads(resumed.stdout)
    assert summary["complete"] is True and summary["a"]["score"] == summary["b"]["score"] == 1.0
    assert len(results.read_text(encoding="utf-8").splitlines()) == 1 + len(TASKS)


def test_resume_runs_the_failed_tasks_again_and_reports_each_task_once(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path)
    results = tmp_path / "compare-report.results.jsonl"
    b_down = True

    def b_script(request: dict[str, Any]) -> Reply:
        return error(503, "loading the model") if b_down else right(request)

    with right_stub() as a, StubOpenAI(b_script) as b:
        args = _compare_args(a, b, tasks)
        failed = _sizing(tmp_path, *args)
        assert failed.returncode == 0, failed.stderr
        assert "| failed calls | 0 | 5 |" in failed.stdout
        assert "Failed calls on 5 tasks, e.g." in failed.stdout
        a_sent = len(a.requests)

        b_down = False
        resumed = _sizing(tmp_path, *args, "--resume", "--json")
        assert resumed.returncode == 0, resumed.stderr
        assert len(a.requests) == a_sent  # A's answers were fine: kept, not asked again
        assert len(b.requests) == 2 * len(TASKS)
    summary = json.loads(resumed.stdout)
    assert summary["complete"] is True and len(summary["tasks"]) == len(TASKS)
    assert summary["b"]["errors"] == 0 and summary["b"]["score"] == 1.0
    assert all(task["b_error"] is None for task in summary["tasks"])
    html = (tmp_path / "compare-report.html").read_text(encoding="utf-8")
    assert "loading the model" not in html and html.count("They work hard.") == 2  # one row, A and B
    # append-only: the failed attempts stay on disk, followed by the attempts that replaced them
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    attempts = sorted((r["key"], r["attempt"], r["b"]["error"] is None) for r in records[1:])
    assert len(records) == 1 + 2 * len(TASKS)
    assert [(attempt, ok) for _, attempt, ok in attempts] == [(1, False), (2, True)] * len(TASKS)


def test_loadtest_json(tmp_path: Path) -> None:
    reply = slow(
        0.05, text("one two three four five six", usage={"prompt_tokens": 32, "completion_tokens": 6})
    )
    with StubOpenAI([reply]) as stub:
        proc = _sizing(
            tmp_path,
            *("loadtest", "--url", stub.url, "--model", "model-int4", "--users", "3", "--requests", "9"),
            *(
                "--prompt-tokens",
                "32",
                "--max-tokens",
                "6",
                "--target-p95-ms",
                "30000",
                "--ignore-eos",
                "--json",
            ),
        )
        assert {r["ignore_eos"] for r in stub.requests} == {True}
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    assert {"requests", "errors", "ttft_ms_p50", "ttft_ms_p95", "latency_ms_p95", "tokens_per_s"} <= set(
        figures
    )
    assert (figures["requests"], figures["errors"], figures["users"]) == (9, 0, 3)
    assert figures["ttft_ms_p50"] >= 50 and figures["output_tokens"] == 54
    assert figures["verdict"] == "pass"


def test_loadtest_missing_the_target_exits_3_with_the_figures(tmp_path: Path) -> None:
    with slow_stub(0.3) as stub:
        proc = _sizing(
            tmp_path,
            *("loadtest", "--url", stub.url, "--model", "m", "--users", "2", "--requests", "2"),
            *("--target-p95-ms", "100"),
        )
    assert proc.returncode == 3, proc.stderr
    assert "end-to-end latency:" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("Verdict: FAIL — end-to-end p95")


def test_loadtest_bad_option_is_one_line(tmp_path: Path) -> None:
    proc = _sizing(
        tmp_path, "loadtest", "--url", "localhost:8000", "--model", "m", "--users", "1", "--requests", "1"
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == "sizing loadtest: endpoint URL must start with http:// or https://, got 'localhost:8000'"
    )
