"""The conversation as the browser keeps it, and going back to before one of its messages.

The chat stores `{"messages", "conversation", "language", "turns"}` in the browser's
localStorage (`gr.BrowserState`, encrypted) after every turn, so a reload continues the
conversation. `turns` holds the assistant's conversation state from before each visitor
message: retry, undo and edit rewind to one of them. Everything read back from the browser is
validated; anything malformed starts a fresh conversation instead of failing. No Gradio here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from assistant.schemas import HISTORY_TURNS, ConversationState
from assistant.ui.session import VisitorSession

log = logging.getLogger(__name__)

STORED_VERSION = 1
EMPTY: dict[str, Any] = {"version": STORED_VERSION, "messages": [], "conversation": None, "turns": []}
# Messages kept in the browser: a long conversation keeps its latest part (localStorage holds a
# few MB per site; an answer is 4-8 KB).
MAX_STORED_MESSAGES = 80
_ROLES = ("user", "assistant")

ChatMessage = dict[str, Any]
# The conversation state (as JSON) from before each visitor message; None before the first answer.
Turns = list[dict[str, Any] | None]


@dataclass(frozen=True)
class Rewound:
    messages: list[ChatMessage]
    session: VisitorSession
    turns: Turns
    text: str  # the visitor message that was taken back ("" when there was none)


def dump_state(state: ConversationState | None) -> dict[str, Any] | None:
    return None if state is None else state.model_dump(mode="json")


def load_state(value: Any) -> ConversationState | None:
    if value is None:
        return None
    try:
        state = ConversationState.model_validate(value)
    except ValidationError:
        log.info("a stored conversation state was malformed; starting from an empty one")
        return None
    # The same bounds the assistant keeps itself (ConversationState.with_turn), for an edited copy.
    recent = state.history[-HISTORY_TURNS:]
    empty = ConversationState()
    for turn in recent:
        empty = empty.with_turn(turn.role, turn.text)
    return state.model_copy(update={"history": empty.history})


def message_text(message: ChatMessage) -> str:
    """The text of a chat message, whether its content is a string or Gradio's list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _is_question(message: ChatMessage) -> bool:
    return message.get("role") == "user"


def turn_at(messages: list[ChatMessage], index: int) -> int:
    """The number of the visitor message at `index` (0 = the first one the visitor sent)."""
    return sum(1 for message in messages[:index] if _is_question(message))


def rewind(
    messages: list[ChatMessage],
    session: VisitorSession,
    turns: Turns,
    turn: int | None,
) -> Rewound:
    """The chat as it was before visitor message number `turn` (None: the last one)."""
    questions = [index for index, message in enumerate(messages) if _is_question(message)]
    if not questions:
        return Rewound(list(messages), session, list(turns), "")
    number = len(questions) - 1 if turn is None else max(0, min(turn, len(questions) - 1))
    cut = questions[number]
    # Turns and visitor messages are recorded together; a conversation restored without its
    # turns (an older copy) rewinds to an empty state rather than a wrong one.
    state = load_state(turns[number]) if number < len(turns) else None
    restored = replace(session, conversation=state, last_result=None, last_result_language=None)
    return Rewound(messages[:cut], restored, list(turns[:number]), message_text(messages[cut]))


def stored_value(messages: list[ChatMessage], session: VisitorSession, turns: Turns) -> dict[str, Any]:
    """What the browser keeps: the latest MAX_STORED_MESSAGES messages, from a visitor message on."""
    kept = list(messages)
    if len(kept) > MAX_STORED_MESSAGES:
        kept = kept[-MAX_STORED_MESSAGES:]
        while kept and not _is_question(kept[0]):
            kept.pop(0)
    questions = sum(1 for message in kept if _is_question(message))
    return {
        "version": STORED_VERSION,
        "messages": kept,
        "conversation": dump_state(session.conversation),
        "language": session.language,
        "turns": list(turns[-questions:]) if questions else [],
    }


def _text_message(raw: Any) -> ChatMessage | None:
    """A stored message rebuilt from its text parts only, or None when it is not a chat message.

    A visitor can edit what their browser keeps (the page holds the encryption key), so nothing but
    text goes back to Gradio: a file or component part would make the server read a path.
    """
    if not isinstance(raw, dict) or raw.get("role") not in _ROLES:
        return None
    content = raw.get("content")
    parts: list[Any] = content if isinstance(content, list) else [{"type": "text", "text": content}]
    texts = [part.get("text") for part in parts if isinstance(part, dict) and part.get("type") == "text"]
    if len(texts) != len(parts) or not all(isinstance(text, str) for text in texts):
        return None
    message: ChatMessage = {"role": raw["role"], "content": "".join(str(text) for text in texts)}
    metadata = raw.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("title"), str):
        message["metadata"] = {
            key: str(metadata[key]) for key in ("title", "status", "id") if isinstance(metadata.get(key), str)
        }
    options = raw.get("options")
    if isinstance(options, list):
        kept = [
            {"label": option["label"], "value": str(option.get("value") or option["label"])}
            for option in options
            if isinstance(option, dict) and isinstance(option.get("label"), str)
        ]
        if kept:
            message["options"] = kept
    return message


@dataclass(frozen=True)
class Restored:
    messages: list[ChatMessage]
    session: VisitorSession
    turns: Turns


def restore(saved: Any, session: VisitorSession) -> Restored:
    """The conversation the browser kept, validated; a fresh one when there is none or it is malformed."""
    if not isinstance(saved, dict) or saved.get("version") != STORED_VERSION:
        return Restored([], session, [])
    raw_messages = saved.get("messages")
    if not isinstance(raw_messages, list):
        return Restored([], session, [])
    messages = [clean for clean in map(_text_message, raw_messages[-MAX_STORED_MESSAGES:]) if clean]
    raw_turns = saved.get("turns")
    turns = (
        [turn if isinstance(turn, dict) else None for turn in raw_turns]
        if isinstance(raw_turns, list)
        else []
    )
    language = saved.get("language")
    restored = replace(
        session,
        conversation=load_state(saved.get("conversation")),
        language=language if language in ("en", "es") else None,
    )
    return Restored(messages, restored, turns)
