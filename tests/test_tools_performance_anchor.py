"""The decode anchor: published runs of the same model, card and precision scale the roofline's
decode step (tools/performance_anchor.py), in the product and, from the fit part only, in the
benchmark."""

from __future__ import annotations

import math

import pytest

from tools import SizingRequest, calculate_vram
from tools.performance_anchor import anchor, product_anchor
from tools.performance_calibration import calibration_points
from tools.performance_physics import Factors, anchored, prefill_s, step_s
from tools.performance_serving import steady_state

DEEPSEEK_ON_MI300X = ("deepseek-v3", "mi300x", "fp8", "sglang")


def test_a_setup_without_runs_of_its_precision_has_no_anchor() -> None:
    assert product_anchor("deepseek-v3", "mi300x", "awq", "vllm") is None
    assert product_anchor("llama-3.1-8b", "b200", "q2_k", "llamacpp") is None


def test_runs_slower_than_the_roofline_lengthen_the_step_by_their_median_source() -> None:
    """DeepSeek-V3 at FP8 on MI300X decodes at about half the roofline's speed in every run."""
    runs = product_anchor(*DEEPSEEK_ON_MI300X)
    assert runs is not None and 1.4 < runs.ratio < 2.5
    assert runs.sources == tuple(sorted(runs.sources, key=lambda s: int(s[1:])))
    sources = {p.source for p in calibration_points() if p.model_id == "deepseek-v3" and p.card == "mi300x"}
    assert set(runs.sources) == sources


def test_the_benchmark_anchor_keeps_only_the_sources_it_is_given() -> None:
    """What a held-out point is anchored by: fit sources only, never its own."""
    held = {p.source for p in calibration_points() if p.held_out}
    fit_only = anchor(*DEEPSEEK_ON_MI300X, keep=lambda source, held_out: not held_out)
    everything = product_anchor(*DEEPSEEK_ON_MI300X)
    assert fit_only is not None and everything is not None
    assert not set(fit_only.sources) & held and set(everything.sources) & held
    without_s82 = anchor(*DEEPSEEK_ON_MI300X, keep=lambda source, held_out: not held_out and source != "S82")
    assert without_s82 is not None and "S82" not in without_s82.sources
    assert anchor(*DEEPSEEK_ON_MI300X, keep=lambda source, held_out: False) is None


def _point(model_id: str, card: str) -> object:
    return next(p for p in calibration_points() if p.model_id == model_id and p.card == card)


def test_an_anchor_scales_the_decode_step_not_the_prefill() -> None:
    point = _point("deepseek-v3", "mi300x")
    base = Factors(0.6, 0.002, 0.5, 0.03, 5e-5, 1.0, 4e-5, 2.0, 1e-4, 0.5)
    slower = anchored(base, 1.8)
    args = (point.model, point.hw, point.engine)  # type: ignore[attr-defined]
    assert step_s(*args, slower, 8, 2048) == pytest.approx(1.8 * step_s(*args, base, 8, 2048), rel=0.15)
    assert step_s(*args, slower, 8, 2048) > step_s(*args, base, 8, 2048)
    assert prefill_s(*args, slower, 8192) < 1.2 * prefill_s(*args, base, 8192)
    faster = anchored(base._replace(bandwidth_efficiency=0.9), 0.5)
    assert faster.bandwidth_efficiency == 1.0  # never above the card's peak
    assert faster.step_overhead_s == pytest.approx(0.001)
    assert anchored(base, 1.0) == base


def test_the_product_estimate_at_the_runs_precision_is_scaled_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = SizingRequest(model="deepseek-v3", precision="fp8", gpu="mi300x:8", users=16, engine="vllm")
    estimate = calculate_vram(request).options[0].performance
    assert (
        estimate is not None and "S78" in estimate.anchored_to and "decode anchored" in estimate.basis_detail
    )
    monkeypatch.setattr("tools.performance.product_anchor", lambda *setup: None)
    roofline = calculate_vram(request).options[0].performance
    assert roofline is not None and not roofline.anchored_to
    runs = product_anchor("deepseek-v3", "mi300x", "fp8", "vllm")
    assert runs is not None
    ratio = roofline.output_tok_s_per_user.best / estimate.output_tok_s_per_user.best
    assert math.isclose(ratio, runs.ratio, rel_tol=0.25)


def test_anchoring_moves_a_steady_state_by_about_the_ratio() -> None:
    from tools.performance_calibration import served

    point = _point("deepseek-v3", "mi300x")
    factors = Factors(0.48, 0.0005, 0.46, 0.046, 6e-5, 1.2, 8e-5, 2.0, 1.1e-4, 1.0)
    plain = steady_state(served(point, factors), 1024, 256, 16)  # type: ignore[arg-type]
    slow = steady_state(served(point, anchored(factors, 2.0)), 1024, 256, 16)  # type: ignore[arg-type]
    assert math.isclose(slow.tpot_s / plain.tpot_s, 2.0, rel_tol=0.25)
    # A prompt still waits for the decode step in flight, so the first token comes later too.
    assert plain.ttft_s < slow.ttft_s
