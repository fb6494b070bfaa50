"""The sales desk's sentences (assistant/data/sales.yaml): a named view of assistant/texts.py (SALES)."""

from __future__ import annotations

from assistant.texts import SALES

sales_text = SALES.text


def sales_keys() -> list[str]:
    return list(SALES.entries)
