"""From the conversation's slots to calculator requests, and the calculations themselves.

`merge_slots(state, understanding)` folds one message into the conversation state;
`plan_sizing(state, lang)` turns the state into the requests to calculate (the three common
precisions side by side when none was named); `run_plan(plan)` calls `tools.calculate_vram`.
Used by the offline responder and by the service when an LLM never called the calculator.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from assistant.offline.lexicon import load_yaml
from assistant.offline.names import catalog, name_key
from assistant.offline.notes import ReadingNote, note
from assistant.offline.read_cards import with_card_count
from assistant.offline.read_models import family_members, family_model_of_size
from assistant.offline.understanding import (
    ENGINE_OPTION_FIELDS,
    FINETUNE_FIELDS,
    TRAINING_KNOBS,
    WORKLOAD_FIELDS,
    Understanding,
    understand,
)
from assistant.schemas import ConversationState, Language
from tools import SizingRequest, SizingResult, calculate_vram, default_engine
from tools.catalog import release_precisions
from tools.performance import request_tokens

# Defaults the answer states plainly when the visitor did not say. The context default is the
# calculator's own (tools.SizingRequest.context), so offline answers and `sizing calc` agree.
DEFAULT_CONTEXT = SizingRequest.model_fields["context"].default
DEFAULT_USERS = 1
# The article's three precisions, side by side when none is named: 16, 8 and 4 bits. GGUF engines
# (llama.cpp, Ollama) ship 8 and 4 bits as Q8_0 and Q4_K_M files rather than INT8/INT4 checkpoints.
SIDE_BY_SIDE = ("bf16", "int8", "int4")
SIDE_BY_SIDE_GGUF = ("bf16", "q8_0", "q4_k_m")
GGUF_ENGINES = ("llamacpp", "ollama")
# llama.cpp and Ollama load GGUF files: a bit width named with them means the common GGUF file
# of that width (the same pairs the side-by-side table uses).
GGUF_EQUIVALENT = {"int8": "q8_0", "fp8": "q8_0", "int4": "q4_k_m", "awq": "q4_k_m", "gptq": "q4_k_m"}
_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?b")


@lru_cache(maxsize=1)
def native_formats() -> dict[str, str]:
    """Catalog id -> the weight format the model ships in (tools/data/models.json release_precision)."""
    return release_precisions()


@lru_cache(maxsize=1)
def engine_defaults() -> dict[str, str]:
    """Engine id -> the format it pulls when no precision is named (data/native_formats.yaml)."""
    return dict(load_yaml("native_formats.yaml").get("engine_defaults", {}))


@lru_cache(maxsize=1)
def host_defaults() -> dict[str, str]:
    """Host kind ("apple", "cpu") -> the GGUF file sized when no precision is named."""
    return dict(load_yaml("native_formats.yaml").get("host_defaults", {}))


def host_kind(gpu: str | None) -> str | None:
    """ "apple" or "cpu" when the card is one of the catalog's Apple or CPU-only hosts, or a
    CPU-only host known by its RAM ("cpu-16gb")."""
    name = (gpu or "").split(":")[0]
    kind = catalog().kinds.get(name, "cpu" if name.startswith("cpu-") else None)
    return kind if kind in ("apple", "cpu") else None


def model_context_limit(model: str) -> tuple[str, int] | None:
    """(the model's name, the longest context it reads), when the catalog knows it."""
    from tools.catalog import resolve
    from tools.errors import SizingError

    try:
        resolved = resolve(model)
    except SizingError:
        return None
    limit = resolved.arch.max_position_embeddings
    return (resolved.info.name, int(limit)) if limit else None


@lru_cache(maxsize=1)
def head_count_share() -> float:
    """The share of a head count that is online at once (data/concurrency.yaml)."""
    return float(load_yaml("concurrency.yaml")["share"])


def users_from_head_count(head_count: int) -> int:
    return max(1, math.ceil(head_count * head_count_share() - 1e-9))


def family_sibling(model_id: str | None, bare: str) -> str:
    """A bare size said after a catalog model ("no, the 70b") means that family's model of that size."""
    if not model_id or not _BARE_SIZE.fullmatch(bare):
        return bare
    cat = catalog()
    current = next((model for model in cat.models if model.model_id == model_id), None)
    if current is None:
        return bare
    size = float(bare[:-1])
    prefix = name_key(current.label).rsplit(" ", 2)[0]
    for model in cat.models:
        same_line = name_key(model.label).startswith(prefix) and model.family == current.family
        if same_line and abs(model.params_b - size) <= 0.1 * size:
            return model.model_id
    for model in cat.models:
        if model.family == current.family and abs(model.params_b - size) <= 0.1 * size:
            return model.model_id
    return bare


@dataclass(frozen=True, kw_only=True)
class SizingPlan:
    """What to calculate for one answer; what the visitor did not say is at its default."""

    model: str
    precisions: tuple[str, ...]
    side_by_side: bool  # no precision was named: the three common ones
    language: Language
    context: int = DEFAULT_CONTEXT
    users: int = DEFAULT_USERS
    engine: str | None = None
    kv_dtype: str | None = None
    gpu: str | None = None  # a card id (":N" for several) the visitor named
    card_class: str | None = None  # a card-class id the visitor named ("48gb")
    assumed: tuple[str, ...] = ()  # "context", "users", "quantized", "native", "head_count": said plainly
    utilization: float | None = None  # vLLM --gpu-memory-utilization; None = the calculator's default
    head_count: int | None = None  # the head count the users were derived from
    # The serving workload the message asked about (service class, requests/s, latency targets).
    service: str | None = None
    rate: float | None = None
    rate_period: str | None = None  # "day", "week", "month": the rate is that period's average
    users_max: bool | None = None  # as many sequences as the memory holds (the saturated load)
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    input_len: int | None = None
    output_len: int | None = None
    job_count: int | None = None  # requests in one batch job, when said (how long it takes)
    users_target: bool = False  # "how many users can it serve?": as many as meet the latency target
    max_loras: int | None = None  # LoRA adapter slots served (--max-loras)
    max_lora_rank: int | None = None
    draft_model: str | None = None  # speculative decoding's draft model
    finetune_method: str | None = None  # a training question's method (full | lora | qlora)
    lora_rank: int | None = None  # the LoRA rank a training question gives
    train_batch: int | None = None  # a training question's micro-batch per GPU
    train_seq: int | None = None  # tokens per training sequence
    train_optimizer: str | None = None
    gradient_checkpointing: bool | None = None
    # What the message said that could not be used as written, for the answer to show.
    notes: tuple[ReadingNote, ...] = ()

    @property
    def workload(self) -> dict[str, object]:
        """The SizingRequest fields of the workload that were said."""
        return self._said(WORKLOAD_FIELDS)

    @property
    def engine_options(self) -> dict[str, object]:
        """The SizingRequest fields of engine options that were said (LoRA slots, a draft model)."""
        return self._said(ENGINE_OPTION_FIELDS)

    def _said(self, names: tuple[str, ...]) -> dict[str, object]:
        values = {name: getattr(self, name) for name in names}
        return {name: value for name, value in values.items() if value is not None}

    def request(self, precision: str, gpu: str | None, *, with_engine_options: bool = True) -> SizingRequest:
        """The request at one precision on one card (None: across the card classes)."""
        return SizingRequest(
            model=self.model,
            precision=precision,
            context=self.context,
            users=self.users,
            kv_dtype=self.kv_dtype,
            engine=self.engine or default_engine(precision),
            gpu=gpu,
            lang=self.language,
            **({"gpu_memory_utilization": self.utilization} if self.utilization else {}),
            **({"users_target": True} if self.users_target else {}),
            **self.workload,
            **(self.engine_options if with_engine_options else {}),
        )

    def requests(self, *, on_card: bool = True) -> list[SizingRequest]:
        return [self.request(precision, self.gpu if on_card else None) for precision in self.precisions]


@dataclass(frozen=True)
class Calculations:
    """The results of a plan: on the named card (if any) and across the card classes."""

    plan: SizingPlan
    on_card: list[SizingResult]  # empty when no card was named
    by_class: list[SizingResult]

    @property
    def shown(self) -> list[SizingResult]:
        """Every result the answer quotes figures from (what Reply.calculations carries)."""
        return [*self.on_card, *self.by_class]


# A bare number the assistant asked for reads as a context from here up; below, as users.
SMALLEST_BARE_CONTEXT = 1024


def read_as_answer(message: str, state: ConversationState, reading: Understanding) -> Understanding:
    """The message read with what the last answer asked: "20" after "how many concurrent users?"
    is 20 users, "users" after "32 of what?" is 32 users, "for llama 3.1 70b" after "h100 or
    h200?" is that model on both. Anything else is read as it is."""
    if state.compared_cards and reading.model and not reading.cards:
        # "for llama 3.1 70b" after "h100 or h200?": the model on each of the cards weighed.
        cards = tuple(state.compared_cards)
        return replace(reading, cards=cards, gpu=cards[0], comparison=True)
    if state.pending_count and not reading.names_a_slot and reading.bare_number is None:
        counted = understand(f"{state.pending_count} {message}", reading.language)
        if state.pending_count in (counted.users, counted.card_count):
            return replace(counted, language=reading.language)
    count = reading.bare_number
    if count and reading.bare_answer:
        if "context" in state.asked and (count >= SMALLEST_BARE_CONTEXT or "users" not in state.asked):
            return replace(reading, context=count, bare_number=None)
        if "users" in state.asked:
            return replace(reading, users=count, bare_number=None)
    return reading


def merge_slots(state: ConversationState, understanding: Understanding) -> ConversationState:
    """The state after this message: what the message says replaces what was said before."""
    if understanding.reset:
        state = ConversationState(language=state.language, history=state.history)
    updates: dict[str, object] = {}
    if understanding.model:
        model = family_sibling(state.model, understanding.model)
        if state.family and not state.model:  # "the 70b" after "which Llama?"
            model = family_model_of_size(state.family, model)
        updates["model"], updates["family"] = model, None
    elif understanding.family or understanding.unknown_family:
        family = understanding.family or understanding.unknown_family or ""
        updates["family"] = family
        if state.model not in {model.model_id for model in family_members(family)}:
            updates["model"] = None  # "and qwen?" after a Llama: another family, not the Llama again
    if len(understanding.precisions) == 1:
        updates["precision"] = understanding.precisions[0]
    elif understanding.model and understanding.model_precisions and understanding.model_precisions[0]:
        updates["precision"] = understanding.model_precisions[0]
    for name in ("tasks", "context", "users", "engine", "kv_dtype", "head_count", "job_count"):
        value = getattr(understanding, name)
        if value is not None:
            updates[name] = value
    if understanding.utilization is not None:
        updates["gpu_memory_utilization"] = understanding.utilization
    # A batch or sequence figure outside a training conversation is a serving one (read as users
    # or context as well): it does not become the training's.
    training = "finetuning" in (understanding.tasks, state.tasks)
    for name in (*WORKLOAD_FIELDS, *ENGINE_OPTION_FIELDS, *(FINETUNE_FIELDS if training else ())):
        value = getattr(understanding, name)
        if value is not None:
            updates[name] = value
    if training and understanding.train_seq is None and understanding.context:
        updates["train_seq"] = understanding.context  # "and with 8k context?" after a training answer
    # The load is set one way at a time: users, a rate, or as many as the memory holds.
    if understanding.rate is not None:
        updates.update(rate_period=understanding.rate_period, users_max=None)
    if understanding.users_max:
        updates.update(rate=None, rate_period=None)
    if understanding.users is not None and understanding.rate is None:
        updates.update(rate=None, rate_period=None, users_max=None)
    if understanding.gpu or understanding.card_class:
        updates["gpu"] = understanding.gpu or understanding.card_class
        # Apple unified memory and CPU servers run llama.cpp (the articles), unless an engine is named.
        # A Mac or CPU host named after a GPU engine still runs a GGUF engine.
        if understanding.hardware_kind and not understanding.engine and state.engine not in GGUF_ENGINES:
            updates["engine"] = "llamacpp"
    elif understanding.unknown_hardware or understanding.hardware_kind:
        updates["gpu"] = None  # never size the earlier card in place of hardware we do not know
    elif state.gpu and (understanding.card_count or understanding.cards_added):
        # "what about 2 gpus?", "2 of them", "one more": the conversation's card, that many.
        counted = with_card_count(state.gpu, understanding.card_count, understanding.cards_added)
        if counted:
            updates["gpu"] = counted
    return state.model_copy(update=updates)


def plan_sizing(
    state: ConversationState, language: Language, understanding: Understanding | None = None
) -> SizingPlan | None:
    """The requests for the state's model, or None when no model is known yet."""
    if not state.model:
        return None
    several_models = bool(understanding and understanding.other_models)
    named = (
        understanding.precisions
        if understanding and len(understanding.precisions) > 1 and not several_models
        else ()
    )
    gguf = state.engine in GGUF_ENGINES
    assumed = []
    native = native_formats().get(state.model)
    pulled = engine_defaults().get(state.engine or "")
    host = host_defaults().get(host_kind(state.gpu) or "") if gguf else None
    release = bool(understanding and understanding.repo_release and not gguf)
    if named:
        precisions, side_by_side = named, False
    elif state.precision:
        precisions, side_by_side = (state.precision,), False
    elif native:
        precisions, side_by_side = (native,), False
        assumed.append("native")
    elif host:
        precisions, side_by_side = (host,), False
        assumed.append("host_gguf")
    elif release:
        precisions, side_by_side = ("bf16",), False
        assumed.append("release")
    elif pulled:
        precisions, side_by_side = (pulled,), False
        assumed.append("engine_default")
    else:
        precisions, side_by_side = (SIDE_BY_SIDE_GGUF if gguf else SIDE_BY_SIDE), True
    if gguf:
        precisions = tuple(GGUF_EQUIVALENT.get(precision, precision) for precision in precisions)
    notes = list(understanding.notes) if understanding else []
    context = state.context
    needed = request_tokens(state.service, state.input_len, state.output_len)
    if needed and needed > (context or DEFAULT_CONTEXT):
        # A request longer than the context could never be served: size the context it needs.
        key = "context_for_request_said" if context else "context_for_request"
        notes.append(note(key, tokens=needed, value=context or DEFAULT_CONTEXT))
        context = needed
    elif context is None:
        assumed.append("context")
    users = state.users
    # "How many users can it serve?" is answered with the count, not sized at an assumed one; a rate
    # already sets how many run at once.
    capacity = bool(
        understanding and understanding.question == "capacity" and not state.rate and not state.users_max
    )
    if users is None and state.head_count:
        users = users_from_head_count(state.head_count)
        assumed.append("head_count")
    elif users is None and not state.rate and not state.users_max and not capacity:  # those set the users
        assumed.append("users")
    if understanding and understanding.precision_assumed:
        assumed.append("quantized")
    class_ids = catalog().class_ids
    card_class = state.gpu if state.gpu in class_ids else None
    limit = model_context_limit(state.model) if context else None
    if context and limit and context > limit[1]:  # sized as asked, and said
        notes.append(note("context_over_model", model=limit[0], limit=limit[1], value=context))
    return SizingPlan(
        model=state.model,
        precisions=precisions,
        side_by_side=side_by_side,
        context=context or DEFAULT_CONTEXT,
        users=users or DEFAULT_USERS,
        engine=state.engine,
        kv_dtype=state.kv_dtype,
        gpu=None if card_class else state.gpu,
        card_class=card_class,
        assumed=tuple(assumed),
        language=language,
        utilization=state.gpu_memory_utilization,
        head_count=state.head_count if "head_count" in assumed else None,
        job_count=state.job_count if state.service == "batch_offline" else None,
        rate_period=state.rate_period if state.rate else None,
        users_target=capacity,
        **{
            name: getattr(state, name) for name in (*WORKLOAD_FIELDS, *ENGINE_OPTION_FIELDS, *FINETUNE_FIELDS)
        },
        notes=tuple(notes),
    )


def comparison_sides(
    state: ConversationState, language: Language, understanding: Understanding
) -> list[SizingPlan]:
    """Two or more plans when the message compares cards or models ("H100 or H200", "8B at 16
    bits or 32B at 4 bits"), one per side, each at one precision; [] when it compares nothing."""
    base = plan_sizing(state, language, understanding)
    if base is None:
        return []
    models = (family_sibling(state.model, understanding.model or ""), *understanding.other_models)
    class_ids = catalog().class_ids
    if len(understanding.cards) > 1 and len(models) == len(understanding.cards):
        # "Qwen 72B AWQ on an H100 or Llama 70B FP8 on an H200": each model on its own card.
        shared = understanding.precisions[0] if len(understanding.precisions) == 1 else None
        per_model = understanding.model_precisions or (None,) * len(models)
        paired = []
        for model, written, card in zip(models, per_model, understanding.cards, strict=False):
            chosen = written or shared or native_formats().get(model) or "bf16"
            paired.append(
                replace(
                    base,
                    model=model,
                    precisions=(chosen,),
                    side_by_side=False,
                    gpu=None if card in class_ids else card,
                    card_class=card if card in class_ids else None,
                )
            )
        return paired
    if len(understanding.cards) > 1:
        precision = _one_precision(base, state)
        sides = []
        for card in understanding.cards:
            sides.append(
                replace(
                    base,
                    precisions=(precision,),
                    side_by_side=False,
                    gpu=None if card in class_ids else card,
                    card_class=card if card in class_ids else None,
                )
            )
        return sides
    if understanding.other_models:
        shared = understanding.precisions[0] if len(understanding.precisions) == 1 else None
        per_model = understanding.model_precisions or (None,) * len(models)
        sides = []
        for model, written in zip(models, per_model, strict=False):
            chosen = written or shared or native_formats().get(model) or _one_precision(base, state)
            sides.append(replace(base, model=model, precisions=(chosen,), side_by_side=False))
        return sides
    return []


def _one_precision(plan: SizingPlan, state: ConversationState) -> str:
    """The precision a comparison uses: the one named, the model's own format, else 16-bit."""
    if state.precision:
        return state.precision
    if len(plan.precisions) == 1:
        return plan.precisions[0]
    return native_formats().get(plan.model, "bf16")


def run_plan(plan: SizingPlan) -> Calculations:
    """Calculate every request of the plan. Raises SizingError subclasses on impossible input."""
    by_class = [calculate(request) for request in plan.requests(on_card=False)]
    on_card = [calculate(request) for request in plan.requests()] if plan.gpu else []
    return Calculations(plan=plan, on_card=on_card, by_class=by_class)


def calculate(request: SizingRequest, speed: bool = True) -> SizingResult:
    """`calculate_vram`, remembered: the calculator is pure and many visitors ask the same thing.
    Without `speed`, the memory verdicts alone (`calculate_vram`)."""
    return _calculate_json(request.model_dump_json(), speed).model_copy(deep=True)


@lru_cache(maxsize=512)
def _calculate_json(request_json: str, speed: bool) -> SizingResult:
    return calculate_vram(SizingRequest.model_validate_json(request_json), speed=speed)


# What only a serving question says: a message that says one of these is not a training follow-up.
SERVING_ONLY = (
    "precisions",
    "kv_dtype",
    "engine",
    "head_count",
    "utilization",
    *WORKLOAD_FIELDS,
    *ENGINE_OPTION_FIELDS,
)


def training_followup(reading: Understanding, state: ConversationState) -> bool:
    """A message with no question of its own that goes on with a training answer ("and on an
    L40S?", "¿y con lote de 8?"): it changes a training knob, the card or the model, and says
    nothing only a serving question says (a batch figure read as users too is the batch)."""
    if (
        reading.question is not None
        or state.tasks != "finetuning"
        or reading.tasks not in (None, "finetuning")
    ):
        return False
    if any(getattr(reading, name) for name in SERVING_ONLY):
        return False
    if reading.users is not None and reading.users != reading.train_batch:
        return False
    said = (*TRAINING_KNOBS, "gpu", "card_class", "model", "context")
    return any(getattr(reading, name) is not None for name in said)


def training_question(reading: Understanding, state: ConversationState) -> bool:
    """The message asks for a training's memory: a fine-tuning question or a training follow-up."""
    return reading.question == "finetuning" or training_followup(reading, state)


def is_sizing_question(reading: Understanding, state: ConversationState) -> bool:
    """Does this message ask for a calculation, given what the conversation already knows?"""
    if not state.model or (reading.reveal_prompt and not reading.names_a_slot):
        return False
    return reading.names_a_slot or reading.injection or (reading.sizing_words and not reading.faq)
