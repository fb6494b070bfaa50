"""`offer_engineer`: the LLM agent opens the "Talk to an engineer" form; the reply says so, the
web chat opens the form, and the answer invites the visitor to it in their language."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assistant.llm_texts import llm_text
from assistant.service import Assistant, build_assistant
from assistant.settings import Settings
from assistant.ui.desk_texts import desk_text
from assistant.ui.handlers import ChatLimits, answer_once
from assistant.ui.handoff import offer
from assistant.ui.session import VisitorSession
from tests.fakes import FakeArticles
from tests.openai_stub import StubOpenAI, text, tool_call

LIMITS = ChatLimits(rate_limit_per_minute=10)


def llm_assistant(url: str, tmp_path: Path) -> Assistant:
    settings = Settings(
        data_dir=tmp_path, llm_base_url=url, llm_model="stub-model", llm_timeout=5, llm_max_steps=4
    )
    return build_assistant(settings, store=FakeArticles())


def chat_turn(assistant: Assistant, message: str, lang: str) -> tuple[str, VisitorSession, list[Any]]:
    """One web-chat turn through the `chat` handler, and the chat history the offer then reads."""
    shown, session = answer_once(assistant, LIMITS, message, VisitorSession(), lang, 1.0)  # type: ignore[arg-type]
    history = [{"role": "user", "content": message}, {"role": "assistant", "content": shown}]
    return shown, session, history


@pytest.mark.parametrize(
    ("lang", "message", "draft"),
    [
        ("en", "Can someone from your team send me a quote?", "Of course, we will get back to you soon."),
        (
            "es",
            "¿Alguien de su equipo me puede enviar un presupuesto?",
            "Por supuesto, le contactaremos pronto.",
        ),
    ],
)
def test_the_agent_offers_an_engineer_and_the_chat_opens_the_form(
    tmp_path: Path, lang: str, message: str, draft: str
) -> None:
    script = [tool_call([("offer_engineer", {"reason": "wants a quote"})]), text(draft)]
    with StubOpenAI(script) as stub:
        assistant = llm_assistant(stub.url, tmp_path)
        shown, session, history = chat_turn(assistant, message, lang)
        requests = list(stub.requests)

    # The model heard that the form opens and that it must not collect details itself.
    tool_result = next(m for m in requests[1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_result["content"])["offered"] is True
    assert "e-mail" in json.loads(tool_result["content"])["note"]
    assert session.handoff is not None
    assert session.handoff.why == "agent" and session.handoff.reason == "wants a quote"
    # A short answer with no sizing in it is not replaced by the offline answer: it is the agent's.
    assert draft in shown
    invite = llm_text("handoff_invite", lang)
    assert shown.count(invite) == 1
    assert invite != llm_text("handoff_invite", "es" if lang == "en" else "en")
    assert offer(history, session, lang) == (True, True, desk_text("handoff_offer", lang))  # type: ignore[arg-type]


def test_the_tool_log_records_the_offer_as_a_step(tmp_path: Path) -> None:
    script = [tool_call([("offer_engineer", {"reason": "  asked   for a person  "})]), text("Sure.")]
    with StubOpenAI(script) as stub:
        reply = llm_assistant(stub.url, tmp_path).answer("I want to talk to a human")
    assert reply.mode == "llm"
    assert reply.handoff is not None and reply.handoff.reason == "asked for a person"
    step = next(s for s in reply.steps if s.kind == "tool")
    assert step.title == llm_text("step_handoff", "en") and step.detail == "asked for a person"
    assert reply.public_json()["handoff"] == {"why": "agent", "reason": "asked for a person"}


def test_no_offer_without_the_tool_keeps_the_form_closed(tmp_path: Path) -> None:
    script = [text("A 70B at 4 bits needs a 48GB card.")]
    with StubOpenAI(script) as stub:
        shown, session, history = chat_turn(
            llm_assistant(stub.url, tmp_path), "What GPU for Llama 3.1 70B at 4 bits?", "en"
        )
    assert session.handoff is None
    assert llm_text("handoff_invite", "en") not in shown
    assert offer(history, session, "en") == (True, False, desk_text("handoff_offer", "en"))


def test_nothing_fitting_offers_the_form_in_llm_mode_too(tmp_path: Path) -> None:
    script = [text("This is more than the cards we compared hold.")]
    with StubOpenAI(script) as stub:
        reply = llm_assistant(stub.url, tmp_path).answer("Llama 3.1 405B at bf16 for 64 users, 128k context")
    assert reply.mode == "llm" and reply.calculations
    assert reply.handoff is not None and reply.handoff.why == "nothing_fit"
    assert reply.answer.endswith(llm_text("handoff_invite", "en"))


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("Llama 3.1 405B at bf16 for 64 users, 128k context", "nothing_fit"),
        ("¿Puedo hablar con una persona?", "asked_for_person"),
        ("Can I talk to an engineer?", "asked_for_person"),
    ],
)
def test_offline_replies_carry_the_same_offer(tmp_path: Path, message: str, why: str) -> None:
    assistant = build_assistant(Settings(data_dir=tmp_path), store=FakeArticles())
    _shown, session, history = chat_turn(assistant, message, "en")
    assert session.handoff is not None and session.handoff.why == why
    assert offer(history, session, "en")[1]


def test_an_offline_answer_that_fits_offers_without_opening(tmp_path: Path) -> None:
    assistant = build_assistant(Settings(data_dir=tmp_path), store=FakeArticles())
    reply = assistant.answer("Llama 3.1 8B at int4 for one user")
    assert reply.mode == "offline" and reply.handoff is None
