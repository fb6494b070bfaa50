"""Typed failures of the evaluation tools (a bad task file, a bad option)."""

from __future__ import annotations

from tools.errors import InvalidInputError, SizingError


class EvalError(SizingError):
    """Root of the failures `sizing compare` and `sizing loadtest` raise on purpose."""


class TaskFileError(EvalError, InvalidInputError):
    """A task file that cannot be read, or a line in it that is not a valid task."""

    def __init__(self, source: str, line: int | None, problem: str) -> None:
        self.source = source
        self.line = line
        self.problem = problem
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")


class EvalOptionError(EvalError, InvalidInputError):
    """Options that cannot work together (a judge task without a judge, a bad URL...)."""


class ResultsFileError(EvalError):
    """A results file from an earlier run that cannot be resumed or would be overwritten."""
