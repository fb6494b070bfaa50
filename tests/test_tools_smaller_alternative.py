"""The smaller machine a draft offers is chosen in one place, tools.advice.smaller_alternative."""

from __future__ import annotations

from tools import CardOption, SizingRequest, SizingResult, calculate_vram
from tools.advice import smaller_alternative


def _recommended(request: SizingRequest) -> tuple[SizingResult, CardOption]:
    result = calculate_vram(request)
    return result, next(o for o in result.options if o.card_class == result.recommended)


def test_the_target_is_the_largest_class_below_the_recommendation_that_does_not_fit() -> None:
    result, recommended = _recommended(SizingRequest(model="llama-3.1-70b", precision="fp8", context=4096))
    alternative = smaller_alternative(result, recommended)
    assert alternative is not None
    below = [o for o in result.options if o.card_class and o.usable_gb < recommended.usable_gb]
    assert alternative.target == max(below, key=lambda o: o.usable_gb)
    assert not alternative.target.fits
    assert alternative.fit is not None and alternative.fit.option.fits
    assert alternative.fit.option.card_class == alternative.target.card_class
    assert alternative.fit.total_gb < result.total_gb


def test_none_below_the_smallest_class() -> None:
    result, recommended = _recommended(SizingRequest(model="llama-3.1-8b", precision="int4", context=2048))
    smallest = min((o for o in result.options if o.card_class), key=lambda o: o.usable_gb)
    assert recommended == smallest
    assert smaller_alternative(result, recommended) is None
