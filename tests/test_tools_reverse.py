"""Reverse searches (tools/reverse.py) and the generic "N GB card": each answer is a calculator
verdict, and one step further no longer fits."""

from __future__ import annotations

import pytest

from tools import SizingRequest, calculate_vram, list_models
from tools.cards import parse_gpu_spec, resolve_card
from tools.errors import SizingError
from tools.reverse import (
    GPU_COUNTS,
    fewest_gpus,
    largest_model,
    longest_context,
    searched_cards,
    smallest_card,
)


def fits(**request: object) -> bool:
    result = calculate_vram(SizingRequest(**request))  # type: ignore[arg-type]
    return result.options[0].fits


def test_a_card_named_by_its_memory_is_that_memory_in_binary_gigabytes() -> None:
    card = resolve_card("24gb")
    assert card.memory_mib == 24 * 1024 and card.id == "24gb"
    assert parse_gpu_spec("12gb:2")[1] == 2
    result = calculate_vram(SizingRequest(model="8b", precision="int4", gpu="12gb"))
    assert result.options[0].label == "12 GB GPU" and result.options[0].decode_tokens_per_s is None


@pytest.mark.parametrize("spec", ["0gb", "99999gb", "24gbx", "gb"])
def test_a_bad_memory_spec_is_one_clear_error(spec: str) -> None:
    with pytest.raises(SizingError, match=r"gb|GB"):
        calculate_vram(SizingRequest(model="8b", gpu=spec))


def test_the_largest_model_fits_and_no_larger_catalog_model_does() -> None:
    base = SizingRequest(precision="int4", users=10)
    found = largest_model("l40s", base)
    assert found.result is not None and found.result.options[0].fits
    size = found.result.model.params
    for model in list_models():
        if model.params > size:
            assert not fits(model=model.id, precision="int4", users=10, gpu="l40s"), model.id


def test_the_longest_context_fits_and_one_token_more_does_not() -> None:
    request = SizingRequest(model="qwen2.5-32b", precision="int4", users=4, gpu="l40s")
    found = longest_context(request)
    assert found.context > 128 and not found.capped_by_model
    assert fits(**{**request.model_dump(), "context": found.context})
    assert not fits(**{**request.model_dump(), "context": found.context + 1})


def test_the_longest_context_stops_at_the_models_own_limit() -> None:
    found = longest_context(SizingRequest(model="mistral-7b", precision="fp16", gpu="l4"))
    assert found.capped_by_model and found.context == found.model_limit


def test_the_fewest_gpus_fit_and_the_next_smaller_count_does_not() -> None:
    request = SizingRequest(model="llama-3.1-405b", precision="fp8")
    found = fewest_gpus(request, "a100-80gb")
    assert found.count is not None and found.result is not None and found.result.options[0].fits
    smaller = GPU_COUNTS[GPU_COUNTS.index(found.count) - 1]
    assert not fits(model="llama-3.1-405b", precision="fp8", gpu=f"a100-80gb:{smaller}")


def test_the_smallest_card_is_the_least_memory_that_holds_it() -> None:
    request = SizingRequest(model="qwen2.5-32b", precision="int8", context=8192)
    result = smallest_card(request)
    assert result is not None and result.options[0].fits
    chosen = resolve_card(result.options[0].card or "")
    for card in searched_cards():
        if card.memory_mib < chosen.memory_mib:
            assert not fits(**{**request.model_dump(), "gpu": card.id}), card.id
