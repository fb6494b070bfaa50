"""The assistant facade: one message in, one `Reply` out, in LLM mode or offline.

    from assistant.service import build_assistant
    assistant = build_assistant(settings)            # the store and chat model come from the settings
    reply = assistant.answer("What GPU for a 70B?")   # Reply: answer, language, mode, notice, ...
    reply = assistant.answer("and with 20 users?", reply.state)

The web app and `sizing ask` / `sizing chat` use only this module. LLM mode runs the agent
(`assistant.agent`) and checks its draft with the guardrail; any model fault falls back to
the offline answer (`assistant.offline`) with a one-line notice. Nothing is built at import.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from assistant.offline.responder import OfflineAnswer, OfflineResponder
from assistant.offline.sizing import is_sizing_question, merge_slots, plan_sizing, run_plan
from assistant.offline.texts import Texts, texts
from assistant.offline.understanding import Understanding, understand
from assistant.schemas import (
    SLOT_NAMES,
    CalculationEvent,
    ConversationState,
    FinalEvent,
    Language,
    Mode,
    Reply,
    Source,
    Step,
    StepEvent,
    StreamEvent,
    TextDelta,
)
from tools import SizingResult
from tools.errors import SizingError

if TYPE_CHECKING:
    from assistant.errors import LLMUnavailableError
    from assistant.settings import Settings
    from knowledge import ArticleSearch

__all__ = [
    "SLOT_NAMES",
    "Assistant",
    "CalculationEvent",
    "ConversationState",
    "FinalEvent",
    "Reply",
    "Source",
    "Step",
    "StepEvent",
    "StreamEvent",
    "TextDelta",
    "build_assistant",
]

log = logging.getLogger("sizing.assistant")

# Seconds a health check waits for the LLM endpoint's model list.
HEALTH_TIMEOUT_S = 5.0


class Assistant:
    """Answers sizing conversations. Build it with `build_assistant`; one instance serves every visitor
    (per-visitor memory lives in the ConversationState each call receives and returns)."""

    def __init__(self, settings: Settings, store: ArticleSearch | None, chat_model: Any | None) -> None:
        self.settings = settings
        self.store = store
        self.chat_model = chat_model
        self.offline = OfflineResponder(store)

    @property
    def mode(self) -> Mode:
        return "llm" if self.chat_model is not None else "offline"

    # ------------------------------------------------------------------ answering

    def answer(self, message: str, state: ConversationState | None = None) -> Reply:
        """The reply to one visitor message, given the conversation so far."""
        return self._respond(message, state or ConversationState(), on_event=None)

    def stream(self, message: str, state: ConversationState | None = None) -> Iterator[StreamEvent]:
        """Steps as they happen, then the answer in a few text pieces, then FinalEvent(reply).

        In LLM mode the model's draft is never streamed: only text that passed the guardrail
        is sent, so an invented figure cannot flash on screen before being removed.
        """
        state = state or ConversationState()
        reply: Reply | None = None
        if self.chat_model is None:
            reply = self._respond(message, state, on_event=None)
            for step in reply.steps:
                yield StepEvent(step=step)
        else:
            streamed: list[Step] = []
            for item in _run_in_thread(lambda on_event: self._respond(message, state, on_event)):
                if isinstance(item, Reply):
                    reply = item
                elif isinstance(item, StepEvent):
                    streamed.append(item.step)
                    yield item
                else:
                    yield item
            assert reply is not None  # _respond always returns one or raises
            # After a fallback, the offline answer's own steps have not been shown yet.
            for step in reply.steps:
                if step not in streamed:
                    yield StepEvent(step=step)
        assert reply is not None
        for piece in text_pieces(reply.answer):
            yield TextDelta(text=piece)
        yield FinalEvent(reply=reply)

    def _respond(self, message: str, state: ConversationState, on_event: Any | None) -> Reply:
        notices: list[str] = []
        text = (message or "").strip()
        if not text:
            language = state.language or "en"
            return Reply(
                answer=texts(language)["empty"],
                language=language,
                mode=self.mode,
                state=state,
                missing=state.missing_slots(),
            )
        truncated = len(text) > self.settings.max_input_chars
        if truncated:
            text = text[: self.settings.max_input_chars]
        reading = understand(text, state.language or "en")
        language = reading.language
        words = texts(language)
        if truncated:
            notices.append(words.fill("truncated", limit=self.settings.max_input_chars))

        reply: Reply | None = None
        fallback_steps: list[Step] = []
        if self.chat_model is not None:
            reply = self._respond_llm(text, state, reading, notices, fallback_steps, on_event)
        if reply is None:
            offline = self.offline.respond(text, state, language, reading)
            reply = self._offline_reply(offline, notices)
            reply = reply.model_copy(update={"steps": [*fallback_steps, *reply.steps]})
        new_state = reply.state.with_turn("user", text).with_turn("assistant", reply.answer)
        return reply.model_copy(update={"state": new_state})

    def _offline_reply(self, offline: OfflineAnswer, notices: list[str]) -> Reply:
        if offline.notice:
            notices.append(offline.notice)
        return Reply(
            answer=offline.answer,
            language=offline.language,
            mode="offline",
            notice=" ".join(notices) or None,
            calculations=offline.calculations,
            sources=offline.sources,
            missing=offline.missing,
            state=offline.state,
            steps=offline.steps,
        )

    def _respond_llm(
        self,
        text: str,
        state: ConversationState,
        reading: Understanding,
        notices: list[str],
        fallback_steps: list[Step],
        on_event: Any | None,
    ) -> Reply | None:
        """The checked LLM answer, or None after a model fault (the notice and a step say why)."""
        from assistant.agent import run_agent
        from assistant.errors import LLMUnavailableError
        from assistant.guardrail import enforce

        language = reading.language
        words = texts(language)
        merged = merge_slots(state, reading).model_copy(update={"language": language})
        try:
            outcome = run_agent(
                self.chat_model,  # type: ignore[arg-type]
                text,
                merged,
                store=self.store,
                settings=self.settings,
                on_event=on_event,
                lang=language,
            )
        except LLMUnavailableError as error:
            log.warning("LLM unavailable, answering offline: %s", error)
            reason = fault_reason(error, self.settings, words)
            notices.append(words.fill("notice_llm_fallback", reason=reason))
            detail = _one_line(str(error)) if language == "en" else reason
            step = Step(kind="fallback", title=words.step("fallback"), detail=detail, status="error")
            fallback_steps.append(step)
            if on_event:
                on_event(StepEvent(step=step))
            return None
        steps = list(outcome.steps)
        calculations: list[SizingResult] = list(outcome.calculations)
        sizing = is_sizing_question(reading, merged)
        if not calculations and sizing:
            calculations = self._calculate_for(merged, language, reading)
            if calculations:
                step = Step(
                    kind="calculate", title=words.step("calculate"), detail=words.step("guardrail_calc")
                )
                steps.append(step)
                if on_event:
                    on_event(StepEvent(step=step))
        answer = enforce(outcome.text, calculations, language, quoted=outcome.quoted_texts)
        if outcome.sources_unavailable:
            notices.append(words["notice_sources_unavailable"])
        return Reply(
            answer=answer,
            language=language,
            mode="llm",
            notice=" ".join(notices) or None,
            calculations=calculations,
            sources=list(outcome.sources),
            missing=merged.missing_slots() if sizing else [],
            state=merged,
            steps=steps,
        )

    @staticmethod
    def _calculate_for(
        state: ConversationState, language: Language, reading: Understanding
    ) -> list[SizingResult]:
        plan = plan_sizing(state, language, reading)
        if plan is None:
            return []
        try:
            return run_plan(plan).shown
        except SizingError as error:
            log.info("no calculation for the guardrail: %s", error)
            return []

    # ------------------------------------------------------------------ health

    def health(self) -> dict[str, Any]:
        """{"mode", "llm_reachable" (None offline), "chroma_reachable"}; never raises."""
        chroma = False
        if self.store is not None:
            try:
                chroma = bool(self.store.healthy())
            except Exception:  # a health probe must answer, not fail
                chroma = False
        return {"mode": self.mode, "llm_reachable": self._llm_reachable(), "chroma_reachable": chroma}

    def _llm_reachable(self) -> bool | None:
        if self.chat_model is None or not self.settings.llm_base_url:
            return None
        import httpx

        headers = {}
        if self.settings.llm_api_key is not None:
            headers["Authorization"] = f"Bearer {self.settings.llm_api_key.get_secret_value()}"
        url = self.settings.llm_base_url.rstrip("/") + "/models"
        try:
            response = httpx.get(
                url, headers=headers, timeout=min(HEALTH_TIMEOUT_S, self.settings.llm_timeout)
            )
        except httpx.HTTPError:
            return False
        # A server without a model list (404/405) is still up; 401/403 means answers would fail.
        return response.status_code < 400 or response.status_code in (404, 405)


def text_pieces(answer: str) -> list[str]:
    """The answer cut at paragraph ends; the pieces concatenate back to the answer exactly."""
    pieces = [piece for piece in re.split(r"(?<=\n\n)", answer) if piece]
    return pieces or [answer]


def fault_reason(error: LLMUnavailableError, settings: Settings, words: Texts) -> str:
    """Why the model gave no answer, in the visitor's language, from the fault's kind."""
    timeout = f"{settings.llm_timeout:g}"
    reason = (
        words.mapping("llm_fault_reasons").get(error.kind)
        or words.mapping("llm_fault_reasons")["unavailable"]
    )
    return reason.format(
        endpoint=settings.llm_base_url or "—",
        status=getattr(error, "status", ""),
        timeout=timeout.replace(".", ",") if words.language == "es" else timeout,
    )


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _run_in_thread(work: Any) -> Iterator[StepEvent | CalculationEvent | Reply]:
    """Run work(on_event) in a thread; yield its step and calculation events as they come, then its Reply."""
    events: queue.Queue[Any] = queue.Queue()
    done = object()

    def on_event(event: StepEvent | CalculationEvent | TextDelta) -> None:
        if isinstance(event, StepEvent | CalculationEvent):  # draft text is not shown before the guardrail
            events.put(event)

    def target() -> None:
        try:
            events.put(work(on_event))
        except BaseException as error:  # handed to the consumer, raised there
            events.put(error)
        finally:
            events.put(done)

    threading.Thread(target=target, name="assistant-answer", daemon=True).start()
    while True:
        item = events.get()
        if item is done:
            return
        if isinstance(item, BaseException):
            raise item
        yield item


def build_assistant(
    settings: Settings, store: ArticleSearch | None = None, chat_model: Any | None = None
) -> Assistant:
    """The assistant the settings describe.

    store None: the article store of the settings (`knowledge.open_store`, which connects lazily);
    chat_model None with an LLM configured: `assistant.agent.build_chat_model(settings)`.
    """
    if store is None:
        from knowledge import open_store

        try:
            store = open_store(settings)
        except SizingError as error:
            log.warning("article store unavailable, answering without sources: %s", error)
    if chat_model is None and settings.llm_configured:
        from assistant.agent import build_chat_model

        chat_model = build_chat_model(settings)
    return Assistant(settings, store, chat_model)
