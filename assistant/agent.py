"""LLM mode: a LangChain agent over any OpenAI-compatible chat endpoint.

`build_chat_model(settings)` makes the `ChatOpenAI` client (Chat Completions, streamed, no
retries: a fault falls back to the offline answer at once). `run_agent(...)` runs one visitor
message through `langchain.agents.create_agent` with the tools of `assistant.llm_tools` and
returns an `AgentOutcome`: the model's draft plus every calculation and article section the
tools produced. The draft is not trusted: the service passes it through
`assistant.guardrail.check` before anyone sees it.

Calculator first: the service may hand in `premade` tool results (the calculator's results
and the article sections it found for the question). They reach the model as tool calls the
assistant already made, so the model only writes the prose around them, and a plain sizing
question needs one model call; the model may still call tools for what was not computed.

Every fault -- connection refused, HTTP 4xx/5xx, the answer's deadline, a reply that is not
JSON or too large, tool-call arguments that are not JSON, an endless tool-call loop, a prompt
that cannot fit the context -- raises `LLMUnavailableError` with a one-line reason. The
deadline is wall-clock and enforced under the HTTP client (`assistant.llm_deadline`), so
the call returns at `llm_timeout` whatever the endpoint does.

Nothing is built at import; langchain is imported here, and this module is imported only
when LLM mode is used.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import openai
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.exceptions import ModelError, OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from assistant.errors import (
    LLMConnectionError,
    LLMHTTPError,
    LLMMalformedReplyError,
    LLMStepLimitError,
    LLMTimeoutError,
    LLMUnavailableError,
)
from assistant.guardrail import strip_calculator_block
from assistant.hub_client import hub_from_settings
from assistant.llm_deadline import AnswerDeadline, build_http_client, run_before_deadline, too_large
from assistant.llm_texts import llm_text
from assistant.llm_tools import (
    ToolLog,
    build_tools,
    compact_result,
    passages_for_model,
    sources_of,
    step_title,
    tool_specs,
)
from assistant.prompt_budget import PromptTooLargeError, fit_request
from assistant.prompts import SYSTEM_PROMPT, context_note
from assistant.schemas import CalculationEvent, ConversationState, Source, Step, StepEvent, TextDelta
from assistant.settings import Settings
from tools import SizingResult

if TYPE_CHECKING:
    from knowledge import ArticleSearch

logger = logging.getLogger(__name__)

EventCallback = Callable[[StepEvent | CalculationEvent | TextDelta], None]

# Local servers (vLLM, Ollama, llama.cpp, LM Studio) ignore the key, but the OpenAI client
# refuses to start without one.
KEYLESS_PLACEHOLDER = "not-needed"
# OpenAI's own API refuses the old `max_tokens` next to `max_completion_tokens` for its
# reasoning models; every other server reads `max_tokens` (Ollama reads only that one).
OPENAI_HOST = "api.openai.com"

# The conversation-state fields the model is reminded of (the five questions plus card and engine).
REMEMBERED_SLOTS = ("model", "precision", "tasks", "context", "users", "gpu", "engine", "kv_dtype")


@dataclass(frozen=True)
class PremadeCalculation:
    """A calculation the app ran before asking the model, with the arguments it used."""

    arguments: dict[str, Any]
    result: SizingResult
    tool: str = "calculate_vram"  # the tool whose call it stands for (calculate_training for a training)


@dataclass(frozen=True)
class Premade:
    """What the app already computed for this message; it reaches the model as tool results."""

    calculations: tuple[PremadeCalculation, ...] = ()
    search_query: str | None = None
    passages: tuple[Any, ...] = ()
    search_failed: bool = False
    speed: bool = False  # a question about speed: the calculations carry their speed estimate

    @property
    def empty(self) -> bool:
        return not self.calculations and self.search_query is None


class AgentOutcome(BaseModel):
    """What one agent run produced. `text` is the model's unchecked draft."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str
    calculations: list[SizingResult] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    model_calls: int = 0
    quoted_texts: list[str] = Field(
        default_factory=list,
        description="Article sections the model read; pass to check(..., quoted=...) so their figures count.",
    )
    sources_unavailable: bool = Field(default=False, description="search_articles failed during the run.")
    model_seconds: float = Field(default=0.0, description="Wall time spent inside model calls.")
    output_tokens: int = Field(
        default=0, description="Tokens the model generated, as the server counted them."
    )
    prompt_tokens_estimate: int = Field(
        default=0, description="The largest prompt sent, estimated in tokens."
    )
    trimmed: list[str] = Field(default_factory=list, description="What was left out to fit the context.")
    handoff_reason: str | None = Field(
        default=None, description="The model called offer_engineer, with this reason."
    )


def build_chat_model(settings: Settings) -> BaseChatModel:
    """The chat client for `settings.llm_*`. Raises LLMUnavailableError when no endpoint is set."""
    if not settings.llm_configured:
        raise LLMUnavailableError("no LLM endpoint configured (set SIZING_LLM_BASE_URL and SIZING_LLM_MODEL)")
    from langchain_openai import ChatOpenAI

    api_key = settings.llm_api_key or SecretStr(KEYLESS_PLACEHOLDER)
    extra_body = (
        None if OPENAI_HOST in str(settings.llm_base_url) else {"max_tokens": settings.llm_max_tokens}
    )
    return ChatOpenAI(
        base_url=settings.llm_base_url,
        model=str(settings.llm_model),
        api_key=api_key,
        timeout=settings.llm_timeout,
        max_retries=0,
        use_responses_api=False,
        temperature=settings.llm_temperature,
        max_tokens=settings.llm_max_tokens,
        extra_body=extra_body,
        # Streamed on every path, so a stalling server is seen at the first silent chunk.
        streaming=True,
        stream_usage=True,
        http_client=build_http_client(settings.llm_timeout),
    )


class _RunLimits(AgentMiddleware):  # type: ignore[type-arg]
    """Counts model calls, stops at the step cap, keeps the prompt within the context, rejects
    malformed tool calls."""

    def __init__(
        self,
        log: ToolLog,
        settings: Settings,
        deadline: AnswerDeadline,
        *,
        training: bool = False,
        speed: bool = False,
    ) -> None:
        super().__init__()
        self.training = training  # which tool set the run offers (llm_tools.TRAINING_TOOLS)
        self.speed = speed  # whether the calculator takes a workload (llm_tools.CalculateSpeedArgs)
        self.log = log
        self.settings = settings
        self.deadline = deadline
        self.calls = 0
        self.model_seconds = 0.0
        self.prompt_tokens = 0
        self.trimmed: list[str] = []

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        if self.calls >= self.settings.llm_max_steps:
            raise LLMStepLimitError(
                f"the model was still calling tools after {self.settings.llm_max_steps} model calls "
                "(SIZING_LLM_MAX_STEPS)"
            )
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise LLMTimeoutError(f"no answer from the model within {self.settings.llm_timeout:g} s")
        self.calls += 1
        specs: list[BaseTool | dict[str, Any]] = [*tool_specs(training=self.training, speed=self.speed)]
        fitted = fit_request(
            request.system_message.text if request.system_message is not None else "",
            specs,
            list(request.messages),
            context_tokens=self.settings.llm_context_tokens,
            answer_tokens=self.settings.llm_max_tokens,
        )
        self.prompt_tokens = max(self.prompt_tokens, fitted.tokens)
        if fitted.trimmed:
            self.trimmed += [item for item in fitted.trimmed if item not in self.trimmed]
            logger.warning(
                "prompt trimmed to fit %d tokens: %s", self.settings.llm_context_tokens, fitted.trimmed
            )
            what = ", ".join(llm_text(f"trimmed_{item}", self.log.lang) for item in fitted.trimmed)
            detail = llm_text("step_budget_trimmed", self.log.lang, what=what)
            self.log.emit(Step(kind="model", title=llm_text("step_budget", self.log.lang), detail=detail))
        overrides: dict[str, Any] = {"messages": fitted.messages, "tool_choice": "auto"}
        if _is_openai_client(request.model):
            # The tool schemas go as ready-made dicts (the same the tools would convert to, every
            # call); the per-read timeout never exceeds what is left of the answer's deadline.
            overrides["tools"] = specs
            overrides["model_settings"] = {**request.model_settings, "timeout": remaining}
        request = request.override(**overrides)
        title = step_title(self.log.lang, "model", self.calls)
        self.log.emit(Step(kind="model", title=title, status="running"))
        started = time.monotonic()
        try:
            response = handler(request)
        finally:
            self.model_seconds += time.monotonic() - started
        for message in response.result:
            if isinstance(message, AIMessage) and message.invalid_tool_calls:
                bad = message.invalid_tool_calls[0]
                raise LLMMalformedReplyError(
                    f"the model sent arguments for {bad.get('name') or 'a tool'} that are not valid JSON"
                )
        last = response.result[-1] if response.result else None
        tool_calls = len(last.tool_calls) if isinstance(last, AIMessage) else 0
        lang = self.log.lang
        detail = (
            step_title(lang, "model_tools", tool_calls) if tool_calls else step_title(lang, "model_answer")
        )
        self.log.emit(Step(kind="model", title=title, detail=detail, status="done"))
        return response


def _is_openai_client(model: Any) -> bool:
    from langchain_openai.chat_models.base import BaseChatOpenAI

    return isinstance(model, BaseChatOpenAI)


def run_agent(
    chat_model: BaseChatModel,
    message: str,
    state: ConversationState | None,
    *,
    store: ArticleSearch | None,
    settings: Settings,
    on_event: EventCallback | None = None,
    lang: str | None = None,
    premade: Premade | None = None,
) -> AgentOutcome:
    """Answer one visitor message with the agent. Raises LLMUnavailableError on any model fault.

    `lang` is the visitor's language for this message (default: the state's, else English);
    the tools answer in it and the model is told to. `on_event` receives StepEvent and
    TextDelta objects as they happen. `premade` holds what the app already computed; it goes
    to the model as tool results it need not ask for again.
    """
    state = state or ConversationState()
    language = lang or state.language or "en"
    premade = premade or Premade()
    deadline = AnswerDeadline(settings.llm_timeout, settings.llm_max_response_bytes)
    log = ToolLog(lang=language, on_event=on_event)
    # A training conversation (or a training answer the app made) gets the training calculator.
    training = state.tasks == "finetuning" or any(
        made.tool == "calculate_training" for made in premade.calculations
    )
    limits = _RunLimits(log, settings, deadline, training=training, speed=premade.speed)
    slots = {name: getattr(state, name) for name in REMEMBERED_SLOTS}
    agent = create_agent(
        chat_model,
        build_tools(log, store, hub_from_settings(settings), training=training, speed=premade.speed),
        system_prompt=f"{SYSTEM_PROMPT}\n\n{context_note(language, slots)}",
        middleware=[limits],
    )
    messages: list[AnyMessage] = [
        *_history_messages(state, message),
        HumanMessage(message),
        *_premade_messages(premade, log),
    ]
    inputs: Any = {"messages": messages}
    # Each model call and each tool turn is a graph step; the step cap stops the loop first.
    config: Any = {"recursion_limit": 4 * settings.llm_max_steps + 10}
    try:
        final_state = run_before_deadline(lambda: _stream_run(agent, inputs, config, log), deadline)
    except LLMUnavailableError:
        log.closed.set()
        raise
    except Exception as error:
        log.closed.set()
        raise _as_unavailable(error, settings) from error
    finished: list[AnyMessage] = final_state["messages"]
    answer = finished[-1] if finished else None
    if not isinstance(answer, AIMessage) or answer.tool_calls:
        raise LLMMalformedReplyError("the model stopped without an answer")
    text = str(answer.text).strip()
    if not text:
        raise LLMMalformedReplyError("the model sent an empty answer")
    calculations, passages = _in_call_order(finished, log)
    return AgentOutcome(
        text=text,
        calculations=calculations,
        sources=sources_of(passages),
        steps=list(log.steps),
        model_calls=limits.calls,
        quoted_texts=[passage.text for passage in passages],
        sources_unavailable=log.search_failed,
        model_seconds=limits.model_seconds,
        output_tokens=sum(
            m.usage_metadata["output_tokens"]
            for m in finished
            if isinstance(m, AIMessage) and m.usage_metadata
        ),
        prompt_tokens_estimate=limits.prompt_tokens,
        trimmed=limits.trimmed,
        handoff_reason=log.handoff_reason,
    )


def _premade_messages(premade: Premade, log: ToolLog) -> list[AnyMessage]:
    """The app's own results as one assistant turn of tool calls and their tool messages."""
    if premade.empty:
        return []
    calls: list[dict[str, Any]] = []
    results: list[AnyMessage] = []
    # Side by side, the arithmetic of three calculations would fill a small local context.
    arithmetic = len(premade.calculations) == 1
    for index, made in enumerate(premade.calculations, start=1):
        call_id = f"app_calc_{index}"
        calls.append({"name": made.tool, "args": dict(made.arguments), "id": call_id, "type": "tool_call"})
        log.record_calculation(call_id, made.result)
        compact = compact_result(made.result, arithmetic=arithmetic, speed=premade.speed)
        content = json.dumps(compact, ensure_ascii=False)
        results.append(ToolMessage(content=content, tool_call_id=call_id, name=made.tool))
    if premade.search_query is not None:
        call_id = "app_search_1"
        calls.append(
            {
                "name": "search_articles",
                "args": {"query": premade.search_query},
                "id": call_id,
                "type": "tool_call",
            }
        )
        if premade.search_failed:
            log.search_failed = True
            content = "sources unavailable"
        else:
            log.record_passages(call_id, list(premade.passages))
            content = passages_for_model(list(premade.passages))
        results.append(ToolMessage(content=content, tool_call_id=call_id, name="search_articles"))
    return [AIMessage(content="", tool_calls=calls), *results]


def _stream_run(agent: Any, inputs: dict[str, Any], config: Any, log: ToolLog) -> dict[str, Any]:
    """Run the graph streaming the model's tokens; the last `values` chunk is the final state."""
    final_state: dict[str, Any] | None = None
    stream: Iterator[tuple[str, Any]] = agent.stream(
        inputs, config=config, stream_mode=["messages", "values"]
    )
    try:
        for mode, chunk in stream:
            if mode == "values":
                final_state = chunk
            elif mode == "messages":
                token, _metadata = chunk
                if isinstance(token, AIMessageChunk):
                    log.emit_text(str(token.text))
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    if final_state is None:
        raise LLMMalformedReplyError("the model run ended without a result")
    return final_state


def _history_messages(state: ConversationState, message: str) -> list[AnyMessage]:
    """The short history the state keeps, minus the current message if the caller already added it.

    Earlier answers go without their appended calculator blocks: their figures belong to that
    turn's question, and a model that copies them into this turn would repeat stale numbers."""
    turns = list(state.history)
    if turns and turns[-1].role == "user" and turns[-1].text.strip() == message.strip():
        turns = turns[:-1]
    history: list[AnyMessage] = []
    for turn in turns:
        if turn.role == "user":
            history.append(HumanMessage(turn.text))
        else:
            history.append(AIMessage(strip_calculator_block(turn.text) or "…"))
    return history


def _in_call_order(messages: Sequence[AnyMessage], log: ToolLog) -> tuple[list[SizingResult], list[Any]]:
    """The calculations and passages in the order they were asked for, without repeats."""
    calculations: list[SizingResult] = []
    passages: list[Any] = []
    for message in messages:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            call_id = call.get("id") or ""
            result = log.calculations.get(call_id)
            if result is not None and result not in calculations:
                calculations.append(result)
            for passage in log.passages.get(call_id, []):
                if passage not in passages:
                    passages.append(passage)
    return calculations, passages


def _as_unavailable(error: Exception, settings: Settings) -> LLMUnavailableError:
    """One typed, one-line reason for a fault from the client, the wire or the graph."""
    endpoint = settings.llm_base_url or "the LLM endpoint"
    oversized = too_large(error)
    if oversized is not None:
        return oversized
    if isinstance(error, PromptTooLargeError):
        return LLMUnavailableError(str(error))
    if isinstance(error, openai.APITimeoutError | httpx.TimeoutException) or (
        isinstance(error, ModelError) and type(error).__name__.endswith("TimeoutError")
    ):
        return LLMTimeoutError(f"no answer from the model within {settings.llm_timeout:g} s")
    if isinstance(error, openai.APIStatusError):
        message = _short(getattr(error, "message", "") or str(error))
        return LLMHTTPError(error.status_code, f"{endpoint} answered HTTP {error.status_code}: {message}")
    if isinstance(error, openai.APIConnectionError | httpx.TransportError):
        return LLMConnectionError(f"could not reach {endpoint}")
    if isinstance(error, json.JSONDecodeError | openai.APIResponseValidationError | OutputParserException):
        return LLMMalformedReplyError(f"{endpoint} sent a reply that is not valid JSON")
    # Anything else is a bug or an unforeseen fault; the visitor still gets the offline answer.
    logger.exception("LLM agent failed unexpectedly")
    return LLMUnavailableError(f"the LLM agent failed ({type(error).__name__})")


def _short(text: str, limit: int = 120) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"
