"""The calculator's memory chart: bars on one scale, the need line, verdict per card, escaping."""

from __future__ import annotations

import re

from assistant.ui.chart import SCALE_MARGIN, empty_chart_html, memory_chart_html
from tools import CardOption, SizingResult, resolve_model


def option(card_class: str, label: str, usable_gb: float, need_gb: float) -> CardOption:
    return CardOption(
        card_class=card_class,
        card=None,
        label=label,
        gpus=2 if card_class.startswith("2x") else 1,
        usable_gb=usable_gb,
        fits=usable_gb >= need_gb,
        headroom_gb=round(usable_gb - need_gb, 1),
        max_concurrent_sequences=0,
        decode_tokens_per_s=None,
        serves="",
        catch="",
        total_gb=need_gb,
    )


def result(
    weights: float = 141.1, kv: float = 10.7, overhead: float = 3.0, label0: str = "48 GB class"
) -> SizingResult:
    total = round(weights + kv + overhead, 1)
    options = [
        option("48gb", label0, 43.2, total),
        option("80gb", "80 GB class", 72.0, total),
        option("2x80gb", "2× 80 GB class", 172.8, total),
    ]
    fitting = [o for o in options if o.fits]
    return SizingResult(
        model=resolve_model("llama-3.1-70b"),  # the catalogue's entry; the figures below are hand-set
        precision="bf16",
        engine="vllm",
        context=8192,
        users=4,
        kv_dtype="bf16",
        weights_gb=weights,
        kv_bytes_per_token=327_680,
        kv_cache_gb=kv,
        overhead_gb=overhead,
        total_gb=total,
        options=options,
        recommended=fitting[0].card_class if fitting else None,
        recommendation="2× 80 GB",
        arithmetic=["weights: 70.6 B × 2 bytes = 141.1 GB"],
        caveat=None,
        suggestions=[],
        below_16_bit=False,
    )


def widths(html: str) -> list[float]:
    return [float(w) for w in re.findall(r'class="vc-bar" style="width:([0-9.]+)%"', html)]


def test_bars_share_one_scale_and_the_need_line_marks_the_total() -> None:
    sized = result()
    html = memory_chart_html(sized, "en")
    scale = 172.8 * SCALE_MARGIN
    need_bar, *card_bars = widths(html)
    assert need_bar == round(sized.total_gb / scale * 100, 2)
    assert card_bars == [round(gb / scale * 100, 2) for gb in (43.2, 72.0, 172.8)]
    # With no engine reserve, every row's line sits where the need bar ends.
    lines = set(re.findall(r'class="vc-need-line" style="left:([0-9.]+)%"', html))
    assert lines == {f"{need_bar:.2f}"}
    # The three stacked segments split the need bar in proportion.
    segments = [float(w) for w in re.findall(r'class="vc-seg [^"]+" style="width:([0-9.]+)%"', html)]
    assert abs(sum(segments) - 100) < 0.05
    assert segments[0] > segments[1] > segments[2]


def test_each_row_marks_what_that_option_must_hold() -> None:
    # vLLM keeps 10% of each card free: a 172.8 GB option needs 20 GB more than the bare total,
    # so a bar longer than the bare need can still fall short, and the chart must show it.
    sized = result()
    reserve = [4.3, 7.2, 20.0]
    options = [
        o.model_copy(update={"headroom_gb": round(o.usable_gb - sized.total_gb - r, 1), "fits": False})
        for o, r in zip(sized.options, reserve, strict=True)
    ]
    html = memory_chart_html(sized.model_copy(update={"options": options, "recommended": None}), "en")
    option_needs = [round(o.usable_gb - o.headroom_gb, 1) for o in options]
    scale = max(*option_needs, *(o.usable_gb for o in options)) * SCALE_MARGIN
    lines = [float(x) for x in re.findall(r'class="vc-need-line" style="left:([0-9.]+)%"', html)]
    assert lines[1:] == [round(need / scale * 100, 2) for need in option_needs]
    assert widths(html)[-1] < lines[-1], "the short option's bar ends before its line"
    assert "needs 174.8 GB usable" in html and "does not fit, 2.0 GB short" in html


def test_each_card_says_whether_it_fits_and_the_recommended_is_marked() -> None:
    html = memory_chart_html(result(), "en")
    assert re.findall(r'data-fits="(true|false)"', html) == ["false", "false", "true"]
    assert "does not fit, 111.6 GB short" in html
    assert "fits, 18.0 GB spare" in html
    assert html.count("vc-recommended") == 1
    assert "Weights 141.1 GB" in html and "KV cache 10.7 GB" in html and "Overhead 3.0 GB" in html


def test_smaller_need_fits_more_cards() -> None:
    big = memory_chart_html(result(), "en")
    small = memory_chart_html(result(weights=35.3, kv=2.7, overhead=2.0), "en")
    assert small.count('data-fits="true"') > big.count('data-fits="true"')


def test_spanish_labels_and_escaped_text() -> None:
    html = memory_chart_html(result(label0="<script>alert(1)</script>"), "es")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "El modelo en memoria" in html and "Pesos" in html and "no cabe, faltan" in html


def test_empty_chart_carries_the_message() -> None:
    html = empty_chart_html("Cannot calculate: context <= 0")
    assert "context &lt;= 0" in html and 'role="status"' in html


def test_the_rows_quote_the_figure_the_verdict_quotes() -> None:
    from tools import SizingRequest, calculate_vram

    sized = calculate_vram(
        SizingRequest(model="llama-3.1-70b", precision="bf16", context=8192, users=1, lang="es")
    )
    assert not any(o.fits for o in sized.options)
    html = memory_chart_html(sized, "es")
    last = sized.options[-1]
    assert last.required_usable_gb is not None and last.required_usable_gb > last.usable_gb
    # The verdict names this option's requirement; its row in the chart shows the same figure.
    assert f"{last.required_usable_gb:.2f}".replace(".", ",") in sized.recommendation
    assert f"necesita {last.required_usable_gb:.1f}".replace(".", ",") + " GB utilizables" in html
    # The top bar is the bare total, and says so.
    assert "El modelo en memoria (pesos + caché KV + sobrecarga)" in html
