"""The web app's event handlers, as plain functions (no Gradio objects in or out).

`app.py` wires them to components; tests call them directly. Chat messages are the
`{"role", "content", "metadata"}` dicts `gr.Chatbot` accepts; every user-caused failure
comes back as a message in the visitor's language, never as a traceback.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from assistant.sales import draft_reply, format_number
from assistant.schemas import (
    CalculationEvent,
    ConversationState,
    FinalEvent,
    Reply,
    Source,
    Step,
    StepEvent,
    TextDelta,
)
from assistant.ui.chart import empty_chart_html, memory_chart_html, performance_chart_html
from assistant.ui.chat_view import AnswerView, follow_up_suggestions
from assistant.ui.session import VisitorSession
from assistant.ui.texts import Lang, text
from tools.error_texts import localized
from tools.errors import InvalidInputError, SizingError

if TYPE_CHECKING:
    from assistant.settings import Settings
    from assistant.ui.client_limits import ClientGate
    from tools import CardOption, SizingRequest, SizingResult
    from tools.hub import HubLookup

log = logging.getLogger(__name__)

ChatMessage = dict[str, Any]


class ChatAssistant(Protocol):
    """The part of `assistant.service.Assistant` the web app uses."""

    def answer(self, message: str, state: ConversationState | None = None) -> Reply: ...

    def stream(
        self, message: str, state: ConversationState | None = None
    ) -> Iterator[StepEvent | CalculationEvent | TextDelta | FinalEvent]: ...

    def health(self) -> dict[str, Any]: ...


# ---------------------------------------------------------------- chat


@dataclass(frozen=True)
class ChatLimits:
    """The settings a chat turn obeys (a slice of Settings, so tests need not build one)."""

    rate_limit_per_minute: int

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatLimits:
        return cls(rate_limit_per_minute=settings.rate_limit_per_minute)


def _assistant_text(content: str) -> ChatMessage:
    return {"role": "assistant", "content": content}


def _step_message(step: Step, number: int) -> ChatMessage:
    prefix = "⚠ " if step.status == "error" else ""
    status = "pending" if step.status == "running" else "done"
    return {
        "role": "assistant",
        "content": step.detail or "",
        "metadata": {"title": f"{prefix}{step.title}", "status": status, "id": f"step-{number}"},
    }


def sources_line(sources: list[Source], lang: Lang) -> str:
    """The sources under an answer: one line of "title › section" entries, without repeats."""
    seen: list[str] = []
    for source in sources:
        entry = f"{source.title} › {source.section}" if source.section else source.title
        if entry not in seen:
            seen.append(entry)
    if not seen:
        return ""
    return f"**{text('sources', lang)}:** " + " · ".join(f"_{entry}_" for entry in seen)


def final_answer_markdown(reply: Reply) -> str:
    """What the chat shows as the answer: the reply's Markdown, its notice, its sources."""
    parts = [reply.answer.strip()]
    if reply.notice:
        parts.append(f"> {reply.notice}")
    # The offline composer lists its sources itself; add the line only when the answer lacks them.
    if not all(source.title in reply.answer for source in reply.sources):
        parts.append(sources_line(reply.sources, reply.language))
    return "\n\n".join(part for part in parts if part)


def _remember(session: VisitorSession, reply: Reply) -> VisitorSession:
    updated = replace(session, conversation=reply.state, language=reply.language, handoff=reply.handoff)
    if reply.calculations:
        updated = replace(updated, last_result=reply.calculations[-1], last_result_language=reply.language)
    return updated


def _rate_limit_text(
    session: VisitorSession, limits: ChatLimits, lang: Lang, now: float, client: ClientGate | None = None
) -> str | None:
    """The refusal when the session, or else the client's address, is over its limit (None: go on).

    The address counts only messages its session would let through."""
    limit = limits.rate_limit_per_minute
    wait = session.seconds_until_allowed(limit, now)
    if wait <= 0 and client is not None:
        limit, wait = client.limit_per_minute, client.admit(now)
    if wait <= 0:
        return None
    return text("rate_limited", lang, limit=limit, seconds=max(1, math.ceil(wait)))


def stream_chat(
    assistant: ChatAssistant,
    limits: ChatLimits,
    message: str,
    history: list[ChatMessage],
    session: VisitorSession,
    browser_lang: Lang,
    now: float,
    client: ClientGate | None = None,
    view: AnswerView | None = None,
) -> Iterator[tuple[list[ChatMessage], VisitorSession]]:
    """One chat turn, streamed: yields the whole chat history and the session after each event.

    Steps (calculation, article search...) appear as collapsible messages with their status.
    A calculator result shows its verdict and card table at once; the answer's text then grows
    as it arrives and ends as the reply's authoritative Markdown, shown through `view` (folded
    arithmetic, linked sources) with follow-up suggestions as options. A rate-limited or failed
    turn ends with a polite message; the state is kept.
    """
    view = view or AnswerView()
    message = (message or "").strip()
    history = [_without_options(entry) for entry in history]
    if not message:
        yield list(history), session
        return
    lang = session.language or browser_lang
    before = [*history, {"role": "user", "content": message}]
    refusal = _rate_limit_text(session, limits, lang, now, client)
    if refusal:
        yield [*before, _assistant_text(refusal)], session
        return
    session = session.with_message_at(now)
    yield before, session

    steps: list[Step] = []
    verdicts: list[str] = []
    answer = ""

    def render(final: ChatMessage | None = None) -> list[ChatMessage]:
        shown = [_step_message(step, number) for number, step in enumerate(steps)]
        if final is not None:
            shown.append(final)
        elif answer:
            shown.append(_assistant_text(view.markdown(answer, None, lang)))
        elif verdicts:
            shown.append(_assistant_text(view.markdown("\n\n".join(verdicts), None, lang)))
        return [*before, *shown]

    reply: Reply | None = None
    try:
        for event in assistant.stream(message, session.conversation):
            if isinstance(event, StepEvent):
                steps = _merge_step(steps, event.step)
            elif isinstance(event, CalculationEvent):
                verdicts.append(verdict_markdown(event.result, lang))
            elif isinstance(event, TextDelta):
                answer += event.text
            elif isinstance(event, FinalEvent):
                reply = event.reply
                continue
            yield render(), session
    except SizingError as exc:
        answer = text("cannot_answer", lang, message=localized(exc, lang))
        yield render(), session
        return
    except Exception:  # the visitor gets one polite line; the details go to the log
        log.exception("chat turn failed")
        answer = text("internal_error", lang)
        yield render(), session
        return
    if reply is None:
        log.error("assistant stream ended without a final reply")
        answer = text("internal_error", lang)
        yield render(), session
        return
    steps = [
        step if step.status != "running" else step.model_copy(update={"status": "done"}) for step in steps
    ]
    if reply.steps and not steps:
        steps = list(reply.steps)
    final = _assistant_text(view.markdown(reply.answer, reply, reply.language))
    suggestions = follow_up_suggestions(reply)
    if suggestions:
        final["options"] = [{"label": suggestion, "value": suggestion} for suggestion in suggestions]
    yield render(final), _remember(session, reply)


def _without_options(entry: ChatMessage) -> ChatMessage:
    """An earlier message without its follow-up options: only the latest answer offers them."""
    if not isinstance(entry, dict) or not entry.get("options"):
        return entry
    return {key: value for key, value in entry.items() if key != "options"}


def _merge_step(steps: list[Step], step: Step) -> list[Step]:
    """A finished step replaces the running one of the same kind; anything else is appended."""
    if step.status != "running":
        for index in range(len(steps) - 1, -1, -1):
            if steps[index].kind == step.kind and steps[index].status == "running":
                return [*steps[:index], step, *steps[index + 1 :]]
    return [*steps, step]


def answer_once(
    assistant: ChatAssistant,
    limits: ChatLimits,
    message: str,
    session: VisitorSession,
    browser_lang: Lang,
    now: float,
    client: ClientGate | None = None,
) -> tuple[str, VisitorSession]:
    """The `chat` API: one message in, the final answer's Markdown out (session kept per client)."""
    message = (message or "").strip()
    lang = session.language or browser_lang
    if not message:
        return text("empty_message", lang), session
    refusal = _rate_limit_text(session, limits, lang, now, client)
    if refusal:
        return refusal, session
    session = session.with_message_at(now)
    try:
        reply = assistant.answer(message, session.conversation)
    except SizingError as exc:
        return text("cannot_answer", lang, message=localized(exc, lang)), session
    except Exception:
        log.exception("chat API call failed")
        return text("internal_error", lang), session
    return final_answer_markdown(reply), _remember(session, reply)


# ---------------------------------------------------------------- calculator


@dataclass(frozen=True)
class CalculatorInputs:
    """The calculator panel's fields as the browser sends them (empty fields are None or "")."""

    model: str | None = None
    params_b: float | None = None
    config_path: str | None = None
    precision: str = "bf16"
    kv_dtype: str | None = None
    context: float | None = 8192
    users: float | None = 1
    engine: str = "vllm"
    card: str | None = None
    card_count: float | None = 1
    # The latency target (a service class id, tools/data/service_classes.json): the speed verdict
    # and how many users the recommended option serves within it. "" or None: no target.
    service: str | None = None


@dataclass(frozen=True)
class CalculatorView:
    """What the panel shows for one set of inputs."""

    chart_html: str
    verdict_markdown: str
    details_markdown: str
    result: SizingResult | None = None


def _whole_number(value: float | None, name: str) -> int:
    """`name` is a field key of tools/data/texts.json (error_field_NAME) so the message can be translated."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        raise InvalidInputError(f"{name.replace('_', ' ')} is empty", code="empty", name=name)
    if float(value) != int(value):
        raise InvalidInputError(
            f"{name.replace('_', ' ')} must be a whole number, not {value}",
            code="not_whole",
            name=name,
            value=value,
        )
    return int(value)


def uploaded_path(value: Any) -> str | None:
    """The server-side path of a `gr.File` upload (a path string or a file object), None when empty."""
    if not value:
        return None
    if isinstance(value, str):
        return value
    return str(getattr(value, "path", None) or getattr(value, "name", "")) or None


def read_config_file(path: str) -> dict[str, Any]:
    """An uploaded Hugging Face config.json as a dict, or ModelConfigError saying what is wrong."""
    from tools.config_file import read_config_file as read_capped_config

    return read_capped_config(path, shown=Path(path).name)


def build_request(inputs: CalculatorInputs, lang: Lang) -> SizingRequest:
    """The SizingRequest for the panel's fields. Precedence: config.json, then parameters, then model."""
    from tools import SizingRequest

    fields: dict[str, Any] = {
        "precision": inputs.precision,
        "kv_dtype": inputs.kv_dtype or None,
        "context": _whole_number(inputs.context, "context"),
        "users": _whole_number(inputs.users, "users"),
        "engine": inputs.engine,
        "lang": lang,
    }
    if inputs.service:
        fields["service"] = inputs.service
    if inputs.card:
        count = _whole_number(inputs.card_count if inputs.card_count is not None else 1, "card_count")
        fields["gpu"] = inputs.card if count == 1 else f"{inputs.card}:{count}"
    if inputs.config_path:
        config = read_config_file(inputs.config_path)
        name = config.get("_name_or_path") or Path(inputs.config_path).name
        fields.update(model=str(name), config=config)
    elif inputs.params_b is not None and inputs.params_b != 0:
        if not math.isfinite(inputs.params_b) or inputs.params_b < 0:
            raise InvalidInputError(
                f"parameters must be a positive number of billions, not {inputs.params_b}"
            )
        fields.update(model=inputs.model or "", params_b=float(inputs.params_b))
    elif inputs.model:
        fields["model"] = inputs.model
    else:
        raise InvalidInputError(text("pick_model", lang))
    try:
        return SizingRequest(**fields)
    except ValidationError as exc:
        raise InvalidInputError(_validation_message(exc)) from exc


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "input"
    return f"{where}: {first.get('msg', 'invalid value')}"


def _md_cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _speed_cell(option: CardOption, lang: Lang) -> str:
    """Tokens/s each user gets under the request's load, with its calibrated range (the serving
    estimate); the calculator's single-stream figure where the estimate's calibration does not reach."""
    from tools.performance_sizing import calibrated_estimate

    estimate = calibrated_estimate(option)
    if estimate is not None:
        band = estimate.output_tok_s_per_user
        low, high = format_number(band.low, lang), format_number(band.high, lang)
        return f"{format_number(band.best, lang)} ({low}–{high})"
    return format_number(option.decode_tokens_per_s, lang) if option.decode_tokens_per_s else "—"


def verdict_markdown(result: SizingResult, lang: Lang) -> str:
    """The verdict: the recommended card (or that none fits), the recommendation, every option."""
    recommended = result.recommended_option()
    copies = next((o for o in result.options if o.replicas is not None), None)
    if recommended is not None:
        heading = "✓ " + text("verdict_fits", lang, label=recommended.label)
    elif copies is not None and copies.replicas is not None:
        plan = copies.replicas
        heading = "✓ " + text(
            "verdict_copies", lang, label=copies.label, copies=plan.replicas, tp=plan.tensor_parallel
        )
    else:
        heading = "✗ " + text("verdict_none", lang)
    lines = [f"### {heading}", "", result.recommendation.strip(), ""]
    # The speed column only when the engine estimated one (nothing runs when nothing fits).
    with_speed = any(_speed_cell(option, lang) != "—" for option in result.options)
    columns = ["col_card", "col_usable", "col_fits", "col_sequences"] + (["col_decode"] if with_speed else [])
    lines.append("| " + " | ".join(text(key, lang) for key in columns) + " |")
    lines.append("|---" + "|---:" * (len(columns) - 1) + "|")
    for option in result.options:
        headroom = format_number(option.headroom_gb, lang, 1, sign=True)
        fits = f"✓ {headroom} GB" if option.fits else f"✗ {headroom} GB"
        sequences = option.max_concurrent_sequences
        if not option.fits and option.replicas is not None:
            plan = option.replicas
            each = format_number(plan.headroom_gb, lang, 1, sign=True)
            fits = "✓ " + text("fits_copies", lang, copies=plan.replicas, headroom=each)
            sequences = plan.replicas * plan.max_concurrent_sequences
        decode = _speed_cell(option, lang)
        name = f"**{_md_cell(option.label)}**" if option is recommended else _md_cell(option.label)
        cells = [name, f"{format_number(option.usable_gb, lang, 1)} GB", fits]
        cells += [format_number(sequences, lang)] + ([decode] if with_speed else [])
        lines.append("| " + " | ".join(cells) + " |")
    if recommended is not None and (recommended.serves or recommended.catch):
        lines.append("")
        if recommended.serves:
            lines.append(f"**{text('serves', lang)}:** {recommended.serves}")
        if recommended.catch:
            lines.append("")
            lines.append(f"**{text('catch', lang)}:** {recommended.catch}")
    return "\n".join(lines)


def details_markdown(result: SizingResult, lang: Lang) -> str:
    """The arithmetic lines, the caveat, the suggestions and any reference-architecture note."""
    lines = [f"#### {text('arithmetic', lang)}", ""]
    lines += [f"- {line}" for line in result.arithmetic]
    if result.caveat:
        lines += ["", f"> ⚠ **{text('caveat', lang)}:** {result.caveat}"]
    if result.suggestions:
        lines += ["", f"#### {text('suggestions', lang)}", ""]
        lines += [f"- {line}" for line in result.suggestions]
    if result.model.reference_note:
        lines += ["", f"_{text('reference_note', lang)}: {result.model.reference_note}_"]
    return "\n".join(lines)


def calculator_view(inputs: CalculatorInputs, lang: Lang, hub: HubLookup | None = None) -> CalculatorView:
    """The chart, verdict and details for the panel's inputs; bad input gives a clear message instead.
    `hub` looks up a model typed as a Hugging Face id (None: catalog and bare sizes only)."""
    from tools import calculate_vram

    try:
        request = build_request(inputs, lang)
        result = calculate_vram(request, hub=hub)
    except SizingError as exc:
        message = localized(exc, lang)
        return CalculatorView(
            chart_html=empty_chart_html(text("bad_input", lang, message=message)),
            verdict_markdown=f"⚠ **{text('bad_input', lang, message=_md_cell(message))}**",
            details_markdown="",
        )
    verdict = verdict_markdown(result, lang)
    speed = speed_markdown(request, result, lang, hub)
    return CalculatorView(
        chart_html=memory_chart_html(result, lang) + performance_chart_html(request, result, lang),
        verdict_markdown=f"{verdict}\n\n{speed}" if speed else verdict,
        details_markdown=details_markdown(result, lang),
        result=result,
    )


def speed_markdown(
    request: SizingRequest, result: SizingResult, lang: Lang, hub: HubLookup | None = None
) -> str:
    """The recommended option's speed under the panel's load, with its range and basis and, with a
    latency target, the verdict and how many users it serves within the target (its capacity)."""
    from tools import calculate_vram
    from tools.performance import capacity_text, recommended_label, speed_summary

    summary = speed_summary(result)
    if not summary:
        return ""
    lines = [f"**{text('speed', lang)}:** {summary}"]
    if request.service and result.performance is not None and result.performance.target is not None:
        try:
            served = calculate_vram(request.model_copy(update={"users": 1, "users_target": True}), hub=hub)
        except SizingError:  # the count is extra: the figures above stand without it
            served = None
        if served is not None and served.performance is not None and served.recommended == result.recommended:
            capacity = capacity_text(served.performance, recommended_label(served), lang)
            if capacity:
                lines.append(f"**{text('capacity', lang)}:** {capacity}")
    return "\n\n".join(lines)


def failed_calculator_view(lang: Lang) -> CalculatorView:
    """What the panel shows when the calculation itself failed unexpectedly (the log has details)."""
    message = text("internal_error", lang)
    return CalculatorView(
        chart_html=empty_chart_html(message), verdict_markdown=f"⚠ **{message}**", details_markdown=""
    )


def calculate_json(inputs: CalculatorInputs, lang: Lang, hub: HubLookup | None = None) -> dict[str, Any]:
    """The `calculate` API: the SizingResult as JSON (the `sizing calc --json` object).

    Raises SizingError on bad input; the app turns it into the client's error message.
    """
    from tools import calculate_vram

    return calculate_vram(build_request(inputs, lang), hub=hub).model_dump(mode="json")


def model_choices() -> list[tuple[str, str]]:
    """(label, id) pairs for the model dropdown, from the catalog."""
    from tools import list_models

    return [(model.name, model.id) for model in list_models()]


def service_choices(lang: Lang) -> list[tuple[str, str]]:
    """(label, id) pairs for the latency-target dropdown; "" sets no target."""
    from tools.performance import service_classes

    classes = service_classes()["classes"]
    return [(text("no_target", lang), ""), *((row["names"][lang], key) for key, row in classes.items())]


def card_choices(lang: Lang) -> list[tuple[str, str]]:
    """(label, id) pairs for the card dropdown; "" compares every card class."""
    from tools import list_cards

    everything = text("every_card_class", lang)
    return [(everything, ""), *((card.name, card.id) for card in list_cards())]


# ---------------------------------------------------------------- sales draft


class NothingToDraftError(SizingError):
    """The sales-draft button was pressed before any recommendation exists."""


@dataclass(frozen=True)
class SalesDraft:
    markdown: str
    file_name: str


def sales_draft(
    session: VisitorSession,
    calculator_result: SizingResult | None,
    calculator_lang: Lang | None,
    customer_name: str | None,
    browser_lang: Lang,
) -> SalesDraft:
    """The customer reply for the conversation's last recommendation (else the calculator's).

    Written in the customer's language: the language of the conversation where the result came
    from. Raises NothingToDraftError when neither the chat nor the calculator has a result yet.
    """
    if session.last_result is not None:
        result, lang = session.last_result, session.last_result_language or session.language or browser_lang
    elif calculator_result is not None:
        result, lang = calculator_result, calculator_lang or browser_lang
    else:
        raise NothingToDraftError(text("no_recommendation", session.language or browser_lang))
    markdown = draft_reply(result, lang=lang, customer_name=(customer_name or "").strip() or None)
    slug = re.sub(r"[^a-z0-9]+", "-", result.model.name.lower()).strip("-") or "model"
    return SalesDraft(markdown=markdown, file_name=f"sizing-reply-{slug}.md")
