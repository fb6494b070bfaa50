"""The sales draft: greeting, recommendation, arithmetic table, caveat, smaller machine — in both languages."""

from __future__ import annotations

import re

import pytest

from assistant.sales import draft_reply, format_number, smaller_machine_alternative
from tests.drafts import table_rows
from tools import SizingRequest, calculate_vram


def sized(**fields):
    return calculate_vram(SizingRequest(**fields))


def test_english_draft_carries_every_part_with_the_calculator_numbers() -> None:
    result = sized(model="llama-3.1-70b", precision="q8_0", engine="llamacpp", context=4096, users=1)
    draft = draft_reply(result, lang="en", customer_name="Ana")

    assert draft.startswith("Hello Ana,\n")
    assert (
        "**Llama 3.1 70B** at **8-bit Q8_0** with 4,096 tokens of context for 1 concurrent user on llama.cpp"
        in draft
    )
    recommended = next(o for o in result.options if o.card_class == result.recommended)
    assert f"**Our recommendation: {recommended.label}.**" in draft
    rows = table_rows(draft)
    assert rows["Weights"] == f"{result.weights_gb:.1f}"
    assert rows["KV cache"] == f"{result.kv_cache_gb:.1f}"
    assert rows["Serving overhead"] == f"{result.overhead_gb:.1f}"
    assert rows["Total needed"] == f"{result.total_gb:.1f}"
    assert rows[f"Usable on {recommended.label}"] == f"{recommended.usable_gb:.1f}"
    assert f"{result.kv_bytes_per_token:,} bytes per token × 4,096 tokens × 1 concurrent user" in draft
    # Below 16 bits the trade-off is explained with an offer to measure it, never an internal command.
    assert "side-by-side evaluation on your tasks" in draft and "sizing " not in draft
    # The smaller machine: the next class down at a lighter GGUF quantization, priced in quality.
    assert "**A smaller machine:**" in draft and "**4-bit Q4_K_M**" in draft and "48GB" in draft
    assert draft.rstrip().endswith("Best regards,")


def test_spanish_draft_is_all_spanish_with_spanish_numbers() -> None:
    result = sized(model="llama-3.1-70b", precision="fp8", context=4096, users=1, lang="es")
    draft = draft_reply(result, lang="es")

    assert draft.startswith("Hola:\n")
    assert "4.096 tokens de contexto para 1 usuario concurrente con vLLM" in draft
    assert "**Nuestra recomendación:" in draft
    assert "| Concepto | Cómo se calcula | GB |" in draft
    rows = table_rows(draft)
    assert rows["Total necesario"] == format_number(result.total_gb, "es", 1)
    assert "," in rows["Pesos"]  # decimal comma
    assert "**Sobre la cuantización:**" in draft and "evaluación comparativa con sus propias tareas" in draft
    assert "**Una máquina más pequeña:**" in draft and "**AWQ de 4 bits**" in draft
    for english in ("Hello", "recommendation", "Weights", "Best regards", "smaller machine"):
        assert english not in draft


def test_sixteen_bit_smallest_fit_says_so_honestly() -> None:
    result = sized(model="llama-3.1-8b", precision="bf16", users=8)
    assert result.recommended == "48gb"
    draft = draft_reply(result, lang="en")
    assert "full 16-bit quality" in draft and "sizing compare" not in draft
    assert "already the smallest machine we compared that fits" in draft


def test_nothing_fits_is_stated_with_the_largest_machine() -> None:
    result = sized(model="llama-3.1-405b", precision="bf16", users=8)
    assert result.recommended is None
    draft = draft_reply(result, lang="en")
    assert "None of the machines we compared fits" in draft
    largest = max(o.usable_gb for o in result.options)
    assert f"of the {largest:.1f} GB usable" in draft
    assert "Usable on" not in draft  # no recommended card to compare against
    assert "Even the largest machine we compared" in draft


@pytest.mark.parametrize(
    ("lang", "fits_on", "usable_word", "or_on"),
    [
        ("en", "Without changing the model or the precision, it does fit on", "GB usable", " or on "),
        ("es", "Sin cambiar el modelo ni la precisión, sí cabe en", "GB utilizables", " o en "),
    ],
)
def test_nothing_fits_names_the_hardware_that_holds_the_request_unchanged(
    lang, fits_on, usable_word, or_on
) -> None:
    result = sized(model="llama-3.1-70b", precision="bf16", context=32768, users=4, lang=lang)
    assert result.recommended is None
    first, second = result.alternatives[:2]  # e.g. 2× H200, 4× 80GB cards
    draft = draft_reply(result, lang=lang)
    recommendation = next(line for line in draft.splitlines() if line.startswith("**N"))
    assert fits_on in recommendation
    for option in (first, second):
        usable = format_number(option.usable_gb, lang, 1)
        assert f"**{option.label}** ({usable} {usable_word}" in recommendation
    assert f"**{first.label}**" in recommendation.split(or_on)[0]  # the first one comes first
    if lang == "es":
        assert re.search(
            r"\d+,\d GB utilizables = \d+,\d GB necesarios \+ \d+,\d GB de reserva del motor \+ \d+,\d GB de margen",
            recommendation,
        )
    # Each unchanged-hardware figure adds up: usable = need + the engine's reserve + headroom.
    for usable, need, reserve, headroom in re.findall(
        r"\(([\d.,]+) GB [a-z]+ = ([\d.,]+) GB [a-z]+ \+ ([\d.,]+) GB [^+]+\+ ([\d.,]+) GB", recommendation
    ):
        figures = [
            float(v.replace(".", "").replace(",", ".") if lang == "es" else v.replace(",", ""))
            for v in (usable, need, reserve, headroom)
        ]
        assert round(sum(figures[1:]), 1) == figures[0]
    # Quantization is still offered, after the unchanged-hardware options.
    assert "FP8" in draft.split(recommendation)[1]


def test_no_alternatives_means_no_unchanged_hardware_sentence() -> None:
    result = sized(model="llama-3.1-405b", precision="bf16", users=100_000)  # no machine holds it
    assert result.recommended is None and not result.alternatives
    assert "Without changing the model" not in draft_reply(result, lang="en")


def test_the_alternative_is_recomputed_not_guessed() -> None:
    result = sized(model="llama-3.1-70b", precision="fp8", context=4096, users=1)
    alternative = smaller_machine_alternative(result, "en")
    cheaper = sized(model="llama-3.1-70b", precision="awq", context=4096, users=1)
    assert f"the weights drop to {cheaper.weights_gb:.1f} GB" in alternative
    assert f"the total to {cheaper.total_gb:.1f} GB" in alternative


@pytest.mark.parametrize(
    ("value", "lang", "decimals", "written"),
    [(8192, "en", 0, "8,192"), (8192, "es", 0, "8.192"), (39.77, "es", 1, "39,8"), (-2.5, "en", 1, "-2.5")],
)
def test_numbers_are_written_as_each_language_writes_them(value, lang, decimals, written) -> None:
    assert format_number(value, lang, decimals) == written
    assert re.fullmatch(r"\+[0-9.,]+", format_number(3.0, lang, 1, sign=True))


def test_the_smaller_machine_is_the_first_step_of_the_engine_ladder_that_fits() -> None:
    """One ladder decides (tools.advice), for the draft as for the calculator's suggestions."""
    from assistant.sales import precision_label
    from tools.advice import cheaper_precisions

    fields = {"model": "llama-3.1-70b", "engine": "llamacpp", "context": 4096, "users": 1}
    result = sized(precision="q8_0", **fields)
    on_48gb = {
        step: next(o for o in sized(precision=step, **fields).options if o.card_class == "48gb").fits
        for step in cheaper_precisions("llamacpp", "q8_0")
    }
    first = next(step for step, fits in on_48gb.items() if fits)
    assert not on_48gb["q6_k"]  # the ladder's first step does not fit there: it searched
    assert f"**{precision_label(first, 'en')}**" in smaller_machine_alternative(result, "en")
