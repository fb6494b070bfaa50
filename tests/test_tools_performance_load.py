"""Properties of the load terms: the closed loop's throughput, benchmark waves, per-layer cost."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tools import SizingRequest
from tools.calculator import build_scenario
from tools.performance import fitted, setup_for
from tools.performance_calibration import calibration_points, predict
from tools.performance_fit import factors_for
from tools.performance_physics import step_s
from tools.performance_serving import Operating, Served, steady_state, wave

CASES = (
    ("llama-3.1-8b", "h100-80gb", 1),
    ("qwen3-30b-a3b", "a100-80gb", 1),
    ("llama-3.3-70b", "h200", 2),
)


# A setup, a number of users and more of them, a prompt and an answer length.
LOADS = {
    "case": st.sampled_from(CASES),
    "users": st.integers(1, 256),
    "more": st.integers(1, 256),
    "prompt": st.integers(16, 8192),
    "answer": st.integers(2, 2048),
}


def _served(model: str, card: str, gpus: int) -> Served:
    setup = setup_for(build_scenario(SizingRequest(model=model, precision="bf16")), card, gpus)
    assert setup is not None
    return setup


# A closed loop, until prompts take half the GPU's time (past that the request rate is pinned at
# capacity, and the others' share of it, (N − 1) / N, still moves it a few per cent); a wave has
# no such plateau.
@pytest.mark.parametrize(("load", "slack"), [(steady_state, 1e-2), (wave, 1e-9)])
@settings(max_examples=30, deadline=None)
@given(**LOADS)
def test_more_users_wait_longer_and_are_served_more(
    load: Callable[[Served, int, int, int], Operating],
    slack: float,
    case: tuple[str, str, int],
    users: int,
    more: int,
    prompt: int,
    answer: int,
) -> None:
    served = _served(*case)
    few, many = load(served, prompt, answer, users), load(served, prompt, answer, users + more)
    if load is steady_state:
        assume(few.requests_per_s * served.prefill(prompt, prompt, 0, 0) < 0.5)
    # Each user waits at least as long for the first token and per token, and the node serves at
    # least as many tokens and requests per second.
    assert many.ttft_s >= few.ttft_s * (1 - slack) and many.tpot_s >= few.tpot_s * (1 - slack)
    assert many.output_tok_s_total >= few.output_tok_s_total * (1 - slack)
    assert many.requests_per_s >= few.requests_per_s * (1 - slack)


def test_one_request_in_a_wave_is_one_request_alone() -> None:
    served = _served("llama-3.1-8b", "h100-80gb", 1)
    alone, one = steady_state(served, 1024, 256, 1), wave(served, 1024, 256, 1)
    assert one.ttft_s == pytest.approx(alone.ttft_s, rel=0.02)
    assert one.tpot_s == pytest.approx(alone.tpot_s, rel=0.02)


def test_a_wave_answer_waits_for_the_rest_of_the_waves_prefill() -> None:
    served = _served("llama-3.1-8b", "h100-80gb", 1)
    op = wave(served, 4096, 64, 32)
    assert op.ttft_s < op.e2e_s - 63 * served.step(32, 4096 + 32)
    assert op.tpot_s > served.step(32, 4096 + 32)


@settings(max_examples=40, deadline=None)
@given(
    layer_cost=st.floats(0, 2e-4),
    more=st.floats(1e-6, 2e-4),
    decoding=st.floats(0, 256),
    prefill=st.floats(0, 8192),
)
def test_a_cost_per_layer_never_makes_a_step_faster(
    layer_cost: float, more: float, decoding: float, prefill: float
) -> None:
    served = _served("llama-3.1-8b", "h100-80gb", 1)
    cheap = served.factors._replace(layer_overhead_s=layer_cost)
    dear = cheap._replace(layer_overhead_s=layer_cost + more)
    deeper = served.model._replace(layers=served.model.layers * 2)

    def step(model, factors) -> float:  # type: ignore[no-untyped-def]
        return step_s(model, served.hw, "vllm", factors, decoding, 2048, prefill, 1024)

    assert step(served.model, dear) > step(served.model, cheap)
    assert step(deeper, dear) > step(served.model, dear)
    # The cost per layer is fixed per step: it does not grow with the batch.
    assert step(served.model, dear) - step(served.model, cheap) == pytest.approx(
        served.model.layers * more, rel=1e-6, abs=1e-12
    )


def test_wave_sources_are_predicted_as_waves() -> None:
    together = [p for p in calibration_points() if p.together]
    assert together, "the calibration set names at least one benchmark that sends its users at once"
    doc = fitted()
    for p in together:
        if p.metric != "ttft_ms" or p.concurrency < 2:
            continue
        factors = factors_for(doc["engines"], p.engine, p.hw.generation)
        staggered = steady_state(
            Served(p.model, p.hw, p.engine, factors, p.chunk), p.prompt, p.answer, p.concurrency
        )
        assert predict(p, factors) > staggered.ttft_s * 1000


def test_fp16_accumulation_speeds_llamacpp_prompts_on_geforce_cards_only() -> None:
    served = _served("llama-3.1-8b", "rtx-4090", 1)
    assert served.hw.fp16_accumulate == 2.0
    assert _served("llama-3.1-8b", "l40s", 1).hw.fp16_accumulate == 1.0
    halved = served.hw._replace(fp16_accumulate=1.0)
    for engine, faster in (("llamacpp", True), ("vllm", False)):
        geforce = step_s(served.model, served.hw, engine, served.factors, 0, 0, 4096, 2048)
        plain = step_s(served.model, halved, engine, served.factors, 0, 0, 4096, 2048)
        assert (geforce < plain) if faster else (geforce == plain)


def test_a_first_token_waits_longer_on_a_deeper_model_and_delays_no_one_else() -> None:
    served = _served("llama-3.1-8b", "h100-80gb", 1)
    waiting = served.factors._replace(first_token_steps=6.0, request_overhead_s=0.004)
    plain = Served(
        served.model, served.hw, served.engine, waiting._replace(first_token_steps=0.0), served.chunk
    )
    slow = Served(served.model, served.hw, served.engine, waiting, served.chunk)
    deeper = Served(
        served.model._replace(layers=served.model.layers * 2), served.hw, served.engine, waiting, served.chunk
    )
    assert deeper.request_latency > slow.request_latency > plain.request_latency == pytest.approx(0.004)
    for users in (1, 8, 64):
        a, b = steady_state(plain, 1000, 200, users), steady_state(slow, 1000, 200, users)
        assert b.ttft_s > a.ttft_s
        # Latency, not GPU time: the running answers' TPOT barely moves (only through the users'
        # slightly longer cycle), never by a prefill's worth.
        assert b.tpot_s <= a.tpot_s * 1.001


def test_the_fits_latency_shortcut_scores_like_the_full_estimate() -> None:
    """`_latency_scores` adds a candidate's first-token wait to the estimate without one; on the
    points whose load comes from their own measured figures that is exact."""
    from tools.performance_fit import _latency_scores, _score, fit_part

    points = [
        p
        for p in fit_part()
        if p.engine == "vllm" and p.metric == "ttft_ms" and "tpot_ms" in p.siblings and p.concurrency > 1
    ]
    assert len({p.source for p in points}) >= 3
    base = factors_for(fitted()["engines"], "vllm", "hopper")
    for score, factors in _latency_scores(points, base, [0.0, 0.02], [0.0, 7.0]):
        assert score == pytest.approx(_score(points, factors), rel=1e-9)


def test_a_served_runs_request_latency_is_its_first_token_plus_its_answer() -> None:
    """A load generator's request latency is the same operating point's TTFT + (answer - 1) x TPOT
    (closed loop or offered rate); only an in-process static batch is prefill-all-then-decode-all."""
    doc = fitted()
    served_e2e = [
        p for p in calibration_points() if p.metric == "e2e_latency_ms" and not (p.together or p.engine_side)
    ]
    assert {p.rate is None for p in served_e2e} == {True, False}  # closed loops and offered rates
    for p in served_e2e:
        factors = factors_for(doc["engines"], p.engine, p.hw.generation)
        ttft = predict(p._replace(metric="ttft_ms"), factors)
        tpot = predict(p._replace(metric="tpot_ms"), factors)
        assert predict(p, factors) == pytest.approx(ttft + (p.answer - 1) * tpot, rel=1e-9)


def _gpt_oss(chat: bool) -> Served:
    setup = setup_for(build_scenario(SizingRequest(model="gpt-oss-20b", precision="mxfp4")), "h100-80gb", 1)
    assert setup is not None and setup.model.chat_header_tokens == 3
    return Served(setup.model, setup.hw, setup.engine, setup.factors, setup.chunk, chat=chat)


@pytest.mark.parametrize("users", [1, 8, 64])
def test_a_chat_stream_shows_gpt_oss_first_token_after_its_harmony_header(users: int) -> None:
    """gpt-oss writes `<|channel|>analysis<|message|>` before its first streamed token: on a chat
    endpoint the first token a client sees comes three decode steps after the engine's first; a
    completions stream shows it at once. Nothing else about the run changes."""
    chat, raw = (
        steady_state(_gpt_oss(True), 1000, 400, users),
        steady_state(_gpt_oss(False), 1000, 400, users),
    )
    assert chat.ttft_s == pytest.approx(raw.ttft_s + 3 * raw.tpot_s, rel=1e-6)
    assert (chat.tpot_s, chat.e2e_s, chat.requests_per_s) == pytest.approx(
        (raw.tpot_s, raw.e2e_s, raw.requests_per_s), rel=1e-6
    )
    dense = _served("llama-3.1-8b", "h100-80gb", 1)
    assert dense.model.chat_header_tokens == 0 and dense.chat
    assert steady_state(dense, 1000, 400, users).ttft_s == pytest.approx(
        steady_state(
            Served(dense.model, dense.hw, dense.engine, dense.factors, dense.chunk, chat=False),
            1000,
            400,
            users,
        ).ttft_s
    )


def test_sglang_stalls_its_decoders_for_a_whole_prefill() -> None:
    """SGLang runs prompts in prefill batches of their own (enable_mixed_chunk is off by default):
    with the same factors as vLLM, one user is as fast, and under load the answers wait a whole
    prompt's pass per arrival instead of sharing steps with it."""
    served = _served("llama-3.1-8b", "h100-80gb", 1)
    sglang = Served(served.model, served.hw, "sglang", served.factors, served.chunk)
    alone_v, alone_s = steady_state(served, 2000, 300, 1), steady_state(sglang, 2000, 300, 1)
    assert alone_s.tpot_s == pytest.approx(alone_v.tpot_s, rel=1e-6)
    for users in (16, 64):
        mixed, separate = steady_state(served, 2000, 300, users), steady_state(sglang, 2000, 300, users)
        assert separate.tpot_s > mixed.tpot_s * 1.01
        assert separate.output_tok_s_total < mixed.output_tok_s_total
    t_decode, prefill, stall = sglang.interrupted(2000, 32, 2150)
    assert stall == prefill > t_decode


def test_sglangs_launch_bound_first_pass_holds_the_gpu() -> None:
    """A served first token's fixed wait (`first_token_steps`) is the same latency on SGLang as on
    vLLM for one user; under load it is GPU time on SGLang (its prefill batches are not graph
    replays and run alone), so the answers and the queue of prompts behind it wait for it too."""
    served = _served("llama-3.1-8b", "h100-80gb", 1)
    waiting = served.factors._replace(first_token_steps=8.0, request_overhead_s=0.004)
    vllm = Served(served.model, served.hw, "vllm", waiting, served.chunk)
    sglang = Served(served.model, served.hw, "sglang", waiting, served.chunk)
    instant = Served(served.model, served.hw, "sglang", waiting._replace(first_token_steps=0.0), served.chunk)
    assert steady_state(sglang, 1000, 200, 1).ttft_s == pytest.approx(
        steady_state(vllm, 1000, 200, 1).ttft_s, rel=1e-2
    )
    for users in (16, 64):
        slow, fast = steady_state(sglang, 1000, 200, users), steady_state(instant, 1000, 200, users)
        assert slow.tpot_s > fast.tpot_s * 1.01
        assert slow.ttft_s - fast.ttft_s > sglang.request_latency - instant.request_latency + 1e-4


def test_latent_attention_layers_cost_their_own_fixed_time() -> None:
    """An MLA model pays `mla_layer_overhead_s` at each of its latent-attention layers and step; a
    model with grouped-query attention never does, whatever the factor."""
    from tools.performance_physics import fixed_step_s

    deepseek = setup_for(build_scenario(SizingRequest(model="deepseek-v3", precision="fp8")), "h200", 8)
    assert deepseek is not None and deepseek.model.mla_layers == deepseek.model.layers == 61
    llama = _served("llama-3.3-70b", "h200", 2)
    assert llama.model.mla_layers == 0
    plain = deepseek.factors._replace(mla_layer_overhead_s=0.0)
    latent = plain._replace(mla_layer_overhead_s=1e-4)
    assert fixed_step_s(deepseek.model, latent) - fixed_step_s(deepseek.model, plain) == pytest.approx(61e-4)
    assert fixed_step_s(llama.model, latent) == fixed_step_s(llama.model, plain)


def test_sglang_borrows_vllms_factors_but_its_own_latent_attention_and_expert_costs() -> None:
    engines = fitted()["engines"]
    sglang, vllm = engines["sglang"], engines["vllm"]
    assert sglang["borrowed_from"] == "vllm"
    own = ("mla_layer_overhead_s", "moe_compute")
    assert {k: v for k, v in sglang["factors"].items() if k not in own} == {
        k: v for k, v in vllm["factors"].items() if k not in own
    }
    for generation, factors in sglang["generations"].items():
        assert {k: factors[k] for k in own} == {k: sglang["factors"][k] for k in own}, generation
    assert all(p.startswith("S") for p in sglang["sources"])


def test_calibration_sources_are_dated_against_their_architecture() -> None:
    from tools.performance_calibration import age_months

    doc = {"extra_models": {}, "architecture_released": {"deepseek_v3": {"date": "2024-12-26"}}}
    source = {"model": "deepseek-v3", "engine_date": "2025-02-17"}
    assert age_months(source, doc) == pytest.approx(53 / (365.25 / 12))
    assert age_months({"model": "deepseek-v3", "published": "2025-03-26"}, doc) == pytest.approx(3, abs=0.05)
    assert age_months({"model": "deepseek-v3"}, doc) is None  # undated
    assert age_months({"model": "llama-3.1-8b", "engine_date": "2025-01-01"}, doc) is None
    dated = [p for p in calibration_points() if p.age_months is not None]
    assert all(p.age_months is not None and p.age_months > -1 for p in dated)
