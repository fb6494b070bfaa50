"""The OpenAI-compatible stub speaks the wire format the real clients expect.

Checked with the `openai` client and with langchain-openai's ChatOpenAI, the two
clients the product uses, so that tests built on the stub test something real.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.openai_stub import Reply, StubOpenAI, drop, error, malformed, slow, text, tool_call


def _client(stub: StubOpenAI, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=stub.url, api_key="test-key", **kwargs)


def _ask(client: openai.OpenAI, content: str = "hello", **kwargs: Any) -> Any:
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": content}], **kwargs
    )


def test_text_reply_non_streaming_with_usage_and_recorded_request() -> None:
    with StubOpenAI([text("Forty-two it is.", usage={"prompt_tokens": 7, "completion_tokens": 4})]) as stub:
        completion = _ask(_client(stub), "what is six times seven", temperature=0)
    assert completion.choices[0].message.content == "Forty-two it is."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (7, 4)
    assert completion.usage.total_tokens == 11
    assert completion.model == "m"
    assert stub.requests == [
        {"model": "m", "messages": [{"role": "user", "content": "what is six times seven"}], "temperature": 0}
    ]


def test_list_script_is_consumed_in_order_and_the_last_reply_repeats() -> None:
    with StubOpenAI([text("one"), text("two")]) as stub:
        client = _client(stub)
        answers = [_ask(client).choices[0].message.content for _ in range(4)]
    assert answers == ["one", "two", "two", "two"]
    assert len(stub.requests) == 4


def test_callable_script_sees_the_request() -> None:
    def echo(request: dict[str, Any]) -> Any:
        return text(request["messages"][-1]["content"].upper())

    with StubOpenAI(echo) as stub:
        assert _ask(_client(stub), "loud please").choices[0].message.content == "LOUD PLEASE"


def test_default_usage_moves_with_the_text() -> None:
    with StubOpenAI([text("one two three four five")]) as stub:
        usage = _ask(_client(stub), "a b c").usage
    assert usage is not None
    assert usage.prompt_tokens == 3
    assert usage.completion_tokens == 5


def test_streaming_text_arrives_in_several_content_deltas_then_done() -> None:
    answer = "The 70B needs two 80 GB cards at 16 bits."
    with StubOpenAI([text(answer, chunk_chars=5)]) as stub:
        stream = _ask(_client(stub), stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) == len(answer) // 5 + 1
    assert "".join(pieces) == answer
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    usage_chunks = [c for c in chunks if c.usage is not None]
    assert len(usage_chunks) == 1 and not usage_chunks[0].choices
    assert usage_chunks[0].usage is not None and usage_chunks[0].usage.completion_tokens == 10


def test_raw_sse_stream_ends_with_done() -> None:
    with StubOpenAI([text("hi there")]) as stub:
        response = httpx.post(
            f"{stub.url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True},
        )
    events = [line for line in response.text.split("\n\n") if line]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[0][6:])["object"] == "chat.completion.chunk"
    assert response.headers["content-type"].startswith("text/event-stream")


def test_streamed_tool_call_arguments_are_split_and_reassemble() -> None:
    args = {"model": "llama-3.1-70b", "precision": "int4", "context": 8192}
    with StubOpenAI(
        [tool_call([("calculate_vram", args), ("search_articles", {"query": "kv cache"})])]
    ) as stub:
        chunks = list(_ask(_client(stub), stream=True))
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    first = [d for d in deltas if d.index == 0]
    assert first[0].id and first[0].function and first[0].function.name == "calculate_vram"
    assert all(d.id is None and d.function and d.function.name is None for d in first[1:])
    assert len(first) >= 3  # the name, then the arguments in at least two pieces
    rebuilt = "".join(d.function.arguments or "" for d in first if d.function)
    assert json.loads(rebuilt) == args
    second = [d for d in deltas if d.index == 1]
    assert second[0].function and second[0].function.name == "search_articles"
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "tool_calls"
    ]


def test_tool_call_non_streaming() -> None:
    with StubOpenAI([tool_call([("calculate_vram", {"model": "8b"})])]) as stub:
        completion = _ask(_client(stub), tools=[_vram_tool_schema()])
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls and message.tool_calls[0].type == "function"
    call = message.tool_calls[0]
    assert call.function.name == "calculate_vram"
    assert json.loads(call.function.arguments) == {"model": "8b"}
    assert stub.requests[0]["tools"][0]["function"]["name"] == "calculate_vram"


def test_error_reply_is_an_api_status_error() -> None:
    with StubOpenAI([error(503, "overloaded")]) as stub, pytest.raises(openai.InternalServerError) as caught:
        _ask(_client(stub))
    assert caught.value.status_code == 503
    assert "overloaded" in str(caught.value)


def test_error_with_a_dict_body_is_sent_as_is() -> None:
    with StubOpenAI([error(429, {"error": {"message": "slow down", "type": "rate_limit"}})]) as stub:
        response = httpx.post(f"{stub.url}/chat/completions", json={"model": "m", "messages": []})
    assert response.status_code == 429
    assert response.json() == {"error": {"message": "slow down", "type": "rate_limit"}}


def test_client_retries_consume_the_next_scripted_reply() -> None:
    with StubOpenAI([error(500, "boom"), text("recovered")]) as stub:
        client = openai.OpenAI(base_url=stub.url, api_key="k", max_retries=1)
        assert _ask(client).choices[0].message.content == "recovered"
    assert len(stub.requests) == 2


def test_slow_reply_trips_a_client_timeout_and_otherwise_arrives_late() -> None:
    with StubOpenAI([slow(2.0, text("late")), slow(0.2, text("in time"))]) as stub:
        with pytest.raises(openai.APITimeoutError):
            _ask(_client(stub, timeout=0.3))
        started = time.perf_counter()
        assert _ask(_client(stub)).choices[0].message.content == "in time"
        assert time.perf_counter() - started >= 0.2


def test_dropped_connection_is_a_connection_error() -> None:
    with StubOpenAI([drop()]) as stub, pytest.raises(openai.APIConnectionError):
        _ask(_client(stub))


def test_malformed_body_is_not_json() -> None:
    with StubOpenAI([malformed()]) as stub:
        response = httpx.post(f"{stub.url}/chat/completions", json={"model": "m", "messages": []})
        assert response.status_code == 200
        with pytest.raises(json.JSONDecodeError):
            response.json()
        with pytest.raises((openai.APIError, json.JSONDecodeError)):
            _ask(_client(stub))


def test_malformed_streaming_body_breaks_the_stream() -> None:
    with StubOpenAI([malformed()]) as stub, pytest.raises((openai.APIError, json.JSONDecodeError)):
        list(_ask(_client(stub), stream=True))


def test_malformed_arguments_are_not_json() -> None:
    with StubOpenAI([malformed("arguments")]) as stub:
        message = _ask(_client(stub)).choices[0].message
    assert message.tool_calls
    with pytest.raises(json.JSONDecodeError):
        json.loads(message.tool_calls[0].function.arguments)


def test_models_endpoint_lists_the_stub_models() -> None:
    with StubOpenAI([text("x")], models=("big-bf16", "big-int4")) as stub:
        names = [m.id for m in _client(stub).models.list()]
    assert names == ["big-bf16", "big-int4"]


def test_unknown_route_and_bad_json_are_client_errors() -> None:
    with StubOpenAI([text("x")]) as stub:
        assert httpx.post(f"{stub.url}/completions", json={}).status_code == 404
        bad = httpx.post(f"{stub.url}/chat/completions", content=b"{nope")
        assert bad.status_code == 400
        assert stub.requests == []


def test_stub_rejects_empty_script() -> None:
    with pytest.raises(ValueError):
        StubOpenAI([])


# ---------------------------------------------------------------------------- langchain-openai


def _vram_tool_schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "calculate_vram",
            "description": "VRAM for a model",
            "parameters": {
                "type": "object",
                "properties": {"model": {"type": "string"}},
                "required": ["model"],
            },
        },
    }


@tool
def calculate_vram(model: str, precision: str = "bf16") -> str:
    """VRAM needed to serve a model at a precision."""
    return f"{model} {precision}"


def _chat(stub: StubOpenAI, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=stub.url,
        model="stub-model",
        api_key="test-key",
        max_retries=0,
        use_responses_api=False,
        **kwargs,
    )


def test_chat_openai_invoke_and_bind_tools() -> None:
    script: list[Reply] = [
        tool_call([("calculate_vram", {"model": "70b", "precision": "int4"})]),
        text("Two cards."),
    ]
    with StubOpenAI(script) as stub:
        model = _chat(stub).bind_tools([calculate_vram])
        first = model.invoke("what GPU for a 70B at 4 bits?")
        second = model.invoke("thanks")
    assert first.tool_calls == [
        {
            "name": "calculate_vram",
            "args": {"model": "70b", "precision": "int4"},
            "id": "call_stub_1",
            "type": "tool_call",
        }
    ]
    assert second.content == "Two cards."
    assert stub.requests[0]["tools"][0]["function"]["name"] == "calculate_vram"


def test_chat_openai_streams_text_and_tool_calls() -> None:
    script: list[Reply] = [
        text("Roughly 40 GB of weights.", chunk_chars=3),
        tool_call([("calculate_vram", {"model": "70b", "precision": "fp8"})]),
    ]
    with StubOpenAI(script) as stub:
        model = _chat(stub, streaming=True, stream_usage=True).bind_tools([calculate_vram])
        text_chunks = list(model.stream("how big?"))
        call_chunks = list(model.stream("size it"))
    assert len([c for c in text_chunks if c.content]) > 3
    merged_text = _merge(text_chunks)
    assert merged_text.content == "Roughly 40 GB of weights."
    assert merged_text.usage_metadata is not None and merged_text.usage_metadata["output_tokens"] == 5
    assert sum(1 for c in call_chunks if isinstance(c, AIMessageChunk) and c.tool_call_chunks) >= 3
    merged_call = _merge(call_chunks)
    assert merged_call.tool_calls[0]["name"] == "calculate_vram"
    assert merged_call.tool_calls[0]["args"] == {"model": "70b", "precision": "fp8"}
    assert stub.requests[0]["stream"] is True


def test_chat_openai_reports_broken_arguments_as_invalid_tool_calls() -> None:
    with StubOpenAI([malformed("arguments")]) as stub:
        model = _chat(stub).bind_tools([calculate_vram])
        merged = _merge(list(model.stream("size it")))
        invoked = model.invoke("size it")
    for message in (merged, invoked):
        assert message.tool_calls == []
        assert message.invalid_tool_calls and message.invalid_tool_calls[0]["name"] == "calculate_vram"


def test_chat_openai_surfaces_faults_as_openai_errors() -> None:
    with StubOpenAI([error(500, "boom"), drop()]) as stub:
        model = _chat(stub)
        with pytest.raises(openai.InternalServerError):
            model.invoke("x")
        with pytest.raises(openai.APIConnectionError):
            model.invoke("x")


def _merge(chunks: list[Any]) -> AIMessageChunk:
    assert chunks
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert isinstance(merged, AIMessageChunk)
    return merged
