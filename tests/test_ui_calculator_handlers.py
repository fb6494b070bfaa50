"""The calculator panel and sales-draft handlers as plain functions, on the real sizing engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.ui.handlers import (
    CalculatorInputs,
    NothingToDraftError,
    build_request,
    calculate_json,
    calculator_view,
    card_choices,
    model_choices,
    sales_draft,
)
from assistant.ui.session import VisitorSession
from tests.drafts import LLAMA_8B_CONFIG
from tools import SizingRequest, calculate_vram
from tools.errors import ModelConfigError, SizingError

SEVENTY_B = CalculatorInputs(model="llama-3.1-70b", precision="bf16", context=8192, users=4)


def fits(view) -> list[bool]:
    return [option.fits for option in view.result.options]


def test_a_catalog_model_gives_chart_verdict_and_arithmetic() -> None:
    view = calculator_view(SEVENTY_B, "en")
    assert view.result is not None
    assert view.chart_html.count('class="vc-row vc-card') == len(view.result.options) == 3
    assert view.verdict_markdown.startswith("### ")
    assert view.result.recommendation in view.verdict_markdown
    for line in view.result.arithmetic:
        assert f"- {line}" in view.details_markdown


def test_lighter_precision_changes_the_verdict_and_adds_the_caveat() -> None:
    full = calculator_view(SEVENTY_B, "en")
    quantized = calculator_view(CalculatorInputs(**{**SEVENTY_B.__dict__, "precision": "awq"}), "en")
    assert sum(fits(quantized)) > sum(fits(full))
    assert quantized.verdict_markdown != full.verdict_markdown
    assert (
        "Quantization caveat" in quantized.details_markdown and "sizing compare" in quantized.details_markdown
    )
    assert "Quantization caveat" not in full.details_markdown


def test_more_users_need_more_memory() -> None:
    few = calculator_view(SEVENTY_B, "en").result
    many = calculator_view(CalculatorInputs(**{**SEVENTY_B.__dict__, "users": 64}), "en").result
    assert few is not None and many is not None
    assert many.kv_cache_gb > few.kv_cache_gb and many.total_gb > few.total_gb


def test_spanish_panel() -> None:
    view = calculator_view(SEVENTY_B, "es")
    assert "Tarjeta" in view.verdict_markdown and "La aritmética" in view.details_markdown
    assert "El modelo en memoria" in view.chart_html


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        (CalculatorInputs(model="llama-3.1-70b", context=0), "context must be"),
        (CalculatorInputs(model="llama-3.1-70b", context=None), "context is empty"),
        (CalculatorInputs(model="llama-3.1-70b", users=2.5), "whole number"),
        (CalculatorInputs(model="llama-3.1-70b", users=-3), "users must be"),
        (CalculatorInputs(model="no-such-model"), "unknown model 'no-such-model'"),
        (CalculatorInputs(model="llama-3.1-70b", precision="int3"), "int3"),
        (CalculatorInputs(), "Choose a model"),
        (CalculatorInputs(params_b=-5), "positive number of billions"),
    ],
)
def test_bad_input_is_a_clear_message_not_an_exception(inputs: CalculatorInputs, says: str) -> None:
    view = calculator_view(inputs, "en")
    assert view.result is None
    assert view.verdict_markdown.startswith("⚠ **Cannot calculate:")
    assert says in view.verdict_markdown and says.split("'")[0] in view.chart_html
    assert view.details_markdown == ""


def test_parameter_count_sizes_a_reference_model_and_says_so() -> None:
    view = calculator_view(CalculatorInputs(params_b=13, context=8192, users=1), "en")
    assert view.result is not None and view.result.model.reference_note
    assert view.result.model.reference_note in view.details_markdown
    # A non-zero parameter count wins over the dropdown.
    request = build_request(CalculatorInputs(model="llama-3.1-70b", params_b=13), "en")
    assert request.params_b == 13.0


def test_an_uploaded_config_json_is_sized(tmp_path: Path) -> None:
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(LLAMA_8B_CONFIG), encoding="utf-8")
    view = calculator_view(CalculatorInputs(model="llama-3.1-70b", config_path=str(config_path)), "en")
    assert view.result is not None
    catalog_8b = calculate_vram(SizingRequest(model="llama-3.1-8b"))
    assert view.result.kv_bytes_per_token == catalog_8b.kv_bytes_per_token
    assert abs(view.result.weights_gb - catalog_8b.weights_gb) < 0.1


@pytest.mark.parametrize(
    ("content", "says"),
    [("{not json", "not valid JSON"), ("[1, 2]", "must hold a JSON object"), ("{}", "")],
)
def test_a_bad_config_json_is_a_clear_message(tmp_path: Path, content: str, says: str) -> None:
    config_path = tmp_path / "config.json"
    config_path.write_text(content, encoding="utf-8")
    view = calculator_view(CalculatorInputs(config_path=str(config_path)), "en")
    assert (
        view.result is None and "Cannot calculate" in view.verdict_markdown and says in view.verdict_markdown
    )


def test_a_missing_upload_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="cannot read"):
        build_request(CalculatorInputs(config_path=str(tmp_path / "gone.json")), "en")


def test_a_chosen_card_and_count_are_sized_alone() -> None:
    view = calculator_view(
        CalculatorInputs(**{**SEVENTY_B.__dict__, "card": "h100-80gb", "card_count": 2}), "en"
    )
    assert view.result is not None
    assert [(option.card, option.gpus) for option in view.result.options] == [("h100-80gb:2", 2)]


def test_calculate_api_is_the_calc_json_object() -> None:
    payload = calculate_json(SEVENTY_B, "en")
    expected = calculate_vram(SizingRequest(model="llama-3.1-70b", context=8192, users=4)).model_dump(
        mode="json"
    )
    assert payload == expected
    with pytest.raises(SizingError):
        calculate_json(CalculatorInputs(model="no-such-model"), "en")


def test_dropdown_choices_come_from_the_catalog_and_cards() -> None:
    models = dict((model_id, label) for label, model_id in model_choices())
    assert models["llama-3.1-70b"] == "Llama 3.1 70B"
    cards = card_choices("es")
    assert cards[0] == ("Comparar todas las clases de tarjeta", "")
    assert ("H100 80GB (SXM)", "h100-80gb") in cards


def test_sales_draft_needs_a_recommendation() -> None:
    with pytest.raises(NothingToDraftError, match="ask a sizing question"):
        sales_draft(VisitorSession(), None, None, "", "en")
    with pytest.raises(NothingToDraftError, match="haga primero"):
        sales_draft(VisitorSession(language="es"), None, None, "", "en")


def test_sales_draft_uses_the_conversation_result_in_its_language() -> None:
    chat_result = calculate_vram(SizingRequest(model="llama-3.1-8b", users=8, lang="es"))
    calculator_result = calculate_vram(SizingRequest(model="llama-3.1-70b"))
    session = VisitorSession(language="es", last_result=chat_result, last_result_language="es")
    draft = sales_draft(session, calculator_result, "en", "  Marta ", "en")
    assert draft.markdown.startswith("Hola, Marta:") and "Llama 3.1 8B" in draft.markdown
    assert draft.file_name == "sizing-reply-llama-3-1-8b.md"
    # Without a conversation result, the calculator's is drafted, in the calculator's language.
    fallback = sales_draft(VisitorSession(), calculator_result, "en", None, "es")
    assert fallback.markdown.startswith("Hello,") and "Llama 3.1 70B" in fallback.markdown


def test_the_verdict_table_speed_is_the_serving_estimate_per_user_with_its_range() -> None:
    from assistant.sales import format_number
    from assistant.ui.handlers import verdict_markdown

    result = calculate_vram(SizingRequest(model="llama-3.1-8b", users=16))
    markdown = verdict_markdown(result, "en")
    assert "Tokens/s per user (range)" in markdown
    for option in result.options:
        if option.fits and option.performance:
            band = option.performance.output_tok_s_per_user
            cell = f"{format_number(band.best, 'en')} ({format_number(band.low, 'en')}–{format_number(band.high, 'en')})"
            assert cell in markdown


@pytest.mark.parametrize(
    ("lang", "heading", "cell"),
    [("en", "Serves as copies", "as 8 copies"), ("es", "Sirve como copias", "como 8 copias")],
)
def test_a_model_whose_heads_do_not_split_is_shown_as_copies(lang: str, heading: str, cell: str) -> None:
    inputs = CalculatorInputs(model="qwen2.5-7b", context=8192, users=30, card="h100-80gb", card_count=8)
    view = calculator_view(inputs, lang)
    option = next(o for o in view.result.options if o.replicas is not None)
    lines = view.verdict_markdown.splitlines()
    assert heading in lines[0] and "8 × " in lines[0] and "✗" not in lines[0], lines[0]
    row = next(line for line in lines if line.startswith("| ") and option.label in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cell in cells[2] and "+" in cells[2]  # each copy's room, not the refused layout's
    assert cells[3] == str(option.replicas.replicas * option.replicas.max_concurrent_sequences)


def test_the_panel_states_the_speed_and_with_a_target_the_verdict_and_the_capacity() -> None:
    plain = calculator_view(CalculatorInputs(model="llama-3.1-8b", precision="bf16", card="h100-80gb"), "en")
    assert "**Speed:**" in plain.verdict_markdown and "tokens/s per user" in plain.verdict_markdown
    assert "**Capacity:**" not in plain.verdict_markdown  # no target, no count of users within it
    inputs = CalculatorInputs(model="llama-3.1-8b", precision="bf16", card="h100-80gb", service="voice_agent")
    view = calculator_view(inputs, "en")
    expected = calculate_vram(
        SizingRequest(
            model="llama-3.1-8b", precision="bf16", gpu="h100-80gb", service="voice_agent", users_target=True
        )
    )
    assert expected.performance is not None and expected.performance.capacity is not None
    served = int(expected.performance.capacity.best)
    assert f"serves {served:,} users at once within the target (voice agent)" in view.verdict_markdown
    assert "meets the target (voice agent)" in view.verdict_markdown  # one user, the panel's own load


def test_the_latency_targets_are_offered_in_the_visitors_language() -> None:
    from assistant.ui.handlers import service_choices

    english, spanish = service_choices("en"), service_choices("es")
    assert [key for _, key in english] == [key for _, key in spanish]
    assert english[0][1] == "" and ("voice agent", "voice_agent") in english
    assert ("agente de voz", "voice_agent") in spanish
    view = calculator_view(
        CalculatorInputs(model="llama-3.1-8b", precision="bf16", card="l40s", service="voice_agent"), "es"
    )
    assert "**Capacidad:**" in view.verdict_markdown and "agente de voz" in view.verdict_markdown


def test_an_unknown_latency_target_is_one_clear_message() -> None:
    view = calculator_view(CalculatorInputs(model="llama-3.1-8b", precision="bf16", service="teleport"), "en")
    assert view.result is None and "teleport" in view.verdict_markdown
    assert "Traceback" not in view.verdict_markdown
