"""What the web app keeps for one visitor, in that visitor's `gr.State` (never module-level)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from assistant.ui.texts import Lang

if TYPE_CHECKING:
    from assistant.schemas import ConversationState, HandoffOffer
    from tools import SizingResult

# The rate limit counts messages over a sliding window of this many seconds ("per minute").
RATE_WINDOW_S = 60.0


@dataclass(frozen=True)
class VisitorSession:
    """One visitor's conversation: the assistant's state, their language, their last recommendation.

    Frozen: handlers return an updated copy, so a failed turn never leaves half an update behind.
    """

    conversation: ConversationState | None = None
    language: Lang | None = None  # language of the visitor's last message, as the assistant read it
    last_result: SizingResult | None = None  # the conversation's most recent calculation
    last_result_language: Lang | None = None  # the language its texts were written in
    handoff: HandoffOffer | None = None  # the last reply's "Talk to an engineer" offer
    sent_at: tuple[float, ...] = field(default_factory=tuple)  # monotonic times of recent messages

    def seconds_until_allowed(self, limit_per_minute: int, now: float) -> float:
        """0 when another message is allowed now; otherwise how long until the oldest one ages out."""
        recent = [sent for sent in self.sent_at if now - sent < RATE_WINDOW_S]
        if len(recent) < limit_per_minute:
            return 0.0
        oldest_counted = sorted(recent)[-limit_per_minute]
        return max(0.0, RATE_WINDOW_S - (now - oldest_counted))

    def with_message_at(self, now: float) -> VisitorSession:
        recent = tuple(sent for sent in self.sent_at if now - sent < RATE_WINDOW_S)
        return replace(self, sent_at=(*recent, now))
