"""Typed failures of the evaluation tools (a bad task file, a bad option)."""

from __future__ import annotations

from tools.errors import InvalidInputError, SizingError

# What can be wrong with a task file, by problem code, in English: the words `sizing compare`
# prints. A front end in another language words the same codes from the error's `code` and
# `params` (the web tab: assistant/ui/texts.py, TASK_PROBLEMS_ES).
TASK_PROBLEMS: dict[str, str] = {
    "not_json": "not valid JSON ({detail} at column {column})",
    "not_an_object": "a task must be a JSON object",
    "unknown_field": "unknown field '{field}' (fields: {fields})",
    # one of pydantic's own checks (`check` is its error type, `detail` its English message)
    "invalid_field": "field '{field}': {detail}",
    "invalid_task": "{detail}",
    "prompt_or_messages": "give exactly one of 'prompt' or 'messages'",
    "empty_prompt": "'prompt' is empty",
    "no_user_message": "'messages' needs at least one user message",
    "needs_expected": "scorer '{scorer}' needs 'expected'",
    "needs_expected_texts": "scorer 'contains' needs 'expected' as a string or a list of strings",
    "needs_expected_text": "scorer '{scorer}' needs 'expected' as a string",
    "bad_regex": "'expected' is not a valid regular expression: {detail}",
    "schema_without_json": "'schema' only applies to scorer 'json'",
    "bad_schema": "'schema' is not a valid JSON schema: {detail}",
    "repeated_id": "task '{key}' repeats line {first_line} (ids must be unique)",
    "no_tasks": "no tasks (one JSON object per line expected)",
    "no_such_file": "no such file",
    "not_utf8": "not UTF-8 text",
    "unreadable": "cannot read it ({detail})",
    "too_large": "larger than {limit} (split it into smaller task files)",
}


class EvalError(SizingError):
    """Root of the failures `sizing compare` and `sizing loadtest` raise on purpose."""


class TaskFileError(EvalError, InvalidInputError):
    """A task file that cannot be read, or a line in it that is not a valid task.

    Carries the problem as a code of TASK_PROBLEMS and its values, so that each front end
    words it in its reader's language; `str()` is the English `source:line: problem`."""

    code: str

    def __init__(self, source: str, line: int | None, code: str, **params: object) -> None:
        if code not in TASK_PROBLEMS:
            raise ValueError(f"unknown task-file problem code {code!r}")
        self.source = source
        self.line = line
        self.params = params
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {TASK_PROBLEMS[code].format(**params)}", code=code, **params)

    @property
    def problem(self) -> str:
        """The problem in English, without the file and line."""
        return TASK_PROBLEMS[self.code].format(**self.params)


class EvalOptionError(EvalError, InvalidInputError):
    """Options that cannot work together (a judge task without a judge, a bad URL...)."""


class ResultsFileError(EvalError):
    """A results file from an earlier run that cannot be resumed or would be overwritten."""
