"""From the conversation's slots to calculator requests, and the calculations themselves.

`merge_slots(state, understanding)` folds one message into the conversation state;
`plan_sizing(state, lang)` turns the state into the requests to calculate (the three common
precisions side by side when none was named); `run_plan(plan)` calls `tools.calculate_vram`.
Used by the offline responder and by the service when an LLM never called the calculator.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from assistant.offline.understanding import Understanding, catalog
from assistant.schemas import ConversationState, Language
from tools import SizingRequest, SizingResult, calculate_vram, default_engine

# Defaults the answer states plainly when the visitor did not say. The context default is the
# calculator's own (tools.SizingRequest.context), so offline answers and `sizing calc` agree.
DEFAULT_CONTEXT = SizingRequest.model_fields["context"].default
DEFAULT_USERS = 1
# The article's three precisions, side by side when none is named: 16, 8 and 4 bits. GGUF engines
# (llama.cpp, Ollama) ship 8 and 4 bits as Q8_0 and Q4_K_M files rather than INT8/INT4 checkpoints.
SIDE_BY_SIDE = ("bf16", "int8", "int4")
SIDE_BY_SIDE_GGUF = ("bf16", "q8_0", "q4_k_m")
GGUF_ENGINES = ("llamacpp", "ollama")


@dataclass(frozen=True)
class SizingPlan:
    """What to calculate for one answer."""

    model: str
    precisions: tuple[str, ...]
    side_by_side: bool  # no precision was named: the three common ones
    context: int
    users: int
    engine: str | None
    kv_dtype: str | None
    gpu: str | None  # a card id (":N" for several) the visitor named
    card_class: str | None  # a card-class id the visitor named ("48gb")
    assumed: tuple[str, ...]  # "context", "users", "quantized": defaults to state plainly
    language: Language

    def requests(self, *, on_card: bool = True) -> list[SizingRequest]:
        return [
            SizingRequest(
                model=self.model,
                precision=precision,
                context=self.context,
                users=self.users,
                kv_dtype=self.kv_dtype,
                engine=self.engine or default_engine(precision),
                gpu=self.gpu if on_card else None,
                lang=self.language,
            )
            for precision in self.precisions
        ]


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


def merge_slots(state: ConversationState, understanding: Understanding) -> ConversationState:
    """The state after this message: what the message says replaces what was said before."""
    if understanding.reset:
        state = ConversationState(language=state.language, history=state.history)
    updates: dict[str, object] = {}
    if understanding.model:
        updates["model"] = understanding.model
    if len(understanding.precisions) == 1:
        updates["precision"] = understanding.precisions[0]
    for name in ("tasks", "context", "users", "engine", "kv_dtype"):
        value = getattr(understanding, name)
        if value is not None:
            updates[name] = value
    if understanding.gpu or understanding.card_class:
        updates["gpu"] = understanding.gpu or understanding.card_class
    return state.model_copy(update=updates)


def plan_sizing(
    state: ConversationState, language: Language, understanding: Understanding | None = None
) -> SizingPlan | None:
    """The requests for the state's model, or None when no model is known yet."""
    if not state.model:
        return None
    named = understanding.precisions if understanding and len(understanding.precisions) > 1 else ()
    gguf = state.engine in GGUF_ENGINES
    if named:
        precisions, side_by_side = named, False
    elif state.precision:
        precisions, side_by_side = (state.precision,), False
    else:
        precisions, side_by_side = (SIDE_BY_SIDE_GGUF if gguf else SIDE_BY_SIDE), True
    assumed = []
    if state.context is None:
        assumed.append("context")
    if state.users is None:
        assumed.append("users")
    if understanding and understanding.precision_assumed:
        assumed.append("quantized")
    class_ids = catalog().class_ids
    card_class = state.gpu if state.gpu in class_ids else None
    return SizingPlan(
        model=state.model,
        precisions=precisions,
        side_by_side=side_by_side,
        context=state.context or DEFAULT_CONTEXT,
        users=state.users or DEFAULT_USERS,
        engine=state.engine,
        kv_dtype=state.kv_dtype,
        gpu=None if card_class else state.gpu,
        card_class=card_class,
        assumed=tuple(assumed),
        language=language,
    )


def run_plan(plan: SizingPlan) -> Calculations:
    """Calculate every request of the plan. Raises SizingError subclasses on impossible input."""
    by_class = [calculate(request) for request in plan.requests(on_card=False)]
    on_card = [calculate(request) for request in plan.requests()] if plan.gpu else []
    return Calculations(plan=plan, on_card=on_card, by_class=by_class)


def calculate(request: SizingRequest) -> SizingResult:
    """`calculate_vram`, remembered: the calculator is pure and many visitors ask the same thing."""
    return _calculate_json(request.model_dump_json()).model_copy(deep=True)


@lru_cache(maxsize=512)
def _calculate_json(request_json: str) -> SizingResult:
    return calculate_vram(SizingRequest.model_validate_json(request_json))


def is_sizing_question(reading: Understanding, state: ConversationState) -> bool:
    """Does this message ask for a calculation, given what the conversation already knows?"""
    if not state.model or (reading.reveal_prompt and not reading.names_a_slot):
        return False
    return reading.names_a_slot or reading.injection or (reading.sizing_words and not reading.faq)
