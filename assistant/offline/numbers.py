"""Numbers as people write them, in either language's convention."""

from __future__ import annotations

import re


def parse_number(raw: str) -> float | None:
    """'8000', '8.000', '8,000', '1.5', '1,5' -> a number (thousands separators either way)."""
    raw = raw.strip(".,")
    if not raw:
        return None
    if re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", raw):
        return float(re.sub(r"[.,]", "", raw))
    try:
        return float(raw.replace(",", "."))
    except ValueError:
        return None
