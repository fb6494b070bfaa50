"""Run a task file against two endpoints, score both, and summarise.

`iter_compare` yields each task's result as soon as both endpoints (and the judge) are
done, so that callers can save it at once; `summarize` turns the results into the
report. `ResultsLog` is the JSONL file that keeps every finished task of a run, so an
interrupted run loses nothing and `--resume` picks up where it stopped: it keeps the
answers that worked and runs again what failed (an endpoint error, a timeout, a judge that
gave no marks). The file is append-only, so a task run again appears on a later line too;
the last line of a task is its result, and every report counts each task once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, JsonValue, ValidationError

from assistant.evals.client import Answer, Endpoint, chat, open_client
from assistant.evals.errors import EvalOptionError, ResultsFileError
from assistant.evals.scorers import judge_pair, score_answer
from assistant.evals.stats import counted, mean, percentile, rounded
from assistant.evals.tasks import Task

DEFAULT_MAX_TOKENS = 512
DEFAULT_CONCURRENCY = 4
SIDES: tuple[Literal["a", "b"], ...] = ("a", "b")


@dataclass(frozen=True)
class ComparePlan:
    """What to run: two endpoints, an optional judge, the tasks and how to call."""

    a: Endpoint
    b: Endpoint
    tasks: list[Task]
    judge: Endpoint | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    concurrency: int = DEFAULT_CONCURRENCY
    deadline_s: float | None = None  # wall-clock seconds for the whole run; unfinished tasks are left out

    def check(self) -> None:
        """Problems that would only surface mid-run, raised before any request is sent."""
        if self.concurrency < 1:
            raise EvalOptionError("concurrency must be at least 1")
        if self.max_tokens < 1:
            raise EvalOptionError("max tokens must be at least 1")
        if not 0 <= self.temperature <= 2:
            raise EvalOptionError("temperature must be within 0..2")
        judged = [task.key for task in self.tasks if task.effective_scorer == "judge"]
        if judged and self.judge is None:
            shown = ", ".join(judged[:5]) + (" …" if len(judged) > 5 else "")
            uses = "uses" if len(judged) == 1 else "use"
            raise EvalOptionError(
                f"{counted(len(judged), 'task')} {uses} the judge scorer ({shown}) but no judge was given "
                "(--judge-url and --judge-model)"
            )


class TaskResult(BaseModel):
    """One task, both answers and both scores."""

    index: int  # position in the task file, from 0
    key: str
    category: str | None = None
    prompt: str
    scorer: str | None
    expected: JsonValue = None
    a: Answer
    b: Answer
    a_score: float | None
    b_score: float | None
    judge_note: str | None = None
    attempt: int = 1  # 2 and more: run again by --resume after a failure

    def answer(self, side: Literal["a", "b"]) -> Answer:
        return self.a if side == "a" else self.b

    @property
    def failed_sides(self) -> tuple[Literal["a", "b"], ...]:
        """The endpoints whose call failed (error, timeout, dropped connection, malformed body)."""
        return tuple(side for side in SIDES if not self.answer(side).ok)

    @property
    def judge_failed(self) -> bool:
        """A judge task whose judge gave no usable marks in either round."""
        return self.scorer == "judge" and self.a_score is None and self.b_score is None

    @property
    def succeeded(self) -> bool:
        """Nothing to run again: both calls worked and, for a judge task, the judge marked them."""
        return not self.failed_sides and not self.judge_failed


class SideSummary(BaseModel):
    """The totals of one endpoint."""

    url: str
    model: str
    score: float | None  # mean over scored tasks; a failed call scores 0
    scored_tasks: int
    errors: int
    latency_ms_p50: float | None  # over calls that succeeded
    latency_ms_p95: float | None
    prompt_tokens: int
    completion_tokens: int
    by_scorer: dict[str, float]
    by_category: dict[str, float]


class CompareReport(BaseModel):
    a: SideSummary
    b: SideSummary
    judge: str | None
    tasks: list[TaskResult]
    total_tasks: int  # in the task file; more than len(tasks) when the run was interrupted
    finished_at: str

    @property
    def complete(self) -> bool:
        return len(self.tasks) == self.total_tasks

    def json_summary(self) -> dict[str, Any]:
        """The `sizing compare --json` object."""

        def side(summary: SideSummary) -> dict[str, Any]:
            return {
                "model": summary.model,
                "url": summary.url,
                "score": summary.score,
                "latency_ms_p50": summary.latency_ms_p50,
                "latency_ms_p95": summary.latency_ms_p95,
                "errors": summary.errors,
                "scored_tasks": summary.scored_tasks,
                "completion_tokens": summary.completion_tokens,
                "by_scorer": summary.by_scorer,
                "by_category": summary.by_category,
            }

        return {
            "a": side(self.a),
            "b": side(self.b),
            "judge": self.judge,
            "total_tasks": self.total_tasks,
            "complete": self.complete,
            "tasks": [
                {
                    "id": task.key,
                    "category": task.category,
                    "scorer": task.scorer,
                    "prompt": task.prompt,
                    "a": task.a.output,
                    "b": task.b.output,
                    "a_score": task.a_score,
                    "b_score": task.b_score,
                    "a_error": task.a.error,
                    "b_error": task.b.error,
                    "a_latency_ms": rounded(task.a.latency_ms),
                    "b_latency_ms": rounded(task.b.latency_ms),
                }
                for task in self.tasks
            ],
        }


# ---------------------------------------------------------------------------- running


def run_task(
    plan: ComparePlan,
    clients: dict[str, Any],
    index: int,
    task: Task,
    earlier: TaskResult | None = None,
    deadline: float | None = None,
) -> TaskResult:
    """Both endpoints on one task, then the scores. Endpoint faults become failed answers.

    With the `earlier` result of a task that failed, the answers that worked are kept and only
    the failed endpoints are called again; the scores (and the judge) are then redone."""
    max_tokens = task.max_tokens or plan.max_tokens
    messages = task.chat_messages()
    answers: dict[str, Answer] = {}
    for side in SIDES:
        kept = earlier.answer(side) if earlier is not None else None
        if kept is not None and kept.ok:
            answers[side] = kept
        else:
            endpoint = plan.a if side == "a" else plan.b
            answers[side] = chat(
                clients[side],
                endpoint,
                messages,
                max_tokens=max_tokens,
                temperature=plan.temperature,
                deadline=deadline,
            )
    judge_note = None
    if task.effective_scorer == "judge":
        assert plan.judge is not None  # ComparePlan.check
        verdict = judge_pair(clients["judge"], plan.judge, task, answers["a"], answers["b"], deadline)
        a_score, b_score = verdict.a_score, verdict.b_score
        judge_note = verdict.error
    else:
        a_score, b_score = score_answer(task, answers["a"]), score_answer(task, answers["b"])
    return TaskResult(
        index=index,
        key=task.key,
        category=task.category,
        prompt=task.shown_prompt,
        scorer=task.effective_scorer,
        expected=task.expected,
        a=answers["a"],
        b=answers["b"],
        a_score=a_score,
        b_score=b_score,
        judge_note=judge_note,
        attempt=1 if earlier is None else earlier.attempt + 1,
    )


def iter_compare(plan: ComparePlan, previous: Iterable[TaskResult] = ()) -> Generator[TaskResult, None, None]:
    """Results as tasks finish (not in file order), `plan.concurrency` tasks at a time.

    `previous` holds results of an earlier run (`ResultsLog.previous`): a task whose earlier
    result succeeded is not run again; one that failed is, on the failed endpoints only.
    With `plan.deadline_s`, the run ends when that time is up: every call stops by then, and
    tasks still running are left out (the report counts them as not finished)."""
    plan.check()
    deadline = None if plan.deadline_s is None else time.perf_counter() + plan.deadline_s
    earlier: dict[str, TaskResult] = {result.key: result for result in previous}
    pending_tasks = [
        (i, task, earlier.get(task.key))
        for i, task in enumerate(plan.tasks)
        if task.key not in earlier or not earlier[task.key].succeeded
    ]
    clients: dict[str, Any] = {"a": open_client(plan.a), "b": open_client(plan.b)}
    if plan.judge is not None:
        clients["judge"] = open_client(plan.judge)
    executor = ThreadPoolExecutor(max_workers=plan.concurrency, thread_name_prefix="compare")
    try:
        queue = iter(pending_tasks)
        running: set[Future[TaskResult]] = set()
        # Submit lazily: an interrupted run then leaves at most `concurrency` tasks in flight.
        for index, task, earlier_result in queue:
            running.add(executor.submit(run_task, plan, clients, index, task, earlier_result, deadline))
            if len(running) >= plan.concurrency:
                break
        while running:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return
            done, running = wait(running, timeout=left, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                following = next(queue, None)
                if following is not None:
                    running.add(executor.submit(run_task, plan, clients, *following, deadline))
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
        for client in clients.values():
            client.close()


def latest_results(results: Iterable[TaskResult]) -> list[TaskResult]:
    """One result per task, the last one given for it, in task-file order."""
    latest = {result.key: result for result in results}
    return sorted(latest.values(), key=lambda result: result.index)


def summarize(plan: ComparePlan, results: Iterable[TaskResult]) -> CompareReport:
    """The report over `results`; a task given more than once counts once, by its last result."""
    ordered = latest_results(results)
    return CompareReport(
        a=_side_summary(plan.a, ordered, "a"),
        b=_side_summary(plan.b, ordered, "b"),
        judge=plan.judge.label if plan.judge else None,
        tasks=ordered,
        total_tasks=len(plan.tasks),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _side_summary(endpoint: Endpoint, results: list[TaskResult], side: Literal["a", "b"]) -> SideSummary:
    answers = [result.a if side == "a" else result.b for result in results]
    scores = [(result, result.a_score if side == "a" else result.b_score) for result in results]
    scored = [(result, score) for result, score in scores if score is not None]
    latencies = [answer.latency_ms for answer in answers if answer.ok and answer.latency_ms is not None]

    def grouped(name_of: Any) -> dict[str, float]:
        groups: dict[str, list[float]] = {}
        for result, score in scored:
            name = name_of(result)
            if name:
                groups.setdefault(name, []).append(score)
        return {name: round(sum(values) / len(values), 3) for name, values in sorted(groups.items())}

    overall = mean([score for _, score in scored])
    return SideSummary(
        url=endpoint.url,
        model=endpoint.model,
        score=None if overall is None else round(overall, 3),
        scored_tasks=len(scored),
        errors=sum(1 for answer in answers if not answer.ok),
        latency_ms_p50=rounded(percentile(latencies, 50)),
        latency_ms_p95=rounded(percentile(latencies, 95)),
        prompt_tokens=sum(answer.prompt_tokens or 0 for answer in answers),
        completion_tokens=sum(answer.completion_tokens or 0 for answer in answers),
        by_scorer=grouped(lambda result: result.scorer),
        by_category=grouped(lambda result: result.category),
    )


# ---------------------------------------------------------------------------- results file


def _endpoint_identity(endpoint: Endpoint | None) -> dict[str, str] | None:
    return None if endpoint is None else {"url": endpoint.url, "model": endpoint.model}


class ResultsLog:
    """The JSONL file every finished task is appended to: a header line, then one line per task.

    Append-only: a task run again by `--resume` gets a new line (its `attempt` one higher),
    and the last line of a task is its result. `previous` is that last result of each task
    of the plan, failures included (`iter_compare` runs those again)."""

    def __init__(self, path: Path, stream: IO[str], previous: list[TaskResult]) -> None:
        self.path = path
        self._stream = stream
        self.previous = previous

    @property
    def finished(self) -> int:
        """Tasks of the earlier run that need no new call."""
        return sum(1 for result in self.previous if result.succeeded)

    @classmethod
    def open(
        cls, path: Path, plan: ComparePlan, *, resume: bool = False, overwrite: bool = False
    ) -> ResultsLog:
        header = {
            "kind": "run",
            "a": _endpoint_identity(plan.a),
            "b": _endpoint_identity(plan.b),
            "judge": _endpoint_identity(plan.judge),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        previous: list[TaskResult] = []
        exists = path.exists() and path.stat().st_size > 0
        if exists and resume:
            previous = _read_previous(path, header, plan)
        elif exists and not overwrite:
            raise ResultsFileError(
                f"{path} already holds results of an earlier run; pass --resume to continue it "
                "or --overwrite to start over"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if exists and resume:
                _drop_half_written_line(path)
            stream = path.open("a" if exists and resume else "w", encoding="utf-8")
        except OSError as exc:
            raise ResultsFileError(f"cannot write the results file {path}: {exc.strerror or exc}") from None
        log = cls(path, stream, previous)
        if not (exists and resume):
            log._write(header)
        return log

    def append(self, result: TaskResult) -> None:
        self._write({"kind": "task", **result.model_dump(mode="json")})

    def _write(self, record: dict[str, Any]) -> None:
        self._stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._stream.flush()  # each finished task is on disk before the next one is waited for

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> ResultsLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _drop_half_written_line(path: Path) -> None:
    """Make the file end at a line break before appending to it.

    A run killed mid-write leaves a last line without one; appending straight after it would
    glue the next record onto it, and the file could no longer be resumed. That half line was
    never a result (the reader skips it), so it is cut off; a whole last line gets its break."""
    content = path.read_bytes()
    if not content or content.endswith(b"\n"):
        return
    cut = content.rfind(b"\n") + 1
    try:
        json.loads(content[cut:])
    except ValueError:
        with path.open("r+b") as stream:
            stream.truncate(cut)
    else:
        with path.open("ab") as stream:
            stream.write(b"\n")


def _read_previous(path: Path, header: dict[str, Any], plan: ComparePlan) -> list[TaskResult]:
    by_key = {task.key: (index, task) for index, task in enumerate(plan.tasks)}
    found: dict[str, TaskResult] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                continue  # the last line of a killed run may be half written
            raise ResultsFileError(f"{path}:{number}: not valid JSON; cannot resume from this file") from None
        if record.get("kind") == "run":
            for side in ("a", "b", "judge"):
                if record.get(side) != header[side]:
                    raise ResultsFileError(
                        f"{path} was written for {side} = {record.get(side)}, not {header[side]}; "
                        "pass --overwrite or another --results file"
                    )
            continue
        try:
            result = TaskResult.model_validate({k: v for k, v in record.items() if k != "kind"})
        except ValidationError:
            raise ResultsFileError(
                f"{path}:{number}: not a task result; cannot resume from this file"
            ) from None
        if result.key in by_key:
            index, task = by_key[result.key]
            if task.shown_prompt == result.prompt:  # an edited task is run again
                found[result.key] = result.model_copy(update={"index": index})  # a later line wins
            else:
                found.pop(result.key, None)
    return sorted(found.values(), key=lambda result: result.index)
