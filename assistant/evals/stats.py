"""Small summary figures shared by the compare and load-test reports: percentiles, means, counts."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between ranks, as numpy's default; None if empty."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError("percentile q must be within 0..100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """An English count with its noun in the right number: "1 task", "12 tasks", "0 tasks"."""
    return f"{count:,d} {noun if count == 1 else plural or noun + 's'}"
