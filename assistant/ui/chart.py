"""The calculator's memory chart: what a configuration needs against what each card offers.

A stacked bar (weights, KV cache, overhead) for the memory needed, then one bar per card
option for its usable memory, all on one scale. A dashed line in each row marks what that
option must hold (the need plus what the engine keeps in reserve there): a card fits when
its bar reaches past its line. Plain HTML and CSS (no plotting
library, nothing fetched), so it stays readable at phone width and in dark mode, and the
numbers are also in the text for screen readers.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from assistant.sales import format_number
from assistant.ui.texts import Lang, text

if TYPE_CHECKING:
    from tools import SizingResult

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
    # What each option must hold: its usable memory less its headroom. It exceeds `need` by the
    # share the engine keeps free (vLLM's 1 - gpu_memory_utilization) and per-card overheads.
    option_needs = [option.usable_gb - option.headroom_gb for option in result.options]
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
