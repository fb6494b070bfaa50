"""Serving-performance estimate vs published measurements: every point, the medians, the goals.

    PYTHONPATH=. python benchmarks/performance.py           # fit set and held-out set
    PYTHONPATH=. python benchmarks/performance.py --refit   # refit the factors first (slow, ~30 s)

For each point of tools/data/performance_calibration.json: measured vs estimated (the full
serving model from the setup alone, with the factors of tools/data/perf_factors.json, fitted on
the fit part only), the signed error, and whether the calibrated band holds the measurement.
Then the median |error| per metric and engine, and the issue's goals on the held-out part:
decode tokens/s per user and aggregate throughput within ±25 % on at least 70 % of points,
TTFT within ±40 % on at least 60 %, the band holding the truth in at least 80 %.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys

from tools.performance import fitted
from tools.performance_calibration import CalibrationPoint, as_time, calibration_points, metric_group, predict
from tools.performance_fit import factors_for

PER_USER = ("tpot_ms", "decode_tok_s", "output_tok_s_per_user")
AGGREGATE = ("output_tok_s_total", "e2e_latency_ms")
TTFT = ("ttft_ms", "prefill_tok_s")
GOALS = (
    ("decode per user", PER_USER, 0.25, 0.70),
    ("aggregate", AGGREGATE, 0.25, 0.70),
    ("TTFT", TTFT, 0.40, 0.60),
)
BAND_GOAL = 0.80


def evaluate(point: CalibrationPoint, doc: dict) -> tuple[float, float, bool]:
    """(estimate, signed relative error in the metric's own unit, band holds the measurement)."""
    factors = factors_for(doc["engines"], point.engine, point.hw.generation)
    estimate = predict(point, factors)
    error = (estimate - point.value) / point.value
    group = metric_group(point.metric)
    band = doc.get("engine_bands", {}).get(point.engine, {}).get(group, doc["bands"][group])
    ratio = math.log(as_time(point.metric, point.value) / as_time(point.metric, estimate))
    return estimate, error, band["low"] <= ratio <= band["high"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refit", action="store_true", help="refit the factors on the fit part first")
    args = parser.parse_args(argv)
    if args.refit:
        from tools.performance_fit import fitted_document

        doc = fitted_document()
    else:
        doc = fitted()
    rows = [(p, *evaluate(p, doc)) for p in calibration_points()]
    for split, held in (("FIT", False), ("HELD-OUT", True)):
        print(f"\n== {split} points ({sum(1 for r in rows if r[0].held_out == held)}) ==")
        print(
            f"{'src':4} {'setup':48} {'metric':22} {'load':>14} {'measured':>10} {'estimated':>10} {'error':>7} band"
        )
        for p, estimate, error, inside in rows:
            if p.held_out != held:
                continue
            load = f"{p.prompt}/{p.answer}×{p.concurrency}"
            print(
                f"{p.source:4} {p.label[:48]:48} {p.metric:22} {load:>14} {p.value:10.2f} {estimate:10.2f} "
                f"{error:+7.0%} {'in' if inside else 'OUT'}"
            )
    print("\n== median |error| per metric and engine ==")
    for split, held in (("fit", False), ("held-out", True)):
        groups: dict[tuple[str, str], list[float]] = {}
        for p, _, error, _ in rows:
            if p.held_out == held:
                groups.setdefault((p.metric, p.engine), []).append(abs(error))
        for (metric, engine), errors in sorted(groups.items()):
            print(
                f"  {split:8} {metric:22} {engine:9} n={len(errors):2}  median |error| {statistics.median(errors):5.0%}"
            )
    print("\n== goals on the held-out points ==")
    held_rows = [r for r in rows if r[0].held_out]
    ok = True
    for name, metrics, tolerance, share in GOALS:
        errors = [abs(e) for p, _, e, _ in held_rows if p.metric in metrics]
        if not errors:
            print(f"  {name:16} no held-out points")
            continue
        within = sum(1 for e in errors if e <= tolerance) / len(errors)
        passed = within >= share
        ok = ok and passed
        print(
            f"  {name:16} within ±{tolerance:.0%}: {within:5.0%} of {len(errors):2} points "
            f"(goal ≥ {share:.0%}) {'PASS' if passed else 'MISS'}"
        )
    for split, held in (("fit (cross-validated bands)", False), ("held-out", True)):
        inside = [i for p, _, _, i in rows if p.held_out == held]
        share = sum(inside) / len(inside)
        flag = "" if not held else (" PASS" if share >= BAND_GOAL else " MISS")
        print(f"  band holds the measurement, {split}: {share:5.0%} of {len(inside)} points{flag}")
        if held:
            ok = ok and share >= BAND_GOAL
    print(
        f"\nheld-out sources: {', '.join(doc['held_out_sources'])}; factors from tools/data/perf_factors.json"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
