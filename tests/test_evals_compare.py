"""`sizing compare` engine against stub endpoints: right, wrong, failing, slow, broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.evals.client import Endpoint
from assistant.evals.compare import ComparePlan, ResultsLog, TaskResult, iter_compare, summarize
from assistant.evals.errors import EvalOptionError, ResultsFileError
from assistant.evals.tasks import Task, load_tasks, parse_tasks
from tests.evals_support import (
    RIGHT_ANSWERS,
    WRONG_ANSWER,
    failing_stub,
    last_user_message,
    right,
    right_stub,
    slow_stub,
    write_tasks,
    wrong_stub,
)
from tests.openai_stub import Reply, StubOpenAI, drop, error, malformed, slow


@pytest.fixture()
def tasks(tmp_path: Path) -> list[Task]:
    return load_tasks(write_tasks(tmp_path))


def _plan(a: StubOpenAI, b: StubOpenAI, tasks: list[Task], **kwargs: object) -> ComparePlan:
    timeout = float(kwargs.pop("timeout_s", 10.0))  # type: ignore[arg-type]
    return ComparePlan(
        a=Endpoint(a.url, "model-bf16", timeout_s=timeout),
        b=Endpoint(b.url, "model-int4", timeout_s=timeout),
        tasks=tasks,
        **kwargs,  # type: ignore[arg-type]
    )


def test_right_against_wrong(tasks: list[Task]) -> None:
    with right_stub() as a, wrong_stub() as b:
        plan = _plan(a, b, tasks, concurrency=2)
        report = summarize(plan, iter_compare(plan))
    assert report.complete and len(report.tasks) == 5
    assert [t.key for t in report.tasks] == ["card", "route", "weights", "extract", "open"]  # file order
    assert report.a.score == 1.0 and report.b.score == 0.0
    assert report.a.scored_tasks == report.b.scored_tasks == 4  # the open task is for human review
    assert report.a.by_scorer == {"contains": 1.0, "exact": 1.0, "json": 1.0, "regex": 1.0}
    assert report.b.by_category == {"cls": 0.0, "extract": 0.0, "qa": 0.0}
    open_task = report.tasks[-1]
    assert (open_task.a_score, open_task.b_score) == (None, None)
    assert open_task.a.output == "They work hard." and open_task.b.output == WRONG_ANSWER
    assert report.a.errors == report.b.errors == 0
    assert report.a.latency_ms_p50 is not None and report.a.latency_ms_p95 is not None
    assert report.a.completion_tokens > 0
    # every task went to both endpoints with its own model name, deterministically
    assert len(a.requests) == len(b.requests) == 5
    assert {r["model"] for r in a.requests} == {"model-bf16"}
    assert {r["temperature"] for r in b.requests} == {0.0}


def test_json_summary_has_the_documented_shape(tasks: list[Task]) -> None:
    with right_stub() as a, wrong_stub() as b:
        plan = _plan(a, b, tasks)
        summary = summarize(plan, iter_compare(plan)).json_summary()
    for side in ("a", "b"):
        assert {"score", "latency_ms_p50", "latency_ms_p95", "errors"} <= set(summary[side])
    first = summary["tasks"][0]
    assert {"prompt", "a", "b", "a_score", "b_score"} <= set(first)
    assert first["prompt"] == "Which card class serves a 70B at 4 bits?"
    assert first["a"] == RIGHT_ANSWERS[first["prompt"]]
    assert (first["a_score"], first["b_score"]) == (1.0, 0.0)
    json.dumps(summary)  # serialisable as is


def test_failing_endpoint_counts_as_failed_tasks_and_the_run_goes_on(tasks: list[Task]) -> None:
    with right_stub() as a, failing_stub() as b:
        plan = _plan(a, b, tasks)
        report = summarize(plan, iter_compare(plan))
    assert report.complete
    assert report.a.score == 1.0 and report.a.errors == 0
    assert report.b.errors == 5 and report.b.score == 0.0
    assert report.b.latency_ms_p50 is None  # latency is measured over calls that worked
    assert all(t.b.error == "HTTP 500: the GPU caught fire" for t in report.tasks)
    assert report.tasks[-1].b_score is None  # unscored stays unscored, but the failure is recorded


@pytest.mark.parametrize(
    ("fault", "message"),
    [(drop(), "connection failed"), (malformed(), "malformed response")],
)
def test_dropped_and_malformed_responses_are_failures(tasks: list[Task], fault: object, message: str) -> None:
    with right_stub() as a, StubOpenAI([fault]) as b:  # type: ignore[list-item]
        plan = _plan(a, b, tasks[:2])
        report = summarize(plan, iter_compare(plan))
    assert report.b.errors == 2
    assert all(t.b.error and message in t.b.error for t in report.tasks)


def test_slow_endpoint_latency_is_measured(tasks: list[Task]) -> None:
    with right_stub() as a, slow_stub(0.3) as b:
        plan = _plan(a, b, tasks[:3], concurrency=3)
        report = summarize(plan, iter_compare(plan))
    assert report.b.score == 1.0
    assert report.b.latency_ms_p50 is not None and report.b.latency_ms_p50 >= 300
    assert all(t.b.latency_ms is not None and t.b.latency_ms >= 300 for t in report.tasks)


def test_endpoint_slower_than_the_timeout_fails_its_tasks(tasks: list[Task]) -> None:
    with right_stub() as a, slow_stub(3.0) as b:
        plan = _plan(a, b, tasks[:2], timeout_s=0.3)
        report = summarize(plan, iter_compare(plan))
    assert report.b.errors == 2
    assert report.tasks[0].b.error == "timed out after 0.3 s"
    assert report.a.errors == 0


def test_per_task_max_tokens_overrides_the_default() -> None:
    tasks = parse_tasks('{"prompt": "short", "max_tokens": 7}\n{"prompt": "default"}')
    with right_stub() as a, right_stub() as b:
        plan = _plan(a, b, tasks, max_tokens=99, concurrency=1)
        list(iter_compare(plan))
    assert [r["max_tokens"] for r in a.requests] == [7, 99]


def test_judge_tasks_need_a_judge_before_anything_is_sent() -> None:
    tasks = parse_tasks('{"id": "j", "prompt": "explain", "scorer": "judge"}')
    with right_stub() as a, right_stub() as b:
        plan = _plan(a, b, tasks)
        with pytest.raises(EvalOptionError, match=r"^1 task uses the judge scorer \(j\)"):
            list(iter_compare(plan))
    assert a.requests == [] and b.requests == []


def test_judge_scores_a_compare_run() -> None:
    tasks = parse_tasks('{"prompt": "Which card class serves a 70B at 4 bits?", "scorer": "judge"}')

    def judge(request: dict[str, object]) -> object:
        content = str(request["messages"][-1]["content"])  # type: ignore[index]
        first = content.split("## Answer 1\n", 1)[1].split("\n\n## Answer 2", 1)[0]
        marks = (10, 0) if "48 GB" in first else (0, 10)
        return text_reply(marks)

    with right_stub() as a, wrong_stub() as b, StubOpenAI(judge) as judge_stub:  # type: ignore[arg-type]
        plan = _plan(a, b, tasks)
        plan = ComparePlan(a=plan.a, b=plan.b, tasks=tasks, judge=Endpoint(judge_stub.url, "judge"))
        report = summarize(plan, iter_compare(plan))
    assert (report.tasks[0].a_score, report.tasks[0].b_score) == (1.0, 0.0)
    assert report.a.by_scorer == {"judge": 1.0}
    assert len(judge_stub.requests) == 2


def text_reply(marks: tuple[int, int]) -> object:
    from tests.openai_stub import text

    return text(json.dumps({"answer_1": marks[0], "answer_2": marks[1]}))


def test_bad_plan_options() -> None:
    tasks = parse_tasks('{"prompt": "x"}')
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m")
    with pytest.raises(EvalOptionError, match="concurrency"):
        ComparePlan(a=endpoint, b=endpoint, tasks=tasks, concurrency=0).check()
    with pytest.raises(EvalOptionError, match="http:// or https://"):
        Endpoint("127.0.0.1:8000/v1", "m")
    with pytest.raises(EvalOptionError, match="no model name"):
        Endpoint("http://127.0.0.1:8000/v1", " ")


# ---------------------------------------------------------------------------- partial results


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _run_one_task_and_stop(plan: ComparePlan, results_path: Path) -> None:
    """What an interrupted run leaves: the results file with the first task's result."""
    with ResultsLog.open(results_path, plan) as log:
        run = iter_compare(plan)
        log.append(next(run))
        run.close()


def test_results_are_written_as_each_task_finishes(tasks: list[Task], tmp_path: Path) -> None:
    results_path = tmp_path / "run.results.jsonl"
    with right_stub() as a, wrong_stub() as b:
        plan = _plan(a, b, tasks, concurrency=1)
        with ResultsLog.open(results_path, plan) as log:
            run = iter_compare(plan)
            for seen, result in enumerate(run, start=1):
                log.append(result)
                # on disk before the next task is even waited for
                assert len(_records(results_path)) == 1 + seen
                if seen == 2:
                    run.close()  # what an interrupted run does
                    break
        assert len(a.requests) <= 3  # lazily submitted: at most one task in flight was lost
    records = _records(results_path)
    assert records[0]["kind"] == "run"
    assert records[0]["a"] == {"url": a.url, "model": "model-bf16"}
    assert [r["key"] for r in records[1:]] == ["card", "route"]


def test_resume_runs_only_the_missing_tasks(tasks: list[Task], tmp_path: Path) -> None:
    results_path = tmp_path / "run.results.jsonl"
    with right_stub() as a, wrong_stub() as b:
        plan = _plan(a, b, tasks, concurrency=1)
        _run_one_task_and_stop(plan, results_path)
        sent_before = len(a.requests)
        with ResultsLog.open(results_path, plan, resume=True) as log:
            assert [r.key for r in log.previous] == ["card"]
            fresh = list(iter_compare(plan, previous=log.previous))
            for result in fresh:
                log.append(result)
        assert len(a.requests) - sent_before == 4
        report = summarize(plan, [*log.previous, *fresh])
    assert report.complete and report.a.score == 1.0
    assert [r.get("key") for r in _records(results_path)][1:] == [
        "card",
        "route",
        "weights",
        "extract",
        "open",
    ]


def test_existing_results_are_never_overwritten_silently(tasks: list[Task], tmp_path: Path) -> None:
    results_path = tmp_path / "run.results.jsonl"
    results_path.write_text('{"kind": "run"}\n', encoding="utf-8")
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m")
    plan = ComparePlan(a=endpoint, b=endpoint, tasks=tasks)
    with pytest.raises(ResultsFileError, match="--resume to continue it or --overwrite"):
        ResultsLog.open(results_path, plan)
    with ResultsLog.open(results_path, plan, overwrite=True):
        pass
    assert _records(results_path)[0]["a"] == {"url": endpoint.url, "model": "m"}


def test_resume_refuses_results_of_other_endpoints(tasks: list[Task], tmp_path: Path) -> None:
    results_path = tmp_path / "run.results.jsonl"
    first = ComparePlan(
        a=Endpoint("http://127.0.0.1:9/v1", "m"), b=Endpoint("http://127.0.0.1:9/v1", "m"), tasks=tasks
    )
    ResultsLog.open(results_path, first).close()
    other = ComparePlan(a=Endpoint("http://127.0.0.1:9/v1", "other"), b=first.b, tasks=tasks)
    with pytest.raises(ResultsFileError, match="was written for a ="):
        ResultsLog.open(results_path, other, resume=True)


def test_resume_tolerates_a_half_written_last_line(tasks: list[Task], tmp_path: Path) -> None:
    results_path = tmp_path / "run.results.jsonl"
    with right_stub() as a, wrong_stub() as b:
        plan = _plan(a, b, tasks, concurrency=1)
        _run_one_task_and_stop(plan, results_path)
        with results_path.open("a", encoding="utf-8") as stream:
            stream.write('{"kind": "task", "key": "rou')  # killed mid-write
        with ResultsLog.open(results_path, plan, resume=True) as log:  # a resumed run appends after it
            assert [r.key for r in log.previous] == ["card"]
            run = iter_compare(plan, previous=log.previous)
            log.append(next(run))
            run.close()
    # the half line was cut off, so the file is still whole lines and still resumes
    assert [record.get("key") for record in _records(results_path)] == [None, "card", "route"]
    with ResultsLog.open(results_path, plan, resume=True) as log:
        assert [r.key for r in log.previous] == ["card", "route"]
    with results_path.open("a", encoding="utf-8") as stream:
        stream.write("not json either\n{}\n")
    with pytest.raises(ResultsFileError, match="not valid JSON"):
        ResultsLog.open(results_path, plan, resume=True)


def test_resume_reruns_a_task_whose_prompt_changed(tasks: list[Task], tmp_path: Path) -> None:
    results_path = tmp_path / "run.results.jsonl"
    with right_stub() as a, wrong_stub() as b:
        plan = _plan(a, b, tasks[:1])
        with ResultsLog.open(results_path, plan) as log:
            for result in iter_compare(plan):
                log.append(result)
        edited = parse_tasks(json.dumps({"id": "card", "prompt": "A new question?", "expected": "x"}))
        plan = _plan(a, b, edited)
        with ResultsLog.open(results_path, plan, resume=True) as log:
            assert log.previous == []


class Recovering:
    """A stub script: fails the prompts in `failing` (HTTP 503, or a timeout with `stall`) until
    `recover()`, then answers them right."""

    def __init__(self, failing: set[str], stall: float | None = None) -> None:
        self.failing = failing
        self.stall = stall
        self.down = True

    def recover(self) -> None:
        self.down = False

    def __call__(self, request: dict[str, object]) -> Reply:
        if self.down and last_user_message(request) in self.failing:  # type: ignore[arg-type]
            return slow(self.stall, right(request)) if self.stall else error(503, "warming up")  # type: ignore[arg-type]
        return right(request)  # type: ignore[arg-type]


def test_resume_runs_failed_tasks_again_and_keeps_only_their_new_result(
    tasks: list[Task], tmp_path: Path
) -> None:
    results_path = tmp_path / "run.results.jsonl"
    route, weights = tasks[1].shown_prompt, tasks[2].shown_prompt
    b_script = Recovering({route, weights})
    with right_stub() as a, StubOpenAI(b_script) as b:  # type: ignore[arg-type]
        plan = _plan(a, b, tasks, concurrency=2)
        with ResultsLog.open(results_path, plan) as log:
            for result in iter_compare(plan):
                log.append(result)
        first = summarize(plan, _task_results(results_path))
        assert first.b.errors == 2 and first.b.score == 0.5
        a_sent, b_sent = len(a.requests), len(b.requests)

        b_script.recover()
        with ResultsLog.open(results_path, plan, resume=True) as log:
            assert len(log.previous) == 5 and log.finished == 3
            assert {r.key for r in log.previous if not r.succeeded} == {"route", "weights"}
            retried = list(iter_compare(plan, previous=log.previous))
            for result in retried:
                log.append(result)
        # only the failed calls went out again: B on the two tasks, nothing to A
        assert len(a.requests) == a_sent
        assert sorted(last_user_message(r) for r in b.requests[b_sent:]) == sorted([route, weights])
        assert {r.key: r.attempt for r in retried} == {"route": 2, "weights": 2}
        assert all(r.succeeded for r in retried)

        # the append-only file holds both attempts; reading it back keeps the last one of each task
        lines = _task_results(results_path)
        assert sorted(r.key for r in lines[:5]) == sorted(t.key for t in tasks)
        assert sorted((r.key, r.attempt) for r in lines[5:]) == [("route", 2), ("weights", 2)]
        with ResultsLog.open(results_path, plan, resume=True) as log:
            assert [r.key for r in log.previous] == [t.key for t in tasks]  # one each, file order
            assert log.finished == 5
            assert list(iter_compare(plan, previous=log.previous)) == []  # nothing left to run
        report = summarize(plan, lines)  # every attempt given: each task still counts once
    assert report.complete and len(report.tasks) == len(tasks)
    assert report.b.errors == 0 and report.b.score == 1.0 and report.b.scored_tasks == 4
    assert [t.key for t in report.tasks] == [t.key for t in tasks]


def test_resume_retries_a_timeout_on_the_failed_endpoint_only(tasks: list[Task], tmp_path: Path) -> None:
    results_path = tmp_path / "run.results.jsonl"
    card = tasks[0].shown_prompt
    a_script = Recovering({card}, stall=6.0)
    with StubOpenAI(a_script) as a, wrong_stub() as b:  # type: ignore[arg-type]
        plan = _plan(a, b, tasks[:2], timeout_s=1.5)  # B answers at once; generous for a loaded CI machine
        with ResultsLog.open(results_path, plan) as log:
            for result in iter_compare(plan):
                log.append(result)
        b_sent = len(b.requests)
        a_script.recover()
        with ResultsLog.open(results_path, plan, resume=True) as log:
            (retried,) = list(iter_compare(plan, previous=log.previous))
            log.append(retried)
        assert len(b.requests) == b_sent  # B's answer (wrong, but a result) is kept
    assert retried.key == "card" and retried.a.ok and retried.a_score == 1.0
    assert retried.b.output == WRONG_ANSWER and retried.b_score == 0.0


def test_resume_asks_the_judge_again_when_it_gave_no_marks(tmp_path: Path) -> None:
    tasks = parse_tasks(
        '{"id": "j", "prompt": "Which card class serves a 70B at 4 bits?", "scorer": "judge"}'
    )
    judge_down = True

    def judge(request: dict[str, object]) -> object:
        if judge_down:
            return error(500, "judge down")
        first = str(request["messages"][-1]["content"]).split("## Answer 1\n", 1)[1]  # type: ignore[index]
        return text_reply((10, 0) if first.startswith("The 48 GB") else (0, 10))

    results_path = tmp_path / "run.results.jsonl"
    with right_stub() as a, wrong_stub() as b, StubOpenAI(judge) as judge_stub:  # type: ignore[arg-type]
        plan = _plan(a, b, tasks)
        plan = ComparePlan(a=plan.a, b=plan.b, tasks=tasks, judge=Endpoint(judge_stub.url, "judge"))
        with ResultsLog.open(results_path, plan) as log:
            (first,) = list(iter_compare(plan))
            log.append(first)
        assert first.judge_failed and not first.succeeded and first.judge_note
        judge_down = False
        with ResultsLog.open(results_path, plan, resume=True) as log:
            (again,) = list(iter_compare(plan, previous=log.previous))
        assert len(a.requests) == len(b.requests) == 1  # both answers kept; only the judge asked again
    assert len(judge_stub.requests) == 4  # two rounds failed, two rounds marked
    assert again.succeeded and (again.a_score, again.b_score) == (1.0, 0.0) and again.attempt == 2


def _task_results(path: Path) -> list[TaskResult]:
    return [
        TaskResult.model_validate({k: v for k, v in record.items() if k != "kind"})
        for record in _records(path)
        if record["kind"] == "task"
    ]
