"""Reverse sizing questions, answered by searching with the calculator.

    largest_model("l40s", precision="int4", users=10)      # the biggest catalog model that fits
    longest_context(SizingRequest(model="8b", gpu="rtx-4090"))  # the most tokens per sequence
    fewest_gpus(SizingRequest(model="llama-3.1-405b", precision="fp8"), card="a100-80gb")
    smallest_card(SizingRequest(model="llama-3.1-8b", precision="int4"))

Every answer is a `calculate_vram` verdict on the configuration found (returned with it), so a
reverse answer carries the same checkable arithmetic as a forward one. Pure: pydantic only.
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import BaseModel

from tools.calculator import calculate_vram
from tools.cards import list_cards
from tools.catalog import list_models, resolve
from tools.errors import InvalidInputError, SizingError
from tools.evaluation import candidates, evaluate
from tools.scenario import Scenario, build_scenario
from tools.schemas import Card, SizingRequest, SizingResult

# GPU counts a "how many" answer names: servers carry 1, 2, 4 or 8 cards and tensor parallelism
# splits attention heads evenly (vLLM requires the head count to divide by it); past 8, whole
# 8-GPU nodes.
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)
# The shortest context worth reporting: below this a chat turn does not fit.
MIN_CONTEXT = 128


class LargestModel(BaseModel):
    """The largest catalog model that fits, with its calculation; None when none does."""

    model_id: str | None
    result: SizingResult | None
    tried: int  # catalog models checked


class LongestContext(BaseModel):
    """The longest context (tokens per sequence) that fits, and whether the model's own limit capped it."""

    context: int  # 0 when not even MIN_CONTEXT fits
    model_limit: int | None
    capped_by_model: bool
    result: SizingResult | None


class GpuCount(BaseModel):
    """The fewest GPUs of a card that hold the request (None when even the most in GPU_COUNTS do not)."""

    card: str
    count: int | None
    result: SizingResult | None


HOST_KINDS = ("apple", "cpu")


def searched_cards() -> list[Card]:
    """The cards a search proposes: the quoted line-up of GPUs (`suggested` in cards.json). Other
    cards, Macs and CPU hosts are sized when a visitor names them, never offered unasked."""
    return [card for card in list_cards() if card.suggested and card.kind not in HOST_KINDS]


def _fits(request: SizingRequest) -> SizingResult | None:
    """The full calculation when the request fits its card, else None. The verdict is taken
    first from the scenario alone (no advice, no arithmetic text), which is what a search needs."""
    if not _verdict(request):
        return None
    result = calculate_vram(request)
    return result if result.options and result.options[0].fits else None


def _verdict(request: SizingRequest, scenario: Scenario | None = None) -> bool:
    """Does the request fit its card? `scenario` may be passed when only the card changes."""
    scenario = scenario or build_scenario(request)
    options = candidates(request.gpu, request.lang)
    return all(evaluate(scenario, option).option.fits for option in options[:1])


def largest_model(
    gpu: str, request: SizingRequest | None = None, among: Collection[str] | None = None
) -> LargestModel:
    """The catalog model with the most parameters that fits `gpu` at the request's precision,
    context, users and engine (the request's model is ignored); `among`: only these catalog ids
    (a family)."""
    base = request or SizingRequest()
    best: tuple[int, str, SizingResult] | None = None
    models = [info for info in list_models() if among is None or info.id in among]
    for info in models:
        if best and info.params <= best[0]:
            continue
        try:
            found = _fits(base.model_copy(update={"model": info.id, "gpu": gpu}))
        except SizingError:  # a format this model's engine does not load
            continue
        if found:
            best = (info.params, info.id, found)
    if best is None:
        return LargestModel(model_id=None, result=None, tried=len(models))
    return LargestModel(model_id=best[1], result=best[2], tried=len(models))


def longest_context(request: SizingRequest) -> LongestContext:
    """The most tokens per sequence that fit the request's card (`gpu` must be set), by bisection."""
    if not request.gpu:
        raise InvalidInputError("longest_context needs a card (gpu), e.g. 'l40s' or 'h100-80gb:2'")
    limit = resolve(request.model, request.lang).arch.max_position_embeddings
    high = limit or 10_000_000
    at_limit = _fits(request.model_copy(update={"context": high}))
    if at_limit:
        return LongestContext(context=high, model_limit=limit, capped_by_model=bool(limit), result=at_limit)
    low_result = _fits(request.model_copy(update={"context": MIN_CONTEXT}))
    if low_result is None:
        return LongestContext(context=0, model_limit=limit, capped_by_model=False, result=None)
    low = MIN_CONTEXT
    while high - low > 1:
        middle = (low + high) // 2
        if _verdict(request.model_copy(update={"context": middle})):
            low = middle
        else:
            high = middle
    low_result = _fits(request.model_copy(update={"context": low})) or low_result
    return LongestContext(context=low, model_limit=limit, capped_by_model=False, result=low_result)


def fewest_gpus(request: SizingRequest, card: str | None = None) -> GpuCount:
    """The smallest count in GPU_COUNTS of `card` (or of the best catalog card when None) that fits;
    between cards with the same count, the one with less memory."""
    cards = [card] if card else [entry.id for entry in searched_cards()]
    memory = {entry.id: entry.memory_mib for entry in list_cards()}
    best: tuple[int, int, str] | None = None  # (count, memory per card, card id)
    scenario = build_scenario(request)  # the card is all that changes below
    for card_id in cards:
        for count in GPU_COUNTS:
            if best and count > best[0]:
                break
            spec = card_id if count == 1 else f"{card_id}:{count}"
            if _verdict(request.model_copy(update={"gpu": spec}), scenario):
                candidate = (count, memory.get(card_id, 0), card_id)
                best = min(best, candidate) if best else candidate
                break
    if best is None:
        return GpuCount(card=cards[0], count=None, result=None)
    count, _, card_id = best
    spec = card_id if count == 1 else f"{card_id}:{count}"
    return GpuCount(card=card_id, count=count, result=_fits(request.model_copy(update={"gpu": spec})))


def smallest_card(request: SizingRequest) -> SizingResult | None:
    """The searched card with the least memory that holds the request, calculated on it."""
    for card in sorted(searched_cards(), key=lambda entry: entry.memory_mib):
        found = _fits(request.model_copy(update={"gpu": card.id}))
        if found:
            return found
    return None


__all__ = [
    "GPU_COUNTS",
    "GpuCount",
    "LargestModel",
    "LongestContext",
    "fewest_gpus",
    "largest_model",
    "longest_context",
    "searched_cards",
    "smallest_card",
]
