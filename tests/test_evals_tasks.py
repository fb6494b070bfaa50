"""The task file: valid lines become tasks, the first bad line is named file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.evals.errors import TASK_PROBLEMS, TaskFileError
from assistant.evals.tasks import load_tasks, parse_tasks
from tests.evals_support import TASKS, write_tasks
from tools.errors import SizingError

ROOT = Path(__file__).resolve().parents[1]


def test_tasks_load_with_their_scorers(tmp_path: Path) -> None:
    tasks = load_tasks(write_tasks(tmp_path))
    assert [t.key for t in tasks] == ["card", "route", "weights", "extract", "open"]
    assert [t.effective_scorer for t in tasks] == ["contains", "exact", "regex", "json", None]
    assert tasks[0].chat_messages() == [{"role": "user", "content": TASKS[0]["prompt"]}]


def test_messages_tasks_and_the_shown_prompt() -> None:
    line = json.dumps(
        {
            "messages": [
                {"role": "system", "content": "Use the passage."},
                {"role": "user", "content": "How much VRAM?"},
            ],
            "expected": "GB",
        }
    )
    (task,) = parse_tasks(line)
    assert task.shown_prompt == "How much VRAM?"
    assert task.chat_messages()[0] == {"role": "system", "content": "Use the passage."}
    assert task.key.startswith("task-")
    assert parse_tasks(line)[0].key == task.key  # the same task hashes the same way every run


def test_schema_alone_means_the_json_scorer() -> None:
    (task,) = parse_tasks(json.dumps({"prompt": "JSON please", "schema": {"type": "object"}}))
    assert task.effective_scorer == "json"


def test_blank_and_comment_lines_are_skipped() -> None:
    content = "# header\n\n" + json.dumps({"prompt": "hi"}) + "\n   \n"
    assert len(parse_tasks(content)) == 1


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"prompt": "x", "expect": "y"}', "unknown field 'expect'"),
        (
            '{"prompt": "x", "messages": [{"role": "user", "content": "y"}]}',
            "exactly one of 'prompt' or 'messages'",
        ),
        ("{}", "exactly one of 'prompt' or 'messages'"),
        ('{"prompt": "   "}', "'prompt' is empty"),
        ('{"messages": [{"role": "system", "content": "x"}]}', "at least one user message"),
        ('{"messages": [{"role": "robot", "content": "x"}]}', "messages.0.role"),
        ('{"prompt": "x", "scorer": "exact"}', "scorer 'exact' needs 'expected'"),
        ('{"prompt": "x", "scorer": "fuzzy", "expected": "y"}', "field 'scorer'"),
        ('{"prompt": "x", "scorer": "regex", "expected": "(unclosed"}', "not a valid regular expression"),
        ('{"prompt": "x", "scorer": "exact", "expected": ["a"]}', "needs 'expected' as a string"),
        ('{"prompt": "x", "expected": {"a": 1}}', "'contains' needs 'expected' as a string or a list"),
        ('{"prompt": "x", "scorer": "json", "schema": {"type": "nonsense"}}', "not a valid JSON schema"),
        ('{"prompt": "x", "scorer": "exact", "expected": "y", "schema": {}}', "'schema' only applies"),
        ('{"prompt": "x", "max_tokens": 0}', "field 'max_tokens'"),
    ],
)
def test_bad_line_is_reported_with_file_and_line(line: str, problem: str) -> None:
    content = json.dumps({"prompt": "fine"}) + "\n" + line + "\n"
    with pytest.raises(TaskFileError) as caught:
        parse_tasks(content, "my-tasks.jsonl")
    message = str(caught.value)
    assert message.startswith("my-tasks.jsonl:2: "), message
    assert problem in message
    assert isinstance(caught.value, SizingError)  # the CLI turns it into one line and exit 2
    # typed: a problem code and its values, from which the web tab words it in Spanish
    assert caught.value.line == 2 and caught.value.code in TASK_PROBLEMS
    assert message == f"my-tasks.jsonl:2: {TASK_PROBLEMS[caught.value.code].format(**caught.value.params)}"


def test_duplicate_ids_are_refused() -> None:
    content = '{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n'
    with pytest.raises(TaskFileError, match=r"<tasks>:2: task 'a' repeats line 1"):
        parse_tasks(content)


def test_empty_missing_and_binary_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match="no tasks"):
        load_tasks(empty)
    with pytest.raises(TaskFileError, match="no such file"):
        load_tasks(tmp_path / "absent.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TaskFileError, match="not UTF-8"):
        load_tasks(binary)


def test_the_worked_examples_are_valid_task_files() -> None:
    desk = load_tasks(ROOT / "examples" / "sizing-desk-tasks.jsonl")
    categories = {task.category for task in desk}
    assert categories == {"extraction", "classification", "grounded-qa"}
    assert all(task.effective_scorer is not None for task in desk)
    judged = load_tasks(ROOT / "examples" / "sizing-desk-judged.jsonl")
    assert {task.effective_scorer for task in judged} == {"judge"}
