"""The web app's Compare tab: a small task file against two endpoints, answers side by side.

`build_compare_tab(settings)` is called by the web app inside its open `gr.Tab` (see
app.py); it is not run on its own. The handlers below are plain functions on the comparison of
`assistant.evals` (tested without a browser); the Gradio wiring at the bottom only connects them
to widgets. Bigger runs belong in `sizing compare`, which writes resumable results and full reports.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr

from assistant.evals.client import Endpoint
from assistant.evals.compare import ComparePlan, CompareReport, TaskResult, iter_compare, summarize
from assistant.evals.errors import EvalOptionError, TaskFileError
from assistant.evals.tasks import Task, load_tasks, parse_tasks
from assistant.ui.client_limits import request_client_key
from assistant.ui.handlers import uploaded_path
from assistant.ui.texts import TASK_PROBLEMS_ES, Lang, language_from_header
from assistant.ui.texts import text as ui_text
from tools.errors import SizingError
from tools.i18n import integer, number

if TYPE_CHECKING:
    from assistant.settings import Settings

# The tab runs inside the web server, for every visitor who presses Run: a small cap keeps
# one visitor from tying up the server with a long evaluation (the CLI has no cap).
UI_MAX_TASKS = 25
UI_CONCURRENCY = 2
UI_MAX_TOKENS = 512
# Each visitor's comparison runs on its own (up to UI_MAX_RUNS at once across visitors) and
# ends at its own deadline, so an endpoint that stalls holds back only the visitor who typed it.
UI_MAX_RUNS = 4
UI_DEADLINE_S = 180.0
# 25 tasks fit in a few KB; the upload widget and the text box are read no further than this.
UI_MAX_TASK_BYTES = 256_000
# Column keys of the side-by-side table; the words are in assistant/ui/data/outputs.yaml (compare_col_*).
TABLE_COLUMNS = ("task", "scorer", "a_answer", "a_score", "b_answer", "b_score")
INTRO = (
    "Run a few tasks against two OpenAI-compatible endpoints (say, one model at 16 bits and at 4 bits) "
    f"and read the answers side by side. Up to {UI_MAX_TASKS} tasks; the requests are sent by this "
    "server. For full reports, blind review and resumable runs use `sizing compare`."
)
# Every text the tab shows through `label`, for the web app's translations (assistant/ui/data/labels.yaml).
LABELS = (
    INTRO,
    "A: endpoint URL",
    "A: model",
    "B: endpoint URL",
    "B: model",
    "API key and judge (optional)",
    "API key sent to the endpoints",
    "Judge endpoint URL (for scorer 'judge')",
    "Judge model",
    "Tasks (JSONL, one per line)",
    "…or upload a task file",
    "Run comparison",
    "Side by side",
)
EXAMPLE_TASKS = "\n".join(
    [
        '{"prompt": "Route this inquiry to sizing, billing or support; answer with the team only: '
        '\'Would a 48 GB card fit a 70B at 4 bits?\'", "scorer": "exact", "expected": "sizing"}',
        '{"prompt": "About how many GB do the weights of a 70B model take at 4 bits? One short sentence.", '
        '"expected": ["35"]}',
    ]
)


@dataclass(frozen=True)
class CompareForm:
    """What the visitor typed into the tab."""

    a_url: str
    a_model: str
    b_url: str
    b_model: str
    task_text: str = ""
    task_file: str | None = None  # a path from the upload widget; wins over task_text
    api_key: str = ""
    judge_url: str = ""
    judge_model: str = ""


def table_headers(lang: Lang = "en") -> list[str]:
    """The side-by-side table's column names in the visitor's language."""
    return ["#"] + [ui_text(f"compare_col_{column}", lang) for column in TABLE_COLUMNS]


def count_tasks(count: int, lang: Lang) -> str:
    """ "1 task", "3 tasks" / "1 tarea", "3 tareas"."""
    if count == 1:
        return ui_text("compare_tasks_one", lang)
    return ui_text("compare_tasks_many", lang, count=_integer(count, lang))


def _integer(value: int, lang: Lang) -> str:
    return integer(value, lang)


def tasks_from_form(task_text: str, task_file: str | None, lang: Lang = "en") -> list[Task]:
    """The tasks of the uploaded file, or else of the text box; at most UI_MAX_TASKS.

    A bad task file raises TaskFileError (word it with `error_text`); the form's own limits
    raise EvalOptionError already in `lang`, as the other form problems do."""
    if task_file:
        # Named by the visitor's file name, not by the server's upload path.
        tasks = load_tasks(Path(task_file), source=Path(task_file).name, max_bytes=UI_MAX_TASK_BYTES)
    elif task_text.strip():
        source = ui_text("compare_pasted_tasks", lang)
        if len(task_text.encode("utf-8")) > UI_MAX_TASK_BYTES:
            raise TaskFileError(source, None, "too_large", limit=f"{UI_MAX_TASK_BYTES / 1e6:g} MB")
        tasks = parse_tasks(task_text, source)
    else:
        raise EvalOptionError(ui_text("compare_no_tasks", lang))
    if len(tasks) > UI_MAX_TASKS:
        raise EvalOptionError(
            ui_text(
                "compare_too_many",
                lang,
                tasks=count_tasks(len(tasks), lang),
                limit=_integer(UI_MAX_TASKS, lang),
            )
        )
    return tasks


def task_problem_text(error: TaskFileError, lang: Lang) -> str:
    """A task-file problem in the visitor's language: in English the CLI's own words, in
    Spanish the tab's (assistant/ui/texts.py: TASK_PROBLEMS_ES), from the error's code and values."""
    if lang == "en":
        problem = error.problem
    else:
        template = (
            TASK_PROBLEMS_ES.get(f"{error.code}.{error.params.get('check')}") or TASK_PROBLEMS_ES[error.code]
        )
        problem = template.format(**{name: _shown(value, lang) for name, value in error.params.items()})
    if error.line is None:
        return ui_text("compare_task_in_file", lang, source=error.source, problem=problem)
    return ui_text("compare_task_at_line", lang, source=error.source, line=error.line, problem=problem)


def _shown(value: object, lang: Lang) -> object:
    """Choices as "'a', 'b' or 'c'" in the visitor's language; other values as they are."""
    if not isinstance(value, tuple):
        return value
    quoted = [f"'{choice}'" for choice in value]
    if len(quoted) < 2:
        return "".join(quoted)
    return f"{', '.join(quoted[:-1])} {ui_text('compare_or', lang)} {quoted[-1]}"


def error_text(error: SizingError, lang: Lang) -> str:
    """What the tab shows for a failure: task-file problems are worded here, the rest already are."""
    return task_problem_text(error, lang) if isinstance(error, TaskFileError) else str(error)


def plan_from_form(form: CompareForm, settings: Settings, lang: Lang = "en") -> ComparePlan:
    """A checked plan, or a SizingError saying what to fix (in `lang` where the tab words it)."""
    for field, value in (
        ("a_url", form.a_url),
        ("a_model", form.a_model),
        ("b_url", form.b_url),
        ("b_model", form.b_model),
    ):
        if not value.strip():
            name = ui_text(f"compare_field_{field}", lang)
            raise EvalOptionError(ui_text("compare_empty_field", lang, field=name))
    if bool(form.judge_url.strip()) != bool(form.judge_model.strip()):
        raise EvalOptionError(ui_text("compare_judge_pair", lang))
    key = form.api_key.strip() or None
    timeout = settings.llm_timeout

    def endpoint(url: str, model: str) -> Endpoint:
        return Endpoint(url=url.strip(), model=model.strip(), api_key=key, timeout_s=timeout)

    plan = ComparePlan(
        a=endpoint(form.a_url, form.a_model),
        b=endpoint(form.b_url, form.b_model),
        judge=endpoint(form.judge_url, form.judge_model) if form.judge_url.strip() else None,
        tasks=tasks_from_form(form.task_text, form.task_file, lang),
        max_tokens=UI_MAX_TOKENS,
        concurrency=UI_CONCURRENCY,
        deadline_s=UI_DEADLINE_S,
    )
    plan.check()
    return plan


def _decimal(value: float | None, lang: Lang, decimals: int = 2) -> str:
    if value is None:
        return "—"
    return number(value, lang, decimals)


def _ms(value: float | None, lang: Lang) -> str:
    return "—" if value is None else f"{_decimal(value, lang, 0)} ms"


def _answer_text(result: TaskResult, side: str, lang: Lang) -> str:
    answer = result.a if side == "a" else result.b
    return ui_text("compare_failed_answer", lang, error=answer.error) if answer.error else answer.output


def table_rows(report: CompareReport, lang: Lang = "en") -> list[list[str]]:
    """One row per task: the question, then A's and B's answers and scores next to each other."""
    return [
        [
            str(result.index + 1),
            result.prompt,
            result.scorer or ui_text("compare_no_scorer", lang),
            _answer_text(result, "a", lang),
            _decimal(result.a_score, lang),
            _answer_text(result, "b", lang),
            _decimal(result.b_score, lang),
        ]
        for result in report.tasks
    ]


def summary_markdown(report: CompareReport, lang: Lang = "en") -> str:
    """The tab's summary in the visitor's language: the two endpoints and their totals.

    The table below it shows every task; the CLI's report (`sizing compare`) adds the rest."""
    a, b = report.a, report.b
    lines = [
        "# " + ui_text("compare_title", lang, a=a.model, b=b.model),
        "",
        f"A: `{a.model}` — {a.url}  ",
        f"B: `{b.model}` — {b.url}"
        + (f"  \n{ui_text('compare_judge', lang, judge=report.judge)}" if report.judge else ""),
        "",
    ]
    if not report.complete:
        done = _integer(len(report.tasks), lang)
        lines += [
            ui_text("compare_partial", lang, done=done, tasks=count_tasks(report.total_tasks, lang)),
            "",
        ]
    rows = (
        ("score", _decimal(a.score, lang), _decimal(b.score, lang)),
        ("scored", _integer(a.scored_tasks, lang), _integer(b.scored_tasks, lang)),
        ("failed", _integer(a.errors, lang), _integer(b.errors, lang)),
        ("p50", _ms(a.latency_ms_p50, lang), _ms(b.latency_ms_p50, lang)),
        ("p95", _ms(a.latency_ms_p95, lang), _ms(b.latency_ms_p95, lang)),
        ("tokens", _integer(a.completion_tokens, lang), _integer(b.completion_tokens, lang)),
    )
    lines += ["| | A | B |", "|---|---|---|"]
    lines += [f"| {ui_text(f'compare_row_{row}', lang)} | {x} | {y} |" for row, x, y in rows]
    lines += ["", ui_text("compare_full_report", lang)]
    return "\n".join(lines) + "\n"


def run_compare_form(
    form: CompareForm, settings: Settings, lang: Lang = "en"
) -> Iterator[tuple[str, list[list[str]]]]:
    """(summary Markdown, table rows) after each finished task, then the final summary, in `lang`."""
    plan = plan_from_form(form, settings, lang)
    results: list[TaskResult] = []
    total = count_tasks(len(plan.tasks), lang)
    yield ui_text("compare_running", lang, tasks=total), []
    for result in iter_compare(plan):
        results.append(result)
        report = summarize(plan, results)
        done = _integer(len(results), lang)
        yield ui_text("compare_progress", lang, done=done, tasks=total), table_rows(report, lang)
    report = summarize(plan, results)
    summary = summary_markdown(report, lang)
    if not report.complete:
        seconds = _integer(round(plan.deadline_s or 0), lang)
        summary += "\n" + _tab_text("compare_deadline", lang, seconds=seconds) + "\n"
    yield summary, table_rows(report, lang)


class RunsPerClient:
    """At most one running comparison per client address, so one visitor cannot take every slot."""

    def __init__(self) -> None:
        self._running: set[str] = set()
        self._lock = threading.Lock()

    @contextmanager
    def run(self, key: str, lang: Lang) -> Iterator[None]:
        with self._lock:
            if key in self._running:
                seconds = _integer(round(UI_DEADLINE_S), lang)
                raise EvalOptionError(_tab_text("compare_busy", lang, seconds=seconds))
            self._running.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(key)


def _tab_text(key: str, lang: Lang, **values: object) -> str:
    """A sentence of the Compare tab in `lang` (assistant/ui/data/outputs.yaml)."""
    return ui_text(key, lang, **values)


# ---------------------------------------------------------------------------- Gradio wiring


def build_compare_tab(settings: Settings, label: Callable[[str], Any] = str) -> None:
    """The form and the side-by-side table, built inside the caller's open Blocks/Tab context.

    `label` turns each English text into what the widget shows (the web app passes its
    translating `gr.I18n` lookup; the default shows the English text)."""
    gr.Markdown(label(INTRO))
    with gr.Row():
        with gr.Column():
            a_url = gr.Textbox(
                label=label("A: endpoint URL"),
                value=settings.llm_base_url or "",
                placeholder="http://host:8000/v1",
            )
            a_model = gr.Textbox(label=label("A: model"), value=settings.llm_model or "")
        with gr.Column():
            b_url = gr.Textbox(label=label("B: endpoint URL"), placeholder="http://host:8001/v1")
            b_model = gr.Textbox(label=label("B: model"))
    with gr.Accordion(label("API key and judge (optional)"), open=False):
        api_key = gr.Textbox(label=label("API key sent to the endpoints"), type="password")
        with gr.Row():
            judge_url = gr.Textbox(label=label("Judge endpoint URL (for scorer 'judge')"))
            judge_model = gr.Textbox(label=label("Judge model"))
    with gr.Row():
        task_text = gr.Code(
            value=EXAMPLE_TASKS, language="json", label=label("Tasks (JSONL, one per line)"), lines=6
        )
        task_file = gr.File(
            label=label("…or upload a task file"), file_types=[".jsonl", ".json", ".txt"], type="filepath"
        )
    run_button = gr.Button(label("Run comparison"), variant="primary")
    runs = RunsPerClient()
    summary = gr.Markdown()
    table = gr.Dataframe(
        headers=table_headers("en"),  # replaced by the visitor's language with every run
        datatype="str",  # plain text: answers are never rendered as HTML or Markdown
        type="array",
        interactive=False,
        wrap=True,
        column_widths=["4%", "24%", "8%", "28%", "4%", "28%", "4%"],
        label=label("Side by side"),
    )

    def on_run(
        a_url: str | None,
        a_model: str | None,
        b_url: str | None,
        b_model: str | None,
        task_text: str | None,
        task_file: Any,
        api_key: str | None,
        judge_url: str | None,
        judge_model: str | None,
        request: gr.Request,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        form = CompareForm(
            a_url=a_url or "",
            a_model=a_model or "",
            b_url=b_url or "",
            b_model=b_model or "",
            task_text=task_text or "",
            task_file=uploaded_path(task_file),
            api_key=api_key or "",
            judge_url=judge_url or "",
            judge_model=judge_model or "",
        )
        lang = visitor_language(request)
        headers = table_headers(lang)
        client = request_client_key(request, settings.trusted_proxy_networks)
        try:
            with runs.run(client, lang):
                for summary_text, rows in run_compare_form(form, settings, lang):
                    yield summary_text, {"headers": headers, "data": rows}
        except SizingError as exc:
            raise gr.Error(ui_text("compare_cannot_run", lang, message=error_text(exc, lang))) from None

    run_button.click(
        on_run,
        inputs=[a_url, a_model, b_url, b_model, task_text, task_file, api_key, judge_url, judge_model],
        outputs=[summary, table],
        concurrency_id="compare",
        concurrency_limit=UI_MAX_RUNS,  # each run sends UI_CONCURRENCY requests at a time
        api_visibility="private",
    )


def visitor_language(request: Any) -> Lang:
    """Spanish or English from the browser's Accept-Language (the web app's own rule)."""
    headers = getattr(request, "headers", None) or {}
    return language_from_header(headers.get("accept-language"))
