"""Fit the engines' efficiency factors on the fit part of the calibration set, never the held-out part.

Run `python -m tools.performance_fit` to refit and rewrite tools/data/perf_factors.json (a test
checks the file matches a fresh fit). For each engine: grid searches of (bandwidth efficiency,
per-step overhead) for each per-layer overhead on the dense models' decode figures (models of 28 to
80 layers tell a cost per layer from a cost per step), of the per-layer routing cost on the
mixtures of experts', of (compute efficiency, per-request overhead, first-token steps) on the
time-to-first-token figures of 16-bit and FP8 weights (`_fit_latency`), of the relative prefill
speed of integer-quantized weights and of the routed experts' FLOPs (`_fit_moe_compute`),
minimising the median over sources of each source's mean |log error| (among scores within 2 % of
the best, the smallest fixed overhead: the figures rarely separate a fixed cost from an
efficiency), alternated twice; then, per GPU
generation with figures from at least two sources, the efficiencies are scaled by the median ratio of
that generation's errors. The band of every estimate is the 2.5th to 97.5th percentile, per metric
group, of leave-one-source-out errors on the fit points: each source estimated by factors fitted
without it, so the band is as wide as the error on a setup the fit has not seen.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tools.performance_calibration import (
    CalibrationPoint,
    as_time,
    calibration_points,
    conditional_time,
    metric_group,
    predict,
)
from tools.performance_physics import Factors, fixed_step_s

START = Factors(0.7, 0.002, 0.5, 0.01, 0.0, 1.0)
BANDWIDTH_GRID = [round(0.30 + 0.02 * i, 2) for i in range(36)]  # 0.30 .. 1.00
STEP_OVERHEAD_GRID = [0.0005 * i for i in range(17)]  # 0 .. 8 ms
COMPUTE_GRID = [round(0.10 + 0.02 * i, 2) for i in range(46)]  # 0.10 .. 1.00
REQUEST_OVERHEAD_GRID = [0.002 * i for i in range(31)]  # 0 .. 60 ms
FIRST_TOKEN_STEPS_GRID = [float(n) for n in range(41)]  # 0 .. 40 times the model's fixed step cost
# The latency search ranks every (efficiency, overhead, steps) on the additive shortcut of
# `_latency_scores`, then scores this many of the best exactly.
EXACT_CANDIDATES = 12
QUANTIZED_RANGE = (0.3, 1.2)
MOE_COMPUTE_GRID = [round(0.10 + 0.05 * i, 2) for i in range(19)]  # 0.10 .. 1.00
LAYER_OVERHEAD_GRID = [0.00001 * i for i in range(11)]  # 0 .. 100 µs per layer
MOE_OVERHEAD_GRID = [0.000005 * i for i in range(41)]  # 0 .. 200 µs per routed layer
MIN_GENERATION_SOURCES = 2
SCORE_SLACK = 0.02  # scores within 2 % of the best count as a tie (see _fit_pair)
# The 2.5th to 97.5th percentile: the 5th to 95th held 91 % of the fit part's cross-validated errors
# but 71 % of the held-out sources' (newer builds and cards than the fit part's); see
# docs/performance.md, "This round".
BAND_QUANTILES = (0.025, 0.975)
# An engine gets its own band for a metric group only with enough cross-validated errors behind it:
# the outer percentiles of five errors are just their extremes.
MIN_BAND_POINTS = 10
MIN_BAND_SOURCES = 3
# Engines never fitted on their own figures: they take the factors of the closest fitted engine,
# all but their cost per latent-attention layer and their routed experts' prefill speed (`_borrowed`).
# SGLang's fit sources (S43-S52) are three of DeepSeek-R1/V3 and two of Llama 3 70B/405B: fitted alone
# they made a fixed step cost of 6.5 ms and a first token 31 steps late out of DeepSeek-R1's
# routed layers and charged them to every model, and the held-out SGLang sources (Llama 3 8B and
# 70B, Qwen3-8B) got first tokens 2.5-8.5x too late (held-out TTFT within 40 %: 56 % -> 44 %, the
# band 86 % -> 74 %).
# Its figures stay in the file, scored with vLLM's factors, until more models' figures can pin its own.
UNFITTED_ENGINES = {"sglang": "vllm"}
DENSE_DECODE_GRIDS = {
    "bandwidth_efficiency": BANDWIDTH_GRID,
    "step_overhead_s": STEP_OVERHEAD_GRID,
    "layer_overhead_s": LAYER_OVERHEAD_GRID,
}
MOE_DECODE_GRIDS = {"moe_layer_overhead_s": MOE_OVERHEAD_GRID}
MLA_OVERHEAD_GRID = [0.00001 * i for i in range(41)]  # 0 .. 400 µs per latent-attention layer
MLA_DECODE_GRIDS = {"mla_layer_overhead_s": MLA_OVERHEAD_GRID}
REFINE_ROUNDS = 3
FACTORS_FILE = Path(__file__).parent / "data" / "perf_factors.json"


def log_error(point: CalibrationPoint, factors: Factors, conditional: bool = True) -> float:
    """log(estimated time / measured time): positive when the estimate is too slow."""
    measured = as_time(point.metric, point.value)
    estimated = (
        conditional_time(point, factors) if conditional else as_time(point.metric, predict(point, factors))
    )
    return math.log(estimated / measured)


def _score(points: list[CalibrationPoint], factors: Factors) -> float:
    """Median over sources of each source's mean |log error|: a source that published a sweep of
    seven prompt lengths counts once, like a source that published one figure, and one odd source
    cannot drag the factors (a tenth of the mean breaks ties)."""
    by_source: dict[str, list[float]] = {}
    for p in points:
        by_source.setdefault(p.source, []).append(abs(log_error(p, factors)))
    return _source_score(by_source)


def _source_score(by_source: dict[str, list[float]]) -> float:
    """`_score` of |log errors| already grouped by source."""
    per_source = [statistics.fmean(errors) for errors in by_source.values()]
    return statistics.median(per_source) + 0.1 * statistics.fmean(per_source)


def _fit_pair(
    points: list[CalibrationPoint],
    factors: Factors,
    efficiency: tuple[str, list[float]],
    overhead: tuple[str, list[float]],
) -> Factors:
    """The best-scoring (efficiency, fixed overhead) pair of the two grids; among those within
    SCORE_SLACK of the best, the smallest overhead (then the highest efficiency): when the figures
    cannot tell a fixed cost from a lower efficiency (one prompt length, one model size), the fit
    does not invent a fixed cost."""
    (efficiency_field, efficiencies), (overhead_field, overheads) = efficiency, overhead
    grid = [
        factors._replace(**{efficiency_field: e, overhead_field: o}) for e in efficiencies for o in overheads
    ]
    scored = [(_score(points, f), f) for f in grid]
    best = min(score for score, _ in scored)
    near = [f for score, f in scored if score <= best * (1 + SCORE_SLACK) + 1e-12]
    return min(near, key=lambda f: (getattr(f, overhead_field), -getattr(f, efficiency_field)))


def _fit_decode(
    points: list[CalibrationPoint], factors: Factors, throughput: Sequence[CalibrationPoint] = ()
) -> Factors:
    """Bandwidth efficiency, per-step and per-layer cost on the dense models' decode figures (a grid
    search), then refined coordinate by coordinate on those figures together with the aggregate
    throughput ones: decode figures of one batch size cannot tell a fixed cost per step from a
    lower bandwidth efficiency, but throughput at 4 to 1,000 concurrent sequences can, since the
    KV cache they read grows with the batch and the fixed cost does not."""
    dense = [p for p in points if not p.model.moe_layers]
    if dense:
        fits = [
            _fit_pair(
                dense,
                factors._replace(layer_overhead_s=layer),
                ("bandwidth_efficiency", BANDWIDTH_GRID),
                ("step_overhead_s", STEP_OVERHEAD_GRID),
            )
            for layer in LAYER_OVERHEAD_GRID
        ]
        scores = [_score(dense, f) for f in fits]
        best = min(scores)
        factors = next(f for f, s in zip(fits, scores, strict=True) if s <= best * (1 + SCORE_SLACK) + 1e-12)
        factors = _refine(
            dense + [p for p in throughput if not p.model.moe_layers], factors, DENSE_DECODE_GRIDS
        )
    moe = [p for p in points if p.model.moe_layers]
    if moe:
        factors = min(
            (factors._replace(moe_layer_overhead_s=o) for o in MOE_OVERHEAD_GRID),
            key=lambda f: _score(moe, f),
        )
        factors = _refine(moe + [p for p in throughput if p.model.moe_layers], factors, MOE_DECODE_GRIDS)
    return _fit_mla(points, factors, throughput)


def _fit_mla(
    points: Sequence[CalibrationPoint], factors: Factors, throughput: Sequence[CalibrationPoint] = ()
) -> Factors:
    """The per-layer cost of multi-head latent attention on the MLA models' decode and throughput
    figures (the other factors as fitted): none where the engine has no MLA figure."""
    mla = [p for p in [*points, *throughput] if p.model.mla_layers]
    return _refine(mla, factors, MLA_DECODE_GRIDS)


def _refine(points: list[CalibrationPoint], factors: Factors, grids: dict[str, list[float]]) -> Factors:
    """Coordinate descent over the given grids from `factors`: each field in turn set to its
    best-scoring grid value, until a round changes nothing (at most REFINE_ROUNDS rounds)."""
    if not points:
        return factors
    for _ in range(REFINE_ROUNDS):
        before = factors
        for field, grid in grids.items():
            factors = min(
                (factors._replace(**{field: v}) for v in grid),
                key=lambda f: (_score(points, f), getattr(f, field)),
            )
        if factors == before:
            break
    return factors


def _latency_scores(
    points: list[CalibrationPoint], factors: Factors, overheads: list[float], steps: list[float]
) -> list[tuple[float, Factors]]:
    """`_score` of every (request overhead, first-token steps) at the given compute efficiency, from
    one evaluation of the points: a served first token's fixed wait (`request_latency_s`) adds to
    its time and changes nothing else the time depends on (the prefill, the queue in front of it:
    `performance_serving._ttft`), so each candidate's estimate is the estimate without it plus
    the wait. Only where an estimate solves a closed loop from the setup alone (no measured
    siblings) does the wait also move the load a little: `_fit_latency` scores the best exactly."""
    bare = factors._replace(request_overhead_s=0.0, first_token_steps=0.0)
    rows = []
    for p in points:
        measured = as_time(p.metric, p.value)
        waits = p.metric == "ttft_ms" and not p.engine_side
        fixed = fixed_step_s(p.model, bare) if waits else 0.0
        estimated = math.exp(log_error(p, bare)) * measured
        rows.append((p.source, measured, estimated, waits, fixed))
    out = []
    for overhead in overheads:
        for n in steps:
            by_source: dict[str, list[float]] = {}
            for source, measured, estimated, waits, fixed in rows:
                value = estimated + (overhead + n * fixed if waits else 0.0)
                by_source.setdefault(source, []).append(abs(math.log(value / measured)))
            scored = factors._replace(request_overhead_s=overhead, first_token_steps=n)
            out.append((_source_score(by_source), scored))
    return out


def _fit_latency(points: list[CalibrationPoint], factors: Factors) -> Factors:
    """Compute efficiency, request overhead and first-token steps together. Among the settings
    within SCORE_SLACK of the best, the shortest fixed wait for a typical model of the figures
    (then the highest efficiency): as in `_fit_pair`, the fit does not invent a fixed cost the
    figures cannot tell from a lower efficiency."""
    served = any(p.metric == "ttft_ms" for p in points)
    overheads = REQUEST_OVERHEAD_GRID if served else [0.0]
    steps = FIRST_TOKEN_STEPS_GRID if served else [0.0]
    ranked = sorted(
        (
            candidate
            for e in COMPUTE_GRID
            for candidate in _latency_scores(points, factors._replace(compute_efficiency=e), overheads, steps)
        ),
        key=lambda scored: scored[0],
    )
    exact = [(_score(points, f), f) for _, f in ranked[:EXACT_CANDIDATES]]
    best = min(score for score, _ in exact)
    near = [f for score, f in exact if score <= best * (1 + SCORE_SLACK) + 1e-12]
    typical = statistics.median(fixed_step_s(p.model, factors) for p in points)
    return min(
        near,
        key=lambda f: (f.request_overhead_s + f.first_token_steps * typical, -f.compute_efficiency),
    )


def _fit_prefill(points: list[CalibrationPoint], factors: Factors) -> Factors:
    """Compute efficiency and a served first token's fixed wait on 16-bit and FP8 weights, then the
    speed of integer-quantized weights relative to them."""
    plain = [p for p in points if not p.model.quantized] or points
    if plain:
        factors = _fit_latency(plain, factors)
    quantized = [p for p in points if p.model.quantized]
    if quantized and plain is not points:
        # Compute-bound prefill time scales as 1 / quantized_compute: the median source's error
        # at 1.0 gives the factor directly (and a unique one where two sources disagree).
        error, _ = _source_median(quantized, factors._replace(quantized_compute=1.0))
        factors = factors._replace(
            quantized_compute=min(QUANTIZED_RANGE[1], max(QUANTIZED_RANGE[0], math.exp(error)))
        )
    return _fit_moe_compute(points, factors)


def _fit_moe_compute(points: Sequence[CalibrationPoint], factors: Factors) -> Factors:
    """The routed experts' relative prefill speed on the mixtures of experts' first-token figures
    of 16-bit and FP8 weights (the other factors as fitted; integer-quantized experts have
    `quantized_compute`). Where the figures cannot tell two speeds apart, the faster: 1.0 where
    the engine has no such figure, so the fit never invents a slowdown."""
    moe = [p for p in points if p.model.expert_active_params and not p.model.quantized]
    if not moe:
        return factors
    return min(
        (factors._replace(moe_compute=value) for value in MOE_COMPUTE_GRID),
        key=lambda f: (_score(moe, f), -f.moe_compute),
    )


def fit_engine(points: list[CalibrationPoint]) -> Factors:
    decode = [p for p in points if metric_group(p.metric) == "decode"]
    prefill = [p for p in points if metric_group(p.metric) == "prefill"]
    throughput = [p for p in points if metric_group(p.metric) == "throughput"]
    factors = START
    for _ in range(2):
        factors = _fit_decode(decode, factors, throughput)
        factors = _fit_prefill(prefill, factors)
    return factors


def _source_median(points: list[CalibrationPoint], factors: Factors) -> tuple[float, int]:
    """Median over sources of each source's mean log error, and how many sources there are."""
    by_source: dict[str, list[float]] = {}
    for p in points:
        by_source.setdefault(p.source, []).append(log_error(p, factors))
    if not by_source:
        return 0.0, 0
    return statistics.median(statistics.fmean(e) for e in by_source.values()), len(by_source)


def _generation_factors(points: list[CalibrationPoint], base: Factors) -> Factors:
    # Aggregate throughput is decode steps most of the time: its sources tell a generation's
    # bandwidth too (a static batch of 128-token prompts and answers spends under a tenth in prefill).
    decode, decode_sources = _source_median(
        [p for p in points if metric_group(p.metric) in ("decode", "throughput")], base
    )
    prefill, prefill_sources = _source_median(
        [p for p in points if metric_group(p.metric) == "prefill"], base
    )
    factors = base
    if decode_sources >= MIN_GENERATION_SOURCES:
        scale = math.exp(decode)
        factors = factors._replace(bandwidth_efficiency=min(1.0, base.bandwidth_efficiency * scale))
    if prefill_sources >= MIN_GENERATION_SOURCES:
        scale = math.exp(prefill)
        factors = factors._replace(compute_efficiency=min(1.0, base.compute_efficiency * scale))
    return factors


def _band_row(errors: list[float]) -> dict[str, float]:
    return {
        "low": round(_quantile(errors, BAND_QUANTILES[0]), 4),
        "high": round(_quantile(errors, BAND_QUANTILES[1]), 4),
        "points": len(errors),
    }


def _percentile(q: float) -> str:
    return f"{100 * q:g}th"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def fit_factors(fit_points: list[CalibrationPoint]) -> dict[str, dict]:
    """Factors per engine and per (engine, generation) from the given points."""
    engines: dict[str, dict] = {}
    for engine in sorted({p.engine for p in fit_points} - set(UNFITTED_ENGINES)):
        mine = [p for p in fit_points if p.engine == engine]
        base = fit_engine(mine)
        generations = {}
        for generation in sorted({p.hw.generation for p in mine}):
            theirs = [p for p in mine if p.hw.generation == generation]
            generations[generation] = _generation_factors(theirs, base)._asdict()
        engines[engine] = {
            "factors": base._asdict(),
            "generations": generations,
            "points": len(mine),
            "sources": sorted({p.source for p in mine}),
        }
    for engine, closest in sorted(UNFITTED_ENGINES.items()):
        mine = [p for p in fit_points if p.engine == engine]
        if mine and closest in engines:
            engines[engine] = _borrowed(engines[closest], closest, mine)
    return engines


def _borrowed(row: dict, closest: str, mine: list[CalibrationPoint]) -> dict:
    """An unfitted engine's factors: the closest engine's, but for its own cost per latent-attention
    layer, fitted on its own MLA figures (how much of MLA's decode an engine fuses is its own), and
    its own routed experts' prefill speed, fitted on its own mixtures' first tokens (its MoE kernels
    are its own)."""
    decode = [p for p in mine if metric_group(p.metric) == "decode"]
    throughput = [p for p in mine if metric_group(p.metric) == "throughput"]
    prefill = [p for p in mine if metric_group(p.metric) == "prefill"]
    mla = _fit_mla(decode, Factors(**row["factors"]), throughput)
    own = {
        "mla_layer_overhead_s": mla.mla_layer_overhead_s,
        "moe_compute": _fit_moe_compute(prefill, mla).moe_compute,
    }
    return {
        "factors": {**row["factors"], **own},
        "generations": {g: {**f, **own} for g, f in row["generations"].items()},
        "points": len(mine),
        "sources": sorted({p.source for p in mine}),
        "borrowed_from": closest,
    }


def cross_validated_errors(fit_points: list[CalibrationPoint]) -> list[tuple[CalibrationPoint, float]]:
    """log(measured / estimated time) of every fit point, each estimated by factors fitted without
    its own source (leave one source out): errors the size a new setup will see. The folds are
    independent fits, run side by side on the machine's cores (`_fold`); the result is the same
    whatever the number of cores."""
    sources = sorted({p.source for p in fit_points})
    workers = min(os.cpu_count() or 1, len(sources))
    if workers <= 1:
        folds = [_fold(source, fit_points) for source in sources]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            folds = list(pool.map(_fold, sources, [fit_points] * len(sources)))
    return [row for fold in folds for row in fold]


def _fold(source: str, fit_points: list[CalibrationPoint]) -> list[tuple[CalibrationPoint, float]]:
    """One leave-one-source-out fold: `source`'s points estimated by factors fitted on the others."""
    # Engines are fitted independently: only those this source measured need refitting.
    theirs = {p.engine for p in fit_points if p.source == source} - set(UNFITTED_ENGINES)
    if not theirs:
        return []
    engines = fit_factors([p for p in fit_points if p.source != source and p.engine in theirs])
    return [
        (p, -log_error(p, factors_for(engines, p.engine, p.hw.generation), conditional=False))
        for p in fit_points
        if p.source == source and p.engine in engines
    ]


def fit_part(points: Iterable[CalibrationPoint] | None = None) -> list[CalibrationPoint]:
    """The points a fit may see: every point of a source the held-out rule does not hold out."""
    return [p for p in (points if points is not None else calibration_points()) if not p.held_out]


def fit(points: Iterable[CalibrationPoint] | None = None) -> dict:
    """Factors and error bands, from the fit part of the calibration set only."""
    fit_points = fit_part(points)
    engines = fit_factors(fit_points)
    residuals: dict[str, list[float]] = {}
    by_engine: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for p, error in cross_validated_errors(fit_points):
        residuals.setdefault(metric_group(p.metric), []).append(error)
        by_engine.setdefault((p.engine, metric_group(p.metric)), []).append((p.source, error))
    bands = {group: _band_row(r) for group, r in sorted(residuals.items())}
    engine_bands: dict[str, dict] = {}
    for (engine, group), rows in sorted(by_engine.items()):
        if len(rows) >= MIN_BAND_POINTS and len({s for s, _ in rows}) >= MIN_BAND_SOURCES:
            engine_bands.setdefault(engine, {})[group] = _band_row([e for _, e in rows])
    return {
        "about": f"Efficiency factors of the serving-performance estimate, fitted by tools/performance_fit.py on the fit part of tools/data/performance_calibration.json (held-out sources never used). bands: {_percentile(BAND_QUANTILES[0])} and {_percentile(BAND_QUANTILES[1])} percentile, per metric group, of log(measured time / estimated time) on the fit points, each estimated with factors fitted without its own source (leave one source out); an estimate's band is its best x exp(band). engine_bands: the same per engine where it has at least "
        f"{MIN_BAND_POINTS} such errors from {MIN_BAND_SOURCES} sources (fewer would make the percentiles the extremes of a handful); otherwise the pooled band applies.",
        "held_out_sources": sorted({p.source for p in calibration_points() if p.held_out}),
        "engines": engines,
        "bands": bands,
        "engine_bands": engine_bands,
    }


def factors_for(engines: dict, engine: str, generation: str) -> Factors:
    """An engine's fitted factors on a generation. SGLang's row is vLLM's, the closest engine in how
    it batches and which kernels it runs, but for its own latent-attention cost (`_borrowed`);
    without an SGLang fit source in `engines` it takes vLLM's row whole."""
    row = engines.get(engine) or engines[UNFITTED_ENGINES[engine]]
    return Factors(**row["generations"].get(generation, row["factors"]))


def _rounded(doc: dict) -> dict:
    def walk(value: object) -> object:
        if isinstance(value, float):
            return round(value, 6)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return dict(walk(doc))  # type: ignore[call-overload]


def fitted_document() -> dict:
    return _rounded(fit())


if __name__ == "__main__":
    FACTORS_FILE.write_text(json.dumps(fitted_document(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FACTORS_FILE}")
