"""Helpers the browser tests share: open a page, ask a question, wait for the answer, drive the
calculator, run axe-core."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

# The first question also builds the article index; later ones answer in well under a second.
ANSWER_TIMEOUT_MS = 120_000
UPDATE_TIMEOUT_MS = 20_000
# The two widths every visitor-facing check runs at: a laptop and a phone.
WIDTHS = ((1280, 900), (390, 844))
AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
BOT_MESSAGES = '[data-testid="bot"] .message-content'


def open_page(
    browser: Any, url: str, locale: str = "en-US", width: int = 1280, height: int = 900, **context: Any
) -> Any:
    """A fresh browser context (a new visitor, empty storage) on the chat page."""
    opened = browser.new_context(
        locale=locale, viewport={"width": width, "height": height}, accept_downloads=True, **context
    )
    page = opened.new_page()
    page.goto(url)
    page.wait_for_selector("#chat-input textarea", timeout=30_000)
    return page


def ask(page: Any, question: str, frame: Any = None) -> str:
    """Type a question with the keyboard, send it with Enter, and return the final answer's text."""
    where = frame or page
    box = where.locator("#chat-input textarea")
    box.click()
    box.fill(question)
    answers_before = where.locator(BOT_MESSAGES).count()
    box.press("Enter")
    return wait_for_answer(where, answers_before)


def wait_for_answer(page: Any, answers_before: int) -> str:
    """Wait until a new answer has finished (steps done, sources shown) and return its text."""
    page.wait_for_function(
        """([before, selector]) => {
            const answers = document.querySelectorAll(selector);
            if (answers.length <= before) return false;
            const last = answers[answers.length - 1].innerText;
            return /Sources|Fuentes/.test(last) && !document.querySelector('#chatbot [aria-busy="true"]');
        }""",
        arg=[answers_before, BOT_MESSAGES],
        timeout=ANSWER_TIMEOUT_MS,
    )
    # The box unlocks and takes the focus back, ready for the next question.
    page.wait_for_function(
        "() => document.activeElement === document.querySelector('#chat-input textarea')",
        timeout=UPDATE_TIMEOUT_MS,
    )
    return str(page.locator(BOT_MESSAGES).last.inner_text())


def open_calculator(page: Any, label: str | re.Pattern[str] = "Calculator") -> None:
    """Open the calculator tab (named `label`) and wait for its first chart."""
    page.get_by_role("tab", name=label).click()
    page.wait_for_selector("#calc-chart .vram-chart .vc-card", timeout=UPDATE_TIMEOUT_MS)


def enter_in_calculator(page: Any, field: str, value: str) -> Any:
    """Type `value` into the calculator's `#calc-<field>` number box and leave it (what recalculates)."""
    box = page.locator(f"#calc-{field} input")
    box.fill(value)
    box.press("Tab")
    return box


def wait_for_verdict(page: Any, pattern: str) -> None:
    """Until the calculator's verdict matches the regular expression `pattern`."""
    page.wait_for_function(
        "(pattern) => new RegExp(pattern).test(document.querySelector('#calc-verdict').innerText)",
        arg=pattern,
        timeout=UPDATE_TIMEOUT_MS,
    )


def no_sideways_scroll(page: Any) -> bool:
    return bool(page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1"))


def axe_violations(page: Any, impacts: tuple[str, ...] = ("serious", "critical")) -> list[str]:
    """axe-core's violations of the given impacts on the page, one line each (rule, element)."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm ci` in tests/e2e (.ci/run does it)")
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => ({id: v.id, impact: v.impact, targets: v.nodes.map(n => n.target.join(' '))}))"""
    )
    return [
        f"{item['impact']} {item['id']}: {', '.join(item['targets'][:3])}"
        for item in found
        if item["impact"] in impacts
    ]
