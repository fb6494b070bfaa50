"""The Compare tab cannot be held by one endpoint: each run has its own deadline, calls are
bounded in wall-clock time (not per read), runs of different visitors go side by side, and the
regex scorer gives up on a pattern that backtracks without end. All servers are on loopback.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from assistant.evals.client import Endpoint, chat, open_client
from assistant.evals.compare import ComparePlan, iter_compare
from assistant.evals.scorers import score_regex
from assistant.evals.tasks import parse_tasks
from assistant.settings import Settings
from assistant.ui.compare_tab import UI_DEADLINE_S, UI_MAX_RUNS, CompareForm, plan_from_form, run_compare_form
from tests.openai_stub import StubOpenAI, slow, text

pytestmark = pytest.mark.timeout(60)

TRICKLE_SECONDS = 40.0


class Trickle:
    """An endpoint that answers 200 and then sends one byte every 0.2 s, for TRICKLE_SECONDS."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.finished = threading.Event()  # set when a trickled body has been sent to its end
        trickle = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                ends = time.monotonic() + TRICKLE_SECONDS
                try:
                    while time.monotonic() < ends and not trickle.stop.wait(0.2):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    else:
                        trickle.finished.set()
                except OSError:
                    return  # the client hung up, as it should

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Trickle:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def trickle() -> Iterator[Trickle]:
    with Trickle() as server:
        yield server


def test_a_trickling_endpoint_is_cut_at_the_call_timeout(trickle: Trickle) -> None:
    endpoint = Endpoint(url=trickle.url, model="m", timeout_s=1.5)
    answer = chat(open_client(endpoint), endpoint, [{"role": "user", "content": "hi"}], max_tokens=8)
    assert answer.error is not None and "timed out" in answer.error
    assert not trickle.finished.is_set()  # given up while the endpoint was still trickling


def test_a_run_ends_at_its_deadline_with_the_tasks_that_finished(trickle: Trickle) -> None:
    tasks = parse_tasks('{"prompt": "a", "expected": "x"}\n{"prompt": "b", "expected": "x"}', "tasks")
    stalled = Endpoint(url=trickle.url, model="m", timeout_s=TRICKLE_SECONDS * 2)
    plan = ComparePlan(a=stalled, b=stalled, tasks=tasks, concurrency=2, deadline_s=1.0)
    assert list(iter_compare(plan)) == []  # nothing finished by the deadline, and it returned
    assert not trickle.finished.is_set()


def test_the_tab_reports_a_run_cut_by_its_deadline(trickle: Trickle, monkeypatch: pytest.MonkeyPatch) -> None:
    import assistant.ui.compare_tab as tab

    monkeypatch.setattr(tab, "UI_DEADLINE_S", 1.0)
    settings = Settings(llm_timeout=TRICKLE_SECONDS * 2)
    with StubOpenAI([text("x")]) as fast:
        form = CompareForm(
            a_url=fast.url,
            a_model="m",
            b_url=trickle.url,
            b_model="m",
            task_text='{"prompt": "a", "expected": "x"}',
        )
        for lang, words in (("en", "limit of 1 s"), ("es", "límite de 1 s")):
            summary, rows = list(run_compare_form(form, settings, lang))[-1]
            assert words in summary and rows == []
    assert not trickle.finished.is_set()


def test_visitors_run_side_by_side_while_one_endpoint_stalls(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, llm_timeout=30)
    task = '{"prompt": "a", "expected": "x"}'
    with StubOpenAI([slow(6, text("late"))]) as stalled, StubOpenAI([text("x")]) as fast:
        stalled_form = CompareForm(stalled.url, "m", stalled.url, "m", task_text=task)
        fast_form = CompareForm(fast.url, "m", fast.url, "m", task_text=task)
        stalled_run = threading.Thread(
            target=lambda: list(run_compare_form(stalled_form, settings)), daemon=True
        )
        stalled_run.start()
        while not stalled.requests:  # bounded by the test timeout: the stalled run has begun
            time.sleep(0.05)
        _, rows = list(run_compare_form(fast_form, settings))[-1]
        assert rows[0][4] == "1.00" and rows[0][6] == "1.00"  # finished while the other still waits
        assert stalled_run.is_alive()
    assert UI_MAX_RUNS > 1 and plan_from_form(fast_form, settings).deadline_s == UI_DEADLINE_S


def test_the_compare_button_runs_several_visitors_at_once(tmp_path: Path) -> None:
    from tests.ui_apps import build_app
    from tests.ui_fakes import FakeAssistant

    demo = build_app(FakeAssistant(), Settings(data_dir=tmp_path, compare_tab=True))
    (compare,) = [fn for fn in demo.fns.values() if fn.concurrency_id == "compare"]
    assert compare.concurrency_limit == UI_MAX_RUNS


@pytest.mark.parametrize(
    ("pattern", "answer"),
    [("(a|aa)+$", "a" * 40 + "b"), ("(a+)+$", "a" * 26 + "b")],
    ids=["alternation", "nested-plus"],
)
def test_a_backtracking_regex_gives_up_with_a_zero(pattern: str, answer: str) -> None:
    assert score_regex(answer, pattern, timeout_s=0.5) == 0.0


def test_the_regex_scorer_still_matches() -> None:
    assert score_regex("Use 2× H100 80GB", r"\b2\s*×\s*H100") == 1.0
    assert score_regex("Use one L4", r"\bH100\b") == 0.0


@pytest.mark.parametrize(("lang", "words"), [("en", "still running"), ("es", "Aún se está ejecutando")])
def test_one_address_runs_one_comparison_at_a_time(lang: str, words: str) -> None:
    from assistant.evals.errors import EvalOptionError
    from assistant.ui.compare_tab import RunsPerClient

    runs = RunsPerClient()
    with runs.run("198.51.100.1", lang):  # type: ignore[arg-type]
        with pytest.raises(EvalOptionError, match=words), runs.run("198.51.100.1", lang):  # type: ignore[arg-type]
            pass
        with runs.run("198.51.100.2", lang):  # type: ignore[arg-type]
            pass  # another visitor is not held back
    with runs.run("198.51.100.1", lang):  # type: ignore[arg-type]
        pass  # free again once the first run ended
