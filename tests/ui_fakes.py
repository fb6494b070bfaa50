"""A small stand-in for `assistant.service.Assistant`, for the web app's unit tests.

It follows the service contract (answer / stream / health) with scripted replies, so the UI's
handlers can be tested without an index or a model. The end-to-end tests use the real service.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from assistant.schemas import ConversationState, FinalEvent, Reply, Source, Step, StepEvent, TextDelta


class FakeAssistant:
    """Answers every message with a scripted reply; records what it was asked."""

    def __init__(
        self,
        answer: str = "You need **2× 80 GB**.\n\n- weights: 70 B × 2 bytes = 140 GB",
        language: str = "en",
        calculations: list[Any] | None = None,
        fail_with: BaseException | None = None,
    ) -> None:
        self.answer_text = answer
        self.language = language
        self.calculations = calculations or []
        self.fail_with = fail_with
        self.calls: list[tuple[str, ConversationState | None]] = []

    def _reply(self, message: str, state: ConversationState | None) -> Reply:
        current = state or ConversationState()
        turns = current.with_turn("user", message).with_turn("assistant", self.answer_text)
        return Reply(
            answer=self.answer_text,
            language=self.language,  # type: ignore[arg-type]
            mode="offline",
            calculations=self.calculations,
            sources=[Source(title="VRAM arithmetic", path="en/vram-arithmetic.md", section="Weights")],
            state=turns.model_copy(update={"language": self.language, "model": "70b"}),
            steps=[Step(kind="calculate", title="Calculated VRAM", detail="140 GB of weights")],
        )

    def answer(self, message: str, state: ConversationState | None = None) -> Reply:
        self.calls.append((message, state))
        if self.fail_with is not None:
            raise self.fail_with
        return self._reply(message, state)

    def stream(
        self, message: str, state: ConversationState | None = None
    ) -> Iterator[StepEvent | TextDelta | FinalEvent]:
        self.calls.append((message, state))
        yield StepEvent(step=Step(kind="calculate", title="Calculating VRAM", status="running"))
        if self.fail_with is not None:
            raise self.fail_with
        yield StepEvent(step=Step(kind="calculate", title="Calculated VRAM", detail="140 GB of weights"))
        yield StepEvent(step=Step(kind="search", title="Searched the articles", detail="1 passage"))
        middle = len(self.answer_text) // 2
        yield TextDelta(text=self.answer_text[:middle])
        yield TextDelta(text=self.answer_text[middle:])
        yield FinalEvent(reply=self._reply(message, state))

    def health(self) -> dict[str, Any]:
        return {"mode": "offline", "llm_reachable": None, "chroma_reachable": True}
