"""The task file of `sizing compare`: JSON Lines, one task per line.

    {"id": "cls-1", "category": "classification", "prompt": "...", "expected": "sales", "scorer": "exact"}
    {"messages": [{"role": "system", "content": "..."}, {"role": "user", "content": "..."}], "expected": ["80 GB"]}
    {"prompt": "Reply in JSON ...", "scorer": "json", "schema": {"type": "object", "required": ["model"]}}
    {"prompt": "Explain ...", "scorer": "judge", "expected": "a reference answer the judge may use"}

Blank lines and lines starting with `#` are skipped. Every other line must be a valid task;
the first bad one is reported as `file:line: problem`, a TaskFileError whose problem code
and values let the web tab word it in the visitor's language.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from assistant.evals.errors import TASK_PROBLEMS, TaskFileError

ScorerName = Literal["contains", "exact", "regex", "json", "judge"]
SCORERS: tuple[str, ...] = ("contains", "exact", "regex", "json", "judge")
# Scorers that grade against `expected` and cannot work without it.
NEEDS_EXPECTED = frozenset({"contains", "exact", "regex"})
# The largest task file `sizing compare` reads: tens of thousands of tasks; /dev/zero stops here.
MAX_TASK_FILE_BYTES = 64_000_000
TASK_FIELDS = "id, category, prompt, messages, expected, scorer, schema, max_tokens"


def _problem(code: str, **params: object) -> PydanticCustomError:
    """A validation failure that keeps its problem code and values (see TASK_PROBLEMS)."""
    return PydanticCustomError(code, TASK_PROBLEMS[code], params)


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
            raise _problem("prompt_or_messages")
        if self.prompt is not None and not self.prompt.strip():
            raise _problem("empty_prompt")
        if self.messages is not None and not any(m.role == "user" for m in self.messages):
            raise _problem("no_user_message")
        scorer = self.effective_scorer
        if scorer in NEEDS_EXPECTED and self.expected is None:
            raise _problem("needs_expected", scorer=scorer)
        if scorer == "contains" and not _is_text_or_texts(self.expected):
            raise _problem("needs_expected_texts")
        if scorer in ("exact", "regex") and not isinstance(self.expected, str):
            raise _problem("needs_expected_text", scorer=scorer)
        if scorer == "regex":
            try:
                regex.compile(str(self.expected))  # the engine the scorer matches with
            except regex.error as exc:
                raise _problem("bad_regex", detail=str(exc)) from None
        if self.json_schema is not None:
            if scorer != "json":
                raise _problem("schema_without_json")
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
        raise _problem("bad_schema", detail=exc.message) from None


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
            raise TaskFileError(source, number, "not_json", detail=exc.msg, column=exc.colno) from None
        if not isinstance(raw, dict):
            raise TaskFileError(source, number, "not_an_object")
        try:
            task = Task.model_validate(raw)
        except ValidationError as exc:
            code, params = _first_problem(exc)
            raise TaskFileError(source, number, code, **params) from None
        if task.key in first_line_of:
            raise TaskFileError(
                source, number, "repeated_id", key=task.key, first_line=first_line_of[task.key]
            )
        first_line_of[task.key] = number
        tasks.append(task)
    if not tasks:
        raise TaskFileError(source, None, "no_tasks")
    return tasks


def load_tasks(path: Path, source: str | None = None, max_bytes: int = MAX_TASK_FILE_BYTES) -> list[Task]:
    """Tasks from a JSONL file of at most `max_bytes`; problems name `source` (default: the path)."""
    shown = source or str(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(max_bytes + 1)  # a device such as /dev/zero is read no further
    except FileNotFoundError:
        raise TaskFileError(shown, None, "no_such_file") from None
    except OSError as exc:
        raise TaskFileError(shown, None, "unreadable", detail=exc.strerror or str(exc)) from None
    if len(data) > max_bytes:
        raise TaskFileError(shown, None, "too_large", limit=_megabytes(max_bytes))
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TaskFileError(shown, None, "not_utf8") from None
    return parse_tasks(content, shown)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:g} MB"


def _first_problem(exc: ValidationError) -> tuple[str, dict[str, object]]:
    """The problem code and values of the first validation failure (see TASK_PROBLEMS)."""
    problem = exc.errors()[0]
    check = problem["type"]
    context = dict(problem.get("ctx") or {})
    if check in TASK_PROBLEMS:  # raised by Task._check through _problem
        return check, context
    where = ".".join(str(part) for part in problem["loc"])
    if check == "extra_forbidden":
        return "unknown_field", {"field": where, "fields": TASK_FIELDS}
    detail = str(problem["msg"]).removeprefix("Value error, ")
    if not where:
        return "invalid_task", {"detail": detail}
    params: dict[str, object] = {"field": where, "detail": detail, "check": check}
    if check == "literal_error":  # pydantic words the choices "'a', 'b' or 'c'"
        params["choices"] = tuple(re.findall(r"'([^']*)'", str(context.get("expected", ""))))
    elif check == "greater_than":
        params["limit"] = context.get("gt")
    return "invalid_field", params
