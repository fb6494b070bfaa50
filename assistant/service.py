"""The assistant facade: one message in, one `Reply` out, in LLM mode or offline.

    from assistant.service import build_assistant
    assistant = build_assistant(settings)            # the store and chat model come from the settings
    reply = assistant.answer("What GPU for a 70B?")   # Reply: answer, language, mode, notice, ...
    reply = assistant.answer("and with 20 users?", reply.state)

The web app and `sizing ask` / `sizing chat` use only this module. LLM mode runs the agent
(`assistant.agent`) and checks its draft with the guardrail; any model fault falls back to
the offline answer (`assistant.offline`) with a one-line notice. Nothing is built at import.

Calculator first: for a sizing question the service understands the request itself, runs the
calculator and the article search, and hands the results to the agent as tool results it
already has, so the model only writes the prose. The guardrail then checks every figure and
verdict; a draft in the wrong language or off topic is replaced by the offline answer.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from assistant.errors import LLMUnavailableError
from assistant.guardrail import check
from assistant.handoff_offer import handoff_for
from assistant.llm_texts import has_text, llm_text
from assistant.offline.asked import SPEED_ARGUMENTS, asks_speed, training_requests
from assistant.offline.responder import (
    SEARCH_CACHE_SECONDS,
    SEARCH_CACHE_SIZE,
    OfflineAnswer,
    OfflineResponder,
    topic_query,
)
from assistant.offline.sizing import (
    is_sizing_question,
    merge_slots,
    plan_sizing,
    read_as_answer,
    run_plan,
    training_question,
)
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
from tools import SizingRequest, SizingResult, calculate_vram
from tools.errors import SizingError
from tools.i18n import shortest

if TYPE_CHECKING:
    from assistant.agent import Premade
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
# Article sections the app retrieves for the model before the first call.
PREMADE_PASSAGES = 3


class Assistant:
    """Answers sizing conversations. Build it with `build_assistant`; one instance serves every visitor
    (per-visitor memory lives in the ConversationState each call receives and returns)."""

    def __init__(self, settings: Settings, store: ArticleSearch | None, chat_model: Any | None) -> None:
        self.settings = settings
        self.store = store
        self.chat_model = chat_model
        self.offline = OfflineResponder(store)
        # How the last LLM answer ended ("answered" or the fault's kind) and when: /healthz reports
        # an endpoint that lists its models but stalls on every answer.
        self._last_llm: tuple[str, float] | None = None
        # (topic query, language) -> (when, passages): premade answers cite by topic, as offline
        # ones do, so a handful of queries cover them and each is embedded once in a while.
        self._premade_found: dict[tuple[str, str], tuple[float, list[Any]]] = {}

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
        reading = read_as_answer(text, state, understand(text, state.language or "en"))
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
        if reply.handoff is None:
            reply = reply.model_copy(update={"handoff": handoff_for(text, reply.calculations)})
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
        """The checked LLM answer, or None when the offline answer is to be shown instead (a model
        fault, or a draft in another language or off topic; the notice and a step say why)."""
        from assistant.agent import run_agent

        language = reading.language
        words = texts(language)
        # What the offline answer asked, or the unit it asked of a number, the model's answer has not.
        merged = merge_slots(state, reading).model_copy(
            update={"language": language, "asked": [], "pending_count": None, "compared_cards": []}
        )
        sizing = is_sizing_question(reading, merged)
        premade, premade_steps = self._premade(merged, language, reading, sizing)
        for step in premade_steps:  # after a fault the offline answer shows its own calculation
            if on_event:
                on_event(StepEvent(step=step))
        try:
            outcome = run_agent(
                self.chat_model,  # type: ignore[arg-type]
                text,
                merged,
                store=self.store,
                settings=self.settings,
                on_event=on_event,
                lang=language,
                premade=premade,
            )
        except LLMUnavailableError as error:
            self._last_llm = (error.kind, time.monotonic())
            log.warning("LLM unavailable, answering offline: %s", error)
            reason = fault_reason(error, self.settings, words)
            notices.append(words.fill("notice_llm_fallback", reason=reason))
            detail = _one_line(str(error)) if language == "en" else reason
            step = Step(kind="fallback", title=words.step("fallback"), detail=detail, status="error")
            fallback_steps.append(step)
            if on_event:
                on_event(StepEvent(step=step))
            return None
        self._last_llm = ("answered", time.monotonic())
        steps = [*premade_steps, *outcome.steps]
        calculations: list[SizingResult] = list(outcome.calculations)
        if not calculations and sizing:
            calculations = self._calculate_for(merged, language, reading)
            if calculations:
                step = Step(
                    kind="calculate", title=words.step("calculate"), detail=words.step("guardrail_calc")
                )
                steps.append(step)
                if on_event:
                    on_event(StepEvent(step=step))
        earlier = [turn.text for turn in state.history if turn.role == "assistant"]
        report = check(
            outcome.text, calculations, language, quoted=outcome.quoted_texts, message=text, earlier=earlier
        )
        removed = ", ".join(dict.fromkeys(report.reasons))
        detail = (
            llm_text("step_guardrail_removed", language, count=len(report.removed), reasons=removed)
            if report.removed
            else llm_text("step_guardrail_clean", language)
        )
        guard_step = Step(kind="guardrail", title=llm_text("step_guardrail", language), detail=detail)
        if on_event:
            on_event(StepEvent(step=guard_step))
        handoff = handoff_for(text, calculations, outcome.handoff_reason)
        # An answer that hands the visitor to an engineer is the company's business, not off topic.
        off_topic = report.off_topic and outcome.handoff_reason is None
        if report.wrong_language or off_topic:
            key = "notice_wrong_language" if report.wrong_language else "notice_off_topic"
            notices.append(llm_text(key, language))
            fallback_steps.append(guard_step.model_copy(update={"status": "error"}))
            log.info("LLM draft replaced by the offline answer (%s)", key)
            return None
        steps.append(guard_step)
        if outcome.sources_unavailable:
            notices.append(words["notice_sources_unavailable"])
        answer = report.answer
        if handoff is not None:
            # Added after the guardrail, so its checks never remove the invitation.
            invite = llm_text("handoff_invite", language)
            answer = "\n\n".join(part for part in (answer, invite) if part)
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
            handoff=handoff,
        )

    def _premade(
        self, state: ConversationState, language: Language, reading: Understanding, sizing: bool
    ) -> tuple[Premade | None, list[Step]]:
        """The calculations and article sections for a sizing question, before the model is asked."""
        from assistant.agent import Premade, PremadeCalculation

        if not sizing:
            return None, []
        plan = plan_sizing(state, language, reading)
        if plan is None:
            return None, []
        words = texts(language)
        try:
            if training_question(reading, state):
                made = [
                    PremadeCalculation(
                        _training_arguments(request), calculate_vram(request), "calculate_training"
                    )
                    for request in training_requests(plan).values()
                ]
                query = words["search_finetuning"]
            else:
                shown = run_plan(plan).shown
                requests = [*(plan.requests() if plan.gpu else []), *plan.requests(on_card=False)]
                made = [
                    PremadeCalculation(_serving_arguments(request), result)
                    for request, result in zip(requests, shown, strict=True)
                ]
                hint = "search_quantized" if any(r.below_16_bit for r in shown) else "search_sizing"
                query = topic_query(words[hint], shown)
        except SizingError as error:
            # The model hears the visitor and may ask again or call the calculator itself.
            log.info("no premade calculation: %s", error)
            return None, []
        shown = [calculation.result for calculation in made]
        passages: list[Any] = []
        failed = self.store is None
        cached = self._premade_found.get((query, language))
        if cached is not None and time.monotonic() - cached[0] < SEARCH_CACHE_SECONDS:
            passages = cached[1]
        elif self.store is not None:
            try:
                passages = list(self.store.search(query, k=PREMADE_PASSAGES, lang=language))
            except Exception as error:  # any store fault: the answer goes on without sources
                log.warning("article search failed: %s", " ".join(str(error).split()))
                failed = True
            else:
                if len(self._premade_found) >= SEARCH_CACHE_SIZE:
                    self._premade_found.clear()
                self._premade_found[(query, language)] = (time.monotonic(), passages)
        detail = " · ".join(
            f"{r.model.name} {r.finetune.method} {shortest(r.finetune.total_gb, language)} GB"
            if r.finetune
            else f"{r.model.name} {r.precision} {shortest(r.total_gb, language)} GB"
            for r in shown
        )
        steps = [Step(kind="calculate", title=llm_text("step_premade", language), detail=detail)]
        premade = Premade(
            calculations=tuple(made),
            search_query=query,
            passages=tuple(passages),
            search_failed=failed,
            speed=asks_speed(reading.question, plan),
        )
        return premade, steps

    @staticmethod
    def _calculate_for(
        state: ConversationState, language: Language, reading: Understanding
    ) -> list[SizingResult]:
        plan = plan_sizing(state, language, reading)
        if plan is None:
            return []
        try:
            if training_question(reading, state):
                return [calculate_vram(request) for request in training_requests(plan).values()]
            return run_plan(plan).shown
        except SizingError as error:
            log.info("no calculation for the guardrail: %s", error)
            return []

    # ------------------------------------------------------------------ health

    def health(self) -> dict[str, Any]:
        """{"mode", "llm_reachable" and "llm_answering" (None offline), "chroma_reachable"}; never raises."""
        chroma = False
        if self.store is not None:
            try:
                chroma = bool(self.store.healthy())
            except Exception:  # a health probe must answer, not fail
                chroma = False
        return {
            "mode": self.mode,
            "llm_reachable": self._llm_reachable(),
            "llm_answering": self._llm_answering(),
            "chroma_reachable": chroma,
        }

    def _llm_answering(self) -> bool | None:
        """False when the last LLM answer hit the deadline: the endpoint is up but stalls.
        None offline or before the first answer."""
        if self.chat_model is None or self._last_llm is None:
            return None
        return self._last_llm[0] != "timeout"

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
    if has_text(f"fault_{error.kind}"):
        return llm_text(f"fault_{error.kind}", words.language, context=settings.llm_context_tokens)
    reason = (
        words.mapping("llm_fault_reasons").get(error.kind)
        or words.mapping("llm_fault_reasons")["unavailable"]
    )
    return reason.format(
        endpoint=settings.llm_base_url or "—",
        status=getattr(error, "status", ""),
        timeout=shortest(settings.llm_timeout, words.language),
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


def _serving_arguments(request: SizingRequest) -> dict[str, Any]:
    """A serving request as the arguments of a `calculate_vram` call."""
    arguments: dict[str, Any] = {
        "model": request.model,
        "precision": request.precision,
        "context": request.context,
        "users": request.users,
        "engine": request.engine,
    }
    optional = ("gpu", "kv_dtype", *SPEED_ARGUMENTS)
    arguments.update({name: getattr(request, name) for name in optional if getattr(request, name)})
    return arguments


def _training_arguments(request: SizingRequest) -> dict[str, Any]:
    """A training request as the arguments of a `calculate_training` call."""
    spec = request.finetune
    assert spec is not None
    arguments: dict[str, Any] = {"model": request.model, **spec.model_dump(exclude={"targets"})}
    if request.gpu:
        arguments["gpu"] = request.gpu
    return arguments
