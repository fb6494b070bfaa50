"""Published runs of the same model on the same card at the same precision, as an anchor for decode.

The roofline's efficiency factors are an engine's average over every model and card it was fitted
on (tools/performance_fit.py). A given model's kernels on a given card can sit well off that
average: DeepSeek-V3's latent attention and block-scaled FP8 experts on CDNA3 decode at about half
the speed the average predicts in every published run (S72, S78, S82); gpt-oss-20b on an H200 runs
faster than it (S19).
Where the calibration set has decode or throughput figures of exactly this model, card and
precision, the median source's ratio of measured to estimated time per token scales the decode step:
the bandwidth efficiency and the fixed per-step costs (`tools.performance_physics.anchored`), never
the prefill's compute. Each source counts once, by the median of its own points, as in the fit.

The weight given to the anchor (ANCHOR_WEIGHT) was chosen on the fit part alone, each source
anchored by the others (leave one source out): of 0.5, 0.75 and 1.0, full weight scored best
(per-user decode within ±25 % 63 % -> 72 %, aggregate 61 % -> 66 %, TTFT 63 % -> 64 %); the
held-out part was scored once after (docs/performance.md, "Anchored to published runs").
Prefill figures are not used: anchoring TTFT the same way lowered the fit part's (63 % -> 58-61 %).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

from tools.performance_facts import load_data

ANCHOR_WEIGHT = 1.0


class Anchor(NamedTuple):
    ratio: float  # measured / estimated time per decode step, weighted (1.0: no change)
    sources: tuple[str, ...]


def _llamacpp(engine: str) -> bool:
    return engine in ("llamacpp", "ollama")


@cache
def _log_errors(
    model_id: str, card_id: str, precision: str, llamacpp: bool
) -> tuple[tuple[str, bool, float], ...]:
    """(source, held out, log(measured / estimated time)) of every decode and throughput figure of
    this model, card and precision, estimated by the pure roofline with the fitted factors."""
    from tools.performance_calibration import as_time, calibration_points, metric_group, predict
    from tools.performance_fit import factors_for

    engines = load_data("perf_factors.json")["engines"]
    rows = []
    for p in calibration_points():
        if (p.model_id, p.card, p.precision) != (model_id, card_id, precision):
            continue
        if _llamacpp(p.engine) != llamacpp or metric_group(p.metric) == "prefill":
            continue
        estimate = predict(p, factors_for(engines, p.engine, p.hw.generation))
        rows.append(
            (p.source, p.held_out, math.log(as_time(p.metric, p.value) / as_time(p.metric, estimate)))
        )
    return tuple(rows)


def anchor(
    model_id: str, card_id: str, precision: str, engine: str, keep: Callable[[str, bool], bool] | None = None
) -> Anchor | None:
    """The decode anchor for this setup from the published runs `keep(source, held_out)` accepts
    (default: all of them); None where there is none."""
    by_source: dict[str, list[float]] = {}
    for source, held_out, error in _log_errors(model_id, card_id, precision, _llamacpp(engine)):
        if keep is None or keep(source, held_out):
            by_source.setdefault(source, []).append(error)
    if not by_source:
        return None
    median = statistics.median(statistics.median(errors) for errors in by_source.values())
    return Anchor(math.exp(ANCHOR_WEIGHT * median), tuple(sorted(by_source, key=lambda s: int(s[1:]))))


@cache
def product_anchor(model_id: str, card_id: str, precision: str, engine: str) -> Anchor | None:
    """The anchor the product's estimates use: every published run of the setup, fit and held out."""
    return anchor(model_id, card_id, precision, engine)
