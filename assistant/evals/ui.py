"""The web app's Compare tab: a small task file against two endpoints, answers side by side.

`build_compare_tab(settings)` is called by the web app inside its open `gr.Tab` (see
assistant/ui/app.py); it is not run on its own. The handlers below are plain functions
(tested without a browser); the Gradio wiring at the bottom only connects them to widgets.
Bigger runs belong in `sizing compare`, which writes resumable results and full reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.evals.client import Endpoint
from assistant.evals.compare import ComparePlan, CompareReport, TaskResult, iter_compare, summarize
from assistant.evals.errors import EvalOptionError, TaskFileError
from assistant.evals.report import render_markdown
from assistant.evals.tasks import Task, load_tasks, parse_tasks

if TYPE_CHECKING:
    from assistant.settings import Settings

# The tab runs inside the web server, for every visitor who presses Run: a small cap keeps
# one visitor from tying up the server with a long evaluation (the CLI has no cap).
UI_MAX_TASKS = 25
UI_CONCURRENCY = 2
UI_MAX_TOKENS = 512
TABLE_HEADERS = ["#", "task", "scorer", "A answer", "A score", "B answer", "B score"]
INTRO = (
    "Run a few tasks against two OpenAI-compatible endpoints (say, one model at 16 bits and at 4 bits) "
    f"and read the answers side by side. Up to {UI_MAX_TASKS} tasks; the requests are sent by this "
    "server. For full reports, blind review and resumable runs use `sizing compare`."
)
# Every text the tab shows through `label`, for the web app's translations (assistant/ui/texts.py).
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


def tasks_from_form(task_text: str, task_file: str | None) -> list[Task]:
    """The tasks of the uploaded file, or else of the text box; at most UI_MAX_TASKS."""
    if task_file:
        tasks = load_tasks(Path(task_file))
        source = Path(task_file).name
    elif task_text.strip():
        tasks = parse_tasks(task_text, "tasks")
        source = "tasks"
    else:
        raise TaskFileError("tasks", None, "paste JSONL tasks or upload a task file")
    if len(tasks) > UI_MAX_TASKS:
        raise TaskFileError(
            source,
            None,
            f"{len(tasks)} tasks; this tab runs at most {UI_MAX_TASKS} (use `sizing compare` for more)",
        )
    return tasks


def plan_from_form(form: CompareForm, settings: Settings) -> ComparePlan:
    """A checked plan, or a SizingError saying what to fix."""
    for name, value in (
        ("A URL", form.a_url),
        ("A model", form.a_model),
        ("B URL", form.b_url),
        ("B model", form.b_model),
    ):
        if not value.strip():
            raise EvalOptionError(f"{name} is empty")
    if bool(form.judge_url.strip()) != bool(form.judge_model.strip()):
        raise EvalOptionError("give both the judge URL and the judge model, or neither")
    key = form.api_key.strip() or None
    timeout = settings.llm_timeout

    def endpoint(url: str, model: str) -> Endpoint:
        return Endpoint(url=url.strip(), model=model.strip(), api_key=key, timeout_s=timeout)

    plan = ComparePlan(
        a=endpoint(form.a_url, form.a_model),
        b=endpoint(form.b_url, form.b_model),
        judge=endpoint(form.judge_url, form.judge_model) if form.judge_url.strip() else None,
        tasks=tasks_from_form(form.task_text, form.task_file),
        max_tokens=UI_MAX_TOKENS,
        concurrency=UI_CONCURRENCY,
    )
    plan.check()
    return plan


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _answer_text(result: TaskResult, side: str) -> str:
    answer = result.a if side == "a" else result.b
    return f"[failed: {answer.error}]" if answer.error else answer.output


def table_rows(report: CompareReport) -> list[list[str]]:
    """One row per task: the question, then A's and B's answers and scores next to each other."""
    return [
        [
            str(result.index + 1),
            result.prompt,
            result.scorer or "none",
            _answer_text(result, "a"),
            _score(result.a_score),
            _answer_text(result, "b"),
            _score(result.b_score),
        ]
        for result in report.tasks
    ]


def run_compare_form(form: CompareForm, settings: Settings) -> Iterator[tuple[str, list[list[str]]]]:
    """(summary Markdown, table rows) after each finished task, then the final summary."""
    plan = plan_from_form(form, settings)
    results: list[TaskResult] = []
    yield f"Running {len(plan.tasks)} task(s) against both endpoints…", []
    for result in iter_compare(plan):
        results.append(result)
        report = summarize(plan, results)
        yield f"{len(results)} of {len(plan.tasks)} task(s) done…", table_rows(report)
    report = summarize(plan, results)
    yield render_markdown(report), table_rows(report)


# ---------------------------------------------------------------------------- Gradio wiring


def build_compare_tab(settings: Settings, label: Callable[[str], Any] = str) -> None:
    """The form and the side-by-side table, built inside the caller's open Blocks/Tab context.

    `label` turns each English text into what the widget shows (the web app passes its
    translating `gr.I18n` lookup; the default shows the English text)."""
    import gradio as gr

    from tools.errors import SizingError

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
    summary = gr.Markdown()
    table = gr.Dataframe(
        headers=TABLE_HEADERS,
        datatype="str",  # plain text: answers are never rendered as HTML or Markdown
        type="array",
        interactive=False,
        wrap=True,
        column_widths=["4%", "24%", "8%", "28%", "4%", "28%", "4%"],
        label=label("Side by side"),
    )

    def on_run(*values: Any) -> Iterator[tuple[str, list[list[str]]]]:
        form = CompareForm(
            a_url=values[0] or "",
            a_model=values[1] or "",
            b_url=values[2] or "",
            b_model=values[3] or "",
            task_text=values[4] or "",
            task_file=_upload_path(values[5]),
            api_key=values[6] or "",
            judge_url=values[7] or "",
            judge_model=values[8] or "",
        )
        try:
            yield from run_compare_form(form, settings)
        except SizingError as exc:
            raise gr.Error(str(exc)) from None

    run_button.click(
        on_run,
        inputs=[a_url, a_model, b_url, b_model, task_text, task_file, api_key, judge_url, judge_model],
        outputs=[summary, table],
        concurrency_id="compare",
        concurrency_limit=1,  # one comparison at a time per server: each one sends many requests
        api_visibility="private",
    )


def _upload_path(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    return str(getattr(value, "path", None) or getattr(value, "name", "")) or None
