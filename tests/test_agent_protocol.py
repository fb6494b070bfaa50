"""LLM mode over the wire: `run_agent` against the OpenAI-compatible stub server on loopback.

What a real endpoint sees (the tool schema, the system prompt, the tool results sent back)
and what comes back (tool calls, streamed or not, with arguments split across chunks).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from assistant.agent import AgentOutcome, build_chat_model, run_agent
from assistant.errors import LLMUnavailableError
from assistant.prompts import SYSTEM_PROMPT
from assistant.schemas import ConversationState, StepEvent, TextDelta, Turn
from assistant.settings import Settings
from tests.fakes import FakeArticles, section
from tests.openai_stub import Reply, StubOpenAI, text, tool_call
from tools import SizingRequest, calculate_vram


def llm_settings(url: str, tmp_path: Any, **overrides: Any) -> Settings:
    fields: dict[str, Any] = {
        "llm_base_url": url,
        "llm_model": "stub-model",
        "llm_timeout": 10.0,
        "data_dir": tmp_path,
    }
    fields.update(overrides)
    return Settings(**fields)


VRAM_ARITHMETIC = section(
    "At 16 bits a parameter takes two bytes; a 70B model wants about 140GB before overhead.",
    title="VRAM is arithmetic",
    path="en/vram-arithmetic.md",
    heading="The arithmetic anyone can check",
    score=0.9,
)


SEVENTY_B_INT4 = {"model": "70b", "precision": "int4", "context": 8192, "users": 1}


def ask(stub: StubOpenAI, tmp_path: Any, message: str, **kwargs: Any) -> AgentOutcome:
    settings = llm_settings(stub.url, tmp_path)
    return run_agent(
        build_chat_model(settings),
        message,
        kwargs.pop("state", None),
        store=kwargs.pop("store", None),
        settings=settings,
        **kwargs,
    )


def test_tool_call_round_trip(tmp_path: Any) -> None:
    script: list[Reply] = [
        tool_call([("calculate_vram", SEVENTY_B_INT4)]),
        text("A 70B at 4 bits fits a 48GB card."),
    ]
    with StubOpenAI(script) as stub:
        outcome = ask(stub, tmp_path, "What GPU for a 70B at 4 bits?")
        first, second = stub.requests

    expected = calculate_vram(SizingRequest(model="70b", precision="int4", context=8192, users=1))
    assert outcome.text == "A 70B at 4 bits fits a 48GB card."
    assert outcome.calculations == [expected]
    assert outcome.model_calls == 2
    # Streamed even without a listener (a stall shows at once), with tools, tool_choice and a budget.
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert first["tool_choice"] == "auto"
    assert first["max_completion_tokens"] == 512 and first["max_tokens"] == 512
    # The model was told what to do and given the tool with the flat argument names.
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][0]["content"].startswith(SYSTEM_PROMPT)
    assert first["messages"][-1] == {"role": "user", "content": "What GPU for a 70B at 4 bits?"}
    tools_sent = {spec["function"]["name"]: spec["function"] for spec in first["tools"]}
    assert set(tools_sent) == {
        "calculate_vram",
        "lookup_card_classes",
        "search_articles",
        "reverse_search",
        "offer_engineer",
    }
    reverse_searches = tools_sent["reverse_search"]["parameters"]["properties"]["search"]["enum"]
    assert set(reverse_searches) == {"largest_model", "longest_context", "fewest_gpus", "smallest_card"}
    assert tools_sent["offer_engineer"]["parameters"]["required"] == ["reason"]
    calc_args = tools_sent["calculate_vram"]["parameters"]
    assert set(calc_args["properties"]) == {
        "model",
        "precision",
        "context",
        "users",
        "engine",
        "gpu",
        "kv_dtype",
    }
    assert set(calc_args["required"]) == {"model", "precision"}
    # The calculator's JSON went back to the model as the tool result.
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_stub_1"
    assert json.loads(tool_message["content"])["total_gb"] == expected.total_gb
    assert [step.kind for step in outcome.steps] == ["model", "calculate", "model"]


def test_streaming_tool_call_with_split_arguments(tmp_path: Any) -> None:
    answer = "Con 4 bits, un 70B cabe en una tarjeta de 48GB."
    script: list[Reply] = [tool_call([("calculate_vram", SEVENTY_B_INT4)]), text(answer, chunk_chars=3)]
    events: list[StepEvent | TextDelta] = []
    with StubOpenAI(script) as stub:
        outcome = ask(stub, tmp_path, "¿Qué GPU para un 70B a 4 bits?", on_event=events.append, lang="es")
        requests = list(stub.requests)

    assert all(request.get("stream") is True for request in requests)
    assert outcome.text == answer
    assert outcome.model_calls == 2
    # The streamed arguments were reassembled into the same calculation as a direct call.
    assert outcome.calculations == [
        calculate_vram(SizingRequest(model="70b", precision="int4", context=8192, users=1, lang="es"))
    ]
    assert outcome.calculations[0].caveat is not None
    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    assert len(deltas) > 5 and "".join(deltas) == answer
    steps = [event.step for event in events if isinstance(event, StepEvent)]
    assert [(s.kind, s.status) for s in steps if s.kind == "calculate"] == [
        ("calculate", "running"),
        ("calculate", "done"),
    ]
    assert steps[0].title.startswith("Modelo de lenguaje")
    assert "Spanish" in requests[0]["messages"][0]["content"]


def test_three_precisions_in_one_turn_keep_the_models_order(tmp_path: Any) -> None:
    calls = [("calculate_vram", {"model": "70b", "precision": p}) for p in ("bf16", "int8", "int4")]
    with StubOpenAI([tool_call(calls), text("Three options side by side.")]) as stub:
        outcome = ask(stub, tmp_path, "What GPU for a 70B?", on_event=lambda event: None)
    assert [result.precision for result in outcome.calculations] == ["bf16", "int8", "int4"]
    assert outcome.model_calls == 2


def test_articles_are_searched_and_cited(tmp_path: Any) -> None:
    shelf = FakeArticles([VRAM_ARITHMETIC])
    script: list[Reply] = [
        tool_call([("calculate_vram", SEVENTY_B_INT4), ("search_articles", {"query": "70B 4 bits"})]),
        text("Fits a 48GB card (VRAM is arithmetic — The arithmetic anyone can check)."),
    ]
    with StubOpenAI(script) as stub:
        outcome = ask(stub, tmp_path, "70B at 4 bits?", store=shelf)
        second = stub.requests[1]

    assert shelf.searches == [("70B 4 bits", 3, "en")]
    assert [(s.title, s.section) for s in outcome.sources] == [
        ("VRAM is arithmetic", "The arithmetic anyone can check")
    ]
    assert outcome.quoted_texts and "140GB" in outcome.quoted_texts[0]
    search_result = [m["content"] for m in second["messages"] if m["role"] == "tool"][1]
    assert "[VRAM is arithmetic — The arithmetic anyone can check]" in search_result
    assert not outcome.sources_unavailable


def test_a_failing_store_degrades_to_sources_unavailable(tmp_path: Any) -> None:
    script: list[Reply] = [
        tool_call([("search_articles", {"query": "kv cache"})]),
        text("The KV cache grows with context."),
    ]
    with StubOpenAI(script) as stub:
        outcome = ask(
            stub,
            tmp_path,
            "What is the KV cache?",
            store=FakeArticles(fail=ConnectionError("chroma is down")),
        )
        tool_result = next(m for m in stub.requests[1]["messages"] if m["role"] == "tool")
    assert tool_result["content"] == "sources unavailable"
    assert outcome.sources_unavailable and outcome.sources == []
    assert outcome.text == "The KV cache grows with context."


def test_a_bad_tool_argument_goes_back_to_the_model_to_correct(tmp_path: Any) -> None:
    script: list[Reply] = [
        tool_call([("calculate_vram", {"model": "70b", "precision": "int3"})]),
        tool_call([("calculate_vram", SEVENTY_B_INT4)]),
        text("Corrected."),
    ]
    with StubOpenAI(script) as stub:
        outcome = ask(stub, tmp_path, "70B at 4 bits?")
        error_result = next(m for m in stub.requests[1]["messages"] if m["role"] == "tool")
    assert "int3" in json.loads(error_result["content"])["error"]
    assert [r.precision for r in outcome.calculations] == ["int4"]
    assert outcome.model_calls == 3
    assert [s.status for s in outcome.steps if s.kind == "calculate"] == ["error", "done"]


def test_history_and_known_slots_reach_the_model(tmp_path: Any) -> None:
    state = ConversationState(
        model="llama-3.1-70b",
        users=20,
        language="es",
        history=[Turn(role="user", text="Hola, un 70B"), Turn(role="assistant", text="¿A qué precisión?")],
    )
    with StubOpenAI([text("Vale.")]) as stub:
        ask(stub, tmp_path, "A 4 bits", state=state)
        sent = stub.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert "model=llama-3.1-70b" in sent[0]["content"] and "users=20" in sent[0]["content"]
    assert "Spanish" in sent[0]["content"]


def test_build_chat_model_speaks_chat_completions_without_retries(tmp_path: Any) -> None:
    settings = llm_settings("http://127.0.0.1:9/v1", tmp_path, llm_timeout=7.5)
    chat_model: Any = build_chat_model(settings)
    assert chat_model.openai_api_base == "http://127.0.0.1:9/v1"
    assert chat_model.model_name == "stub-model"
    assert chat_model.max_retries == 0
    assert chat_model.request_timeout == 7.5
    assert chat_model.use_responses_api is False
    assert chat_model.openai_api_key.get_secret_value()  # a placeholder for keyless local servers


def test_build_chat_model_refuses_without_an_endpoint(tmp_path: Any) -> None:
    with pytest.raises(LLMUnavailableError, match="SIZING_LLM_BASE_URL"):
        build_chat_model(Settings(data_dir=tmp_path))
