"""One wall-clock deadline per LLM answer, whatever the endpoint does.

An endpoint that trickles its body a byte at a time, or streams SSE keep-alive comments and
never a token, keeps every read within any read timeout; the answer must still end at
SIZING_LLM_TIMEOUT, close the connection (the server sees the client go), free the caller,
and leave the visitor the offline answer with the notice. A huge answer is cut, and
`/healthz` says when the endpoint answers but stalls.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from assistant.agent import build_chat_model, run_agent
from assistant.errors import LLMMalformedReplyError, LLMTimeoutError
from assistant.service import Assistant, FinalEvent, build_assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles
from tests.openai_stub import StubOpenAI, keepalive, text, trickle
from tests.servers import free_port

TIMEOUT = 1.5
# Past the deadline the call returns at once; this only absorbs a loaded test machine.
GRACE = 1.5
QUESTION = "What GPU for Llama 3.1 70B at 4 bits?"


def settings_for(url: str, tmp_path: Any, **overrides: Any) -> Settings:
    fields: dict[str, Any] = {
        "llm_base_url": url,
        "llm_model": "stub-model",
        "llm_timeout": TIMEOUT,
        "data_dir": tmp_path,
    }
    fields.update(overrides)
    return Settings(**fields)


def assistant_for(url: str, tmp_path: Any, **overrides: Any) -> Assistant:
    return build_assistant(settings_for(url, tmp_path, **overrides), store=FakeArticles())


def agent_answer(url: str, tmp_path: Any, **overrides: Any) -> Any:
    settings = settings_for(url, tmp_path, **overrides)
    return run_agent(build_chat_model(settings), QUESTION, None, store=None, settings=settings)


STALLS = pytest.mark.parametrize(
    "stall",
    [keepalive(0.2), trickle(text("The weights take 39.19 GB."), byte_delay=0.2)],
    ids=["keep-alive comments", "trickled body"],
)


@STALLS
def test_a_stalling_endpoint_ends_at_the_deadline_and_is_disconnected(tmp_path: Any, stall: Any) -> None:
    with StubOpenAI([stall]) as stub:
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError, match=r"within 1\.5 s"):
            agent_answer(stub.url, tmp_path)
        elapsed = time.monotonic() - started
        # The app closed the connection: the server stops generating for a client that is gone.
        assert stub.client_gone.wait(GRACE)
    assert elapsed < TIMEOUT + GRACE


@STALLS
def test_the_visitor_gets_the_offline_answer_with_the_notice(tmp_path: Any, stall: Any) -> None:
    with StubOpenAI([stall]) as stub:
        assistant = assistant_for(stub.url, tmp_path)
        started = time.monotonic()
        reply = assistant.answer(QUESTION)
        elapsed = time.monotonic() - started
    assert reply.mode == "offline"
    assert reply.notice and "1.5 s" in reply.notice
    assert reply.calculations and reply.calculations[0].precision == "int4"
    assert elapsed < TIMEOUT + GRACE


def test_the_streamed_web_chat_ends_at_the_deadline(tmp_path: Any) -> None:
    with StubOpenAI([keepalive(0.2)]) as stub:
        assistant = assistant_for(stub.url, tmp_path)
        started = time.monotonic()
        events = list(assistant.stream(QUESTION))
        elapsed = time.monotonic() - started
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.reply.mode == "offline" and final.reply.notice
    assert elapsed < TIMEOUT + GRACE


def test_stalled_answers_do_not_hold_the_callers(tmp_path: Any) -> None:
    """Eight visitors at once on a stalling endpoint: every one is answered near the deadline,
    and no answer thread is left behind reading from the endpoint."""
    with StubOpenAI([keepalive(0.2)]) as stub:
        assistant = assistant_for(stub.url, tmp_path)
        before = {thread.ident for thread in threading.enumerate()}
        replies: list[Any] = []
        callers = [
            threading.Thread(target=lambda: replies.append(assistant.answer(QUESTION))) for _ in range(8)
        ]
        started = time.monotonic()
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(TIMEOUT + 10)
        elapsed = time.monotonic() - started
        assert len(replies) == 8 and all(reply.mode == "offline" for reply in replies)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline:
            left = [t for t in threading.enumerate() if t.ident not in before and t.name == "llm-answer"]
            if not left:
                break
            time.sleep(0.05)
        assert not left
    assert elapsed < TIMEOUT + GRACE + 2


def test_an_oversized_answer_is_cut(tmp_path: Any) -> None:
    huge = text("x" * 400_000, chunk_chars=4_000)
    with StubOpenAI([huge]) as stub, pytest.raises(LLMMalformedReplyError, match="exceeded 100,000 bytes"):
        agent_answer(stub.url, tmp_path, llm_max_response_bytes=100_000, llm_timeout=10)


def test_health_reports_an_endpoint_that_answers_but_stalls(tmp_path: Any) -> None:
    with StubOpenAI([keepalive(0.2), text("Llama 3.1 70B at 4 bits: see the calculator below.")]) as stub:
        assistant = assistant_for(stub.url, tmp_path)
        assert assistant.health()["llm_answering"] is None  # no answer yet
        assistant.answer(QUESTION)
        health = assistant.health()
        assert health["llm_reachable"] is True and health["llm_answering"] is False
        assert assistant.answer(QUESTION).mode == "llm"
        assert assistant.health()["llm_answering"] is True


@pytest.mark.e2e
@pytest.mark.slow
def test_sizing_ask_ends_at_the_deadline_on_a_stalling_endpoint(tmp_path: Any) -> None:
    """The real CLI in a subprocess: its answer is the offline one, as soon as the deadline passes."""
    import json
    import os

    from tests.sizing_cli import run_sizing

    closed = free_port()  # no article index server: the answer goes on without sources
    with StubOpenAI([keepalive(0.2)]) as stub:
        env = {key: value for key, value in os.environ.items() if not key.startswith("SIZING_")}
        env.update(
            SIZING_DATA_DIR=str(tmp_path),
            SIZING_CHROMA_URL=f"http://127.0.0.1:{closed}",
            SIZING_LLM_BASE_URL=stub.url,
            SIZING_LLM_MODEL="stub-model",
            SIZING_LLM_TIMEOUT="3",
        )
        started = time.monotonic()
        proc = run_sizing("ask", QUESTION, "--json", env=env, timeout=120)
        elapsed = time.monotonic() - started
        assert stub.client_gone.wait(GRACE)
    assert proc.returncode == 0, proc.stderr[-2000:]
    reply = json.loads(proc.stdout)
    assert reply["mode"] == "offline" and "3 s" in reply["notice"]
    assert reply["calculations"]
    # Process start and imports come on top of the 3 s; a stall used to run past 75 s.
    assert elapsed < 60
