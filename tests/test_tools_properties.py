"""Properties of the calculator (hypothesis): monotonic, never negative, bad input is typed."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools import PRECISIONS, SizingRequest, SizingResult, calculate_vram
from tools.catalog import model_ids
from tools.errors import SizingError

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODELS = st.sampled_from(
    ["llama-3.1-8b", "qwen2.5-32b", "gemma-2-27b", "gpt-oss-20b", "deepseek-v3", "mixtral-8x7b", "70b"]
)
ENGINE_PRECISION = st.sampled_from(
    [
        ("vllm", "bf16"),
        ("vllm", "awq"),
        ("vllm", "fp8"),
        ("llamacpp", "q4_k_m"),
        ("ollama", "q8_0"),
        ("transformers", "bf16"),
    ]
)
GPUS = st.sampled_from([None, "l40s", "h100-80gb:2", "rtx-4090", "mi300x"])
# A model served by an engine at a precision it runs, on a card or on none.
SERVED = st.tuples(MODELS, ENGINE_PRECISION, GPUS).map(
    lambda drawn: {"model": drawn[0], "engine": drawn[1][0], "precision": drawn[1][1], "gpu": drawn[2]}
)


def _calc(**kwargs: object) -> SizingResult:
    return calculate_vram(SizingRequest(**kwargs))  # type: ignore[arg-type]


@FAST
@given(
    served=SERVED, context=st.integers(1, 200_000), extra=st.integers(1, 100_000), users=st.integers(1, 64)
)
def test_more_context_never_needs_less(served, context, extra, users) -> None:
    small = _calc(**served, context=context, users=users)
    large = _calc(**served, context=context + extra, users=users)
    assert large.kv_cache_gb >= small.kv_cache_gb
    for a, b in zip(small.options, large.options, strict=True):
        assert b.max_concurrent_sequences <= a.max_concurrent_sequences
        assert b.headroom_gb <= a.headroom_gb + 1e-9
        assert not (b.fits and not a.fits)


@FAST
@given(served=SERVED, users=st.integers(1, 500), more=st.integers(1, 500))
def test_more_users_never_need_less(served, users, more) -> None:
    few = _calc(**served, users=users)
    many = _calc(**served, users=users + more)
    assert many.kv_cache_gb >= few.kv_cache_gb
    for a, b in zip(few.options, many.options, strict=True):
        assert b.headroom_gb <= a.headroom_gb + 1e-9
        assert not (b.fits and not a.fits)


LADDERS = {
    "vllm": ["fp32", "bf16", "fp8", "gptq", "int4"],
    "llamacpp": ["fp32", "fp16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k"],
}


@FAST
@given(model=st.sampled_from([*model_ids(), "13b", "70b"]), engine=st.sampled_from(sorted(LADDERS)))
def test_fewer_bits_never_weigh_more(model, engine) -> None:
    sizes = [_calc(model=model, precision=p, engine=engine).weights_gb for p in LADDERS[engine]]
    assert sizes == sorted(sizes, reverse=True)


@FAST
@given(
    served=SERVED,
    context=st.integers(1, 1_000_000),
    users=st.integers(1, 5000),
    lang=st.sampled_from(["en", "es"]),
)
def test_nothing_is_negative_and_texts_are_complete(served, context, users, lang) -> None:
    result = _calc(**served, context=context, users=users, lang=lang)
    for value in (
        result.weights_gb,
        result.kv_cache_gb,
        result.overhead_gb,
        result.total_gb,
        result.kv_bytes_per_token,
    ):
        assert value >= 0
    for option in result.options:
        assert option.usable_gb > 0 and option.max_concurrent_sequences >= 0
        assert option.decode_tokens_per_s is None or option.decode_tokens_per_s > 0
        if option.fits:
            assert option.headroom_gb >= 0 and option.max_concurrent_sequences >= users
    assert result.recommendation and result.arithmetic
    assert (result.caveat is not None) == result.below_16_bit
    assert (result.recommended is None) == (not any(o.fits for o in result.options))


@FAST
@given(
    field=st.sampled_from(["context", "users"]),
    value=st.integers(-10_000, 0),
)
def test_zero_or_negative_sizes_raise_sizing_error(field, value) -> None:
    with pytest.raises(SizingError):
        _calc(model="70b", **{field: value})


@FAST
@given(text=st.text(min_size=1, max_size=20).filter(lambda t: t.strip().lower() not in PRECISIONS))
def test_unknown_precision_raises_sizing_error(text) -> None:
    with pytest.raises(SizingError):
        _calc(model="8b", precision=text)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": "no-such-model"},
        {"model": ""},
        {"model": "0b"},
        {"model": "70b", "gpu": "no-such-card"},
        {"model": "70b", "gpu": "h100-80gb:0"},
        {"model": "70b", "engine": "tgi"},
        {"model": "70b", "kv_dtype": "int3"},
        {"model": "70b", "engine": "llamacpp", "precision": "awq"},
        {"model": "70b", "engine": "vllm", "kv_dtype": "q4_0"},
        {"model": "70b", "gpu_memory_utilization": 0.0},
        {"model": "70b", "gpu_memory_utilization": 1.5},
        {"model": "x", "config": {"hidden_size": 4096}},
        {"model": "x", "config": {}},
        {"params_b": -3.0},
    ],
)
def test_bad_input_raises_sizing_error(kwargs: dict) -> None:
    with pytest.raises(SizingError):
        _calc(**kwargs)
