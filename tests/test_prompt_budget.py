"""The prompt budget: system prompt + tool schemas + calculations + passages + history, measured
before every model call and kept within the served context, never cut silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from assistant.llm_tools import compact_result, passages_for_model, tool_specs
from assistant.prompt_budget import PromptTooLargeError, estimate_tokens, fit_request
from assistant.prompts import SYSTEM_PROMPT
from assistant.schemas import ConversationState, Turn
from assistant.service import build_assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles, section
from tests.openai_stub import StubOpenAI, text
from tools import SizingRequest, calculate_vram

SECTION = "The KV cache grows with every token of context and every concurrent user. " * 16


# More sections than any search asks for: every search gets the `k` it asks for.
SHELF = [section(SECTION, f"Article {n}", f"en/a{n}.md", "S", score=0.9) for n in range(10)]


def side_by_side_messages() -> list[Any]:
    """The first call of a plain no-precision question: three calculations and three passages."""
    results = [calculate_vram(SizingRequest(model="70b", precision=p)) for p in ("bf16", "int8", "int4")]
    calls = [{"name": "calculate_vram", "args": {"model": "70b"}, "id": f"c{i}"} for i in range(3)]
    calls.append({"name": "search_articles", "args": {"query": "q"}, "id": "s"})
    passages = FakeArticles(SHELF).search("q")
    return [
        HumanMessage("What GPU for a 70B?"),
        AIMessage(content="", tool_calls=calls),
        *[
            ToolMessage(
                json.dumps(compact_result(r, arithmetic=False)), tool_call_id=f"c{i}", name="calculate_vram"
            )
            for i, r in enumerate(results)
        ],
        ToolMessage(passages_for_model(passages), tool_call_id="s", name="search_articles"),
    ]


def test_a_single_precision_question_fits_a_small_local_context() -> None:
    """One calculation with its arithmetic fits 4,096 tokens (Ollama's default on a small GPU)."""
    result = calculate_vram(SizingRequest(model="70b", precision="int4"))
    call = {"name": "calculate_vram", "args": {"model": "70b"}, "id": "c"}
    messages = [
        HumanMessage("What GPU for a 70B at 4 bits?"),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(json.dumps(compact_result(result)), tool_call_id="c", name="calculate_vram"),
    ]
    fitted = fit_request(SYSTEM_PROMPT, tool_specs(), messages, context_tokens=4096, answer_tokens=512)
    assert fitted.trimmed == []


def test_a_side_by_side_question_fits_8k_whole_and_less_with_fewer_passages() -> None:
    messages = side_by_side_messages()
    roomy = fit_request(SYSTEM_PROMPT, tool_specs(), messages, context_tokens=8192, answer_tokens=512)
    assert roomy.trimmed == [] and roomy.messages == messages
    tight = fit_request(SYSTEM_PROMPT, tool_specs(), messages, context_tokens=5120, answer_tokens=512)
    assert tight.trimmed == ["passages"]
    assert tight.tokens <= 5120 - 512
    # The calculations are never cut; only passages went.
    kept = [m for m in tight.messages if isinstance(m, ToolMessage) and m.name == "calculate_vram"]
    assert len(kept) == 3


def test_old_turns_go_before_passages() -> None:
    history = [HumanMessage("x " * 700), AIMessage("y " * 700)]
    messages = [*history, *side_by_side_messages()]
    fitted = fit_request(SYSTEM_PROMPT, tool_specs(), messages, context_tokens=5000, answer_tokens=512)
    assert fitted.trimmed[0] == "history"
    assert fitted.messages[0] == HumanMessage("What GPU for a 70B?")


def test_a_context_too_small_for_the_calculations_is_a_fault_not_a_cut() -> None:
    with pytest.raises(PromptTooLargeError, match="SIZING_LLM_CONTEXT_TOKENS=1024"):
        fit_request(
            SYSTEM_PROMPT, tool_specs(), side_by_side_messages(), context_tokens=1024, answer_tokens=256
        )


def test_figures_cost_more_than_words() -> None:
    """Tokenizers split numbers into digits: a figure-heavy text needs more tokens than prose of its size.
    (Against a real tokenizer: tests/test_llm_real.py.)"""
    assert estimate_tokens("39.19 48.33 2.684 8,192") > estimate_tokens("the weights take most of it")
    assert estimate_tokens("cuantización") > estimate_tokens("quantization")


def test_trimming_is_reported_in_the_steps_and_the_request_fits(tmp_path: Path) -> None:
    state = ConversationState(
        model="llama-3.1-70b",
        history=[Turn(role="user", text="a" * 590), Turn(role="assistant", text="b " * 290)] * 4,
    )
    with StubOpenAI([text("A 70B: see the calculator.")]) as stub:
        settings = Settings(
            data_dir=tmp_path, llm_base_url=stub.url, llm_model="stub-model", llm_context_tokens=6144
        )
        reply = build_assistant(settings, store=FakeArticles(SHELF)).answer(
            "What GPU for Llama 3.1 70B?", state
        )
        sent = stub.requests[0]
    assert reply.mode == "llm"
    budget = [step for step in reply.steps if step.title == "Prompt budget"]
    assert budget and "earlier turns" in budget[0].detail
    roles = [m["role"] for m in sent["messages"]]
    assert roles[:2] == ["system", "user"]  # the old turns were left out, the question kept
    assert estimate_tokens(json.dumps(sent["messages"])) + estimate_tokens(json.dumps(sent["tools"])) < 6144


def test_a_context_too_small_gives_the_offline_answer_with_the_reason(tmp_path: Path) -> None:
    with StubOpenAI([text("never sent")]) as stub:
        settings = Settings(
            data_dir=tmp_path, llm_base_url=stub.url, llm_model="stub-model", llm_context_tokens=1024
        )
        reply = build_assistant(settings, store=FakeArticles(SHELF)).answer("What GPU for a 70B?")
        assert stub.requests == []
    assert reply.mode == "offline"
    assert reply.notice and "1024-token context" in reply.notice
