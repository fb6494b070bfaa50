"""The chat, as Gradio components and events: used by the full app and by the `/widget` page.

`build_chat_panel(demo, assistant, settings, view)` lays out the conversation, the question box
and the Stop / New conversation buttons inside the current Blocks context and wires every
event: send, example and follow-up clicks, stop, retry, undo, edit, and the copy of the
conversation kept in the browser (localStorage) so a reload continues it. Per-visitor data
lives only in `gr.State` and `gr.BrowserState`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import gradio as gr

from assistant.settings import Settings
from assistant.ui import handlers, history
from assistant.ui.catalogue import all_keys, phrase
from assistant.ui.chat_view import AnswerView
from assistant.ui.client_limits import GateFactory
from assistant.ui.handlers import ChatAssistant, ChatLimits
from assistant.ui.labels import browser_lang, label
from assistant.ui.session import VisitorSession
from assistant.ui.texts import LANGUAGES, Lang

# The script that shows each new answer from its beginning (see the file's comment).
CHAT_SCRIPT = Path(__file__).with_name("static") / "chat.js"
SCRIPT_PREFIX = "script_"
EXAMPLE_KEYS = ("example_1", "example_2", "example_3", "example_4")

CHAT_CSS = """
.sizing-chat .message-content table { display: block; overflow-x: auto; max-width: 100%; }
.sizing-chat .message-content table { font-size: 0.9em; }
.sizing-chat .message-content td, .sizing-chat .message-content th { white-space: nowrap;
  overflow-wrap: normal; word-break: normal; padding: 6px 8px; }
/* Headers and cells of three words or more (a verdict, a note; marked by chat.js) wrap between
   words, so a wide table fits the column; figures stay on one line. */
.sizing-chat .message-content th { white-space: normal; }
.sizing-chat .message-content td:first-child { white-space: normal; min-width: 6em; }
.sizing-chat .message-content td.sizing-wrap { white-space: normal; min-width: 9em; }
/* The scroll-down arrow sits in the log's right margin, off the answer's text. */
.sizing-chat .scroll-down-button-container { left: auto !important; right: 0 !important;
  transform: none !important; bottom: 4px !important; }
.sizing-chat .scroll-down-button-container button { padding: 0 !important; }
.sizing-chat details { border: 1px solid var(--border-color-primary); border-radius: 6px;
  padding: 0.3em 0.7em; margin: 0.4em 0; }
.sizing-chat details > summary { cursor: pointer; font-weight: 600; }
.sizing-chat details[open] > summary { margin-bottom: 0.4em; }
#chat-input textarea { font-size: 16px; }
.sizing-chat .edit-textarea { width: 100% !important; min-height: 4em !important; font-size: 16px; }
/* One set of buttons per answer: the steps above it (collapsible metadata messages) get none. */
.sizing-chat .message:has(.thought-group) + .message-buttons { display: none; }
"""


def head_script() -> str:
    """The `<script>` for the page head (Gradio's `head`), with the catalogue's `script_*` texts."""
    words = {
        lang: {key: phrase(key, lang) for key in sorted(all_keys()) if key.startswith(SCRIPT_PREFIX)}
        for lang in LANGUAGES
    }
    # json.dumps escapes nothing HTML-special; "</" would end the script element early.
    table = json.dumps(words, ensure_ascii=False).replace("</", "<\\/")
    return f"<script>window.SIZING_TEXTS = {table};\n{CHAT_SCRIPT.read_text(encoding='utf-8')}</script>"


def examples_for(lang: Lang) -> Any:
    """The example questions of the empty chat, in the visitor's language (Chatbot examples)."""
    return [{"text": phrase(key, lang)} for key in EXAMPLE_KEYS]


@dataclass(frozen=True)
class ChatPanel:
    """The components other parts of the page read (the sales draft reads the session)."""

    chatbot: gr.Chatbot
    message: gr.Textbox
    session: gr.State


def build_chat_panel(
    demo: gr.Blocks,
    assistant: ChatAssistant,
    settings: Settings,
    view: AnswerView,
    *,
    storage_key: str,
    height: int | str = 560,
    greeting: Callable[[Lang], str] | None = None,
    feedback: bool = False,
    after_turn: Callable[[gr.Chatbot, gr.State], dict[str, Any]] | None = None,
    under_log: Callable[[gr.Chatbot, gr.State], object] | None = None,
    client_gate: GateFactory | None = None,
) -> ChatPanel:
    """The chat column, in the current layout context, with all its events wired; the
    conversation is `height` tall (a CSS length for the widget) and scrolls inside, and the
    empty chat shows `greeting(visitor language)` above the example questions. `feedback` shows
    thumbs up/down on answers; `after_turn(chatbot, session)`, called under the chat, may lay out more
    components there and gives the keyword arguments of one more event run after every answer
    (the "talk to an engineer" offer); `under_log(chatbot, session)` lays out components between the
    conversation and the question box (the feedback comment box and its status)."""
    limits = ChatLimits.from_settings(settings)
    secret = settings.browser_state_secret.get_secret_value() if settings.browser_state_secret else None

    session = gr.State(VisitorSession())
    turns = gr.State([])  # the conversation state before each visitor message (for retry/undo/edit)
    pending = gr.State("")
    stored = gr.BrowserState(history.EMPTY, storage_key=storage_key, secret=secret)

    chatbot = gr.Chatbot(
        label=label("label_chat_log"),
        show_label=False,
        elem_id="chatbot",
        elem_classes=["sizing-chat"],
        height=height,
        layout="panel",
        autoscroll=False,  # chat.js shows a new answer from its top instead of following its end
        buttons=["copy"],
        feedback_options=("Like", "Dislike") if feedback else None,
        editable="user",
        placeholder=greeting("en") if greeting else None,
        examples=examples_for("en"),
    )
    # Right under the conversation, next to the answers it is about (the feedback box and its status).
    if under_log is not None:
        under_log(chatbot, session)
    with gr.Row(equal_height=True):
        message = gr.Textbox(
            label=label("Your question"),
            show_label=False,
            placeholder=label("Ask about a model, a card, a context or a number of users…"),
            elem_id="chat-input",
            lines=1,
            max_lines=6,
            scale=6,
            min_width=160,
            autofocus=True,
        )
        send = gr.Button(label("Send"), variant="primary", scale=1, min_width=80, elem_id="chat-send")
        stop = gr.Button(
            label("label_stop"), variant="stop", scale=1, min_width=80, visible=False, elem_id="chat-stop"
        )
    restart = gr.Button(
        label("New conversation"), size="sm", variant="secondary", elem_id="chat-new-conversation"
    )
    # Built here, under the chat, so that what it lays out sits below the conversation.
    extra_kwargs = after_turn(chatbot, session) if after_turn is not None else None

    # ---- handlers bound to this panel

    def run_turn(
        text: str,
        messages: list[dict[str, Any]],
        visitor: VisitorSession,
        before: history.Turns,
        request: gr.Request,
    ):
        before = [*before, history.dump_state(visitor.conversation)]
        for shown, updated in handlers.stream_chat(
            assistant,
            limits,
            text,
            messages or [],
            visitor,
            browser_lang(request),
            time.monotonic(),
            view=view,
            client=client_gate(request) if client_gate is not None else None,
        ):
            yield shown, updated, before

    def take_message(text: str) -> tuple[Any, ...]:
        return (
            gr.Textbox(value="", interactive=False),
            gr.Button(visible=False),
            gr.Button(visible=True),
            text,
        )

    def lock_input() -> tuple[Any, ...]:
        return gr.Textbox(interactive=False), gr.Button(visible=False), gr.Button(visible=True)

    def unlock_input() -> tuple[Any, ...]:
        return gr.Textbox(interactive=True), gr.Button(visible=True), gr.Button(visible=False)

    def pick(event: gr.SelectData) -> str:
        value = event.value
        if isinstance(value, dict):
            return str(value.get("value") or value.get("text") or value.get("label") or "")
        return str(value)

    def rewind_last(
        messages: list[dict[str, Any]], visitor: VisitorSession, before: history.Turns
    ) -> tuple[Any, ...]:
        """Back to before the visitor's last message; that message comes back as text."""
        rewound = history.rewind(messages or [], visitor, before, turn=None)
        return rewound.messages, rewound.session, rewound.turns, rewound.text

    def rewind_edit(
        messages: list[dict[str, Any]],
        visitor: VisitorSession,
        before: history.Turns,
        event: gr.EditData,
    ) -> tuple[Any, ...]:
        index = event.index[0] if isinstance(event.index, list | tuple) else event.index
        rewound = history.rewind(messages or [], visitor, before, turn=history.turn_at(messages or [], index))
        return rewound.messages, rewound.session, rewound.turns, str(event.value or "")

    def stopped(messages: list[dict[str, Any]], visitor: VisitorSession) -> list[dict[str, Any]]:
        lang = visitor.language or "en"
        return [*(messages or []), {"role": "assistant", "content": f"_{phrase('stopped', lang)}_"}]

    def new_conversation(visitor: VisitorSession) -> tuple[Any, ...]:
        # Keeps the message times: starting over must not reset the rate limit.
        return [], VisitorSession(sent_at=visitor.sent_at), [], history.EMPTY

    def save(messages: list[dict[str, Any]], visitor: VisitorSession, before: history.Turns) -> Any:
        return history.stored_value(messages or [], visitor, before)

    def restore(saved: Any, visitor: VisitorSession, request: gr.Request) -> tuple[Any, ...]:
        lang = browser_lang(request)
        restored = history.restore(saved, visitor)
        chat = gr.Chatbot(
            value=cast(Any, restored.messages),
            examples=examples_for(lang),
            placeholder=greeting(lang) if greeting else None,
        )
        return chat, restored.session, restored.turns

    # ---- events

    chat_kwargs: dict[str, Any] = {
        "concurrency_id": "chat",
        "concurrency_limit": settings.concurrency_limit,
    }
    private: dict[str, Any] = {"api_visibility": "private"}
    quick: dict[str, Any] = {"queue": False, **private}
    turn_kwargs: dict[str, Any] = {
        "fn": run_turn,
        "inputs": [pending, chatbot, session, turns],
        "outputs": [chatbot, session, turns],
        "show_progress": "minimal",
        **private,
        **chat_kwargs,
    }
    unlock_kwargs: dict[str, Any] = {"fn": unlock_input, "outputs": [message, send, stop], **quick}
    save_kwargs: dict[str, Any] = {
        "fn": save,
        "inputs": [chatbot, session, turns],
        "outputs": [stored],
        **quick,
    }
    # Back to the question box, with the focus, for the next question (keyboard users).
    refocus_kwargs: dict[str, Any] = {
        "fn": None,
        "js": "() => { document.querySelector('#chat-input textarea')?.focus({ preventScroll: true }); }",
        "queue": False,
    }
    lock_kwargs: dict[str, Any] = {"fn": lock_input, "outputs": [message, send, stop], **quick}

    def finish(event: Any) -> None:
        if extra_kwargs is not None:
            event = event.then(**extra_kwargs)
        event.then(**unlock_kwargs).then(**save_kwargs).then(**refocus_kwargs)

    turns_started: list[Any] = []

    def answer_after(event: Any) -> None:
        """Answer the question `event` left in `pending` (Stop cancels it), then finish the turn."""
        answering = event.then(**turn_kwargs)
        turns_started.append(answering)
        finish(answering)

    answer_after(
        gr.on(
            triggers=[message.submit, send.click],
            fn=take_message,
            inputs=[message],
            outputs=[message, send, stop, pending],
            **quick,
        )
    )
    for trigger in (chatbot.example_select, chatbot.option_select):
        answer_after(trigger(pick, outputs=[pending], **quick).then(**lock_kwargs))
    # Retry and Edit rewind the conversation, then answer the question they put back.
    rewind_io: dict[str, Any] = {
        "inputs": [chatbot, session, turns],
        "outputs": [chatbot, session, turns, pending],
        **quick,
    }
    answer_after(chatbot.retry(rewind_last, **rewind_io).then(**lock_kwargs))
    answer_after(chatbot.edit(rewind_edit, **rewind_io).then(**lock_kwargs))

    chatbot.undo(
        rewind_last, inputs=[chatbot, session, turns], outputs=[chatbot, session, turns, message], **quick
    ).then(**save_kwargs)

    stopping = stop.click(
        stopped, inputs=[chatbot, session], outputs=[chatbot], cancels=turns_started, **quick
    )
    finish(stopping)

    gr.on(
        triggers=[restart.click, chatbot.clear],
        fn=new_conversation,
        inputs=[session],
        outputs=[chatbot, session, turns, stored],
        **quick,
    ).then(**refocus_kwargs)

    demo.load(restore, inputs=[stored, session], outputs=[chatbot, session, turns], **quick)
    return ChatPanel(chatbot=chatbot, message=message, session=session)


def register_chat_api(
    assistant: ChatAssistant, settings: Settings, session: gr.State, gates: GateFactory
) -> None:
    """`api_name="chat"`: one message in, the answer's Markdown out, in the chat's concurrency
    group; hidden components carry it (gradio_client sees these, not the widgets)."""
    limits = ChatLimits.from_settings(settings)
    api_message = gr.Textbox(visible=False)
    api_answer = gr.Textbox(visible=False)
    api_chat_trigger = gr.Button(visible=False)

    def chat_api(message: str, session: VisitorSession, request: gr.Request) -> tuple[str, VisitorSession]:
        return handlers.answer_once(
            assistant, limits, message, session, browser_lang(request), time.monotonic(), gates(request)
        )

    api_chat_trigger.click(
        chat_api,
        inputs=[api_message, session],
        outputs=[api_answer, session],
        api_name="chat",
        api_description="Ask the sizing assistant one message; returns the answer (Markdown).",
        concurrency_id="chat",
        concurrency_limit=settings.concurrency_limit,
    )
