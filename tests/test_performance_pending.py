"""The pending blind batch (benchmarks/data/performance_pending.json) stays scoreable and citable."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.performance import pending_points
from tools.performance_calibration import held_out
from tools.performance_facts import load_data

ROOT = Path(__file__).resolve().parents[1]


def test_every_pending_source_is_new_cited_and_numbered_after_the_calibration_file() -> None:
    batch = json.loads(
        (ROOT / "benchmarks" / "data" / "performance_pending.json").read_text(encoding="utf-8")
    )
    known = {src["id"] for src in load_data("performance_calibration.json")["sources"]}
    last = max(int(i[1:]) for i in known)
    for src in batch["sources"]:
        assert src["id"] not in known and int(src["id"][1:]) > last
        assert src["url"].startswith("https://") and src["quote"]
        for point in src["points"]:
            assert point["value"] > 0 and point["input_len"] >= 0 and point["output_len"] >= 0


def test_the_pending_batch_is_scored_with_the_held_out_rule_of_the_calibration_file() -> None:
    points = pending_points()
    assert len(points) >= 60
    assert all(p.held_out == held_out(p.source) for p in points)
    assert any(p.held_out for p in points) and any(not p.held_out for p in points)
    assert max(p.concurrency for p in points) >= 256  # the rungs the calibration file lacks
