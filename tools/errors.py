"""Typed failures of the sizing engine.

Every error a user can cause derives from `SizingError`; only the CLI and the UI
turn these into exit codes or on-screen messages.
"""

from __future__ import annotations

from typing import TypeVar

_Number = TypeVar("_Number", int, float)


class SizingError(Exception):
    """Root of every error the product raises on purpose.

    `str(exc)` is the English line the CLI prints. A common error also carries a `code` and the
    `values` it names, so a visitor's screen can say it in their language (tools/error_texts.py).
    """

    def __init__(self, message: str = "", *, code: str | None = None, **values: object) -> None:
        super().__init__(message)
        self.code = code
        self.values = values


class InvalidInputError(SizingError, ValueError):
    """A value is out of range or malformed (zero users, negative context...)."""


class OutOfRangeError(InvalidInputError):
    """A number outside its valid range: `name` must be from `low` to `high`, `value` was given."""

    def __init__(self, message: str, *, name: str, low: float, high: float, value: object) -> None:
        super().__init__(message, code="out_of_range", name=name, low=low, high=high, value=value)


def check_range(value: _Number, low: _Number, high: _Number, name: str, message: str) -> _Number:
    """`value` when it is from `low` to `high`; otherwise OutOfRangeError with `message`."""
    if not low <= value <= high:
        raise OutOfRangeError(message, name=name, low=low, high=high, value=value)
    return value


class UnknownChoiceError(InvalidInputError):
    """A name that is not one of the valid choices (model, precision, card...)."""

    def __init__(
        self, kind: str, value: str, choices: list[str] | tuple[str, ...], hint: str | None = None
    ) -> None:
        self.kind = kind
        self.value = value
        self.choices = list(choices)
        self.hint = hint
        shown = ", ".join(self.choices[:40])
        more = "" if len(self.choices) <= 40 else f", … ({len(self.choices)} in all)"
        suggestion = f"did you mean {hint!r}? " if hint else ""
        super().__init__(
            f"unknown {kind} {value!r}; {suggestion}valid choices: {shown}{more}",
            code=f"unknown_{kind}",
            value=value,
            choices=f"{shown}{more}",
        )


class UnknownModelError(UnknownChoiceError):
    def __init__(self, value: str, choices: list[str] | tuple[str, ...], hint: str | None = None) -> None:
        super().__init__("model", value, choices, hint)


class UnknownPrecisionError(UnknownChoiceError):
    def __init__(self, value: str, choices: list[str] | tuple[str, ...]) -> None:
        super().__init__("precision", value, choices)


class UnknownCardError(UnknownChoiceError):
    def __init__(self, value: str, choices: list[str] | tuple[str, ...]) -> None:
        super().__init__("card", value, choices)


class ModelConfigError(InvalidInputError):
    """A config.json that cannot be read or lacks the fields the arithmetic needs."""
