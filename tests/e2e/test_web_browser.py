"""The web app in a real headless Chromium, against a real `sizing serve` (offline assistant).

Screenshots land in test-artifacts/web/ (gitignored) for a person to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.pages import (
    UPDATE_TIMEOUT_MS,
    ask,
    enter_in_calculator,
    open_calculator,
    open_page,
    wait_for_answer,
    wait_for_verdict,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def choose(page: Any, elem_id: str, value: str) -> None:
    """Pick a dropdown value with the keyboard, as a visitor would."""
    field = page.locator(f"#{elem_id} input")
    field.click()
    field.fill(value)
    page.locator(f"#{elem_id} input").press("ArrowDown")
    field.press("Enter")


def chart_state(page: Any) -> dict[str, Any]:
    return dict(
        page.evaluate(
            """() => ({
                need: document.querySelector('#calc-chart .vc-need .vc-value').innerText,
                fits: [...document.querySelectorAll('#calc-chart .vc-card')].map(r => r.dataset.fits),
                verdict: document.querySelector('#calc-verdict').innerText,
            })"""
        )
    )


def test_a_question_gets_an_answer_with_arithmetic_and_caveat(served_app, browser, artifacts: Path) -> None:
    page = open_page(browser, served_app.url)
    # Keyboard first: the question box has the focus when the page opens.
    assert page.evaluate("document.activeElement && document.activeElement.tagName") == "TEXTAREA"
    answer = ask(page, "What GPU do I need for Llama 3.1 70B in int4 with 8 concurrent users and 8k context?")

    assert "GB" in answer and "×" in answer, answer  # the arithmetic: parameters × bytes
    assert "sizing compare" in answer, answer  # the quantization caveat points to the measuring tool
    steps = page.locator("#chatbot .thought-group .title")
    assert steps.count() >= 1
    assert "VRAM" in " ".join(steps.all_inner_texts())  # the calculation is one of the steps
    page.screenshot(path=str(artifacts / "chat-answer.png"), full_page=True)
    # A step is a collapsible that opens with the keyboard and shows its detail.
    steps.first.focus()
    steps.first.press("Enter")
    opened = page.locator("#chatbot .thought-group .title.expanded")
    opened.first.wait_for(timeout=UPDATE_TIMEOUT_MS)
    detail = page.locator("#chatbot .thought-group .content").first
    assert detail.inner_text().strip()
    # The chat scrolls inside its own panel; show its top (question and steps) for the screenshot.
    page.evaluate("document.querySelector('#chatbot [role=log]').scrollTop = 0")
    page.screenshot(path=str(artifacts / "chat-steps.png"), full_page=True)
    page.context.close()


def wait_for_new_need(page: Any, need: str) -> None:
    """Until the chart's need figure is no longer `need` (the calculator has answered new inputs)."""
    page.wait_for_function(
        "([need]) => document.querySelector('#calc-chart .vc-need .vc-value').innerText !== need",
        arg=[need],
        timeout=UPDATE_TIMEOUT_MS,
    )


def test_calculator_chart_and_verdict_follow_the_inputs(served_app, browser, artifacts: Path) -> None:
    page = open_page(browser, served_app.url)
    open_calculator(page)
    choose(page, "calc-model", "llama-3.1-70b")
    page.locator("#calc-precision input").wait_for()
    choose(page, "calc-precision", "bf16")
    page.wait_for_timeout(500)
    at_16_bit = chart_state(page)
    page.screenshot(path=str(artifacts / "calculator-bf16.png"), full_page=True)

    choose(page, "calc-precision", "awq")
    wait_for_new_need(page, at_16_bit["need"])
    at_4_bit = chart_state(page)
    assert at_4_bit["fits"].count("true") > at_16_bit["fits"].count("true"), (at_16_bit, at_4_bit)
    assert at_4_bit["verdict"] != at_16_bit["verdict"]
    assert "sizing compare" in page.locator("#calc-details").inner_text()  # the caveat below 16 bits
    page.screenshot(path=str(artifacts / "calculator-awq.png"), full_page=True)

    # More users grow the KV cache: the need goes up.
    enter_in_calculator(page, "users", "64")
    wait_for_new_need(page, at_4_bit["need"])

    # A bad input is a clear message, never a traceback; the inputs stay as typed.
    context = enter_in_calculator(page, "context", "0")
    wait_for_verdict(page, "Cannot calculate")
    assert "Traceback" not in page.content()
    assert context.input_value() == "0"
    page.screenshot(path=str(artifacts / "calculator-bad-input.png"), full_page=True)
    page.context.close()


def test_sales_draft_in_the_customer_language(served_app, browser, artifacts: Path) -> None:
    page = open_page(browser, served_app.url, locale="es-ES")
    assert page.get_by_role("tab", name="Calculadora").count() == 1  # the labels follow the browser
    answer = ask(page, "¿Qué GPU necesito para un modelo 70B en fp8 con 10 usuarios?")
    assert "GB" in answer
    page.locator("#sales-draft input, #sales-draft textarea").first.fill("Marta")
    page.get_by_role("button", name="Redactar la respuesta al cliente").click()
    preview = page.locator("#sales-draft-preview")
    preview.wait_for(timeout=UPDATE_TIMEOUT_MS)
    assert preview.inner_text().startswith("Hola, Marta:")
    assert preview.locator("table").count() == 1  # the arithmetic renders as a table
    # The Markdown source, to copy, sits in a collapsed section under the preview.
    page.get_by_text("Texto Markdown").click()
    draft = page.locator("#sales-draft-text textarea")
    draft.wait_for(timeout=UPDATE_TIMEOUT_MS)
    text = draft.input_value()
    assert text.startswith("Hola, Marta:")
    assert "| Concepto | Cómo se calcula | GB |" in text
    assert "Una máquina más pequeña" in text
    with page.expect_download() as download_info:
        page.locator("#sales-draft-download").click()
    downloaded = Path(download_info.value.path()).read_text(encoding="utf-8")
    assert downloaded == text
    assert download_info.value.suggested_filename.endswith(".md")
    page.locator("#sales-draft").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "sales-draft-es.png"), full_page=True)
    page.context.close()


def test_phone_width_is_usable(served_app, browser, artifacts: Path) -> None:
    page = open_page(browser, served_app.url, locale="es-ES", width=390, height=844)
    no_sideways_scroll = "() => document.documentElement.scrollWidth <= window.innerWidth + 1"
    assert page.evaluate(no_sideways_scroll)
    assert page.locator("#chat-input textarea").is_visible()
    # An example question starts a turn with one tap.
    page.get_by_text("¿Qué GPU necesito para un modelo 70B con 20 usuarios?").click()
    answer = wait_for_answer(page, 0)
    assert "GB" in answer and "Fuentes" in answer  # a Spanish question gets a Spanish answer
    assert page.evaluate(no_sideways_scroll)
    page.screenshot(path=str(artifacts / "phone-chat.png"), full_page=True)
    open_calculator(page, "Calculadora")
    assert page.evaluate(no_sideways_scroll)
    chart_box = page.locator("#calc-chart .vram-chart").bounding_box()
    assert chart_box is not None and chart_box["width"] <= 390
    page.screenshot(path=str(artifacts / "phone-calculator.png"), full_page=True)
    page.context.close()


def test_a_latency_target_adds_the_speed_verdict_and_the_capacity(
    served_app, browser, artifacts: Path
) -> None:
    page = open_page(browser, served_app.url)
    open_calculator(page)
    choose(page, "calc-model", "llama-3.1-8b")
    page.locator("#calc-service input").wait_for()
    wait_for_verdict(page, "Speed:")
    assert "Capacity:" not in page.locator("#calc-verdict").inner_text()  # no target chosen yet
    choose(page, "calc-service", "voice agent")
    wait_for_verdict(page, "Capacity:.*users at once within the target \\(voice agent\\)")
    page.screenshot(path=str(artifacts / "calculator-latency-target.png"), full_page=True)
    page.context.close()
