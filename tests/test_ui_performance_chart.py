"""The calculator panel's speed chart: tokens/s per user and TTFT against concurrent users."""

from __future__ import annotations

from assistant.ui.chart import CHART_CSS, performance_chart_html
from tools import SizingRequest, calculate_vram


def _chart(lang: str = "en", **fields: object) -> str:
    request = SizingRequest(model="llama-3.1-8b", lang=lang, **fields)  # type: ignore[arg-type]
    return performance_chart_html(request, calculate_vram(request), lang)  # type: ignore[arg-type]


def test_chart_draws_both_series_with_bands_and_points_up_to_the_memory() -> None:
    html = _chart(gpu="h100-80gb")
    assert html.count("<polyline") == 2 and html.count("<polygon") == 2
    assert "H100 80GB (SXM)" in html and "tokens/s per user" in html
    # One x label per point: 1, 2, 4, ... up to the sequences the memory holds.
    assert ">1</text>" in html and ">2</text>" in html
    assert ".perf-chart" in CHART_CSS


def test_target_is_drawn_the_asked_one_or_the_default_class() -> None:
    plain, voice = _chart(gpu="h100-80gb"), _chart(gpu="h100-80gb", service="voice_agent")
    assert "pc-target-tps" in plain and "interactive chat" in plain
    assert "pc-target-ttft" in voice and "voice agent" in voice
    batch = _chart(gpu="h100-80gb", service="batch_offline")  # no latency target: no line
    assert "pc-target-tps" not in batch and "pc-target-ttft" not in batch


def test_chart_in_spanish_and_empty_without_a_recommendation() -> None:
    assert "usuarios simultáneos" in _chart("es", gpu="h100-80gb")
    assert _chart(gpu="l4", users=500) == ""
