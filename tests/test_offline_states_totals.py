"""The offline answer states the total of every option it puts forward: the named card's, the
smallest option that fits (another class, or more of the named card) and the escalation's. A
reader checking "2× H100" against its own figure finds it, and so does an LLM-mode check of an
offline fallback (tests/test_llm_real.py asserts every calculation's total is written)."""

from __future__ import annotations

import pytest

from assistant.guardrail_figures import figures, matches
from assistant.service import Assistant, build_assistant
from assistant.settings import Settings
from tools import SizingRequest, SizingResult, calculate_vram

CONVERSATIONS = [
    ["Does Llama 3.1 70B fit on one H100 at 4 bits?", "and with 20 users?"],
    ["¿Cabe Qwen2.5 72B en una L40S a 8 bits?"],
    ["llama 3.1 405b fp8 on h100"],
    ["mistral 7b bf16 for 200 users on an rtx 4090"],
    ["Qwen3 30B A3B on a single A100 40GB at bf16", "what about fp8?"],
    ["Gemma 2 27B, 16 bits, 10 users, H100", "y con 64k de contexto?"],
    ["Llama 3.1 70B bf16 on an H200 with 30 users"],
    ["what gpu for deepseek v3?"],
    ["70b a 4 bits con 50 usuarios y 32k de contexto"],
]


def put_forward(result: SizingResult) -> float:
    """The total of the option a result leads to. A named card: its own (the verdict's), and the
    escalation's count of it is checked apart. The card classes: the one recommended, else the
    first option beyond the table that holds it, else (nothing holds it) the result's own total."""
    on_named_card = bool(result.options) and result.options[0].card_class is None
    if not on_named_card and result.recommended is None and result.alternatives:
        return result.alternatives[0].total_gb
    return result.total_gb


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    data = tmp_path_factory.mktemp("data")
    return build_assistant(Settings(data_dir=data, llm_base_url=None, llm_model=None, chroma_url=None))


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=lambda c: c[-1][:40])
def test_every_option_put_forward_has_its_total_stated(assistant: Assistant, conversation: list[str]) -> None:
    state = None
    for message in conversation:
        reply = assistant.answer(message, state)
        state = reply.state
    written = [figure for figure in figures(reply.answer) if figure.unit == "GB"]
    assert reply.calculations
    for result in reply.calculations:
        assert any(matches(f, put_forward(result)) for f in written), (
            put_forward(result),
            reply.answer[:600],
        )
        assert any(matches(f, result.weights_gb) for f in written), result.weights_gb


def test_an_option_carries_its_own_total_and_the_result_that_of_its_recommendation() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="int4", users=20))
    recommended = next(o for o in result.options if o.card_class == result.recommended)
    assert recommended.total_gb == result.total_gb
    # More GPUs carry more per-GPU overhead: the one-card total is smaller than the two-card one.
    single, double = (o for o in result.options if o.card_class in ("80gb", "2x80gb"))
    assert single.total_gb < double.total_gb


def test_the_escalation_on_a_named_card_states_the_total_on_that_many_cards(assistant: Assistant) -> None:
    from tools.reverse import fewest_gpus

    first = assistant.answer("Does Llama 3.1 70B fit on one H100 at 4 bits?")
    second = assistant.answer("and with 20 users?", first.state)
    found = fewest_gpus(SizingRequest(model="llama-3.1-70b", precision="int4", users=20), "h100-80gb")
    assert found.count == 2 and found.result is not None
    # The two-card total carries the second GPU's overhead: not the one-card figure of the verdict.
    assert found.result.total_gb > second.calculations[0].total_gb
    assert f"2× H100 80GB (SXM), needing {found.result.total_gb:,.2f} GB in all" in second.answer
