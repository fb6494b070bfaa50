"""The "talk to an engineer" handoff and the thumbs: stored with their context, the team notified."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from assistant.desk.store import DeskStore, LeadForm
from assistant.handoff_offer import handoff_for
from assistant.person_request import asks_for_a_person
from assistant.schemas import ConversationState, HandoffOffer
from assistant.settings import Settings
from assistant.ui.feedback import RecordingAssistant, record_like
from assistant.ui.handlers import final_answer_markdown
from assistant.ui.handoff import hand_off, offer, transcript_from_history
from assistant.ui.session import VisitorSession
from tests.ui_fakes import FakeAssistant
from tools import SizingRequest, calculate_vram


class Webhook:
    """A loopback HTTP server that records every POST body (and can be told to fail)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                hook.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/leads"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[DeskStore]:
    store = DeskStore.open(f"sqlite:///{tmp_path / 'desk.sqlite3'}")
    yield store
    store.close()


HISTORY = [
    {"role": "user", "content": "¿70B en fp8 para 10 usuarios?"},
    {"role": "assistant", "content": "", "metadata": {"title": "Cálculo", "status": "done"}},
    {"role": "assistant", "content": "Necesita **2× 80GB**."},
]


def test_a_lead_is_stored_with_the_conversation_and_the_webhook_gets_it(
    tmp_path: Path, desk: DeskStore, webhook: Webhook
) -> None:
    settings = Settings(data_dir=tmp_path, notify_webhook_url=webhook.url)
    result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="fp8", users=10, lang="es"))
    form = LeadForm(name="Ana", email="ana@example.com", company="ACME", message="Llámenme", consent=True)
    outcome = hand_off(
        desk, settings, form, "es", transcript_from_history(HISTORY), [result.model_dump(mode="json")]
    )
    assert outcome.stored and outcome.message == "Gracias, Ana: un ingeniero le escribirá a ana@example.com."
    [lead] = desk.leads()
    assert lead.notified and lead.language == "es"
    assert lead.transcript == [
        {"role": "user", "content": "¿70B en fp8 para 10 usuarios?"},
        {"role": "assistant", "content": "Necesita **2× 80GB**."},
    ]
    assert lead.calculations[0]["total_gb"] == result.total_gb
    [body] = webhook.bodies
    assert (
        body["event"] == "lead"
        and body["email"] == "ana@example.com"
        and body["transcript"] == lead.transcript
    )
    assert not {key for key in body if "ip" in key.lower().split("_")}


def test_a_failing_webhook_keeps_the_lead_unnotified(
    tmp_path: Path, desk: DeskStore, webhook: Webhook
) -> None:
    webhook.status = 500
    settings = Settings(data_dir=tmp_path, notify_webhook_url=webhook.url)
    outcome = hand_off(
        desk, settings, LeadForm(name="Bob", email="bob@example.com", consent=True), "en", [], []
    )
    assert outcome.stored
    [lead] = desk.leads()
    assert not lead.notified and len(webhook.bodies) == 1


def test_a_bad_form_answers_in_the_visitor_language_and_stores_nothing(
    tmp_path: Path, desk: DeskStore
) -> None:
    settings = Settings(data_dir=tmp_path)
    outcome = hand_off(desk, settings, LeadForm(name="Ana", email="ana@", consent=True), "es", [], [])
    assert not outcome.stored and outcome.message.startswith("No enviado:") and "ana@" in outcome.message
    no_consent = hand_off(desk, settings, LeadForm(name="Ana", email="a@b.co"), "en", [], [])
    assert not no_consent.stored and "consent" in no_consent.message
    assert desk.leads() == []
    assert not hand_off(None, settings, LeadForm(name="A", email="a@b.co", consent=True), "en", [], []).stored


def test_the_handoff_is_offered_after_an_answer_and_opened_when_the_reply_offers_it() -> None:
    assert offer([], VisitorSession(), "en") == (False, False, "")
    shown, opened, _ = offer(HISTORY, VisitorSession(), "en")
    assert shown and not opened
    nothing_fit = VisitorSession(handoff=HandoffOffer(why="nothing_fit"))
    shown, opened, line = offer(HISTORY, nothing_fit, "es")
    assert shown and opened and line.startswith("Nada de lo comparado cabe")
    asked = VisitorSession(handoff=HandoffOffer(why="asked_for_person"))
    assert offer(HISTORY, asked, "es")[1]


def test_the_reply_says_when_nothing_fit_or_a_person_was_asked_for() -> None:
    fits = calculate_vram(SizingRequest(model="llama-3.1-8b"))
    too_big = calculate_vram(SizingRequest(model="llama-3.1-405b", precision="bf16", users=8))
    assert handoff_for("What GPU for an 8B?", [fits]) is None
    assert handoff_for("And a 405B?", [too_big]) == HandoffOffer(why="nothing_fit")
    assert handoff_for("Quiero hablar con un ingeniero", [fits]) == HandoffOffer(why="asked_for_person")


@pytest.mark.parametrize(
    ("message", "asks"),
    [
        ("Can I talk to an engineer?", True),
        ("I'd like to speak with someone from sales", True),
        ("¿Puedo hablar con una persona?", True),
        ("Contactenme por favor", True),
        ("What GPU for a 70B?", False),
        ("¿Cuánto habla el modelo por segundo?", False),
    ],
)
def test_asking_for_a_person_in_either_language(message: str, asks: bool) -> None:
    assert asks_for_a_person(message) is asks


def test_every_answer_is_logged_and_a_thumb_carries_its_context(desk: DeskStore) -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-405b", precision="bf16", users=8))
    recording = RecordingAssistant(FakeAssistant(calculations=[result]), desk)
    reply = recording.answer("405B at bf16 for 8 users?", ConversationState())
    streamed = list(recording.stream("and Falcon 180B on an RTX 2080?", reply.state))
    [first, second] = desk.questions()
    assert first.question == "405B at bf16 for 8 users?" and first.nothing_fit and first.mode == "offline"
    assert first.outcome["fits"] is False and first.slots["model"] == "70b"
    assert second.unknown_model == "falcon 180b" and second.unknown_card == "rtx 2080"
    assert streamed and desk.questions()[0].retrieval_scores == []  # the fake's source has no score
    shown = final_answer_markdown(reply)
    history = [
        {"role": "user", "content": "405B at bf16 for 8 users?"},
        {"role": "assistant", "content": shown},
    ]
    feedback_id = record_like(
        desk, False, 1, [{"type": "text", "text": shown}], history, VisitorSession(), "en"
    )
    assert feedback_id is not None
    desk.comment_feedback(feedback_id, "I wanted a price")
    [feedback] = desk.feedback()
    assert (
        feedback.rating == "down"
        and feedback.question_id == first.id
        and feedback.comment == "I wanted a price"
    )
    assert record_like(desk, None, 1, shown, history, VisitorSession(), "en") is None  # an un-click


def test_a_click_on_a_grouped_turn_finds_its_final_answer() -> None:
    from assistant.ui.feedback import answer_at

    history = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": [{"type": "text", "text": "step"}], "metadata": {"title": "Read"}},
        {"role": "assistant", "content": [{"type": "text", "text": "answer one"}]},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "answer two"},
    ]
    assert answer_at(history, 1) == "answer one"  # the click reports the group's first message
    assert answer_at(history, 4) == "answer two" and answer_at(history, 9) == ""


class SmtpSink:
    """A loopback SMTP server that accepts one conversation at a time and keeps each message."""

    def __init__(self) -> None:
        import socket

        self.messages: list[str] = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = int(self.listener.getsockname()[1])
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            connection, _ = self.listener.accept()
        except OSError:
            return
        with connection, connection.makefile("rb") as lines:
            connection.sendall(b"220 sink ready\r\n")
            while line := lines.readline():
                command = line.decode("ascii", "replace").strip().upper()
                if command.startswith(("EHLO", "HELO")):
                    connection.sendall(b"250 sink\r\n")
                elif command == "DATA":
                    connection.sendall(b"354 go on\r\n")
                    body = []
                    while (data := lines.readline()) not in (b".\r\n", b""):
                        body.append(data.decode("utf-8", "replace"))
                    self.messages.append("".join(body))
                    connection.sendall(b"250 queued\r\n")
                elif command == "QUIT":
                    connection.sendall(b"221 bye\r\n")
                    return
                else:
                    connection.sendall(b"250 ok\r\n")

    def close(self) -> None:
        self.listener.close()


def test_a_lead_is_e_mailed_to_the_sales_team(tmp_path: Path, desk: DeskStore) -> None:
    sink = SmtpSink()
    try:
        settings = Settings(
            data_dir=tmp_path,
            smtp_host="127.0.0.1",
            smtp_port=sink.port,
            notify_email_from="assistant@example.com",
            notify_email_to="sales@example.com",
        )
        form = LeadForm(name="Ana", email="ana@example.com", company="ACME", message="Llámenme", consent=True)
        outcome = hand_off(desk, settings, form, "es", transcript_from_history(HISTORY), [])
        sink.thread.join(timeout=10)
    finally:
        sink.close()
    assert outcome.stored and desk.leads()[0].notified
    [message] = sink.messages
    assert "To: sales@example.com" in message and "Reply-To: ana@example.com" in message
    assert "Subject: New lead: Ana (ACME)" in message
