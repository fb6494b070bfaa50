"""The service's own duties in LLM mode (the agent and its faults have their own tests):
health of the endpoint, streaming that never shows an unchecked draft, slots and state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assistant.service import Assistant, FinalEvent, StepEvent, TextDelta, build_assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles, free_port
from tests.openai_stub import StubOpenAI, error, text, tool_call

INVENTED = "Trust me: it needs 13.7 GB and fits on any card."


def llm_assistant(url: str, tmp_path: Path, **overrides: Any) -> Assistant:
    settings = Settings(
        data_dir=tmp_path,
        llm_base_url=url,
        llm_model="stub-model",
        llm_timeout=2,
        llm_max_steps=4,
        **overrides,
    )
    return build_assistant(settings, store=FakeArticles())


def test_health_reports_the_endpoint(tmp_path: Path) -> None:
    with StubOpenAI([text("hi")]) as stub:
        assert llm_assistant(stub.url, tmp_path).health() == {
            "mode": "llm",
            "llm_reachable": True,
            "llm_answering": None,
            "chroma_reachable": True,
        }
    down = llm_assistant(f"http://127.0.0.1:{free_port()}/v1", tmp_path)
    assert down.health()["llm_reachable"] is False
    assert down.health()["mode"] == "llm"


def test_streaming_never_shows_the_draft_before_the_guardrail(tmp_path: Path) -> None:
    with StubOpenAI([text(INVENTED, chunk_chars=3)]) as stub:
        events = list(llm_assistant(stub.url, tmp_path).stream("What GPU for Llama 3.1 70B at 4 bits?"))
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.reply.mode == "llm"
    shown = "".join(event.text for event in events if isinstance(event, TextDelta))
    assert shown == final.reply.answer
    assert "13.7 GB" not in shown
    # The model skipped the calculator: the service calculated for the guardrail, and says so.
    assert final.reply.calculations and final.reply.calculations[0].precision == "int4"
    assert any(isinstance(e, StepEvent) and e.step.kind == "calculate" for e in events)


def test_llm_mode_keeps_slots_and_history_across_turns(tmp_path: Path) -> None:
    call = tool_call([("calculate_vram", {"model": "Qwen2.5 32B", "precision": "int8", "users": 5})])
    with StubOpenAI([call, text("Qwen2.5 32B at 8 bits for 5 users: see the arithmetic.")]) as stub:
        assistant = llm_assistant(stub.url, tmp_path)
        reply = assistant.answer("Qwen2.5 32B at 8 bits for 5 users")
        assert reply.mode == "llm" and reply.notice is None
        assert reply.state.model == "qwen2.5-32b" and reply.state.users == 5
        assert reply.missing == ["tasks", "context"]
        assert [turn.role for turn in reply.state.history] == ["user", "assistant"]
        follow_up = assistant.answer("and what about 16k context?", reply.state)
        # The history reached the model on the second turn.
        contents = [m.get("content") for m in stub.requests[-1]["messages"]]
        assert "Qwen2.5 32B at 8 bits for 5 users" in contents
        assert follow_up.state.context == 16384


def test_fallback_answer_is_the_offline_answer_with_a_notice(tmp_path: Path) -> None:
    question = "¿Qué GPU para Llama 3.1 70B a 4 bits?"
    with StubOpenAI([error(503, "overloaded")]) as stub:
        reply = llm_assistant(stub.url, tmp_path).answer(question)
    offline = build_assistant(
        Settings(data_dir=tmp_path, llm_base_url=None, llm_model=None), store=FakeArticles()
    ).answer(question)
    assert reply.mode == "offline" and reply.language == "es"
    assert reply.notice and reply.notice.startswith("El modelo de lenguaje no está disponible")
    assert reply.answer == offline.answer
    assert reply.steps[0].kind == "fallback" and reply.steps[0].status == "error"
    assert reply.steps[1:] == offline.steps


def test_spanish_fallback_notice_gives_the_reason_in_spanish(tmp_path: Path) -> None:
    """The reason comes from the fault's kind in the visitor's language, not the error's English text."""
    question = "¿Qué GPU para Llama 3.1 70B a 4 bits?"
    with StubOpenAI([error(503, "overloaded")]) as stub:
        reply = llm_assistant(stub.url, tmp_path).answer(question)
    assert reply.notice == (
        f"El modelo de lenguaje no está disponible ({stub.url} respondió HTTP 503); "
        "esta es la respuesta sin conexión."
    )
    assert reply.steps[0].detail == f"{stub.url} respondió HTTP 503"
    for english in ("answered", "overloaded", "could not"):
        assert english not in reply.notice


def test_every_fault_kind_has_a_reason_in_both_languages(tmp_path: Path) -> None:
    from assistant import errors
    from assistant.offline.texts import texts
    from assistant.service import fault_reason

    settings = Settings(
        data_dir=tmp_path, llm_base_url="http://127.0.0.1:9/v1", llm_model="m", llm_timeout=2.5
    )
    faults = [
        errors.LLMUnavailableError("x"),
        errors.LLMConnectionError("x"),
        errors.LLMHTTPError(502, "x"),
        errors.LLMTimeoutError("x"),
        errors.LLMMalformedReplyError("x"),
        errors.LLMStepLimitError("x"),
    ]
    spanish = {fault.kind: fault_reason(fault, settings, texts("es")) for fault in faults}
    assert len(set(spanish.values())) == len(faults)
    assert spanish["http"] == "http://127.0.0.1:9/v1 respondió HTTP 502"
    assert spanish["timeout"] == "el modelo no respondió en 2,5 s"
    assert fault_reason(faults[3], settings, texts("en")) == "no answer from the model within 2.5 s"
