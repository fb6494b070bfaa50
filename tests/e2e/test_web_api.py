"""The web app's API through `gradio_client` and plain HTTP, against a real `sizing serve`."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CONCURRENT_VISITORS = 20

QUESTIONS = (
    "What GPU do I need for a 70B model with {n} users?",
    "¿Qué GPU necesito para un modelo 8B con {n} usuarios y 32k de contexto?",
    "Llama 3.1 70B in int4 for {n} concurrent users: which card?",
    "¿Cabe un 70B en 48 GB en 4 bits con {n} usuarios?",
)


@pytest.fixture
def client_for() -> Iterator[Callable[[str], Any]]:
    """Opens gradio_client sessions (one Client = one visitor) and closes them after the test."""
    from gradio_client import Client

    opened: list[Client] = []

    def open_client(url: str) -> Client:
        client = Client(url, verbose=False, download_files=False, analytics_enabled=False)
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        client.close()


def test_healthz_reports_mode_and_dependencies(served_app) -> None:
    with urllib.request.urlopen(f"{served_app.url}/healthz", timeout=10) as response:
        assert response.status == 200
        assert response.headers["content-type"].startswith("application/json")
        health = json.loads(response.read())
    assert health["mode"] == "offline"
    assert health["llm_reachable"] is None
    assert isinstance(health["chroma_reachable"], bool)


def test_only_the_documented_endpoints_are_public(served_app, client_for) -> None:
    endpoints = client_for(served_app.url).view_api(print_info=False, return_format="dict")
    assert set(endpoints["named_endpoints"]) == {"/chat", "/calculate", "/draft", "/handoff"}


def calculate(client: Any, model: str, users: int, **latency: str) -> Any:
    """The `calculate` API with the ten inputs the calculator tab always sends (bf16 on vLLM, 8k
    context), and the optional latency target (`service=...`) when given."""
    return client.predict(
        model=model,
        params_b=None,
        config_file=None,
        precision="bf16",
        kv_dtype="",
        context=8192,
        users=users,
        engine="vllm",
        card="",
        card_count=1,
        api_name="/calculate",
        **latency,
    )


def test_calculate_returns_the_sizing_json(served_app, client_for) -> None:
    result = calculate(client_for(served_app.url), model="llama-3.1-70b", users=4)
    assert result["model"]["id"] == "llama-3.1-70b"
    assert result["total_gb"] > result["weights_gb"] > 100
    assert {option["card_class"] for option in result["options"]} >= {"48gb", "80gb", "2x80gb"}


def test_calculate_takes_a_latency_target_and_callers_without_it_still_work(served_app, client_for) -> None:
    """The eleventh input, `service` (a class id of tools/data/service_classes.json), is optional:
    the ten-input calls above still work, and with it the JSON carries the verdict against the
    target."""
    result = calculate(client_for(served_app.url), model="llama-3.1-8b", users=4, service="voice_agent")
    performance = result["performance"]
    assert performance["target"]["service"] == "voice_agent"
    assert isinstance(performance["meets_target"], bool)
    assert (
        calculate(client_for(served_app.url), model="llama-3.1-8b", users=4)["performance"]["target"] is None
    )
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as failure:
        calculate(client_for(served_app.url), model="llama-3.1-8b", users=4, service="teleport")
    assert "teleport" in str(failure.value) and "Traceback" not in str(failure.value)


def test_calculate_bad_input_is_a_clear_error(served_app, client_for) -> None:
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as failure:
        calculate(client_for(served_app.url), model="no-such-model-zz", users=1)
    assert "no-such-model-zz" in str(failure.value)
    assert "Traceback" not in str(failure.value)


def test_chat_keeps_each_client_conversation(served_app, client_for) -> None:
    client = client_for(served_app.url)
    first = client.predict("What GPU for Llama 3.1 70B in fp8 with 8 users?", api_name="/chat")
    assert "GB" in first
    follow_up = client.predict("and with 32 users?", api_name="/chat")
    assert "GB" in follow_up and follow_up != first
    # A different client is a different visitor: the follow-up alone lacks the model.
    stranger = client_for(served_app.url).predict("and with 32 users?", api_name="/chat")
    assert stranger != follow_up


def test_twenty_visitors_at_once_all_get_answers(served_app, client_for) -> None:
    clients = [client_for(served_app.url) for _ in range(CONCURRENT_VISITORS)]

    def visit(index: int) -> str:
        question = QUESTIONS[index % len(QUESTIONS)].format(n=index + 1)
        return str(clients[index].predict(question, api_name="/chat"))

    with ThreadPoolExecutor(max_workers=CONCURRENT_VISITORS) as pool:
        answers = list(pool.map(visit, range(CONCURRENT_VISITORS)))
    assert len(answers) == CONCURRENT_VISITORS
    for answer in answers:
        assert "GB" in answer, answer
        assert "wait about" not in answer and "Espere unos" not in answer


def test_rate_limit_answers_politely_per_session(served_app, client_for) -> None:
    client = client_for(served_app.url)
    limit = served_app.rate_limit_per_minute
    answers = [client.predict(f"70b with {n} users?", api_name="/chat") for n in range(1, limit + 2)]
    assert all("GB" in answer for answer in answers[:limit])
    assert "a minute" in answers[-1] and "wait about" in answers[-1]
    # Other visitors are not held back by this one.
    assert "GB" in client_for(served_app.url).predict("70b with 2 users?", api_name="/chat")
