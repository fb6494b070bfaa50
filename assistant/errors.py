"""Typed failures of LLM mode.

Every way the chat model can fail to produce an answer is an `LLMUnavailableError`; the
service catches it and falls back to the offline answer, showing `str(error)` (one line,
no secrets) as the notice. `kind` names the fault for logs and for localised notices.
"""

from __future__ import annotations

from tools.errors import SizingError


class LLMUnavailableError(SizingError):
    """The chat model gave no usable answer; the caller answers offline instead."""

    kind = "unavailable"

    def __init__(self, reason: str) -> None:
        # One line whatever the upstream message looked like (HTML error pages, tracebacks).
        self.reason = " ".join(reason.split())
        super().__init__(self.reason)


class LLMConnectionError(LLMUnavailableError):
    """The endpoint could not be reached (connection refused, dropped, DNS)."""

    kind = "connection"


class LLMHTTPError(LLMUnavailableError):
    """The endpoint answered with an HTTP error status (4xx or 5xx)."""

    kind = "http"

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        super().__init__(reason)


class LLMTimeoutError(LLMUnavailableError):
    """No complete answer within `llm_timeout` seconds."""

    kind = "timeout"


class LLMMalformedReplyError(LLMUnavailableError):
    """The reply could not be used: not JSON, tool-call arguments that are not JSON, an empty answer."""

    kind = "malformed"


class LLMStepLimitError(LLMUnavailableError):
    """The model kept calling tools past `llm_max_steps` model calls without answering."""

    kind = "step_limit"
