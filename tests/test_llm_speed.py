"""LLM mode answers speed questions from the estimate: the app's own calculation for a question
about tokens/s, latency, a load or a capacity hands the model the speed sentences, and the
calculator tool takes the workload (prompt and answer lengths, a rate, a latency class, users
'target') and returns them. Against the OpenAI-compatible stub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assistant.llm_tools import compact_result
from assistant.service import Assistant, build_assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles
from tests.openai_stub import Reply, StubOpenAI, text, tool_call
from tools import SizingRequest, calculate_vram


def assistant_for(url: str, tmp_path: Path) -> Assistant:
    settings = Settings(
        data_dir=tmp_path, llm_base_url=url, llm_model="stub-model", llm_timeout=5, llm_max_steps=4
    )
    return build_assistant(settings, store=FakeArticles())


def tool_results(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The calculator results the model was handed, by tool call id."""
    return {
        m["tool_call_id"]: json.loads(m["content"])
        for m in request["messages"]
        if m["role"] == "tool" and m["content"].startswith("{")
    }


def quoting_model(request: dict[str, Any]) -> Reply:
    """Answers with every result's speed and recommendation, as a model that quotes its tools."""
    results = tool_results(request)
    return text("\n\n".join(f"{r.get('speed', 'no speed')}\n{r['recommendation']}" for r in results.values()))


def test_a_capacity_question_hands_the_model_the_count_and_the_model_may_quote_it(tmp_path: Path) -> None:
    with StubOpenAI(quoting_model) as stub:
        reply = assistant_for(stub.url, tmp_path).answer(
            "How many users can one H100 serve with Llama 3.1 8B?"
        )
        handed = tool_results(stub.requests[0])
    expected = calculate_vram(
        SizingRequest(model="llama-3.1-8b", precision="bf16", gpu="h100-80gb", users_target=True)
    )
    assert expected.performance is not None and expected.performance.capacity is not None
    users = f"serves {int(expected.performance.capacity.best)} users at once"
    speeds = [r["speed"] for r in handed.values() if "speed" in r]
    assert speeds and any(users in speed for speed in speeds)
    assert reply.mode == "llm" and users in reply.answer


def test_a_memory_question_carries_no_speed_estimate(tmp_path: Path) -> None:
    with StubOpenAI(quoting_model) as stub:
        assistant_for(stub.url, tmp_path).answer("What GPU for Llama 3.1 70B at 4 bits?")
        handed = tool_results(stub.requests[0])
    assert handed and all("speed" not in r for r in handed.values())


def test_a_spanish_speed_question_gets_the_sentences_in_spanish(tmp_path: Path) -> None:
    with StubOpenAI(quoting_model) as stub:
        assistant_for(stub.url, tmp_path).answer("¿Cuántos tokens por segundo da Llama 3.1 8B en una L40S?")
        handed = tool_results(stub.requests[0])
    speeds = [r["speed"] for r in handed.values() if "speed" in r]
    assert speeds and all("tokens/s por usuario" in s for s in speeds)


def calculator_arguments(request: dict[str, Any]) -> set[str]:
    tool = next(t for t in request["tools"] if t["function"]["name"] == "calculate_vram")
    return set(tool["function"]["parameters"]["properties"])


WORKLOAD = {"input_len", "output_len", "rate", "service", "users_target", "users_max"}


def test_only_a_speed_question_offers_the_calculator_a_workload(tmp_path: Path) -> None:
    with StubOpenAI(quoting_model) as stub:
        assistant = assistant_for(stub.url, tmp_path)
        assistant.answer("What GPU for Llama 3.1 70B at 4 bits?")
        assistant.answer("How many tokens per second does Llama 3.1 8B get on an L40S?")
        memory, speed = stub.requests[0], stub.requests[-1]
    assert not WORKLOAD & calculator_arguments(memory)  # a small local context has no room for them
    assert calculator_arguments(speed) >= WORKLOAD


SPEED_CALL = {
    "model": "Llama 3.1 8B",
    "precision": "bf16",
    "gpu": "l40s",
    "input_len": 2000,
    "output_len": 300,
    "users_target": True,
}


def calling_model(request: dict[str, Any]) -> Reply:
    """Calls the calculator with a workload itself, then quotes what it got back."""
    own = {k: v for k, v in tool_results(request).items() if not k.startswith("app_")}
    if not own:
        return tool_call([("calculate_vram", SPEED_CALL)])
    return text("\n".join(r.get("speed", "no speed") for r in own.values()))


def test_the_model_can_ask_the_calculator_for_a_capacity_with_its_own_lengths(tmp_path: Path) -> None:
    with StubOpenAI(calling_model) as stub:
        reply = assistant_for(stub.url, tmp_path).answer(
            "How fast is Llama 3.1 8B on an L40S for our support chat?"
        )
    expected = calculate_vram(
        SizingRequest(model="Llama 3.1 8B", **{k: v for k, v in SPEED_CALL.items() if k != "model"})
    )
    assert expected.performance is not None and expected.performance.capacity is not None
    assert expected.performance.input_len == 2000 and expected.performance.output_len == 300
    assert f"serves {int(expected.performance.capacity.best)} users at once" in reply.answer
    assert "2,000 prompt + 300 answer tokens" in reply.answer


def test_a_plain_call_on_a_speed_question_still_gets_the_speed(tmp_path: Path) -> None:
    """On a question about speed the model may call the calculator with no workload argument (a
    different card, say): the result still carries the speed sentences it needs to answer."""
    plain = {"model": "Llama 3.1 8B", "precision": "bf16", "gpu": "h100"}

    def model(request: dict[str, Any]) -> Reply:
        own = {k: v for k, v in tool_results(request).items() if not k.startswith("app_")}
        if not own:
            return tool_call([("calculate_vram", plain)])
        return text("\n".join(r.get("speed", "no speed") for r in own.values()))

    with StubOpenAI(model) as stub:
        reply = assistant_for(stub.url, tmp_path).answer(
            "How many tokens per second does Llama 3.1 8B get on an L40S?"
        )
    assert "no speed" not in reply.answer and "tokens/s per user" in reply.answer
    with StubOpenAI(model) as stub:
        memory = assistant_for(stub.url, tmp_path).answer("Does Llama 3.1 8B fit on an L40S?")
    assert "tokens/s per user" not in memory.answer  # a memory question's results stay lean


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"service": "teleport"}, "teleport"),
        ({"input_len": 9000, "output_len": 300}, "exceeds the context"),
        ({"rate": 2, "users_target": True}, "users 'target'"),
        ({"rate": 2, "users_max": True}, "users 'max'"),
    ],
)
def test_a_bad_workload_argument_comes_back_to_the_model_as_one_error(
    tmp_path: Path, arguments: dict[str, Any], error: str
) -> None:
    call = {"model": "Llama 3.1 8B", "precision": "bf16", "gpu": "l40s", **arguments}

    def model(request: dict[str, Any]) -> Reply:
        own = [
            m for m in request["messages"] if m["role"] == "tool" and not m["tool_call_id"].startswith("app_")
        ]
        return tool_call([("calculate_vram", call)]) if not own else text("Noted.")

    with StubOpenAI(model) as stub:
        assistant_for(stub.url, tmp_path).answer("How many tokens per second for Llama 3.1 8B on an L40S?")
        last = stub.requests[-1]["messages"]
    own = [m for m in last if m["role"] == "tool" and not m["tool_call_id"].startswith("app_")]
    assert own and error in json.loads(own[0]["content"])["error"]


def test_the_speed_sentences_fit_beside_a_small_context_budget() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="h100-80gb", users_target=True))
    with_speed = json.dumps(compact_result(result, arithmetic=False, speed=True))
    without = json.dumps(compact_result(result, arithmetic=False))
    assert "speed" not in json.loads(without)
    assert 0 < len(with_speed) - len(without) < 800
