"""The Compare tab: its handlers (plain functions) against stub endpoints, and that it builds."""

from __future__ import annotations

import asyncio
import json
import string
import sys
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from assistant.evals.errors import TASK_PROBLEMS, EvalOptionError, TaskFileError
from assistant.settings import Settings
from assistant.ui.compare_tab import (
    EXAMPLE_TASKS,
    UI_MAX_TASKS,
    CompareForm,
    build_compare_tab,
    plan_from_form,
    run_compare_form,
    table_headers,
    task_problem_text,
    tasks_from_form,
    visitor_language,
)
from assistant.ui.texts import TASK_PROBLEMS_ES, Lang
from tests.evals_support import TASKS, failing_stub, right_stub, write_tasks, wrong_stub
from tests.ui_fakes import FakeAssistant


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", llm_timeout=5)


def _jsonl(tasks: list[dict[str, object]]) -> str:
    return "\n".join(json.dumps(task) for task in tasks)


def test_tasks_from_text_or_upload(tmp_path: Path) -> None:
    assert len(tasks_from_form(_jsonl(TASKS), None)) == len(TASKS)
    uploaded = write_tasks(tmp_path, TASKS[:2])
    assert [t.key for t in tasks_from_form("ignored when a file is given", str(uploaded))] == [
        "card",
        "route",
    ]
    assert len(tasks_from_form(EXAMPLE_TASKS, None)) == 2  # the tab's placeholder tasks are valid
    with pytest.raises(EvalOptionError, match="paste JSONL tasks or upload"):
        tasks_from_form("  ", None)
    with pytest.raises(TaskFileError, match=r"^tasks:1: not valid JSON"):
        tasks_from_form("{oops", None)
    too_many = _jsonl([{"prompt": f"q{i}"} for i in range(UI_MAX_TASKS + 1)])
    with pytest.raises(EvalOptionError, match="use `sizing compare` for more"):
        tasks_from_form(too_many, None)
    bad_upload = tmp_path / "upload-dir" / "mine.jsonl"
    bad_upload.parent.mkdir()
    bad_upload.write_text('{"prompt": "x", "scorer": "exact"}\n', encoding="utf-8")
    with pytest.raises(TaskFileError, match=r"^mine.jsonl:1: scorer 'exact' needs 'expected'$"):
        tasks_from_form("", str(bad_upload))  # the visitor's file name, not the server's upload path


def test_form_problems_are_typed_errors(settings: Settings) -> None:
    form = CompareForm("http://127.0.0.1:9/v1", "a", "", "b", task_text=_jsonl(TASKS))
    with pytest.raises(EvalOptionError, match="B URL is empty"):
        plan_from_form(form, settings)
    form = CompareForm(
        "http://127.0.0.1:9/v1", "a", "http://127.0.0.1:9/v1", "b", _jsonl(TASKS), judge_url="http://x"
    )
    with pytest.raises(EvalOptionError, match="judge URL and the judge model"):
        plan_from_form(form, settings)
    judged = _jsonl([{"prompt": "explain", "scorer": "judge"}])
    form = CompareForm("http://127.0.0.1:9/v1", "a", "http://127.0.0.1:9/v1", "b", judged)
    with pytest.raises(EvalOptionError, match="no judge was given"):
        plan_from_form(form, settings)


def test_run_streams_the_side_by_side_table(settings: Settings) -> None:
    with right_stub() as a, wrong_stub() as b:
        form = CompareForm(
            a.url, " model-bf16 ", b.url, "model-int4", task_text=_jsonl(TASKS), api_key="sk-x"
        )
        updates = list(run_compare_form(form, settings))
        assert {r["model"] for r in a.requests} == {"model-bf16"}
    assert updates[0] == (f"Running {len(TASKS)} tasks against both endpoints…", [])
    assert updates[1][0] == f"1 of {len(TASKS)} tasks done…"
    assert [len(rows) for _, rows in updates[1:-1]] == list(range(1, len(TASKS) + 1))
    summary, rows = updates[-1]
    assert summary.startswith("# Compare: A = model-bf16 vs B = model-int4")
    assert "| score (mean over scored tasks) | 1.00 | 0.00 |" in summary
    assert all(len(row) == len(table_headers("en")) for row in rows)
    route = next(row for row in rows if row[1] == "Route: 'my invoice is wrong'")
    assert route == [
        "2",
        "Route: 'my invoice is wrong'",
        "exact",
        "Billing",
        "1.00",
        "I do not know.",
        "0.00",
    ]


def test_failing_endpoint_shows_in_the_table(settings: Settings) -> None:
    with right_stub() as a, failing_stub() as b:
        form = CompareForm(a.url, "a", b.url, "b", task_text=_jsonl(TASKS[:1]))
        _, rows = list(run_compare_form(form, settings))[-1]
    assert rows[0][5] == "[failed: HTTP 500: the GPU caught fire]" and rows[0][6] == "0.00"


def test_the_tab_builds_inside_the_callers_blocks(settings: Settings) -> None:
    async def build() -> gr.Blocks:
        # Inside a running loop: outside one, Gradio 6 opens event loops it never closes
        # (gradio.utils.safe_get_lock), which the suite's warnings-as-errors would report.
        with gr.Blocks() as demo, gr.Tab("Compare"):
            build_compare_tab(settings)
        return demo

    demo = asyncio.run(build())
    labels = {getattr(block, "label", None) for block in demo.blocks.values()}
    assert {"A: endpoint URL", "B: model", "Tasks (JSONL, one per line)", "Side by side"} <= labels
    table = next(b for b in demo.blocks.values() if isinstance(b, gr.Dataframe))
    assert table.datatype == "str"  # answers are shown as text, never rendered as HTML
    assert any(isinstance(b, gr.Button) for b in demo.blocks.values())


def test_the_app_shows_a_notice_when_the_tab_cannot_load(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assistant.ui.app import build_app

    monkeypatch.setitem(sys.modules, "assistant.ui.compare_tab", None)  # importing it raises ImportError

    async def build() -> gr.Blocks:
        return build_app(FakeAssistant(), settings)

    demo = asyncio.run(build())
    shown = {
        getattr(block, "value", None) for block in demo.blocks.values() if isinstance(block, gr.Markdown)
    }
    assert any("The Compare tab is not available in this build." in str(value) for value in shown)
    assert not [fn for fn in demo.fns.values() if fn.concurrency_id == "compare"]  # no form, no handler


def test_spanish_visitor_reads_the_runtime_texts_in_spanish(settings: Settings) -> None:
    with right_stub() as a, failing_stub() as b:
        form = CompareForm(a.url, "modelo-bf16", b.url, "modelo-int4", task_text=_jsonl(TASKS[:1]))
        updates = list(run_compare_form(form, settings, "es"))
    assert updates[0] == ("Ejecutando 1 tarea contra los dos endpoints…", [])
    assert updates[1][0] == "Progreso: 1 de 1 tarea…"
    summary, rows = updates[-1]
    assert summary.startswith("# Comparación: A = modelo-bf16 frente a B = modelo-int4")
    assert "| puntuación (media de las tareas puntuadas) | 1,00 | 0,00 |" in summary
    assert "| llamadas fallidas | 0 | 1 |" in summary
    assert "score" not in summary and "failed" not in summary
    assert rows[0][4] == "1,00"
    assert rows[0][5] == "[falló: HTTP 500: the GPU caught fire]"
    assert table_headers("es") == [
        "#",
        "tarea",
        "evaluador",
        "respuesta A",
        "puntuación A",
        "respuesta B",
        "puntuación B",
    ]
    assert len(table_headers("en")) == len(table_headers("es"))


def test_spanish_form_errors(settings: Settings) -> None:
    form = CompareForm("http://127.0.0.1:9/v1", "a", "", "b", task_text=_jsonl(TASKS))
    with pytest.raises(EvalOptionError, match="falta la URL de B"):
        plan_from_form(form, settings, "es")
    form = CompareForm(
        "http://127.0.0.1:9/v1", "a", "http://127.0.0.1:9/v1", "b", _jsonl(TASKS), judge_url="http://x"
    )
    with pytest.raises(EvalOptionError, match="la URL y el modelo del juez"):
        plan_from_form(form, settings, "es")
    with pytest.raises(EvalOptionError, match="pegue tareas en JSONL"):
        tasks_from_form(" ", None, "es")
    too_many = _jsonl([{"prompt": f"q{i}"} for i in range(UI_MAX_TASKS + 1)])
    with pytest.raises(EvalOptionError, match=f"{UI_MAX_TASKS + 1} tareas; esta pestaña ejecuta como máximo"):
        tasks_from_form(too_many, None, "es")


def test_the_wired_handler_answers_in_the_browsers_language(settings: Settings) -> None:
    assert visitor_language(SimpleNamespace(headers={"accept-language": "es-ES,es;q=0.9"})) == "es"
    assert visitor_language(SimpleNamespace(headers={"accept-language": "de-DE"})) == "en"
    assert visitor_language(None) == "en"

    async def build() -> gr.Blocks:
        with gr.Blocks() as demo, gr.Tab("Compare"):
            build_compare_tab(settings)
        return demo

    demo = asyncio.run(build())
    on_run = next(block.fn for block in demo.fns.values() if block.fn and block.fn.__name__ == "on_run")
    spanish = SimpleNamespace(headers={"accept-language": "es"})
    with pytest.raises(gr.Error, match="No se puede ejecutar la comparación: falta la URL de A"):
        next(on_run("", "a", "http://127.0.0.1:9/v1", "b", _jsonl(TASKS), None, "", "", "", spanish))
    bad_tasks = '{"prompt": "fine"}\n{"prompt": "x", "scorer": "fuzzy", "expected": "y"}'
    spanish_error = (
        "No se puede ejecutar la comparación: tareas, línea 2: campo 'scorer': debe ser "
        "'contains', 'exact', 'regex', 'json' o 'judge'"
    )

    def run_error(request: SimpleNamespace) -> str:
        """The message the tab shows for the bad task file, in the request's language."""
        with pytest.raises(gr.Error) as caught:
            unreachable = "http://127.0.0.1:9/v1"  # never called: the task file fails first
            next(on_run(unreachable, "a", unreachable, "b", bad_tasks, None, "", "", "", request))
        return str(caught.value.message)

    assert run_error(spanish) == spanish_error
    assert run_error(SimpleNamespace(headers={"accept-language": "en-GB"})) == (
        "Cannot run the comparison: tasks:2: field 'scorer': Input should be "
        "'contains', 'exact', 'regex', 'json' or 'judge'"
    )
    with right_stub() as a, wrong_stub() as b:
        updates = list(on_run(a.url, "a", b.url, "b", _jsonl(TASKS[:1]), None, "", "", "", spanish))
    table = updates[-1][1]
    assert table["headers"] == table_headers("es") and len(table["data"]) == 1


def _problem_in(content: str, lang: Lang) -> str:
    with pytest.raises(TaskFileError) as caught:
        tasks_from_form(content, None, lang)
    return task_problem_text(caught.value, lang)


@pytest.mark.parametrize(
    ("line", "spanish"),
    [
        ("{oops", "tareas, línea 2: no es JSON válido (error en la columna 2)"),
        ("[1]", "tareas, línea 2: cada tarea debe ser un objeto JSON"),
        (
            '{"prompt": "x", "expect": "y"}',
            "tareas, línea 2: campo desconocido 'expect' (campos: id, category,",
        ),
        ("{}", "tareas, línea 2: indique exactamente uno de los campos 'prompt' o 'messages'"),
        ('{"prompt": "x", "scorer": "exact"}', "tareas, línea 2: el evaluador 'exact' necesita 'expected'"),
        (
            '{"prompt": "x", "scorer": "fuzzy", "expected": "y"}',
            "tareas, línea 2: campo 'scorer': debe ser 'contains', 'exact', 'regex', 'json' o 'judge'",
        ),
        ('{"messages": [{"role": "user"}]}', "tareas, línea 2: falta el campo 'messages.0.content'"),
        ('{"prompt": "x", "max_tokens": 0}', "tareas, línea 2: campo 'max_tokens': debe ser mayor que 0"),
        (
            '{"prompt": "x", "max_tokens": "many"}',
            "tareas, línea 2: campo 'max_tokens': debe ser un número entero",
        ),
        (
            '{"id": "first", "prompt": "y"}',
            "tareas, línea 2: la tarea 'first' repite la línea 1 (los id deben",
        ),
    ],
)
def test_spanish_visitor_reads_task_file_problems_in_spanish(line: str, spanish: str) -> None:
    content = '{"id": "first", "prompt": "fine"}\n' + line
    shown = _problem_in(content, "es")
    assert shown.startswith(spanish), shown
    for english in ("Input should", "needs", "unknown field", "Field required", "Expecting", "repeats"):
        assert english not in shown
    # the CLI and an English visitor read the same English words as before
    with pytest.raises(TaskFileError) as caught:
        tasks_from_form(content, None, "en")
    assert _problem_in(content, "en") == str(caught.value)


def test_every_task_file_problem_has_spanish_words() -> None:
    # every code the parser can raise, worded only with the values its error carries
    assert set(TASK_PROBLEMS) <= set(TASK_PROBLEMS_ES)
    for key, spanish in TASK_PROBLEMS_ES.items():
        code, _, check = key.partition(".")
        carried = set(_placeholders(TASK_PROBLEMS[code])) | ({"choices", "limit"} if check else set())
        assert set(_placeholders(spanish)) <= carried, key
    missing_file = TaskFileError("absent.jsonl", None, "no_such_file")
    assert task_problem_text(missing_file, "es") == "absent.jsonl: el archivo no existe"
    assert task_problem_text(missing_file, "en") == str(missing_file) == "absent.jsonl: no such file"


def _placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]
