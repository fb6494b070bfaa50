"""The task file of `sizing compare`: JSON Lines, one task per line.

    {"id": "cls-1", "category": "classification", "prompt": "...", "expected": "sales", "scorer": "exact"}
    {"messages": [{"role": "system", "content": "..."}, {"role": "user", "content": "..."}], "expected": ["80 GB"]}
    {"prompt": "Reply in JSON ...", "scorer": "json", "schema": {"type": "object", "required": ["model"]}}
    {"prompt": "Explain ...", "scorer": "judge", "expected": "a reference answer the judge may use"}

Blank lines and lines starting with `#` are skipped. Every other line must be a valid task;
the first bad one is reported as `file:line: problem`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from assistant.evals.errors import TaskFileError

ScorerName = Literal["contains", "exact", "regex", "json", "judge"]
SCORERS: tuple[str, ...] = ("contains", "exact", "regex", "json", "judge")
# Scorers that grade against `expected` and cannot work without it.
NEEDS_EXPECTED = frozenset({"contains", "exact", "regex"})


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class Task(BaseModel):
    """One prompt to send to both endpoints, and how to grade the answers."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str | None = Field(default=None, description="Stable name of the task (reports, resuming).")
    category: str | None = Field(default=None, description="Free label for per-category totals.")
    prompt: str | None = Field(default=None, description="The user message (or give `messages`).")
    messages: list[ChatMessage] | None = Field(default=None, description="A whole conversation to send.")
    expected: JsonValue = Field(default=None, description="What a right answer contains / is / matches.")
    scorer: ScorerName | None = Field(default=None, description="Default: contains when expected is given.")
    json_schema: dict[str, Any] | None = Field(
        default=None, alias="schema", description="For the json scorer."
    )
    max_tokens: int | None = Field(default=None, gt=0, description="Overrides --max-tokens for this task.")

    @model_validator(mode="after")
    def _check(self) -> Task:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of 'prompt' or 'messages'")
        if self.prompt is not None and not self.prompt.strip():
            raise ValueError("'prompt' is empty")
        if self.messages is not None and not any(m.role == "user" for m in self.messages):
            raise ValueError("'messages' needs at least one user message")
        scorer = self.effective_scorer
        if scorer in NEEDS_EXPECTED and self.expected is None:
            raise ValueError(f"scorer '{scorer}' needs 'expected'")
        if scorer == "contains" and not _is_text_or_texts(self.expected):
            raise ValueError("scorer 'contains' needs 'expected' as a string or a list of strings")
        if scorer in ("exact", "regex") and not isinstance(self.expected, str):
            raise ValueError(f"scorer '{scorer}' needs 'expected' as a string")
        if scorer == "regex":
            try:
                re.compile(str(self.expected))
            except re.error as exc:
                raise ValueError(f"'expected' is not a valid regular expression: {exc}") from None
        if self.json_schema is not None:
            if scorer != "json":
                raise ValueError("'schema' only applies to scorer 'json'")
            _check_schema(self.json_schema)
        return self

    @property
    def effective_scorer(self) -> str | None:
        """The scorer that grades this task; None means unscored (answers kept for human review)."""
        if self.scorer is not None:
            return self.scorer
        if self.json_schema is not None:
            return "json"
        if self.expected is not None:
            return "contains"
        return None

    @property
    def key(self) -> str:
        """The task's id, or a hash of what is sent: stable across runs of the same file."""
        if self.id:
            return self.id
        sent = json.dumps(self.chat_messages(), sort_keys=True, ensure_ascii=False)
        return "task-" + hashlib.sha256(sent.encode()).hexdigest()[:10]

    @property
    def shown_prompt(self) -> str:
        """What a reader sees as the question: the prompt, or the last user message."""
        if self.prompt is not None:
            return self.prompt
        assert self.messages is not None
        return next(m.content for m in reversed(self.messages) if m.role == "user")

    def chat_messages(self) -> list[dict[str, str]]:
        if self.prompt is not None:
            return [{"role": "user", "content": self.prompt}]
        assert self.messages is not None
        return [{"role": m.role, "content": m.content} for m in self.messages]


def _is_text_or_texts(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v.strip() for v in value)


def _check_schema(schema: dict[str, Any]) -> None:
    from jsonschema import exceptions, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        raise ValueError(f"'schema' is not a valid JSON schema: {exc.message}") from None


def parse_tasks(content: str, source: str = "<tasks>") -> list[Task]:
    """Tasks from JSONL text; raises TaskFileError naming `source:line` for the first bad line."""
    tasks: list[Task] = []
    first_line_of: dict[str, int] = {}
    for number, line in enumerate(content.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            raw = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise TaskFileError(source, number, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(raw, dict):
            raise TaskFileError(source, number, "a task must be a JSON object")
        try:
            task = Task.model_validate(raw)
        except ValidationError as exc:
            raise TaskFileError(source, number, _first_problem(exc)) from None
        if task.key in first_line_of:
            raise TaskFileError(
                source,
                number,
                f"task '{task.key}' repeats line {first_line_of[task.key]} (ids must be unique)",
            )
        first_line_of[task.key] = number
        tasks.append(task)
    if not tasks:
        raise TaskFileError(source, None, "no tasks (one JSON object per line expected)")
    return tasks


def load_tasks(path: Path) -> list[Task]:
    """Tasks from a JSONL file."""
    try:
        content = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskFileError(str(path), None, "no such file") from None
    except UnicodeDecodeError:
        raise TaskFileError(str(path), None, "not UTF-8 text") from None
    except OSError as exc:
        raise TaskFileError(str(path), None, f"cannot read it ({exc.strerror or exc})") from None
    return parse_tasks(content, str(path))


def _first_problem(exc: ValidationError) -> str:
    problem = exc.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    message = str(problem["msg"]).removeprefix("Value error, ")
    if problem["type"] == "extra_forbidden":
        return f"unknown field '{where}' (fields: id, category, prompt, messages, expected, scorer, schema, max_tokens)"
    return f"field '{where}': {message}" if where else message
