"""The sales desk in a real headless Chromium against a real server: thumbs with a comment, the
"talk to an engineer" handoff, and the `draft` and `handoff` API endpoints. The database is checked
afterwards: what the page stored is what the store holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.desk.store import DeskStore
from tests.e2e.conftest import ROOT, ServedApp
from tests.e2e.pages import UPDATE_TIMEOUT_MS, ask, open_page
from tests.test_desk_handoff import Webhook

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PRICES = ROOT / "assistant" / "data" / "prices.example.yaml"


class DeskApp(ServedApp):
    """`python -m assistant serve` from this checkout, with its own desk database and a webhook."""

    def __init__(self, folder: Path, webhook_url: str) -> None:
        self.database = folder / "desk.sqlite3"
        super().__init__(
            folder / "data",
            folder / "server.log",
            SIZING_DATABASE_URL=f"sqlite:///{self.database}",
            SIZING_NOTIFY_WEBHOOK_URL=webhook_url,
            SIZING_PRICES_FILE=str(PRICES),
            SIZING_COMPANY_NAME="ACME GPUs",
            PYTHONPATH=str(ROOT),
        )


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


@pytest.fixture(scope="module")
def desk_app(tmp_path_factory: pytest.TempPathFactory, webhook: Webhook) -> Iterator[DeskApp]:
    app = DeskApp(tmp_path_factory.mktemp("desk-web"), webhook.url)
    try:
        app.wait_healthy()
        yield app
    finally:
        app.stop()


def test_thumbs_down_with_a_comment_and_the_handoff_are_stored(
    desk_app: DeskApp, webhook: Webhook, browser: Any, artifacts: Path
) -> None:
    page = open_page(browser, desk_app.url)
    question = "What GPU do I need for Llama 3.1 405B at bf16 with 8 users?"
    answer = ask(page, question)
    assert "GB" in answer
    # Nothing fits: the handoff opens by itself, offering an engineer.
    offer = page.locator("#handoff-offer")
    offer.wait_for(timeout=UPDATE_TIMEOUT_MS)
    assert "an engineer can size a custom configuration" in offer.inner_text()

    page.locator('[data-testid="bot"]').last.hover()
    page.get_by_label("Dislike").last.click()
    comment = page.locator("#feedback-comment textarea")
    comment.wait_for(timeout=UPDATE_TIMEOUT_MS)
    comment.fill("I wanted a price for two servers")
    page.locator("#feedback-send").click()
    page.wait_for_function(
        "() => document.querySelector('#feedback-status')?.innerText.includes('Comment saved')",
        timeout=UPDATE_TIMEOUT_MS,
    )
    # The status sits right under the answers, above the question box, not further down the page.
    assert page.evaluate(
        """() => {
        const log = document.querySelector('#chatbot').getBoundingClientRect();
        const status = document.querySelector('#feedback-status').getBoundingClientRect();
        const box = document.querySelector('#chat-input').getBoundingClientRect();
        return status.top >= log.bottom - 1 && status.bottom <= box.top + 1;
    }"""
    )
    page.screenshot(path=str(artifacts / "feedback-status-1280.png"))

    page.locator("#handoff-name textarea").fill("Ana Pérez")
    page.locator("#handoff-email textarea").fill("ana@example.com")
    page.locator("#handoff-company textarea").fill("ACME")
    page.locator("#handoff-message textarea").fill("Call me about the 405B")
    page.locator("#handoff-send").click()
    status = page.locator("#handoff-status")
    page.wait_for_function(
        "() => document.querySelector('#handoff-status')?.innerText.includes('Not sent')",
        timeout=UPDATE_TIMEOUT_MS,
    )
    assert "consent" in status.inner_text()  # nothing is stored without consent
    page.locator("#handoff-consent input").check()
    page.locator("#handoff-send").click()
    page.wait_for_function(
        "() => document.querySelector('#handoff-status')?.innerText.includes('Thank you, Ana')",
        timeout=UPDATE_TIMEOUT_MS,
    )
    page.screenshot(path=str(artifacts / "sales-handoff.png"), full_page=True)
    page.context.close()

    store = DeskStore.open(f"sqlite:///{desk_app.database}")
    [lead] = store.leads()
    assert lead.email == "ana@example.com" and lead.message == "Call me about the 405B" and lead.notified
    assert lead.transcript[0] == {"role": "user", "content": question}
    assert lead.calculations and lead.calculations[0]["model"]["id"] == "llama-3.1-405b"
    [feedback] = store.feedback()
    assert feedback.rating == "down" and feedback.comment == "I wanted a price for two servers"
    assert feedback.question == question and feedback.question_id is not None
    assert feedback.answer_digest == store.questions()[0].answer_digest  # linked to the logged answer
    assert feedback.outcome["fits"] is False and feedback.mode == "offline"
    logged = store.questions()
    assert logged[0].question == question and logged[0].nothing_fit and logged[0].retrieval_scores
    assert webhook.bodies[-1]["email"] == "ana@example.com"
    store.close()


def test_draft_and_handoff_api(desk_app: DeskApp) -> None:
    from gradio_client import Client

    client = Client(desk_app.url, verbose=False)
    nothing, details = client.predict("", api_name="/draft")
    assert nothing.startswith("Nothing to draft yet") and details["drafted"] is False
    markdown, details = client.predict(
        "Hola, ¿qué servidor para Llama 3.1 8B con 10 usuarios y 16k de contexto?", api_name="/draft"
    )
    assert markdown.startswith("Hola:") and "Llama 3.1 8B" in markdown and "**Presupuesto**" in markdown
    assert details["missing"] == ["precision"] and details["calculations"]
    assert details["quote"]["currency"] == "EUR" and details["quote"]["example_prices"] is True
    assert markdown.rstrip().endswith("ACME GPUs")
    # The same API session: /chat builds the conversation that an empty /draft and /handoff use.
    client.predict("Qwen2.5 32B in fp8 for 12 users with 16k context?", api_name="/chat")
    from_chat, details = client.predict("", api_name="/draft")
    assert (
        "**Qwen2.5 32B** at **8-bit FP8** with 16,384 tokens of context for 12 concurrent users" in from_chat
    )
    assert details["drafted"] is True and details["missing"] == []
    stored = client.predict("Bob", "bob@example.com", "B Corp", "Quote please", True, api_name="/handoff")
    assert stored["stored"] is True and stored["lead_id"]
    store = DeskStore.open(f"sqlite:///{desk_app.database}")
    lead = store.lead(stored["lead_id"])
    store.close()
    assert lead is not None and lead.transcript[0]["content"].startswith("Qwen2.5 32B in fp8")
    assert lead.calculations and lead.calculations[0]["precision"] == "fp8"
    refused = client.predict("Bob", "bob@", "", "", True, api_name="/handoff")
    assert refused["stored"] is False and "bob@" in refused["message"]
