"""LLM mode: a LangChain agent over any OpenAI-compatible chat endpoint.

`build_chat_model(settings)` makes the `ChatOpenAI` client (Chat Completions, no retries:
a fault falls back to the offline answer at once). `run_agent(...)` runs one visitor
message through `langchain.agents.create_agent` with the tools of `assistant.llm_tools`
and returns an `AgentOutcome`: the model's draft plus every calculation and article
section the tools produced. The draft is not trusted: the service passes it through
`assistant.guardrail.enforce` before anyone sees it.

Every fault -- connection refused, HTTP 4xx/5xx, timeout, a reply that is not JSON,
tool-call arguments that are not JSON, an endless tool-call loop -- raises
`LLMUnavailableError` with a one-line reason, within `llm_timeout` plus a moment.

Nothing is built at import; langchain is imported here, and this module is imported only
when LLM mode is used.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import openai
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import ModelError, OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage
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
from assistant.hub_client import hub_from_settings
from assistant.llm_tools import ToolLog, build_tools, sources_of, step_title, tool_specs
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

# The conversation-state fields the model is reminded of (the five questions plus card and engine).
REMEMBERED_SLOTS = ("model", "precision", "tasks", "context", "users", "gpu", "engine", "kv_dtype")


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
        description="Article sections the model read; pass to enforce(..., quoted=...) so their figures count.",
    )
    sources_unavailable: bool = Field(default=False, description="search_articles failed during the run.")
    model_seconds: float = Field(default=0.0, description="Wall time spent inside model calls.")


def build_chat_model(settings: Settings) -> BaseChatModel:
    """The chat client for `settings.llm_*`. Raises LLMUnavailableError when no endpoint is set."""
    if not settings.llm_configured:
        raise LLMUnavailableError("no LLM endpoint configured (set SIZING_LLM_BASE_URL and SIZING_LLM_MODEL)")
    from langchain_openai import ChatOpenAI

    api_key = settings.llm_api_key or SecretStr(KEYLESS_PLACEHOLDER)
    return ChatOpenAI(
        base_url=settings.llm_base_url,
        model=str(settings.llm_model),
        api_key=api_key,
        timeout=settings.llm_timeout,
        max_retries=0,
        use_responses_api=False,
        temperature=settings.llm_temperature,
    )


class _RunLimits(AgentMiddleware):  # type: ignore[type-arg]
    """Counts model calls, stops at the step cap and at the deadline, rejects malformed tool calls."""

    def __init__(self, log: ToolLog, max_calls: int, deadline: float, timeout: float) -> None:
        super().__init__()
        self.log = log
        self.max_calls = max_calls
        self.deadline = deadline
        self.timeout = timeout
        self.calls = 0
        self.model_seconds = 0.0

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        if self.calls >= self.max_calls:
            raise LLMStepLimitError(
                f"the model was still calling tools after {self.max_calls} model calls (SIZING_LLM_MAX_STEPS)"
            )
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise LLMTimeoutError(f"no answer from the model within {self.timeout:g} s")
        self.calls += 1
        if _is_openai_client(request.model):
            # One deadline for the whole run: each call gets only the time that is left. The tool
            # schemas go as ready-made dicts (the same the tools would convert to, every call).
            specs: list[BaseTool | dict[str, Any]] = [*tool_specs()]
            request = request.override(
                tools=specs, model_settings={**request.model_settings, "timeout": remaining}
            )
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
) -> AgentOutcome:
    """Answer one visitor message with the agent. Raises LLMUnavailableError on any model fault.

    `lang` is the visitor's language for this message (default: the state's, else English);
    the tools answer in it and the model is told to. `on_event` receives StepEvent and
    TextDelta objects as they happen; with it, the model is called in streaming mode.
    """
    state = state or ConversationState()
    language = lang or state.language or "en"
    started = time.monotonic()
    deadline = started + settings.llm_timeout
    log = ToolLog(lang=language, on_event=on_event)
    limits = _RunLimits(log, settings.llm_max_steps, deadline, settings.llm_timeout)
    slots = {name: getattr(state, name) for name in REMEMBERED_SLOTS}
    agent = create_agent(
        chat_model,
        build_tools(log, store, hub_from_settings(settings)),
        system_prompt=f"{SYSTEM_PROMPT}\n\n{context_note(language, slots)}",
        middleware=[limits],
    )
    inputs: Any = {"messages": [*_history_messages(state, message), HumanMessage(message)]}
    # Each model call and each tool turn is a graph step; the step cap stops the loop first.
    config: Any = {
        "recursion_limit": 4 * settings.llm_max_steps + 10,
        "callbacks": [_TokenDeadline(deadline, settings.llm_timeout)],
    }
    try:
        if on_event is None:
            final_state = agent.invoke(inputs, config=config)
        else:
            final_state = _stream_run(agent, inputs, config, log)
    except LLMUnavailableError:
        log.closed.set()
        raise
    except Exception as error:
        log.closed.set()
        raise _as_unavailable(error, settings) from error
    messages: list[AnyMessage] = final_state["messages"]
    answer = messages[-1] if messages else None
    if not isinstance(answer, AIMessage) or answer.tool_calls:
        raise LLMMalformedReplyError("the model stopped without an answer")
    text = str(answer.text).strip()
    if not text:
        raise LLMMalformedReplyError("the model sent an empty answer")
    calculations, passages = _in_call_order(messages, log)
    return AgentOutcome(
        text=text,
        calculations=calculations,
        sources=sources_of(passages),
        steps=list(log.steps),
        model_calls=limits.calls,
        quoted_texts=[passage.text for passage in passages],
        sources_unavailable=log.search_failed,
        model_seconds=limits.model_seconds,
    )


class _TokenDeadline(BaseCallbackHandler):
    """Stops a streamed reply at the deadline from inside the client's read loop.

    A server that trickles tokens outlasts every read timeout (each gap is short); raising
    here closes the HTTP stream at once, where stopping the graph from outside would wait
    for the model node to finish.
    """

    raise_error = True

    def __init__(self, deadline: float, timeout: float) -> None:
        self.deadline = deadline
        self.timeout = timeout

    def on_llm_new_token(self, token: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if time.monotonic() > self.deadline:
            raise LLMTimeoutError(f"no complete answer from the model within {self.timeout:g} s")


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
    """The short history the state keeps, minus the current message if the caller already added it."""
    turns = list(state.history)
    if turns and turns[-1].role == "user" and turns[-1].text.strip() == message.strip():
        turns = turns[:-1]
    return [HumanMessage(turn.text) if turn.role == "user" else AIMessage(turn.text) for turn in turns]


def _in_call_order(messages: list[AnyMessage], log: ToolLog) -> tuple[list[SizingResult], list[Any]]:
    """The calculations and passages in the order the model asked for them, without repeats."""
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
