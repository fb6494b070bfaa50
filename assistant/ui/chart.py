"""The calculator's memory chart: what a configuration needs against what each card offers.

Below it, the speed chart: tokens/s per user and time to first token of the recommended option
against concurrent users, with the calibrated range and the target (an inline SVG).

A stacked bar (weights, KV cache, overhead) for the memory needed, then one bar per card
option for its usable memory, all on one scale. A dashed line in each row marks what that
option must hold (the need plus what the engine keeps in reserve there): a card fits when
its bar reaches past its line. Plain HTML and CSS (no plotting
library, nothing fetched), so it stays readable at phone width and in dark mode, and the
numbers are also in the text for screen readers.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING

from assistant.sales import format_number
from assistant.ui.texts import Lang, text

if TYPE_CHECKING:
    from tools import SizingRequest, SizingResult

# Scale headroom past the longest bar so the need line's label never touches the edge.
SCALE_MARGIN = 1.08

CHART_CSS = """
.vram-chart { margin: 0; padding: 12px 14px; border: 1px solid var(--border-color-primary);
  border-radius: var(--radius-lg); background: var(--block-background-fill); color: var(--body-text-color); }
.vram-chart figcaption { font-weight: 600; margin-bottom: 8px; }
.vram-chart .vc-legend { display: flex; flex-wrap: wrap; gap: 6px 16px; font-size: 0.9em; margin-bottom: 10px; }
.vram-chart .vc-key { display: inline-flex; align-items: center; gap: 6px; }
.vram-chart .vc-swatch { width: 12px; height: 12px; border-radius: 3px; display: inline-block; }
.vram-chart .vc-row { margin: 10px 0; }
.vram-chart .vc-label { display: flex; justify-content: space-between; flex-wrap: wrap; gap: 2px 12px;
  font-size: 0.92em; margin-bottom: 4px; }
.vram-chart .vc-name { font-weight: 600; }
.vram-chart .vc-value { opacity: 0.85; font-variant-numeric: tabular-nums; }
.vram-chart .vc-track { position: relative; height: 22px; border-radius: 6px;
  background: var(--background-fill-secondary); overflow: visible; }
.vram-chart .vc-bar { position: absolute; top: 0; bottom: 0; left: 0; display: flex; border-radius: 6px; overflow: hidden; }
.vram-chart .vc-seg { height: 100%; }
.vram-chart .vc-weights { background: #3b82f6; }
.vram-chart .vc-kv { background: #f59e0b; }
.vram-chart .vc-overhead { background: #a855f7; }
.vram-chart .vc-card.vc-fits .vc-bar { background: #22c55e; }
.vram-chart .vc-card.vc-short .vc-bar { background: repeating-linear-gradient(135deg, #ef4444 0 6px, #f87171 6px 12px); }
.vram-chart .vc-card.vc-short .vc-value { color: #dc2626; opacity: 1; }
.vram-chart .vc-card.vc-fits .vc-value { color: #15803d; opacity: 1; }
.dark .vram-chart .vc-card.vc-short .vc-value { color: #f87171; }
.dark .vram-chart .vc-card.vc-fits .vc-value { color: #4ade80; }
.vram-chart .vc-need-line { position: absolute; top: -4px; bottom: -4px; width: 0;
  border-left: 2px dashed var(--body-text-color); }
.vram-chart .vc-line-key { display: inline-block; width: 0; height: 14px; border-left: 2px dashed var(--body-text-color); }
.vram-chart .vc-recommended .vc-name::after { content: " ★"; color: #eab308; }
"""


def _percent(value: float, scale: float) -> str:
    return f"{max(0.0, value) / scale * 100:.2f}%"


def memory_chart_html(result: SizingResult, lang: Lang) -> str:
    """The chart for one calculation, as an HTML fragment (styled by CHART_CSS)."""
    need = result.total_gb
    # What each option must offer: the engine's figure (the one the verdict quotes). It exceeds `need`
    # by the share the engine keeps free (vLLM's 1 - gpu_memory_utilization) and per-card overheads.
    option_needs = [
        option.required_usable_gb
        if option.required_usable_gb is not None
        else option.usable_gb - option.headroom_gb
        for option in result.options
    ]
    widest = max([need, *option_needs, *(option.usable_gb for option in result.options)])
    scale = widest * SCALE_MARGIN or 1.0
    parts = [
        ("vc-weights", text("weights", lang), result.weights_gb),
        ("vc-kv", text("kv_cache", lang), result.kv_cache_gb),
        ("vc-overhead", text("overhead", lang), result.overhead_gb),
    ]
    legend = "".join(
        f'<span class="vc-key"><span class="vc-swatch {css}" aria-hidden="true"></span>'
        f"{escape(name)} {format_number(gb, lang, 1)} GB</span>"
        for css, name, gb in parts
    )
    segments = "".join(
        f'<div class="vc-seg {css}" style="width:{_percent(gb, need) if need else "0%"}" '
        f'title="{escape(name)}: {format_number(gb, lang, 1)} GB"></div>'
        for css, name, gb in parts
    )
    rows = [
        '<div class="vc-row vc-need">'
        f'<div class="vc-label"><span class="vc-name">{escape(text("chart_needed", lang))}</span>'
        f'<span class="vc-value">{format_number(need, lang, 1)} GB</span></div>'
        f'<div class="vc-track"><div class="vc-bar" style="width:{_percent(need, scale)}">{segments}</div>'
        f"{_need_line(need, scale)}</div></div>"
    ]
    for option, option_need in zip(result.options, option_needs, strict=True):
        fits = option.fits
        verdict = (
            text("fits_spare", lang, gb=format_number(option.headroom_gb, lang, 1))
            if fits
            else text("short_by", lang, gb=format_number(abs(option.headroom_gb), lang, 1))
        )
        option_id = option.card_class or option.card
        recommended = " vc-recommended" if result.recommended and option_id == result.recommended else ""
        state = "vc-fits" if fits else "vc-short"
        usable = f"{format_number(option.usable_gb, lang, 1)} GB {text('usable', lang)}"
        needs = text("needs_here", lang, gb=format_number(option_need, lang, 1))
        rows.append(
            f'<div class="vc-row vc-card {state}{recommended}" data-fits="{str(fits).lower()}">'
            f'<div class="vc-label"><span class="vc-name">{escape(option.label)}</span>'
            f'<span class="vc-value">{escape(usable)} · {escape(needs)} · {escape(verdict)}</span></div>'
            f'<div class="vc-track"><div class="vc-bar" style="width:{_percent(option.usable_gb, scale)}"></div>'
            f"{_need_line(option_need, scale)}</div></div>"
        )
    title = escape(text("chart_title", lang))
    return (
        f'<figure class="vram-chart" aria-label="{title}">'
        f"<figcaption>{title}</figcaption>"
        f'<div class="vc-legend">{legend}'
        f'<span class="vc-key"><span class="vc-line-key" aria-hidden="true"></span>'
        f"{escape(text('need_line', lang))}</span></div>"
        f"{''.join(rows)}</figure>"
    )


def _need_line(gb: float, scale: float) -> str:
    return f'<div class="vc-need-line" style="left:{_percent(gb, scale)}" aria-hidden="true"></div>'


def empty_chart_html(message: str) -> str:
    """The chart area when there is nothing to draw (bad or missing input)."""
    return f'<figure class="vram-chart vc-empty" role="status"><figcaption>{escape(message)}</figcaption></figure>'


# --- speed chart: tokens/s per user and time to first token against concurrent users ----------

PERF_CHART_CSS = """
.perf-chart { margin: 12px 0 0; padding: 12px 14px; border: 1px solid var(--border-color-primary);
  border-radius: var(--radius-lg); background: var(--block-background-fill); color: var(--body-text-color); }
.perf-chart figcaption { font-weight: 600; margin-bottom: 6px; }
.perf-chart svg { width: 100%; height: auto; display: block; }
.perf-chart .pc-axis, .perf-chart .pc-grid { stroke: currentColor; stroke-opacity: 0.35; }
.perf-chart .pc-grid { stroke-dasharray: 2 4; }
.perf-chart text { fill: currentColor; font-size: 11px; }
.perf-chart .pc-tps { stroke: #3b82f6; fill: none; stroke-width: 2; }
.perf-chart .pc-tps-band { fill: #3b82f6; fill-opacity: 0.15; }
.perf-chart .pc-ttft { stroke: #f59e0b; fill: none; stroke-width: 2; }
.perf-chart .pc-ttft-band { fill: #f59e0b; fill-opacity: 0.15; }
.perf-chart .pc-target-tps { stroke: #3b82f6; stroke-dasharray: 6 4; stroke-width: 1.5; }
.perf-chart .pc-target-ttft { stroke: #f59e0b; stroke-dasharray: 6 4; stroke-width: 1.5; }
.perf-chart .pc-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 0.88em; margin-top: 6px; }
.perf-chart .pc-swatch { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin-right: 5px; }
"""
CHART_CSS += PERF_CHART_CSS  # one stylesheet for the panel's charts
_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 640, 240, 52, 58, 10, 34


def _scale(values: list[float]) -> float:
    top = max(values) if values else 1.0
    return top * 1.1 if top > 0 else 1.0


def performance_chart_html(request: SizingRequest, result: SizingResult, lang: Lang) -> str:
    """Tokens/s per user (left axis, blue) and time to first token (right axis, orange) of the
    recommended option from one user to as many as its memory holds, each with its calibrated
    range shaded and the target dashed. Empty when there is no recommendation or no estimate."""
    from tools.performance import perf_text
    from tools.performance_sizing import recommended_curve

    found = recommended_curve(request, result)
    if not found:
        return ""
    label, points = found
    users = [p.concurrency.best for p in points]
    span = math.log2(users[-1]) if users[-1] > 1 else 1.0
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    target = result.performance.target if result.performance else None
    if target is None:  # no target asked: draw the default service class's, which the lengths follow
        from tools.performance import service_classes
        from tools.schemas import PerformanceTarget

        default = service_classes()["default"]
        row = service_classes()["classes"][default]
        target = PerformanceTarget(service=default, ttft_ms=row["ttft_ms"], tpot_ms=row["tpot_ms"])
    target_tps = 1000 / target.tpot_ms if target.tpot_ms else None
    target_ttft = target.ttft_ms if target.ttft_ms else None
    tps_top = _scale([p.output_tok_s_per_user.high for p in points] + ([target_tps] if target_tps else []))
    ttft_top = _scale([p.ttft_ms.high for p in points] + ([target_ttft] if target_ttft else []))

    def x(n: float) -> float:
        return _LEFT + (math.log2(n) / span if span else 0.0) * plot_w

    def y(value: float, top: float) -> float:
        return _TOP + plot_h * (1 - min(value, top) / top)

    def line(values: list[float], top: float) -> str:
        return " ".join(f"{x(n):.1f},{y(v, top):.1f}" for n, v in zip(users, values, strict=True))

    def band(lows: list[float], highs: list[float], top: float) -> str:
        upper = [f"{x(n):.1f},{y(v, top):.1f}" for n, v in zip(users, highs, strict=True)]
        lower = [f"{x(n):.1f},{y(v, top):.1f}" for n, v in reversed(list(zip(users, lows, strict=True)))]
        return " ".join(upper + lower)

    tps = [p.output_tok_s_per_user for p in points]
    ttft = [p.ttft_ms for p in points]
    parts = [
        f'<line class="pc-axis" x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_LEFT + plot_w}" y2="{_TOP + plot_h}"/>',
        f'<line class="pc-axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}"/>',
        f'<line class="pc-axis" x1="{_LEFT + plot_w}" y1="{_TOP}" x2="{_LEFT + plot_w}" y2="{_TOP + plot_h}"/>',
        f'<polygon class="pc-tps-band" points="{band([b.low for b in tps], [b.high for b in tps], tps_top)}"/>',
        f'<polygon class="pc-ttft-band" points="{band([b.low for b in ttft], [b.high for b in ttft], ttft_top)}"/>',
        f'<polyline class="pc-tps" points="{line([b.best for b in tps], tps_top)}"/>',
        f'<polyline class="pc-ttft" points="{line([b.best for b in ttft], ttft_top)}"/>',
    ]
    for n in users:
        parts.append(
            f'<text x="{x(n):.1f}" y="{_TOP + plot_h + 14}" text-anchor="middle">{format_number(n, lang)}</text>'
        )
    for fraction in (0.0, 0.5, 1.0):
        level = _TOP + plot_h * (1 - fraction)
        parts.append(
            f'<line class="pc-grid" x1="{_LEFT}" y1="{level:.1f}" x2="{_LEFT + plot_w}" y2="{level:.1f}"/>'
            f'<text x="{_LEFT - 6}" y="{level + 4:.1f}" text-anchor="end">{format_number(tps_top * fraction, lang)}</text>'
            f'<text x="{_LEFT + plot_w + 6}" y="{level + 4:.1f}">{format_number(ttft_top * fraction, lang)}</text>'
        )
    if target_tps:
        level = y(target_tps, tps_top)
        parts.append(
            f'<line class="pc-target-tps" x1="{_LEFT}" y1="{level:.1f}" x2="{_LEFT + plot_w}" y2="{level:.1f}"/>'
        )
    if target_ttft:
        level = y(target_ttft, ttft_top)
        parts.append(
            f'<line class="pc-target-ttft" x1="{_LEFT}" y1="{level:.1f}" x2="{_LEFT + plot_w}" y2="{level:.1f}"/>'
        )
    parts.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_H - 4}" text-anchor="middle">'
        f"{escape(perf_text('chart_perf_users', lang))}</text>"
    )
    title = perf_text("chart_perf_title", lang, label=label)
    summary = "; ".join(
        f"{format_number(n, lang)}: {format_number(t.best, lang)} tok/s, TTFT {format_number(f.best, lang)} ms"
        for n, t, f in zip(users, tps, ttft, strict=True)
    )
    legend = [
        ("#3b82f6", perf_text("chart_perf_tps", lang)),
        ("#f59e0b", perf_text("chart_perf_ttft", lang)),
    ]
    keys = "".join(
        f'<span><span class="pc-swatch" style="background:{color}"></span>{escape(name)}</span>'
        for color, name in legend
    )
    if target_tps or target_ttft:
        from tools.performance import service_name

        named = f"{perf_text('chart_perf_target', lang)} ({service_name(target.service, lang)})"
        keys += f"<span>- - {escape(named)}</span>"
    keys += f"<span>{escape(perf_text('chart_perf_band', lang))}</span>"
    return (
        f'<figure class="perf-chart" aria-label="{escape(title)}"><figcaption>{escape(title)}</figcaption>'
        f'<svg viewBox="0 0 {_W} {_H}" role="img" aria-label="{escape(summary)}">{"".join(parts)}</svg>'
        f'<div class="pc-legend">{keys}</div></figure>'
    )
