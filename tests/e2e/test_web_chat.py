"""The chat a visitor expects, in a real headless Chromium at laptop and phone widths.

Against the real `sizing serve` (offline assistant): the verdict first with the arithmetic
folded, tables readable on a phone, follow-up options, retry / undo / edit / copy, the
conversation surviving a reload, example questions in the visitor's language, sources that
open the cited section, the widget embedded on an allowed (and refused on another) origin, and
axe-core with no serious or critical violation. Streaming and Stop run against an in-process
app whose stand-in assistant paces its events like an LLM answer. Screenshots land in
test-artifacts/web/ for a person to look at.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from assistant import schemas
from assistant.settings import Settings
from tests.e2e.conftest import EMBEDDER_PORT, WIDGET_COLOR, WIDGET_TITLE
from tests.e2e.pages import (
    BOT_MESSAGES,
    UPDATE_TIMEOUT_MS,
    WIDTHS,
    ask,
    axe_violations,
    no_sideways_scroll,
    open_page,
    wait_for_answer,
)
from tests.servers import app_in_thread, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LONG_QUESTION = "What GPU do I need for Llama 3.1 70B in int4 with 8 concurrent users and 8k context?"
WIDTH_IDS = [f"{width}px" for width, _ in WIDTHS]
# True when the latest answer's first line lies inside the visible part of the chat log.
FIRST_LINE_VISIBLE = """(selector) => {
    const log = document.querySelector('#chatbot [role=log]').getBoundingClientRect();
    const answers = document.querySelectorAll(selector);
    const line = answers[answers.length - 1].querySelector('p').getBoundingClientRect();
    return line.top >= log.top - 1 && line.bottom <= log.bottom;
}"""


def shot(page: Any, artifacts: Path, name: str, width: int) -> None:
    page.screenshot(path=str(artifacts / f"{name}-{width}.png"))


def user_messages(page: Any) -> int:
    return int(page.locator('[data-testid="user"]').count())


# ---------------------------------------------------------------- verdict first


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_a_new_answer_is_shown_from_its_verdict(
    served_app, browser, artifacts: Path, width: int, height: int
) -> None:
    page = open_page(browser, served_app.url, width=width, height=height)
    ask(page, LONG_QUESTION)
    answer = page.locator(BOT_MESSAGES).last
    place = page.evaluate(
        """(selector) => {
            const log = document.querySelector('#chatbot [role=log]').getBoundingClientRect();
            const answers = document.querySelectorAll(selector);
            const answer = answers[answers.length - 1];
            const headline = answer.querySelector('p').getBoundingClientRect();
            const sources = [...answer.querySelectorAll('strong')].find(s => /Sources/.test(s.innerText));
            return {logTop: log.top, logBottom: log.bottom, headlineTop: headline.top,
                    headlineBottom: headline.bottom, sourcesTop: sources.getBoundingClientRect().top};
        }""",
        BOT_MESSAGES,
    )
    # The verdict is on screen and the end of the answer (its sources) is not: no scroll to the end.
    assert place["logTop"] - 1 <= place["headlineTop"] and place["headlineBottom"] <= place["logBottom"], (
        place
    )
    assert place["sourcesTop"] > place["logBottom"], place
    assert "GB in all" in answer.locator("p").first.inner_text()
    shot(page, artifacts, "verdict-first", width)

    # The arithmetic is folded under its title and opens on request.
    folded = answer.locator("details")
    assert folded.count() >= 1
    assert folded.first.evaluate("d => d.open") is False
    arithmetic_line = answer.get_by_text(re.compile(r"^Weights: 70\.55 B parameters"))
    assert not arithmetic_line.is_visible()
    summary = folded.first.locator("summary")
    assert summary.inner_text().startswith("The arithmetic")
    summary.click()
    arithmetic_line.wait_for(state="visible", timeout=UPDATE_TIMEOUT_MS)

    # The card table reads on a phone: it scrolls inside the answer, its cells keep their words.
    table = answer.locator("table").first
    table.scroll_into_view_if_needed()
    # Lines a cell's text takes: the distinct tops of its text boxes (never more lines than words).
    cells = table.evaluate(
        """t => [...t.querySelectorAll('th, td')].map(c => {
            const range = document.createRange();
            range.selectNodeContents(c);
            const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
            return {text: c.innerText.trim(), width: c.getBoundingClientRect().width, lines: tops.size};
        })"""
    )
    for cell in cells:
        assert cell["width"] >= 44, cell
        assert cell["lines"] <= max(1, len(cell["text"].split())), cell
    assert no_sideways_scroll(page)
    shot(page, artifacts, "arithmetic-open", width)
    page.context.close()


def test_the_chat_api_still_returns_the_whole_answer(served_app) -> None:
    from gradio_client import Client

    client = Client(served_app.url, verbose=False, download_files=False, analytics_enabled=False)
    try:
        answer = client.predict(LONG_QUESTION, api_name="/chat")
    finally:
        client.close()
    assert "**The arithmetic**" in answer and "Weights: 70.55 B parameters" in answer
    assert "<details>" not in answer and "/articles/" not in answer


# ---------------------------------------------------------------- conventions


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_follow_up_options_fill_what_is_missing(
    served_app, browser, artifacts: Path, width: int, height: int
) -> None:
    page = open_page(browser, served_app.url, locale="es-ES", width=width, height=height)
    first = ask(page, "¿Qué GPU necesito para un Llama 3.1 70B en bf16?")
    assert "16 bits" in first or "BF16" in first
    option = page.get_by_role("button", name="¿Y a 8 bits?")
    option.scroll_into_view_if_needed()
    shot(page, artifacts, "follow-up-options", width)
    option.click()
    answer = wait_for_answer(page, 1)
    assert "INT8" in answer or "8 bits" in answer, answer
    assert user_messages(page) == 2
    # Only the latest answer offers options, and they follow the new state (now at 8 bits).
    assert page.get_by_role("button", name="¿Y a 8 bits?").count() == 0
    assert page.get_by_role("button", name="¿Y a 4 bits?").count() == 1
    page.context.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_copy_retry_edit_and_undo(served_app, browser, artifacts: Path, width: int, height: int) -> None:
    page = open_page(
        browser, served_app.url, width=width, height=height, permissions=["clipboard-read", "clipboard-write"]
    )
    ask(page, "What GPU for Llama 3.1 70B in fp8 with 4 users?")

    page.get_by_role("button", name="Copy message").last.click()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert "GB" in copied and "Llama 3.1 70B" in copied

    page.get_by_role("button", name="Retry").last.click()
    again = wait_for_answer(page, 0)
    assert "Llama 3.1 70B" in again and user_messages(page) == 1

    page.get_by_role("button", name="Edit").first.click()
    editor = page.locator("#chatbot .edit-textarea")
    editor.wait_for(timeout=UPDATE_TIMEOUT_MS)
    editor.fill("What GPU for Qwen2.5 32B in fp8 with 4 users?")
    shot(page, artifacts, "edit-question", width)
    page.get_by_role("button", name="Submit").click()
    edited = wait_for_answer(page, 0)
    assert "Qwen2.5 32B" in edited and "Llama" not in edited
    assert user_messages(page) == 1

    page.get_by_role("button", name="Undo").last.click()
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"user\"]')", timeout=UPDATE_TIMEOUT_MS
    )
    assert (
        page.locator("#chat-input textarea").input_value() == "What GPU for Qwen2.5 32B in fp8 with 4 users?"
    )
    shot(page, artifacts, "after-undo", width)
    page.context.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_the_conversation_survives_a_reload_until_a_new_one(
    served_app, browser, artifacts: Path, width: int, height: int
) -> None:
    page = open_page(browser, served_app.url, width=width, height=height)
    ask(page, "What GPU for Llama 3.1 70B in int4?")
    page.reload()
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"user\"]').length === 1", timeout=30_000
    )
    shot(page, artifacts, "after-reload", width)
    # The assistant remembers the model too: the follow-up alone names no model.
    follow_up = ask(page, "For 40 users?")
    assert "Llama 3.1 70B" in follow_up and "40" in follow_up, follow_up

    page.get_by_role("button", name="New conversation").click()
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"user\"]')", timeout=UPDATE_TIMEOUT_MS
    )
    page.reload()
    page.wait_for_selector("#chatbot .examples", timeout=30_000)
    assert user_messages(page) == 0
    page.context.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
@pytest.mark.parametrize(
    ("locale", "example"),
    [
        ("es-ES", "¿Cabe un 70B en una tarjeta de 48 GB en 4 bits?"),
        ("en-GB", "Does a 70B model fit on a 48 GB card in 4 bits?"),
    ],
)
def test_example_questions_speak_the_visitor_language(
    served_app, browser, artifacts: Path, width: int, height: int, locale: str, example: str
) -> None:
    page = open_page(browser, served_app.url, locale=locale, width=width, height=height)
    button = page.locator("#chatbot .examples").get_by_text(example)
    button.wait_for(timeout=UPDATE_TIMEOUT_MS)
    shot(page, artifacts, f"examples-{locale}", width)
    button.click()
    answer = wait_for_answer(page, 0)
    assert ("Fuentes" in answer) is (locale == "es-ES")
    page.context.close()


# ---------------------------------------------------------------- sources


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
@pytest.mark.parametrize(
    ("locale", "question"), [("es-ES", "¿Qué GPU para un 70B en 4 bits?"), ("en-US", LONG_QUESTION)]
)
def test_a_cited_section_opens_in_the_visitor_language(
    served_app, browser, artifacts: Path, width: int, height: int, locale: str, question: str
) -> None:
    page = open_page(browser, served_app.url, locale=locale, width=width, height=height)
    ask(page, question)
    links = page.locator(BOT_MESSAGES).last.locator('a[href*="/articles/"]')
    assert links.count() >= 1
    href = str(links.first.get_attribute("href"))
    lang = locale[:2]
    assert re.search(rf"/articles/{lang}/[a-z0-9-]+#\S+", href), href
    cited = links.first.inner_text()
    page.goto(served_app.url + href[href.index("/articles/") :] if href.startswith("http") is False else href)
    target = page.locator(":target")
    target.wait_for(timeout=UPDATE_TIMEOUT_MS)
    section = target.locator("h1, h2").first.inner_text()
    assert section in cited, (section, cited)
    assert page.evaluate("document.documentElement.lang") == lang
    assert no_sideways_scroll(page)
    shot(page, artifacts, f"article-{lang}", width)
    assert axe_violations(page) == []
    page.context.close()


# ---------------------------------------------------------------- widget


class _EmbeddingSite(BaseHTTPRequestHandler):
    """A vendor page with both snippets: the iframe and the launcher script."""

    app_url = ""

    def do_GET(self) -> None:
        body = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Vendor</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
            "<body><main><h1>Our GPU servers</h1>"
            f'<iframe id="inline" src="{self.app_url}/widget/" title="Sizing Assistant" '
            'style="width:100%;max-width:420px;height:640px;border:0"></iframe>'
            f'<script src="{self.app_url}/widget.js" defer></script></main></body></html>'
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output quiet
        return


@pytest.fixture(scope="module")
def embedding_sites(served_app) -> Iterator[dict[str, str]]:
    """The vendor page on the allowed origin and on one the settings do not list."""
    handler = type("Site", (_EmbeddingSite,), {"app_url": served_app.url})
    servers = {
        "allowed": ThreadingHTTPServer(("127.0.0.1", EMBEDDER_PORT), handler),
        "other": ThreadingHTTPServer(("127.0.0.1", free_port()), handler),
    }
    threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in servers.values()]
    for thread in threads:
        thread.start()
    yield {name: f"http://127.0.0.1:{server.server_address[1]}/" for name, server in servers.items()}
    for server in servers.values():
        server.shutdown()
        server.server_close()


def _frame(page: Any, selector: str) -> Any:
    handle = page.locator(selector).element_handle(timeout=UPDATE_TIMEOUT_MS)
    frame = handle.content_frame()
    assert frame is not None
    return frame


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_the_widget_chats_on_an_allowed_site(
    served_app, browser, embedding_sites, artifacts: Path, width: int, height: int
) -> None:
    context = browser.new_context(locale="en-US", viewport={"width": width, "height": height})
    page = context.new_page()
    page.goto(embedding_sites["allowed"])
    frame = _frame(page, "#inline")
    frame.wait_for_selector("#chat-input textarea", timeout=30_000)
    assert frame.get_by_role("tab").count() == 0  # chat only: no calculator, no Compare, no admin
    assert frame.locator("#sales-draft").count() == 0
    assert WIDGET_TITLE in frame.locator("#widget-header").inner_text()
    colour = frame.locator("#chat-send").evaluate("b => getComputedStyle(b).backgroundColor")
    assert colour == "rgb(15, 118, 110)", (colour, WIDGET_COLOR)
    answer = ask(page, "What GPU for Llama 3.1 8B with 10 users?", frame=frame)
    assert "GB" in answer
    # In the short frame the steps would push the verdict out of view: its first line is shown.
    assert frame.evaluate(FIRST_LINE_VISIBLE, BOT_MESSAGES), "the verdict is out of view"
    shot(page, artifacts, "widget-inline", width)
    assert axe_violations(frame) == []

    # The launcher script opens the same chat in a panel, and Escape closes it.
    launcher = page.locator("#sizing-widget-button")
    launcher.click()
    panel = _frame(page, "#sizing-widget-panel")
    panel.wait_for_selector("#chat-input textarea", timeout=30_000)
    shot(page, artifacts, "widget-launcher", width)
    panel.locator("#chat-input textarea").press("Escape")  # from inside the chat, with the keyboard
    page.locator("#sizing-widget-panel").wait_for(state="hidden", timeout=UPDATE_TIMEOUT_MS)
    assert page.evaluate("document.activeElement.id") == "sizing-widget-button"
    context.close()


def test_the_widget_greets_in_the_visitor_language(served_app, browser, artifacts: Path) -> None:
    page = open_page(browser, served_app.url + "/widget/", locale="es-ES", width=390, height=640)
    page.get_by_text("¡Hola! Dígame qué modelo quiere ejecutar").wait_for(timeout=UPDATE_TIMEOUT_MS)
    assert (
        page.locator("#chatbot .examples")
        .get_by_text("¿Cabe un 70B en una tarjeta de 48 GB en 4 bits?")
        .count()
        == 1
    )
    shot(page, artifacts, "widget-es", 390)
    page.context.close()


def test_the_widget_is_refused_on_another_site(served_app, browser, embedding_sites, artifacts: Path) -> None:
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(embedding_sites["other"])
    page.wait_for_timeout(3000)
    frame = _frame(page, "#inline")
    assert frame.locator("#chat-input").count() == 0  # frame-ancestors blocked it
    assert "/widget/" not in frame.url
    shot(page, artifacts, "widget-refused", 1280)
    context.close()


# ---------------------------------------------------------------- accessibility


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_no_serious_accessibility_violation(
    served_app, browser, artifacts: Path, width: int, height: int
) -> None:
    page = open_page(browser, served_app.url, width=width, height=height)
    assert axe_violations(page) == []  # the empty chat with its examples
    # Keyboard order: from the question box, Tab reaches Send, then New conversation.
    page.locator("#chat-input textarea").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "chat-send"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "chat-new-conversation"
    ask(page, LONG_QUESTION)
    page.locator(BOT_MESSAGES).last.locator("details summary").first.click()
    assert axe_violations(page) == []  # an answer with its steps, folded blocks, table and options
    page.get_by_role("tab", name="Calculator").click()
    page.wait_for_selector("#calc-chart .vram-chart .vc-card", timeout=UPDATE_TIMEOUT_MS)
    assert axe_violations(page) == []
    shot(page, artifacts, "calculator-a11y", width)
    page.context.close()


# ---------------------------------------------------------------- streaming and stop

PAUSE_S = 1.2
PIECES = (
    "Llama 3.1 70B at 4 bits fits on one 80 GB card for 8 users.\n\n",
    "The weights take about 40 GB and the KV cache about 21 GB.\n\n",
    "Measure the quality of the 4-bit model on your own tasks before you decide.",
)


class PacedAssistant:
    """The service's event order at an LLM's pace: steps, the calculator's result, then text pieces."""

    def __init__(self) -> None:
        from tools import SizingRequest, calculate_vram

        self.result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="int4", users=8))

    def stream(self, message: str, state: schemas.ConversationState | None = None) -> Iterator[Any]:
        yield schemas.StepEvent(step=schemas.Step(kind="calculate", title="Calculate VRAM", status="running"))
        yield schemas.StepEvent(
            step=schemas.Step(kind="calculate", title="Calculate VRAM", detail="67.43 GB")
        )
        yield schemas.CalculationEvent(result=self.result)
        for piece in PIECES:
            time.sleep(PAUSE_S)
            yield schemas.TextDelta(text=piece)
        source = schemas.Source(
            title="How much VRAM does a language model need?",
            path="en/vram-arithmetic.md",
            section="The formula",
        )
        yield schemas.FinalEvent(
            reply=schemas.Reply(
                answer="".join(PIECES) + "\n\n**Sources:**\n- *" + source.title + "* — The formula",
                language="en",
                mode="llm",
                calculations=[self.result],
                sources=[source],
                state=(state or schemas.ConversationState()).model_copy(update={"model": "llama-3.1-70b"}),
            )
        )

    def answer(self, message: str, state: schemas.ConversationState | None = None) -> schemas.Reply:
        events = list(self.stream(message, state))
        return events[-1].reply

    def health(self) -> dict[str, Any]:
        return {"mode": "llm", "llm_reachable": True, "chroma_reachable": False}


@pytest.fixture(scope="module")
def paced_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real web app in this process, on uvicorn in a thread, with the paced assistant."""
    from assistant.ui.app import build_http_app

    port = free_port()
    settings = Settings(data_dir=tmp_path_factory.mktemp("paced"), port=port)
    with app_in_thread(lambda: build_http_app(PacedAssistant(), settings), port) as url:
        yield url


def _ask_the_long_question(page: Any) -> Any:
    box = page.locator("#chat-input textarea")
    box.fill(LONG_QUESTION)
    box.press("Enter")
    return box


def _wait_for_the_verdict(page: Any) -> str:
    """Until the calculator's verdict is in the answer being streamed; the bot's text at the first
    poll that saw it, read in the same evaluation (a busy machine may be late to read it apart)."""
    seen = page.wait_for_function(
        """(s) => {
            const texts = [...document.querySelectorAll(s)].map(m => m.innerText);
            return texts.some(t => /Recommended:/.test(t)) && texts.join(" ");
        }""",
        arg=BOT_MESSAGES,
        timeout=UPDATE_TIMEOUT_MS,
    )
    return str(seen.json_value())


def _answer_text(page: Any) -> str:
    answers = page.locator(BOT_MESSAGES)
    return str(answers.last.inner_text()) if answers.count() else ""


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_the_answer_streams_verdict_first(
    paced_app: str, browser, artifacts: Path, width: int, height: int
) -> None:
    page = open_page(browser, paced_app, width=width, height=height)
    _ask_the_long_question(page)
    # The calculator's verdict and table are there before any of the answer's text.
    early = _wait_for_the_verdict(page)
    assert "80GB class" in early and PIECES[0].strip() not in early
    assert page.locator(BOT_MESSAGES).last.locator("table").count() == 1
    shot(page, artifacts, "stream-verdict", width)
    # Then the text grows piece by piece.
    page.wait_for_function(
        "([s, t]) => [...document.querySelectorAll(s)].some(m => m.innerText.includes(t))",
        arg=[BOT_MESSAGES, PIECES[0].strip()],
        timeout=UPDATE_TIMEOUT_MS,
    )
    assert PIECES[2].strip() not in _answer_text(page)
    shot(page, artifacts, "stream-partial", width)
    wait_for_answer(page, 0)
    final = _answer_text(page)
    assert PIECES[2].strip() in final and "Recommended:" not in final  # the reply's own text replaces it
    page.context.close()


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=WIDTH_IDS)
def test_stop_ends_the_answer_and_frees_the_box(
    paced_app: str, browser, artifacts: Path, width: int, height: int
) -> None:
    page = open_page(browser, paced_app, width=width, height=height)
    box = _ask_the_long_question(page)
    stop = page.locator("#chat-stop")
    stop.wait_for(state="visible", timeout=UPDATE_TIMEOUT_MS)
    _wait_for_the_verdict(page)
    stop.click()
    page.get_by_text("Stopped. Ask again, edit your question or press retry.").wait_for(
        timeout=UPDATE_TIMEOUT_MS
    )
    page.locator("#chat-send").wait_for(state="visible", timeout=UPDATE_TIMEOUT_MS)
    assert box.is_editable()
    page.wait_for_timeout(int(PAUSE_S * len(PIECES) * 1000) + 500)
    assert PIECES[2].strip() not in page.locator("#chatbot").inner_text()  # the turn really ended
    page.evaluate("document.querySelector('#chatbot [role=log]').scrollTop = 1e6")
    shot(page, artifacts, "stopped", width)
    page.context.close()
