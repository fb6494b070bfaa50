"""Every sentence the sizing engine writes, in English and Spanish: tools/data/texts.json.

    text("verdict_no", "es")                   -> "sigue sin caber"
    counted(1, "concurrent_sequence", "es")    -> "1 secuencia concurrente"

The catalogue is `key -> {"en": ..., "es": ...}`, read once on first use. Templates use
str.format fields; numbers are formatted by the caller with tools/i18n.py.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from tools.i18n import LANGUAGES, Language, integer, number


@cache
def catalogue() -> dict[str, dict[Language, str]]:
    """tools/data/texts.json, each entry checked to hold exactly English and Spanish."""
    raw = resources.files("tools").joinpath("data", "texts.json").read_text(encoding="utf-8")
    entries = json.loads(raw)["texts"]
    for key, entry in entries.items():
        bilingual(entry, f"texts.json: {key!r}")
    return entries


def bilingual(entry: object, where: str) -> dict[Language, str]:
    """A data file's `{"en": ..., "es": ...}` entry, or ValueError naming where it is malformed."""
    if not isinstance(entry, dict) or set(entry) != set(LANGUAGES):
        raise ValueError(f"{where} must have exactly the languages {', '.join(LANGUAGES)}")
    if not all(isinstance(value, str) and value.strip() for value in entry.values()):
        raise ValueError(f"{where} has an empty or non-text sentence")
    return entry


def text(key: str, lang: Language, **fields: object) -> str:
    template = catalogue()[key][lang]
    return template.format(**fields) if fields else template


def counted(value: int, noun: str, lang: Language) -> str:
    """A count with its noun in the right number: "1 sequence", "1.024 secuencias"."""
    form = text(f"{noun}_one" if value == 1 else f"{noun}_many", lang)
    return f"{integer(value, lang)} {form}"


__all__ = ["bilingual", "catalogue", "counted", "integer", "number", "text"]
