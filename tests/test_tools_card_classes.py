"""Every claim of the card-class table holds in the calculator, and the texts quote the claims."""

from __future__ import annotations

import re

import pytest

from tools import SizingRequest, calculate_vram, card_classes
from tools.cards import card_class_claims

CLAIMS = card_class_claims()


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c['card_class']}-{c['model']}-{c['precision']}")
def test_claim_holds_in_the_calculator(claim: dict) -> None:
    request = SizingRequest(
        model=claim["model"],
        precision=claim["precision"],
        engine=claim.get("engine", "vllm"),
        context=claim.get("context", 8192),
        kv_dtype=claim.get("kv_dtype"),
        gpu=claim.get("gpu"),
    )
    result = calculate_vram(request)
    option = next(o for o in result.options if claim.get("gpu") or o.card_class == claim["card_class"])
    assert option.fits is claim["fits"], (claim, option)
    if "seqs" in claim:
        assert option.max_concurrent_sequences == claim["seqs"], (claim, option)


def test_every_class_has_claims_and_both_languages() -> None:
    classes = card_classes()
    assert [c.id for c in classes] == ["48gb", "80gb", "2x80gb"]
    for cls in classes:
        assert any(c["card_class"] == cls.id for c in CLAIMS)
        for texts in (cls.serves, cls.catch):
            assert set(texts) == {"en", "es"} and all(t.strip() for t in texts.values())


def test_no_class_claims_full_precision_32b_on_48gb() -> None:
    """The source article says the 48GB class serves 24-32B at full precision; the arithmetic says no."""
    result = calculate_vram(SizingRequest(model="qwen2.5-32b", precision="bf16"))
    assert not next(o for o in result.options if o.card_class == "48gb").fits
    serves = next(c for c in card_classes() if c.id == "48gb").serves["en"]
    assert not re.search(r"32B at (full|16)", serves)


def test_sequence_counts_in_texts_are_claimed() -> None:
    """Each 'N concurrent' figure a text states appears among that class's claimed counts."""
    for cls in card_classes():
        claimed = {c.get("seqs") for c in CLAIMS if c["card_class"] == cls.id}
        for figure in re.findall(r": (\d+)[);,]", cls.serves["en"] + " " + cls.catch["en"]):
            assert int(figure) in claimed, (cls.id, figure)
