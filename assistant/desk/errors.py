"""Typed failures of the sales desk (one line each; the CLI exits 2, the UI shows the line)."""

from __future__ import annotations

from tools.errors import InvalidInputError, SizingError


class DeskUnavailableError(SizingError):
    """The desk database cannot be reached or migrated (bad URL, server down, no permission)."""


class InvalidLeadError(InvalidInputError):
    """A handoff form value that cannot be stored (no name, malformed e-mail, no consent)."""
