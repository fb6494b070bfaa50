"""Counts agree with their nouns in every generated text: "1 sequence" / "1 secuencia", "1 user" / "1 usuario"."""

from __future__ import annotations

import re

import pytest

from assistant.offline.composer import users_label, users_short
from assistant.offline.responder import OfflineResponder
from assistant.offline.texts import texts
from assistant.service import ConversationState
from tools import SizingRequest, calculate_vram
from tools.texts import counted

# A count of exactly one followed by a plural noun, in either language.
ONE_WITH_PLURAL = re.compile(
    r"(?<![\d.,])1 (sequences|concurrent sequences|users|concurrent users|"
    r"secuencias|usuarios)\b"
)


@pytest.mark.parametrize(
    ("value", "noun", "lang", "written"),
    [
        (1, "sequence", "en", "1 sequence"),
        (0, "sequence", "en", "0 sequences"),
        (2, "concurrent_sequence", "en", "2 concurrent sequences"),
        (1, "sequence", "es", "1 secuencia"),
        (1, "concurrent_sequence", "es", "1 secuencia concurrente"),
        (1024, "concurrent_sequence", "es", "1.024 secuencias concurrentes"),
    ],
)
def test_counted_picks_singular_for_one(value, noun, lang, written) -> None:
    assert counted(value, noun, lang) == written


@pytest.mark.parametrize(
    ("lang", "arithmetic", "verdict"),
    [
        ("en", "→ 1 sequence of 131,072 tokens", "up to 1 concurrent sequence)"),
        ("es", "→ 1 secuencia de 131.072 tokens", "hasta 1 secuencia concurrente)"),
    ],
)
def test_calculator_texts_say_one_sequence(lang, arithmetic, verdict) -> None:
    result = calculate_vram(
        SizingRequest(model="llama-3.1-70b", precision="fp8", context=131072, gpu="h200", lang=lang)
    )
    assert result.options[0].max_concurrent_sequences == 1
    assert any(arithmetic in line for line in result.arithmetic)
    assert result.recommendation.endswith(verdict + ".")
    for line in [result.recommendation, *result.arithmetic, *result.suggestions]:
        assert not ONE_WITH_PLURAL.search(line), line


@pytest.mark.parametrize("lang", ["en", "es"])
def test_suggestion_verdicts_say_one_sequence(lang) -> None:
    # Nothing fits at 16 bits on two 80 GB cards; FP8 weights fit exactly one such sequence.
    result = calculate_vram(
        SizingRequest(model="llama-3.1-70b", precision="bf16", context=131072, gpu="h100-80gb:2", lang=lang)
    )
    one = "fits (1 concurrent sequence)" if lang == "en" else "cabe (1 secuencia concurrente)"
    assert any(one in line for line in result.suggestions)
    for line in result.suggestions:
        assert not ONE_WITH_PLURAL.search(line), line


@pytest.mark.parametrize(
    ("lang", "question", "headline"),
    [
        (
            "en",
            "Llama 3.1 70B at fp8, 1 user, 131072 tokens of context on an H200",
            "room for 1 concurrent user at 131,072 tokens",
        ),
        (
            "es",
            "Llama 3.1 70B en fp8, 1 usuario, 131072 tokens de contexto en una H200",
            "sitio para 1 usuario concurrente a 131.072 tokens",
        ),
    ],
)
def test_offline_answer_says_one_user(lang, question, headline) -> None:
    answer = OfflineResponder(None).respond(question, ConversationState(), lang).answer
    assert headline in answer
    assert not ONE_WITH_PLURAL.search(answer)


@pytest.mark.parametrize(
    ("lang", "one", "many", "short_one", "short_many"),
    [
        ("en", "1 concurrent user", "2 concurrent users", "1 user", "1,500 users"),
        ("es", "1 usuario concurrente", "2 usuarios concurrentes", "1 usuario", "1.500 usuarios"),
    ],
)
def test_offline_user_counts_agree(lang, one, many, short_one, short_many) -> None:
    words = texts(lang)
    assert users_label(1, words) == one
    assert users_label(2, words) == many
    assert users_short(1, words) == short_one
    assert users_short(1500, words) == short_many
