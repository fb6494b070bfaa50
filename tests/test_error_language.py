"""A typed error reaches a Spanish visitor in Spanish; the CLI keeps the English `str(exc)`."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.desk.store import DeskStore, LeadForm
from assistant.offline.responder import OfflineResponder
from assistant.schemas import ConversationState
from assistant.settings import Settings
from assistant.ui.handlers import CalculatorInputs, calculator_view
from assistant.ui.handoff import hand_off
from tools import SizingRequest, calculate_vram
from tools.error_texts import localized
from tools.errors import SizingError
from tools.texts import catalogue

ENGLISH_WORDS = ("must be", "unknown", "valid choices", "got ", "is not a format")


def raised(**fields: object) -> SizingError:
    with pytest.raises(SizingError) as caught:
        calculate_vram(SizingRequest(**fields))  # type: ignore[arg-type]
    return caught.value


@pytest.mark.parametrize(
    ("fields", "code", "spanish"),
    [
        ({"model": "70b", "users": 1_000_000_000}, "out_of_range", "debe estar entre 1 y 1.000.000"),
        ({"model": "70b", "context": 0}, "out_of_range", "el contexto debe estar entre 1 y"),
        ({"model": "no-such-model"}, "unknown_model", "modelo desconocido 'no-such-model'"),
        ({"model": "70"}, "unknown_model", "¿quería decir '70b'?"),
        ({"model": "70b", "precision": "q9"}, "unknown_precision", "precisión desconocida 'q9'"),
        ({"model": "70b", "gpu": "h900"}, "unknown_card", "tarjeta desconocida 'h900'"),
        ({"model": "70b", "engine": "tgi"}, "unknown_engine", "motor desconocido 'tgi'"),
        ({"model": "70b", "gpu": "h100:999"}, "out_of_range", "el número de GPU debe estar entre 1 y"),
        ({"model": "70b", "engine": "llamacpp", "precision": "awq"}, "engine_precision", "no es un formato"),
        ({"model": "70b", "gpu_memory_utilization": 1.5}, "out_of_range", "debe estar entre 0,05 y 1,00"),
    ],
)
def test_common_errors_have_a_code_and_a_spanish_sentence(
    fields: dict[str, object], code: str, spanish: str
) -> None:
    error = raised(**fields)
    assert error.code == code
    assert localized(error, "en") == str(error)  # the English sentence is the CLI's, unchanged
    es = localized(error, "es")
    assert spanish in es and not any(word in es for word in ENGLISH_WORDS), es


def test_every_error_sentence_is_in_the_catalogue_in_both_languages() -> None:
    keys = [key for key in catalogue() if key.startswith("error_")]
    assert {"error_out_of_range", "error_unknown_model", "error_engine_precision"} <= set(keys)
    for key in keys:
        assert set(catalogue()[key]) == {"en", "es"}


def test_an_error_without_a_code_keeps_its_text() -> None:
    assert localized(SizingError("something odd"), "es") == "something odd"


def test_the_chat_says_a_bad_number_in_spanish() -> None:
    state = ConversationState(model="llama-3.1-70b", precision="int4", language="es")
    answer = OfflineResponder(None).respond("y con 1000000000 usuarios", state, "es").answer
    assert "must be" not in answer and "got 1" not in answer, answer
    if "No he podido calcularlo" in answer:  # the calculator refused the number: it says why in Spanish
        assert "debe estar entre 1 y 1.000.000" in answer, answer


def test_the_calculator_tab_says_a_bad_number_in_spanish() -> None:
    view = calculator_view(CalculatorInputs(model="70b", users=2_000_000), "es")
    assert "debe estar entre 1 y 1.000.000" in view.verdict_markdown
    assert "must be" not in view.verdict_markdown and "must be" not in view.chart_html


def test_the_handoff_form_refuses_a_bad_address_in_spanish(tmp_path: Path) -> None:
    desk = DeskStore.open(f"sqlite:///{tmp_path / 'desk.db'}")
    form = LeadForm(name="Ana", email="not-an-email", consent=True)
    outcome = hand_off(desk, Settings(data_dir=tmp_path), form, "es", [], [])
    assert not outcome.stored and "no es una dirección como nombre@empresa.com" in outcome.message
    assert "is not an address" not in outcome.message
    english = hand_off(desk, Settings(data_dir=tmp_path), form, "en", [], [])
    assert "is not an address like name@company.com" in english.message
    desk.close()


def test_the_quote_footer_names_the_example_prices_in_spanish() -> None:
    from assistant.quote import build_quote, load_price_list
    from assistant.sales import quote_markdown

    examples = Path(__file__).resolve().parents[1] / "assistant" / "data" / "prices.example.yaml"
    quote = build_quote(
        SizingRequest(model="llama-3.1-70b", precision="awq", users=20), load_price_list(examples)
    )
    footer = quote_markdown(quote, "es")[-2]
    assert "lista de precios de ejemplo" in footer and "valores inventados" in footer
    assert "made-up" not in footer and "example price list" not in footer
    assert "made-up values" in quote_markdown(quote, "en")[-2]


@pytest.mark.parametrize(
    ("inputs", "spanish"),
    [
        (CalculatorInputs(model="70b", context=None), "el contexto está vacío"),
        (CalculatorInputs(model="70b", users=2.5), "el número de usuarios debe ser un número entero"),
        (CalculatorInputs(model="70b", card="h100-80gb", card_count=1.5), "el número de tarjetas debe ser"),
        (CalculatorInputs(model="no-such-model"), "modelo desconocido"),
    ],
)
def test_the_calculator_tab_fields_are_refused_in_spanish(inputs: CalculatorInputs, spanish: str) -> None:
    view = calculator_view(inputs, "es")
    assert spanish in view.verdict_markdown and not any(w in view.verdict_markdown for w in ENGLISH_WORDS)
