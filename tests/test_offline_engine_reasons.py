"""An option with memory to spare that the engine still refuses (vLLM's slack too small for the
CUDA context and graphs) is answered with the engine's reason and its fix, never as "X GB short"
with a zero or negative X, and never with more cards as the way out."""

from __future__ import annotations

import re

import pytest

from tests.conversation_scoring import _assistant, recording_store

CASES = [
    ("en", "llama 3.1 8b int4 on rtx 3060 12gb"),
    ("en", "rtx 3060 12gb llama 3.1 8b"),
    ("es", "¿llama 3.1 8b a 4 bits en una rtx 3060 de 12gb?"),
    ("en", "rtx 3060 12gb or rtx 4060 ti 16gb for llama 3.1 8b int4 on vllm?"),
]


@pytest.mark.parametrize(("lang", "question"), CASES)
def test_the_reason_and_its_flag_lead_the_answer(lang: str, question: str) -> None:
    reply = _assistant(recording_store()).answer(question)
    lead = reply.answer.split("<details")[0].strip().split("\n\n")[0]
    assert "--gpu-memory-utilization 0.89" in lead, lead
    assert not re.search(r"-\d+[.,]\d+ GB|\b0[.,]00 GB", lead), lead
    assert "RTX 3060" in lead and "64×" not in lead and "Not even" not in lead and "Ni siquiera" not in lead
    if lang == "es":
        assert "faltan" not in lead and "cabe" in lead


BUDGET_CASES = [
    ("en", "llama 3.1 70b awq on 2x 4090"),
    ("en", "llama 3.1 70b int4 on an l40s"),
    ("es", "¿llama 3.1 70b awq en 2 rtx 4090?"),
]


@pytest.mark.parametrize(("lang", "question"), BUDGET_CASES)
def test_a_budget_a_higher_utilization_covers_is_said_with_its_flag(lang: str, question: str) -> None:
    """Short inside vLLM's 90 % budget, though the card has the memory: the verdict gives the
    utilization that fits (the engine's reason), not only the gigabytes missing."""
    reply = _assistant(recording_store()).answer(question)
    option = reply.calculations[0].options[0]
    assert not option.fits and option.reason_code == "utilization" and option.reason
    lead = reply.answer.split("\n\n")[0]
    assert option.reason.rstrip(".") in lead, lead
    assert re.search(r"--gpu-memory-utilization 0\.9[1-9]", lead), lead


@pytest.mark.parametrize(("lang", "question"), BUDGET_CASES)
def test_a_utilization_raised_to_the_cards_limit_is_said_to_be_fragile(lang: str, question: str) -> None:
    """The utilization that fits is the highest the card allows: nothing spare is left outside
    vLLM's budget, and the answer says to load-test it."""
    reply = _assistant(recording_store()).answer(question)
    lead = reply.answer.split("\n\n")[0]
    caution = {"en": "is the most the card allows", "es": "es lo máximo que admite la tarjeta"}[lang]
    assert caution in lead and ("load-test" in lead or "bajo carga" in lead), lead
