"""LangChain tool adapters the agent may call, built fresh for every agent run.

Each tool translates between the model's JSON arguments and the domain (`tools`,
`knowledge`) and records what it produced in a `ToolLog`, so the agent run can hand the
calculations and passages to the guardrail without any module-level state.

- `calculate_vram(model, precision, context, users, engine?, gpu?, kv_dtype?)` -> the
  `sizing calc --json` object of `tools.calculate_vram`.
- `calculate_training(model, method, lora_rank?, batch?, seq?, optimizer?, gradient_checkpointing?,
  gpu?)` -> the training memory per GPU of `tools.calculate_vram` in fine-tuning mode (full, LoRA,
  QLoRA).
- `lookup_card_classes(card_class?)` -> the card classes (what each serves honestly, the catch).
- `search_articles(query)` -> the best article sections, or "sources unavailable".
- `reverse_search(search=largest_model|longest_context|fewest_gpus|smallest_card, ...)` -> a
  reverse search (`tools.reverse`): the configuration found and its full calculation.
- `offer_engineer(reason)` -> records that the "Talk to an engineer" form opens with this answer;
  the visitor's details go into that form, never through the model.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from assistant.llm_texts import llm_text
from assistant.offline.asked import SPEED_ARGUMENTS
from assistant.schemas import CalculationEvent, Source, Step, StepEvent, TextDelta
from assistant.texts import READING_NOTES
from tools import (
    ENGINES,
    KV_DTYPES,
    PRECISIONS,
    SizingRequest,
    SizingResult,
    calculate_vram,
    card_classes,
    default_engine,
    reverse,
)
from tools.catalog import released_name
from tools.errors import SizingError
from tools.finetune import FinetuneSpec
from tools.hub import HubLookup
from tools.performance import service_classes, speed_summary

logger = logging.getLogger(__name__)

# The latency classes a speed question can name (tools/data/service_classes.json).
SERVICE_IDS = tuple(service_classes()["classes"])

# How much of each retrieved section goes back to the model: enough to quote a section,
# small enough that three of them keep the second model call short.
PASSAGE_CHARS_FOR_MODEL = 1200
PASSAGES_PER_SEARCH = 3


def step_title(lang: str, key: str, what: object = "", **fields: object) -> str:
    return llm_text(f"step_title_{key}", lang, what=what, **fields)


@dataclass
class ToolLog:
    """What one agent run's tools produced, keyed by tool-call id so the order can follow the model's."""

    lang: str
    on_event: Callable[[StepEvent | CalculationEvent | TextDelta], None] | None = None
    calculations: dict[str, SizingResult] = field(default_factory=dict)
    passages: dict[str, list[Any]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    search_failed: bool = False
    handoff_reason: str | None = None  # set by offer_engineer: the form opens with this answer
    # Tools of one model turn run in parallel threads.
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Set when the run has been abandoned (deadline); later events are not forwarded.
    closed: threading.Event = field(default_factory=threading.Event)

    def emit(self, step: Step) -> None:
        if step.status != "running":
            with self._lock:
                self.steps.append(step)
        if self.on_event is not None and not self.closed.is_set():
            self.on_event(StepEvent(step=step))

    def emit_text(self, text: str) -> None:
        if self.on_event is not None and text and not self.closed.is_set():
            self.on_event(TextDelta(text=text))

    def record_calculation(self, call_id: str, result: SizingResult) -> None:
        with self._lock:
            self.calculations[call_id] = result
        # The calculator's figures need no guardrail: a client may show them while the model writes.
        if self.on_event is not None and not self.closed.is_set():
            self.on_event(CalculationEvent(result=result))

    def record_passages(self, call_id: str, passages: list[Any]) -> None:
        with self._lock:
            self.passages[call_id] = passages


def _describe(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(values)


class CalculateVramArgs(BaseModel):
    model: str = Field(
        description="The model: a name or alias ('Llama 3.1 70B', 'qwen2.5:32b') or a bare size ('70b', '13B')."
    )
    precision: str = Field(description=f"Weight precision, one of: {_describe(PRECISIONS)}.")
    context: int = Field(default=8192, gt=0, description="Tokens per sequence (prompt + answer).")
    users: int = Field(default=1, gt=0, description="Concurrent users (sequences served at once).")
    engine: str | None = Field(default=None, description=f"Serving engine, one of: {_describe(ENGINES)}.")
    gpu: str | None = Field(
        default=None,
        description=(
            "A card ('l40s', 'rtx 4090'), with a count ('l40s:2'), a class ('48gb', '2x80gb'), "
            "a memory ('24gb') or a CPU host's RAM ('cpu-16gb'). Omit to compare the classes."
        ),
    )
    kv_dtype: str | None = Field(
        default=None, description=f"KV-cache dtype, one of: {_describe(KV_DTYPES)}. Omit for 16-bit."
    )
    tool_call_id: Annotated[str, InjectedToolCallId]


class CalculateSpeedArgs(CalculateVramArgs):
    """calculate_vram's arguments on a question about speed: the workload too. Offered only then,
    so a memory question's prompt does not carry them (a small local context has no room)."""

    # 0 / "" / false: not given (the service class's typical request, the users given).
    input_len: int = Field(default=0, ge=0, description="Speed: prompt tokens.")
    output_len: int = Field(default=0, ge=0, description="Speed: answer tokens.")
    rate: float = Field(default=0, ge=0, description="Speed: requests per second offered.")
    service: str = Field(default="", description=f"Speed: latency class ({', '.join(SERVICE_IDS)}).")
    users_target: bool = Field(default=False, description="Speed: users served within the target.")
    users_max: bool = Field(default=False, description="Speed: the memory filled (maximum throughput).")


class CalculateTrainingArgs(BaseModel):
    model: str = Field(description="Model name or bare size.")
    method: Literal["full", "lora", "qlora"]
    lora_rank: int = 16
    batch: int = Field(default=1, description="Micro-batch per GPU.")
    seq: int = Field(default=2048, description="Tokens per sequence.")
    optimizer: Literal["adamw", "adamw8bit", "sgd"] = "adamw"
    gradient_checkpointing: bool = True
    gpu: str | None = Field(default=None, description="As in calculate_vram.")
    tool_call_id: Annotated[str, InjectedToolCallId]


class LookupCardClassesArgs(BaseModel):
    card_class: str | None = Field(
        default=None, description="A card-class id ('48gb', '80gb', '2x80gb'). Omit to list them all."
    )


class SearchArticlesArgs(BaseModel):
    query: str = Field(description="What to look up in the sizing articles, in the visitor's language.")
    tool_call_id: Annotated[str, InjectedToolCallId]


class OfferEngineerArgs(BaseModel):
    reason: str = Field(description="Why, in one short line.")


# The agent's reason is shown in logs and stored with the reply; a line is enough.
HANDOFF_REASON_CHARS = 200


# The tools a run offers the model. A training conversation trades the serving searches of
# `reverse_search` for `calculate_training`; either set fits a small local context (4,096 tokens).
SERVING_TOOLS = (
    "calculate_vram",
    "lookup_card_classes",
    "search_articles",
    "reverse_search",
    "offer_engineer",
)
TRAINING_TOOLS = (
    "calculate_vram",
    "calculate_training",
    "lookup_card_classes",
    "search_articles",
    "offer_engineer",
)


def build_tools(
    log: ToolLog,
    store: Any | None,
    hub: HubLookup | None = None,
    *,
    training: bool = False,
    speed: bool = False,
) -> list[BaseTool]:
    """The agent's tools for one run, writing what they produce into `log`; `hub` looks up
    models named by a Hugging Face id (None: catalog and bare sizes only); `training` offers
    the training calculator in place of the reverse searches (`TRAINING_TOOLS`); `speed` (a
    question about speed) gives the calculator the workload's arguments (`CalculateSpeedArgs`)."""
    lang = log.lang

    def calculated(
        what: str,
        tool_call_id: str,
        make_request: Callable[[], SizingRequest],
        released: str | None = None,
        *,
        speed: bool = False,
    ) -> str:
        """One calculator call for the model: its steps, the result recorded for the guardrail, and
        the compact JSON back, or the error, so the model can correct the argument or ask."""
        try:
            result = calculate_vram(make_request(), hub=hub)
        except (SizingError, ValueError) as error:  # pydantic's ValidationError is a ValueError
            reason = " ".join(str(error).split())
            log.emit(
                Step(
                    kind="calculate", title=step_title(lang, "calculate", what), detail=reason, status="error"
                )
            )
            return json.dumps({"error": reason})
        log.record_calculation(tool_call_id, result)
        log.emit(
            Step(
                kind="calculate",
                title=step_title(lang, "calculate", what),
                detail=step_title(lang, "calculated", weights=result.weights_gb, total=result.total_gb),
                status="done",
            )
        )
        # Without the arithmetic lines: a model may ask for several at once, and the guardrail
        # shows the arithmetic itself when the answer lacks the key numbers.
        compact = compact_result(result, arithmetic=False, speed=speed)
        if released:  # "deepseek-r1": the answer must say it was sized as DeepSeek V3
            compact["sized_as"] = READING_NOTES.text(
                "model_released_as", "es" if lang == "es" else "en", name=released, label=result.model.name
            )
        return json.dumps(compact, ensure_ascii=False)

    def run_calculate_vram(
        model: str,
        precision: str,
        tool_call_id: str,
        context: int = 8192,
        users: int = 1,
        engine: str | None = None,
        gpu: str | None = None,
        kv_dtype: str | None = None,
        input_len: int = 0,
        output_len: int = 0,
        rate: float = 0,
        service: str = "",
        users_target: bool = False,
        users_max: bool = False,
    ) -> str:
        users_text = step_title(lang, "users", users=users)
        what = f"{model} · {precision} · {context:,} tokens · {users_text}"
        log.emit(Step(kind="calculate", title=step_title(lang, "calculate", what), status="running"))

        # Unset optional arguments keep the calculator's own defaults.
        optional = {
            "engine": engine,
            "gpu": gpu,
            "kv_dtype": kv_dtype,
            "input_len": input_len,
            "output_len": output_len,
            "rate": rate,
            "service": service,
            "users_target": users_target,
            "users_max": users_max,
        }
        given = {name: value for name, value in optional.items() if value}

        def request() -> SizingRequest:
            # A GGUF format with no engine named means llama.cpp / Ollama, not vLLM.
            return SizingRequest(
                model=model,
                precision=precision,
                context=context,
                users=users,
                lang=lang,
                **{"engine": default_engine(precision), **given},
            )

        # A question about speed gets the speed back from every call; otherwise a call that gives
        # a workload asked for it.
        wanted = speed or any(name in given for name in SPEED_ARGUMENTS)
        return calculated(what, tool_call_id, request, released_name(model), speed=wanted)

    def run_calculate_training(
        model: str,
        method: str,
        tool_call_id: str,
        lora_rank: int = 16,
        batch: int = 1,
        seq: int = 2048,
        optimizer: str = "adamw",
        gradient_checkpointing: bool = True,
        gpu: str | None = None,
    ) -> str:
        what = f"{model} · {method}"
        log.emit(Step(kind="calculate", title=step_title(lang, "calculate", what), status="running"))
        return calculated(
            what,
            tool_call_id,
            lambda: SizingRequest(
                model=model,
                engine="transformers",
                finetune=FinetuneSpec(
                    method=method,
                    lora_rank=lora_rank,
                    batch=batch,
                    seq=seq,
                    optimizer=optimizer,
                    gradient_checkpointing=gradient_checkpointing,
                ),
                gpu=gpu,
                lang=lang,
            ),
        )

    def run_lookup_card_classes(card_class: str | None = None) -> str:
        classes = card_classes()
        if card_class:
            wanted = card_class.strip().lower()
            classes = [c for c in classes if c.id.lower() == wanted] or classes
        listing = [
            {
                "id": c.id,
                "label": c.label,
                "cards": c.cards,
                "gpus": c.gpus,
                "usable_gb": c.usable_gb,
                "serves": c.serves.get(lang) or c.serves.get("en"),
                "catch": c.catch.get(lang) or c.catch.get("en"),
            }
            for c in classes
        ]
        log.emit(Step(kind="tool", title=step_title(lang, "cards"), status="done"))
        return json.dumps(listing, ensure_ascii=False, default=str)

    def run_search_articles(query: str, tool_call_id: str) -> str:
        title = step_title(lang, "search", query[:60])
        log.emit(Step(kind="search", title=title, status="running"))
        if store is None:
            passages: list[Any] = []
            failed = True
        else:
            try:
                passages = list(store.search(query, k=PASSAGES_PER_SEARCH, lang=lang))
                failed = False
            except Exception as error:  # any store fault degrades to "no sources", never to a failed answer
                logger.warning("search_articles failed: %s", " ".join(str(error).split()))
                passages, failed = [], True
        if failed:
            log.search_failed = True
            log.emit(Step(kind="search", title=step_title(lang, "search_failed"), status="error"))
            return "sources unavailable"
        log.record_passages(tool_call_id, passages)
        log.emit(Step(kind="search", title=title, detail=f"{len(passages)}", status="done"))
        return passages_for_model(passages)

    def run_offer_engineer(reason: str) -> str:
        line = " ".join(str(reason or "").split())[:HANDOFF_REASON_CHARS]
        log.handoff_reason = line
        log.emit(Step(kind="tool", title=llm_text("step_handoff", lang), detail=line, status="done"))
        return json.dumps(
            {
                "offered": True,
                "note": (
                    "The 'Talk to an engineer' form opens below your answer and the app adds a sentence "
                    "inviting the visitor to use it. Do not ask for a name, e-mail or other personal "
                    "details in the chat."
                ),
            }
        )

    tools = [
        StructuredTool.from_function(
            run_calculate_vram,
            name="calculate_vram",
            description=(
                "VRAM arithmetic for serving a model: weights, KV cache, overhead, total GB, which card class "
                "or card fits, headroom, max concurrent users, and the quantization caveat"
                + (
                    "; also `speed` (tokens/s, first token, ranges) for the Speed arguments' workload"
                    if speed
                    else ""
                )
                + ". Returns JSON."
            ),
            args_schema=CalculateSpeedArgs if speed else CalculateVramArgs,
        ),
        StructuredTool.from_function(
            run_calculate_training,
            name="calculate_training",
            description="Fine-tuning memory per GPU (full, LoRA, QLoRA) and which card holds it. Returns JSON.",
            args_schema=CalculateTrainingArgs,
        ),
        StructuredTool.from_function(
            run_lookup_card_classes,
            name="lookup_card_classes",
            description="The card classes (48GB, 80GB, 2x80GB): their cards, usable GB, what each serves, the catch.",
            args_schema=LookupCardClassesArgs,
        ),
        StructuredTool.from_function(
            run_search_articles,
            name="search_articles",
            description="Search the company's sizing articles; returns sections as [Title — Section] text.",
            args_schema=SearchArticlesArgs,
        ),
        *_reverse_tools(log),
        StructuredTool.from_function(
            run_offer_engineer,
            name="offer_engineer",
            description="Open the 'Talk to an engineer' form, where the visitor types their own details.",
            args_schema=OfferEngineerArgs,
        ),
    ]
    offered = TRAINING_TOOLS if training else SERVING_TOOLS
    return [tool for tool in tools if tool.name in offered]


def compact_result(result: SizingResult, *, arithmetic: bool = True, speed: bool = False) -> dict[str, Any]:
    """What the model needs from a calculation, without the fields it would only echo.

    The full `sizing calc --json` object is several times longer (model metadata, every
    suggestion); three of them side by side would not fit a small local context. Without
    `arithmetic` it is half as long again: the guardrail shows the arithmetic lines itself
    when the answer lacks the key numbers. With `speed` (a question about tokens/s, latency, a
    load or how many users are served) the recommended option's speed estimate comes along as
    the sentences a visitor reads, ranges and basis included, with its suggestions for the load."""
    # The sequences a card holds are a training's micro-batch, or a serving's users.
    sequences = "max_micro_batch" if result.finetune is not None else "max_concurrent_users"
    compact = {
        "model": result.model.name,
        "precision": result.precision,
        "engine": result.engine,
        "context": result.context,
        "users": result.users,
        "kv_dtype": result.kv_dtype,
        "weights_gb": result.weights_gb,
        "kv_cache_gb": result.kv_cache_gb,
        "overhead_gb": result.overhead_gb,
        "total_gb": result.total_gb,
        "options": [
            {
                "label": option.label,
                "fits": option.fits,
                "headroom_gb": option.headroom_gb,
                sequences: option.max_concurrent_sequences,
            }
            for option in result.options
        ],
        "recommendation": result.recommendation,
        # The per-option lines repeat what `options` already says.
        "arithmetic": [
            line for line in result.arithmetic if not any(line.startswith(o.label) for o in result.options)
        ],
        "caveat": result.caveat,
    }
    if result.finetune is not None:  # a training result: its per-GPU breakdown is the answer
        compact["finetune"] = result.finetune.model_dump()
        # What only a serving has, and an "overhead" that is every part but the weights here.
        for serving_only in ("context", "users", "kv_dtype", "kv_cache_gb", "engine", "overhead_gb"):
            del compact[serving_only]
    if not arithmetic:
        del compact["arithmetic"]
    if speed and result.finetune is None:
        summary = speed_summary(result)
        if summary:
            compact["speed"] = summary
        if result.performance_suggestions:
            compact["speed_suggestions"] = result.performance_suggestions
    return compact


def passages_for_model(passages: list[Any]) -> str:
    """Article sections as the model reads them: `[Title — Section] (path)` then the text."""
    if not passages:
        return "no matching article section"
    return "\n\n".join(
        f"[{p.title} — {p.section}] ({p.path})\n{p.text[:PASSAGE_CHARS_FOR_MODEL]}" for p in passages
    )


@functools.cache
def _tool_specs(training: bool, speed: bool) -> tuple[dict[str, Any], ...]:
    tools = build_tools(ToolLog(lang="en"), None, training=training, speed=speed)
    return tuple(convert_to_openai_tool(tool) for tool in tools)


def tool_specs(*, training: bool = False, speed: bool = False) -> list[dict[str, Any]]:
    """The tools' OpenAI function schemas (`build_tools`). They never change, so they are converted
    once: converting the pydantic schemas on every model call costs about 10 ms each time."""
    return copy.deepcopy(list(_tool_specs(training, speed)))


def sources_of(passages: list[Any]) -> list[Source]:
    """Distinct article sections, in the order they were retrieved."""
    seen: dict[tuple[str, str, str], Source] = {}
    for passage in passages:
        key = (passage.title, passage.path, passage.section)
        seen.setdefault(
            key,
            Source(
                title=passage.title,
                path=passage.path,
                section=passage.section,
                score=getattr(passage, "score", None),
            ),
        )
    return list(seen.values())


# --------------------------------------------------------------------------- reverse searches


ReverseSearch = Literal["largest_model", "longest_context", "fewest_gpus", "smallest_card"]


class ReverseArgs(BaseModel):
    # Short descriptions, no choice lists: the schema goes with every model call, and
    # calculate_vram's already lists the precisions and engines.
    search: ReverseSearch = Field(
        description=(
            "largest_model: the largest catalog model a card holds (gpu required); longest_context: "
            "the longest context a model fits on a card (gpu required); fewest_gpus: the fewest GPUs "
            "of a card, or of any card, that hold a model; smallest_card: the smallest single card."
        )
    )
    model: str = Field(default="", description="The model (not for largest_model).")
    precision: str = Field(default="bf16", description="As for calculate_vram.")
    context: int = Field(default=8192, gt=0, description="Tokens per sequence.")
    users: int = Field(default=1, gt=0, description="Concurrent users.")
    engine: str = Field(default="", description="As for calculate_vram.")
    gpu: str = Field(default="", description="A card ('l40s', '24gb' for any 24 GB card), ':N', or a class.")
    tool_call_id: Annotated[str, InjectedToolCallId]


def _reverse_tools(log: ToolLog) -> list[BaseTool]:
    """Reverse questions the calculator answers by search; each records the configuration it found."""

    def run(kind: str, tool_call_id: str, **args: Any) -> str:
        title = step_title(log.lang, "calculate", f"{kind} · {args.get('model') or args.get('gpu') or ''}")
        log.emit(Step(kind="calculate", title=title, status="running"))
        try:
            precision = args["precision"]
            request = SizingRequest(
                model=args["model"],
                precision=precision,
                context=args["context"],
                users=args["users"],
                engine=args.get("engine") or default_engine(precision),
                gpu=args.get("gpu") or None,
                lang=log.lang,  # type: ignore[arg-type]
            )
            found: dict[str, Any]
            result: SizingResult | None
            if kind == "largest_model":
                largest = reverse.largest_model(args.get("gpu") or "", request)
                found, result = {"model": largest.model_id}, largest.result
            elif kind == "longest_context":
                longest = reverse.longest_context(request)
                found = {"context": longest.context, "capped_by_model_limit": longest.capped_by_model}
                result = longest.result
            elif kind == "fewest_gpus":
                card = (args.get("gpu") or "").partition(":")[0] or None
                fewest = reverse.fewest_gpus(request.model_copy(update={"gpu": None}), card)
                found, result = {"card": fewest.card, "count": fewest.count}, fewest.result
            else:
                result = reverse.smallest_card(request.model_copy(update={"gpu": None}))
                found = {"card": result.options[0].card if result else None}
        except (SizingError, ValueError) as error:
            reason = " ".join(str(error).split())
            log.emit(Step(kind="calculate", title=title, detail=reason, status="error"))
            return json.dumps({"error": reason})
        if result is not None:
            log.record_calculation(tool_call_id, result)
        log.emit(Step(kind="calculate", title=title, detail=json.dumps(found), status="done"))
        payload = {"found": found, "calculation": result.model_dump(mode="json") if result else None}
        return json.dumps(payload, ensure_ascii=False)

    def reverse_search(tool_call_id: str, search: str, **args: Any) -> str:
        defaults = {"model": "", "precision": "bf16", "context": 8192, "users": 1, "engine": "", "gpu": ""}
        return run(search, tool_call_id, **{**defaults, **args})

    # One tool for the four searches: four copies of the same arguments would take a third of a
    # small local model's context.
    return [
        StructuredTool.from_function(
            reverse_search,
            name="reverse_search",
            description="Calculator searches that start from the hardware or the limit; returns what was found and its calculation.",
            args_schema=ReverseArgs,
        )
    ]
