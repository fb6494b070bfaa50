"""Thumbs up/down with an optional comment on every chat answer, and the question log behind them.

`RecordingAssistant` wraps the chat assistant: each final reply is logged (question, understood
slots, calculator outcome, retrieval scores, language, mode) under the digest of the answer as the
chat shows it. A thumbs click on that answer finds its logged question through the digest, so the
feedback row carries the full context even on another replica. No IP address is recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from assistant.desk.errors import DeskUnavailableError
from assistant.desk.store import DeskStore, FeedbackEntry, QuestionEntry
from assistant.schemas import ConversationState, FinalEvent, Reply, StreamEvent
from assistant.ui.desk_texts import desk_text, label
from assistant.ui.handlers import ChatAssistant, final_answer_markdown
from assistant.ui.session import VisitorSession
from assistant.ui.texts import Lang
from tools import SizingResult
from tools.errors import SizingError

log = logging.getLogger(__name__)

SLOT_FIELDS = ("model", "precision", "tasks", "context", "users", "gpu", "engine", "kv_dtype")


def slots_of(state: ConversationState | None) -> dict[str, Any]:
    if state is None:
        return {}
    return {name: getattr(state, name) for name in SLOT_FIELDS if getattr(state, name) is not None}


def outcome_of(calculations: list[SizingResult]) -> dict[str, Any]:
    """The calculator's verdict on the answer's last calculation, in a few fields."""
    if not calculations:
        return {}
    last = calculations[-1]
    return {
        "model": last.model.id,
        "precision": last.precision,
        "context": last.context,
        "users": last.users,
        "total_gb": last.total_gb,
        "recommended": last.recommended,
        "fits": any(option.fits for option in last.options),
    }


def nothing_fit(calculations: list[SizingResult]) -> bool:
    return bool(calculations) and not any(option.fits for result in calculations for option in result.options)


def question_entry(message: str, reply: Reply) -> QuestionEntry:
    from assistant.desk.gaps import unknown_card, unknown_model
    from assistant.offline.understanding import understand

    reading = understand(message, reply.language)
    return QuestionEntry(
        question=message,
        answer_markdown=final_answer_markdown(reply),
        language=reply.language,
        mode=reply.mode,
        slots=slots_of(reply.state),
        unknown_model=unknown_model(message, reading),
        unknown_card=unknown_card(message, reading),
        outcome=outcome_of(reply.calculations),
        nothing_fit=nothing_fit(reply.calculations),
        retrieval_scores=[source.score for source in reply.sources if source.score is not None],
    )


class RecordingAssistant:
    """The chat assistant, with every final reply written to the question log."""

    def __init__(self, inner: ChatAssistant, desk: DeskStore) -> None:
        self.inner = inner
        self.desk = desk

    def answer(self, message: str, state: ConversationState | None = None) -> Reply:
        reply = self.inner.answer(message, state)
        self._record(message, reply)
        return reply

    def stream(self, message: str, state: ConversationState | None = None) -> Iterator[StreamEvent]:
        for event in self.inner.stream(message, state):
            if isinstance(event, FinalEvent):
                self._record(message, event.reply)
            yield event

    def health(self) -> dict[str, Any]:
        return self.inner.health()

    def _record(self, message: str, reply: Reply) -> None:
        try:
            self.desk.log_question(question_entry(message, reply))
        except SizingError as exc:  # the visitor still gets the answer
            log.warning("question log: %s", exc)


def message_text(content: Any) -> str:
    """A chat message's text, whatever shape the browser sent it in."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or content.get("value") or "")
    if isinstance(content, list | tuple):
        return "\n".join(message_text(part) for part in content)
    return "" if content is None else str(content)


def answer_at(history: list[dict[str, Any]], index: int) -> str:
    """The final answer of the turn a thumbs click landed on.

    The chat shows a turn's steps and its answer as one group; the click reports the group's first
    message, so the answer is the group's last message that is not a step. The chat's own copy is
    what the question log hashed.
    """
    if not 0 <= index < len(history):
        return ""
    end = index
    while end + 1 < len(history) and history[end + 1].get("role") == "assistant":
        end += 1
    answers = [
        message
        for message in history[index : end + 1]
        if message.get("role") == "assistant" and not (message.get("metadata") or {}).get("title")
    ]
    return message_text(answers[-1].get("content")) if answers else ""


def question_before(history: list[dict[str, Any]], index: int) -> str:
    for message in reversed(history[:index]):
        if message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def record_like(
    desk: DeskStore,
    liked: Any,
    index: int,
    value: Any,
    history: list[dict[str, Any]],
    session: VisitorSession,
    lang: Lang,
    mode: str = "offline",
) -> int | None:
    """Store one thumbs click; returns the feedback id (None for an un-click)."""
    if liked is True or liked == "Like":
        rating = "up"
    elif liked is False or liked == "Dislike":
        rating = "down"
    else:
        return None
    answer = answer_at(history, index) or message_text(value)
    entry = FeedbackEntry(
        rating=rating,
        answer_markdown=answer,
        question=question_before(history, index),
        language=session.language or lang,
        mode=mode,
        slots=slots_of(session.conversation),
        outcome=outcome_of([session.last_result] if session.last_result else []),
    )
    return desk.add_feedback(entry)


@dataclass(frozen=True)
class FeedbackWidgets:
    comment: Any
    send: Any
    status: Any


def build_feedback(
    desk: DeskStore | None, chatbot: Any, session: Any, browser_lang: Any, mode: str = "offline"
) -> FeedbackWidgets:
    """The comment box under the chat, and the `.like` event on every answer."""
    feedback_id = gr.State(None)
    with gr.Row(visible=False, elem_id="feedback-comment-row") as row:
        comment = gr.Textbox(
            label=label("Comment on this answer (optional)"),
            max_length=2000,
            scale=5,
            elem_id="feedback-comment",
        )
        send = gr.Button(label("Send comment"), scale=1, elem_id="feedback-send")
    status = gr.Markdown(elem_id="feedback-status")

    def on_like(data: gr.LikeData, history: list[dict[str, Any]], state: VisitorSession, request: gr.Request):
        lang = browser_lang(request)
        if desk is None:
            return None, gr.Row(visible=False), ""
        index = data.index if isinstance(data.index, int) else int(data.index[0])
        try:
            stored = record_like(desk, data.liked, index, data.value, history or [], state, lang, mode)
        except DeskUnavailableError as exc:
            log.warning("feedback: %s", exc)
            return None, gr.Row(visible=False), desk_text("desk_unavailable", lang)
        if stored is None:
            return None, gr.Row(visible=False), ""
        return stored, gr.Row(visible=True), desk_text("feedback_thanks", lang)

    def on_comment(feedback: int | None, text: str, request: gr.Request):
        lang = browser_lang(request)
        if desk is None or feedback is None or not (text or "").strip():
            return gr.Textbox(), gr.Row(), ""
        try:
            desk.comment_feedback(feedback, text)
        except DeskUnavailableError as exc:
            log.warning("feedback comment: %s", exc)
            return gr.Textbox(), gr.Row(), desk_text("desk_unavailable", lang)
        return gr.Textbox(value=""), gr.Row(visible=False), desk_text("comment_thanks", lang)

    chatbot.like(
        on_like,
        inputs=[chatbot, session],
        outputs=[feedback_id, row, status],
        queue=False,
        api_visibility="private",
    )
    gr.on(
        triggers=[send.click, comment.submit],
        fn=on_comment,
        inputs=[feedback_id, comment],
        outputs=[comment, row, status],
        queue=False,
        api_visibility="private",
    )
    return FeedbackWidgets(comment, send, status)
