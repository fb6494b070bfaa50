"""Typed failures of the sizing engine.

Every error a user can cause derives from `SizingError`; only the CLI and the UI
turn these into exit codes or on-screen messages.
"""

from __future__ import annotations


class SizingError(Exception):
    """Root of every error the product raises on purpose."""


class InvalidInputError(SizingError, ValueError):
    """A value is out of range or malformed (zero users, negative context...)."""


class UnknownChoiceError(InvalidInputError):
    """A name that is not one of the valid choices (model, precision, card...)."""

    def __init__(self, kind: str, value: str, choices: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.value = value
        self.choices = list(choices)
        shown = ", ".join(self.choices[:40])
        more = "" if len(self.choices) <= 40 else f", … ({len(self.choices)} in all)"
        super().__init__(f"unknown {kind} {value!r}; valid choices: {shown}{more}")


class UnknownModelError(UnknownChoiceError):
    def __init__(self, value: str, choices: list[str] | tuple[str, ...]) -> None:
        super().__init__("model", value, choices)


class UnknownPrecisionError(UnknownChoiceError):
    def __init__(self, value: str, choices: list[str] | tuple[str, ...]) -> None:
        super().__init__("precision", value, choices)


class UnknownCardError(UnknownChoiceError):
    def __init__(self, value: str, choices: list[str] | tuple[str, ...]) -> None:
        super().__init__("card", value, choices)


class ModelConfigError(InvalidInputError):
    """A config.json that cannot be read or lacks the fields the arithmetic needs."""
