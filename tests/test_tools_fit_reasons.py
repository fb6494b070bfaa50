"""A verdict never looks contradictory: every option that does not fit says why, in its own row."""

from __future__ import annotations

import itertools

import pytest

from tools import SizingRequest, calculate_vram
from tools.evaluation import candidates, evaluate
from tools.scenario import build_scenario

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-32b", "gemma-2-27b", "mixtral-8x7b", "gpt-oss-20b")
CARDS = ("rtx-3060-12gb", "rtx-4060-ti-16gb", "rtx-4090", "l40s", "a100-40gb", "h100-80gb", "mi300x")
COUNTS = (1, 2, 3, 6)
ENGINES = (
    ("vllm", "int4"),
    ("vllm", "bf16"),
    ("vllm", "fp8"),
    ("llamacpp", "q4_k_m"),
    ("transformers", "bf16"),
)


@pytest.mark.parametrize(("engine", "precision"), ENGINES)
def test_every_non_fitting_option_with_room_says_why(engine: str, precision: str) -> None:
    checked, codes = 0, set()
    grid = [card if count == 1 else f"{card}:{count}" for card in CARDS for count in COUNTS]
    for model, gpu, lang in itertools.product(MODELS, [None, *grid], ("en", "es")):  # None: every class
        request = SizingRequest(model=model, gpu=gpu, engine=engine, precision=precision, lang=lang)
        scenario = build_scenario(request)
        for candidate in candidates(gpu, lang):
            option = evaluate(scenario, candidate).option
            if option.fits:
                assert option.reason is None and option.reason_code is None
                continue
            assert option.reason and option.reason_code, (gpu, option)
            if option.headroom_gb >= 0 or option.max_concurrent_sequences >= scenario.users:
                # Memory alone is not what stops it: the reason must name the real cause.
                assert option.reason_code in ("tp_heads", "vllm_slack", "utilization"), (gpu, option)
            checked += 1
            codes.add(option.reason_code)
    assert checked  # the grid reaches options that do not fit
    if engine == "vllm":
        assert "tp_heads" in codes  # 3 and 6 GPUs split no model's heads evenly here
    if precision == "int4":
        assert "vllm_slack" in codes  # a 12 GB card's 10 % slack is short of context + graphs


def test_vllm_slack_names_the_utilization_that_fits() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="rtx-3060-12gb", precision="int4"))
    option = result.options[0]
    assert not option.fits and option.headroom_gb > 0 and option.reason_code == "vllm_slack"
    assert "--gpu-memory-utilization 0.89" in option.reason
    # The computed fix really fits.
    fixed = calculate_vram(
        SizingRequest(
            model="llama-3.1-8b", gpu="rtx-3060-12gb", precision="int4", gpu_memory_utilization=0.89
        )
    )
    assert fixed.options[0].fits
    assert option.reason in result.recommendation
    assert "needs about" not in result.recommendation  # no total that the usable memory contradicts
    doubled = next(s for s in result.suggestions if s.startswith("Tensor parallel on 2×"))
    assert "CUDA context" in doubled and "0.89" in doubled


def test_raise_utilization_when_the_slack_has_room() -> None:
    request = SizingRequest(
        model="llama-3.1-8b", gpu="rtx-4090", precision="bf16", users=2,
        gpu_memory_utilization=0.75,
    )  # fmt: skip
    option = calculate_vram(request).options[0]
    assert not option.fits and option.reason_code == "utilization", option
    new = float(option.reason.split("--gpu-memory-utilization ")[-1].split()[0])
    assert new > 0.75
    assert calculate_vram(request.model_copy(update={"gpu_memory_utilization": new})).options[0].fits


def test_tp_degree_that_does_not_divide_the_heads_is_on_the_option() -> None:
    for lang, word in (("en", "attention heads"), ("es", "cabezas de atención")):
        result = calculate_vram(SizingRequest(model="70b", gpu="h100-80gb:3", lang=lang))
        option = result.options[0]
        assert not option.fits and option.headroom_gb > 0
        assert option.reason_code == "tp_heads" and word in option.reason and "64" in option.reason
        assert option.reason in result.recommendation


def test_sequences_short_names_how_many_fit() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="l4", users=8))
    option = result.options[0]
    assert not option.fits and 0 < option.max_concurrent_sequences < 8
    assert option.reason_code == "sequences"
    assert f"{option.max_concurrent_sequences} of the 8" in (option.reason or "")


@pytest.mark.parametrize(
    ("model", "gpu", "users"),
    [("qwen2.5-7b", "h100-80gb:8", 30), ("qwen2.5-7b", "l40s:6", 9), ("qwen2.5-14b", "a100-80gb:3", 5)],
)
def test_heads_that_do_not_split_are_served_as_copies(model: str, gpu: str, users: int) -> None:
    """vLLM refuses TP 8 for 28 heads, but the same GPUs run copies at a degree that divides them:
    the plan is on the option, each copy really fits its share, and the speed is the copies'."""
    result = calculate_vram(SizingRequest(model=model, gpu=gpu, users=users))
    option = result.options[0]
    plan = option.replicas
    assert option.reason_code == "tp_heads" and plan is not None, option
    card, count = gpu.split(":")
    assert plan.heads % plan.tensor_parallel == 0 and plan.tensor_parallel < int(count)
    assert plan.replicas * plan.tensor_parallel + plan.idle_gpus == int(count)
    assert plan.users_per_replica * plan.replicas >= users
    copy = calculate_vram(
        SizingRequest(model=model, gpu=f"{card}:{plan.tensor_parallel}", users=plan.users_per_replica)
    ).options[0]
    assert copy.fits and copy.max_concurrent_sequences == plan.max_concurrent_sequences
    assert f"--data-parallel-size {plan.replicas}" in (option.reason or "") or plan.replicas == 1
    assert "not as one tensor-parallel model" in result.recommendation
    # Nothing else is offered: a cheaper cache, a smaller format or more GPUs meet the same split.
    assert not any("still does not fit" in line for line in result.suggestions), result.suggestions
    copy_line = next(line for line in result.arithmetic if " copies at tensor parallel " in line)
    assert f"→ {plan.max_concurrent_sequences} sequences per copy" in copy_line
    perf = option.performance
    assert perf is not None and copy.performance is not None
    # Each user gets one copy's speed; the total is the copies' (30 users on 8 copies of 4: 7.5 copies).
    share = plan.users_per_replica
    assert perf.output_tok_s_per_user == copy.performance.output_tok_s_per_user
    assert perf.output_tok_s_total.best == pytest.approx(
        copy.performance.output_tok_s_total.best * users / share
    )
    assert perf.concurrency.best == pytest.approx(users)


def test_no_copy_plan_where_no_valid_degree_holds_the_model() -> None:
    result = calculate_vram(SizingRequest(model="70b", gpu="h100-80gb:3"))
    option = result.options[0]
    assert option.reason_code == "tp_heads" and option.replicas is None
    assert "copies" not in (option.reason or "")


def test_copy_plan_in_spanish() -> None:
    result = calculate_vram(SizingRequest(model="qwen2.5-7b", gpu="h100-80gb:8", users=30, lang="es"))
    option = result.options[0]
    assert option.replicas is not None and "copias independientes" in (option.reason or "")
    assert "no como un único modelo" in result.recommendation
