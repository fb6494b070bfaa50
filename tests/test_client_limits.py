"""Rate limits per client address as well as per session, and visitor sessions that expire.

Unit tests for the address rules (trusted proxies only), the limiter and the session sweep,
then the served app on loopback: fresh sessions for every call (Gradio's plain HTTP API
opens one per call, as a client rotating `session_hash` does) do not escape the limit, and
Gradio keeps at most SIZING_MAX_SESSIONS sessions, forgetting idle ones.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from assistant.settings import Settings, parse_trusted_proxies
from assistant.ui.client_limits import (
    UNKNOWN_CLIENT,
    ClientGate,
    ClientRateLimiter,
    client_key,
    request_client_key,
)
from assistant.ui.handlers import ChatLimits, answer_once, stream_chat
from assistant.ui.session import RATE_WINDOW_S, VisitorSession
from assistant.ui.session_expiry import forget_idle_sessions
from tests.servers import app_in_thread, free_port, gradio_chat
from tests.ui_fakes import FakeAssistant

PROXIES = parse_trusted_proxies("10.0.0.0/8, ::1")


@pytest.mark.parametrize(
    ("peer", "forwarded", "expected"),
    [
        ("203.0.113.7", None, "203.0.113.7"),
        ("203.0.113.7", "198.51.100.1", "203.0.113.7"),  # an untrusted peer's header is ignored
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "6.6.6.6, 198.51.100.1, 10.0.0.3", "198.51.100.1"),  # the spoofed left hop loses
        ("10.0.0.2", "10.0.0.9, 10.0.0.3", "10.0.0.9"),  # only proxies: the leftmost
        ("10.0.0.2", "not-an-ip, 198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "198.51.100.1, junk", "10.0.0.2"),  # a malformed hop: trust nothing past it
        ("2001:db8:1:2:aaaa::1", None, "2001:db8:1:2::/64"),
        ("::ffff:198.51.100.9", None, "198.51.100.9"),
        (None, "198.51.100.1", UNKNOWN_CLIENT),
    ],
)
def test_the_client_address_comes_from_trusted_proxies_only(
    peer: str | None, forwarded: str | None, expected: str
) -> None:
    assert client_key(peer, forwarded, PROXIES) == expected


def test_a_request_object_gives_its_peer_and_header() -> None:
    request = SimpleNamespace(
        client=SimpleNamespace(host="10.1.2.3"), headers={"x-forwarded-for": "192.0.2.5"}
    )
    assert request_client_key(request, PROXIES) == "192.0.2.5"
    assert request_client_key(request, ()) == "10.1.2.3"


def test_a_bad_trusted_proxy_setting_names_the_value() -> None:
    with pytest.raises(ValueError, match=r"'10\.0\.0\.300'"):
        Settings(trusted_proxies="127.0.0.1, 10.0.0.300")
    assert Settings(trusted_proxies="127.0.0.1").trusted_proxy_networks[0].num_addresses == 1


def test_the_limiter_counts_per_address_over_a_sliding_minute() -> None:
    limiter = ClientRateLimiter(limit_per_minute=3)
    assert [limiter.admit("a", now) for now in (0.0, 1.0, 2.0)] == [0.0, 0.0, 0.0]
    assert limiter.admit("a", 3.0) == pytest.approx(RATE_WINDOW_S - 3.0)
    assert limiter.admit("b", 3.0) == 0.0  # another address has its own budget
    assert limiter.admit("a", RATE_WINDOW_S + 0.5) == 0.0  # the first message aged out


def test_the_limiter_forgets_the_least_recent_address_past_its_cap() -> None:
    limiter = ClientRateLimiter(limit_per_minute=1, max_clients=100)
    for number in range(1_000):
        limiter.admit(f"client-{number}", 0.0)
    assert limiter.tracked_clients == 100


def test_fresh_sessions_from_one_address_share_its_limit() -> None:
    assistant, limits = FakeAssistant(), ChatLimits(rate_limit_per_minute=30)
    gate = ClientGate(ClientRateLimiter(30), "198.51.100.1")
    answers = [
        answer_once(assistant, limits, "70b?", VisitorSession(), "en", 100.0 + i / 10, gate)[0]
        for i in range(35)
    ]
    refused = [answer for answer in answers if "2× 80 GB" not in answer]
    assert len(assistant.calls) == 30 and len(refused) == 5
    # The streamed chat shares the same count: this address has used its minute.
    history, _ = list(stream_chat(assistant, limits, "and 8b?", [], VisitorSession(), "en", 104.0, gate))[-1]
    assert len(assistant.calls) == 30 and history[-1]["role"] == "assistant"


def test_a_session_refusal_does_not_use_the_address_budget() -> None:
    limits = ChatLimits(rate_limit_per_minute=1)
    limiter = ClientRateLimiter(5)
    gate = ClientGate(limiter, "a")
    _, session = answer_once(FakeAssistant(), limits, "70b?", VisitorSession(), "en", 0.0, gate)
    for second in range(1, 10):  # refused by the session's own limit, never reaching the address
        answer_once(FakeAssistant(), limits, "70b?", session, "en", float(second), gate)
    assert limiter.admit("a", 10.0) == 0.0 and len(limiter._sent["a"]) == 2


def test_idle_sessions_are_forgotten() -> None:
    now = datetime.datetime(2026, 1, 1, 12, 0, 0)
    holder = SimpleNamespace(
        lock=threading.Lock(),
        session_data={"old": object(), "new": object()},
        time_last_used={
            "old": now - datetime.timedelta(seconds=700),
            "new": now - datetime.timedelta(seconds=5),
        },
    )
    assert forget_idle_sessions(holder, idle_s=600, now=now) == 1
    assert list(holder.session_data) == ["new"] and list(holder.time_last_used) == ["new"]


# ---------------------------------------------------------------- the served app on loopback


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    from assistant.ui.app import build_http_app

    settings = Settings(
        data_dir=tmp_path,
        rate_limit_per_minute=5,
        max_sessions=3,
        session_idle_timeout_s=1.0,
    )
    holder: dict[str, Any] = {}

    def build() -> Any:
        holder["demo"] = app = build_http_app(
            FakeAssistant(), settings
        )  # the Blocks is found through its routes
        return app

    with app_in_thread(build, free_port(), lifespan="on") as url:
        yield url, holder


def _state_holder(app: Any) -> Any:
    for route in app.routes:
        blocks = getattr(getattr(route, "app", None), "get_blocks", None)
        if blocks is not None:
            return blocks().state_holder
    raise AssertionError("no Gradio app mounted")


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_served_app_limits_fresh_sessions_and_bounds_its_sessions(served: tuple[str, Any]) -> None:
    url, holder = served
    answers = [gradio_chat(url, "What GPU for a 70B?", timeout_s=30) for _ in range(8)]
    answered = [answer for answer in answers if "2× 80 GB" in answer]
    assert len(answered) == 5, answers  # 8 fresh sessions, one address, a limit of 5 a minute
    state_holder = _state_holder(holder["demo"])
    assert len(state_holder.session_data) <= 3  # SIZING_MAX_SESSIONS
    for _ in range(50):  # the sweep forgets sessions idle past SIZING_SESSION_IDLE_TIMEOUT_S (1 s)
        if not state_holder.session_data:
            break
        time.sleep(0.1)
    assert not state_holder.session_data
