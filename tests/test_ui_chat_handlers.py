"""The chat handlers as plain functions: streaming, steps, sources, state, rate limit, failures."""

from __future__ import annotations

from assistant.schemas import Reply, Source
from assistant.ui.handlers import ChatLimits, answer_once, final_answer_markdown, sources_line, stream_chat
from assistant.ui.session import VisitorSession
from assistant.ui.texts import language_from_header
from tests.ui_fakes import FakeAssistant
from tools.errors import InvalidInputError

LIMITS = ChatLimits(rate_limit_per_minute=3)


def run_turn(assistant, message="What GPU for a 70B?", session=None, history=None, now=100.0, lang="en"):
    frames = list(
        stream_chat(assistant, LIMITS, message, history or [], session or VisitorSession(), lang, now)
    )
    return frames, frames[-1][0], frames[-1][1]


def test_a_turn_streams_steps_then_the_answer_with_sources() -> None:
    assistant = FakeAssistant()
    frames, history, session = run_turn(assistant)

    assert len(frames) > 3, "the answer should arrive in several frames"
    assert frames[0][0] == [{"role": "user", "content": "What GPU for a 70B?"}]
    # While the calculation runs, it shows as a pending collapsible step.
    pending = frames[1][0][1]
    assert pending["metadata"]["status"] == "pending" and pending["metadata"]["title"] == "Calculating VRAM"
    # The finished step replaced the running one; the search step follows; the answer is last.
    steps = [m for m in history if m.get("metadata")]
    assert [s["metadata"]["title"] for s in steps] == ["Calculated VRAM", "Searched the articles"]
    assert all(s["metadata"]["status"] == "done" for s in steps)
    answer = history[-1]
    assert "metadata" not in answer
    assert answer["content"].startswith("You need **2× 80 GB**")
    assert "**Sources:** _VRAM arithmetic › Weights_" in answer["content"]
    # Partial text appeared before the final frame.
    partial = [frame[0][-1]["content"] for frame in frames if "metadata" not in frame[0][-1]]
    assert any(content and content != answer["content"] for content in partial[1:])
    # The assistant's state is kept for the next turn, and the language remembered.
    assert session.conversation is not None and session.conversation.model == "70b"
    assert session.language == "en"


def test_the_next_turn_passes_the_kept_state_back() -> None:
    assistant = FakeAssistant()
    _, history, session = run_turn(assistant)
    run_turn(assistant, "and with 20 users?", session=session, history=history, now=101.0)
    assert assistant.calls[1][0] == "and with 20 users?"
    assert assistant.calls[1][1] == session.conversation


def test_sessions_are_independent() -> None:
    assistant = FakeAssistant()
    _, _, first = run_turn(assistant)
    _, _, second = run_turn(assistant, "hola", session=VisitorSession())
    assert assistant.calls[1][1] is None  # the second visitor starts fresh
    assert first is not second and first.conversation is not second.conversation


def test_empty_message_changes_nothing() -> None:
    assistant = FakeAssistant()
    _, history, session = run_turn(assistant, "   ", history=[{"role": "user", "content": "hi"}])
    assert history == [{"role": "user", "content": "hi"}]
    assert session == VisitorSession()
    assert assistant.calls == []


def test_rate_limit_answers_politely_without_calling_the_assistant() -> None:
    assistant = FakeAssistant()
    session = VisitorSession()
    history: list = []
    for second in range(3):
        _, history, session = run_turn(
            assistant, f"q{second}", session=session, history=history, now=10.0 + second
        )
    _, history, limited = run_turn(assistant, "one more", session=session, history=history, now=20.0)
    assert len(assistant.calls) == 3
    assert history[-2] == {"role": "user", "content": "one more"}
    assert "3 a minute" in history[-1]["content"] and "wait about 50 s" in history[-1]["content"]
    assert limited.conversation == session.conversation  # nothing lost
    # A minute after the first message, one more is allowed again.
    _, history, _ = run_turn(assistant, "later", session=limited, history=history, now=70.5)
    assert len(assistant.calls) == 4


def test_rate_limit_message_follows_the_visitor_language() -> None:
    assistant = FakeAssistant(language="es")
    session = VisitorSession()
    for second in range(3):
        _, _, session = run_turn(assistant, "¿qué GPU?", session=session, now=float(second))
    _, history, _ = run_turn(assistant, "otra", session=session, now=5.0)
    assert "por minuto" in history[-1]["content"]


def test_a_sizing_error_becomes_one_polite_line() -> None:
    assistant = FakeAssistant(fail_with=InvalidInputError("context must be positive"))
    _, history, session = run_turn(assistant)
    assert history[-1]["content"] == "I cannot answer that: context must be positive"
    assert session.conversation is None


def test_an_unexpected_failure_shows_no_traceback() -> None:
    assistant = FakeAssistant(fail_with=RuntimeError("socket exploded at 0xdeadbeef"))
    _, history, _ = run_turn(assistant, lang="es")
    assert "deadbeef" not in str(history)
    assert history[-1]["content"].startswith("Algo falló de nuestro lado")


def test_chat_api_returns_the_final_answer_text() -> None:
    assistant = FakeAssistant()
    text, session = answer_once(assistant, LIMITS, "What GPU for a 70B?", VisitorSession(), "en", 1.0)
    assert text.startswith("You need **2× 80 GB**") and "Sources" in text
    assert session.conversation is not None
    follow_up, _ = answer_once(assistant, LIMITS, "and 8 users?", session, "en", 2.0)
    assert assistant.calls[-1][1] == session.conversation
    assert follow_up


def test_chat_api_rate_limit_and_empty_message() -> None:
    assistant = FakeAssistant()
    session = VisitorSession()
    empty, same = answer_once(assistant, LIMITS, "", session, "es", 1.0)
    assert "Haga una pregunta" in empty and same is session
    for second in range(3):
        _, session = answer_once(assistant, LIMITS, "q", session, "en", float(second))
    refused, _ = answer_once(assistant, LIMITS, "q", session, "en", 3.0)
    assert "wait about" in refused and len(assistant.calls) == 3


def test_final_answer_adds_notice_and_skips_sources_already_in_the_answer() -> None:
    sources = [Source(title="Guía", path="es/guia.md", section="Pesos")] * 2
    line = sources_line(sources, "es")
    assert line == "**Fuentes:** _Guía › Pesos_"
    reply = Reply(
        answer=f"Respuesta.\n\n{line}",
        language="es",
        mode="offline",
        notice="Modo sin conexión.",
        sources=sources,
    )
    shown = final_answer_markdown(reply)
    assert shown.count("Fuentes") == 1
    assert "> Modo sin conexión." in shown


def test_language_from_accept_language_header() -> None:
    assert language_from_header("es-ES,es;q=0.9,en;q=0.8") == "es"
    assert language_from_header("en-US,en;q=0.9,es;q=0.8") == "en"
    assert language_from_header("de-DE,es;q=0.5") == "es"
    assert language_from_header("fr-FR,en;q=0.2,es;q=0.7") == "es"
    assert language_from_header("fr") == "en"
    assert language_from_header(None) == "en"
    assert language_from_header("es;q=bogus,en") == "en"


class CalculatingAssistant(FakeAssistant):
    """Sends a calculator result before the text, as LLM mode does when the calculator returns."""

    def __init__(self) -> None:
        from tools import SizingRequest, calculate_vram

        result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="int4", users=8))
        super().__init__(calculations=[result])

    def stream(self, message, state=None):
        from assistant.schemas import CalculationEvent

        events = list(super().stream(message, state))
        yield events[0]
        yield CalculationEvent(result=self.calculations[0])
        yield from events[1:]


def test_a_calculation_shows_its_verdict_until_the_text_arrives() -> None:
    frames, history, _ = run_turn(CalculatingAssistant())
    shown = [frame[0][-1]["content"] for frame in frames if "metadata" not in frame[0][-1]]
    early = next(content for content in shown if "Recommended:" in content)
    assert "| Card |" in early and "You need" not in early
    # The reply's own answer replaces it, with follow-up options that fill what is missing.
    final = history[-1]
    assert "Recommended:" not in final["content"] and final["content"].startswith("You need")
    labels = [option["label"] for option in final["options"]]
    assert labels and labels[0] == "And at 8 bits?"


def test_only_the_latest_answer_offers_follow_ups() -> None:
    assistant = CalculatingAssistant()
    _, history, session = run_turn(assistant)
    _, history, _ = run_turn(assistant, "For 20 users?", session=session, history=history, now=101.0)
    with_options = [index for index, message in enumerate(history) if message.get("options")]
    assert with_options == [len(history) - 1]
