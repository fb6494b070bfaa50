"""Files a user hands the app are read no further than a cap, with one clear line past it.

Covers the task files of `sizing compare --tasks` and of the Compare tab (upload and text box)
and `sizing ask --batch`, which also must not echo a 1 MB question whole in its JSON lines.
(config.json files: tests/test_input_bounds.py.)
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from assistant.cli import ask
from assistant.evals.errors import TaskFileError
from assistant.evals.tasks import MAX_TASK_FILE_BYTES, load_tasks
from assistant.settings import Settings
from assistant.ui.compare_tab import UI_MAX_TASK_BYTES, tasks_from_form
from tests.ui_fakes import FakeAssistant
from tools.errors import InvalidInputError

pytestmark = pytest.mark.timeout(60)


def one_long_task(path: Path, size: int) -> Path:
    path.write_text(json.dumps({"prompt": "x" * size, "expected": "y"}) + "\n", encoding="utf-8")
    return path


def test_a_task_file_past_the_cap_is_one_line(tmp_path: Path) -> None:
    path = one_long_task(tmp_path / "tasks.jsonl", 5_000)
    with pytest.raises(TaskFileError) as caught:
        load_tasks(path, max_bytes=1_000)
    assert caught.value.code == "too_large" and str(caught.value) == f"{path}: larger than 0.001 MB " + (
        "(split it into smaller task files)"
    )
    assert len(load_tasks(path, max_bytes=10_000)) == 1


def test_dev_zero_as_a_task_file_stops_at_the_cap() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this system")
    with pytest.raises(TaskFileError, match="larger than"):
        load_tasks(Path("/dev/zero"), max_bytes=MAX_TASK_FILE_BYTES // 64)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_compare_tab_caps_uploads_and_pasted_tasks(tmp_path: Path, lang: str) -> None:
    upload = one_long_task(tmp_path / "mine.jsonl", UI_MAX_TASK_BYTES)
    with pytest.raises(TaskFileError) as from_file:
        tasks_from_form("", str(upload), lang)  # type: ignore[arg-type]
    assert from_file.value.code == "too_large" and from_file.value.source == "mine.jsonl"
    pasted = upload.read_text(encoding="utf-8")
    with pytest.raises(TaskFileError) as from_text:
        tasks_from_form(pasted, None, lang)  # type: ignore[arg-type]
    assert from_text.value.code == "too_large"


def test_the_compare_tab_spanish_words_the_cap(tmp_path: Path) -> None:
    from assistant.ui.compare_tab import task_problem_text

    upload = one_long_task(tmp_path / "mine.jsonl", UI_MAX_TASK_BYTES)
    with pytest.raises(TaskFileError) as caught:
        tasks_from_form("", str(upload), "es")
    assert "ocupa más de 0.256 MB" in task_problem_text(caught.value, "es")


# ---------------------------------------------------------------- sizing ask --batch


def run_batch(monkeypatch: pytest.MonkeyPatch, text: str, settings: Settings) -> list[dict[str, object]]:
    fake = FakeAssistant()
    monkeypatch.setattr(ask, "_assistant", lambda _settings: fake)
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    args = argparse.Namespace(batch="-", question=None, json=True)
    assert ask.run(args, settings) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_batch_json_does_not_echo_a_megabyte_question(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(max_input_chars=4000)
    huge = "What GPU for a 70B? " + "a" * 1_000_000
    short, long = run_batch(monkeypatch, f"Mistral 7B on an L4\n{huge}\n", settings)
    assert short["question"] == "Mistral 7B on an L4" and "question_chars" not in short
    assert long["question"] == huge[:4000] and long["question_chars"] == len(huge)
    assert long["answer"]  # still answered, like any question


def test_a_batch_past_the_cap_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ask, "MAX_BATCH_CHARS", 100)
    with pytest.raises(InvalidInputError, match="larger than 100 characters"):
        run_batch(monkeypatch, "q\n" * 100, Settings())


ENDPOINTS = (
    "--a-url",
    "http://127.0.0.1:9/v1",
    "--a-model",
    "m",
    "--b-url",
    "http://127.0.0.1:9/v1",
    "--b-model",
    "m",
)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("calc", "x", "--config", "/dev/zero"), "config '/dev/zero' is larger than 1,000 KB"),
        (("compare", *ENDPOINTS, "--tasks", "/dev/zero", "--out", "OUT"), "/dev/zero: larger than 64 MB"),
    ],
    ids=["calc", "compare"],
)
def test_the_cli_stops_reading_dev_zero_with_one_line(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this system")
    from tests.sizing_cli import run_sizing

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SIZING_DATA_DIR": str(tmp_path / "data")}
    proc = run_sizing(*(str(tmp_path / "out") if arg == "OUT" else arg for arg in args), env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert says in line
