"""Every sentence the sizing engine writes, in English and Spanish, and its one loader.

    text("verdict_no", "es")                   -> "sigue sin caber"
    counted(1, "concurrent_sequence", "es")    -> "1 secuencia concurrente"

The catalogue files, `tools/data/texts.json` and (the serving-performance sentences)
`tools/data/perf_texts.json`, are each `key -> {"en": ..., "es": ...}`, read once on first use
and checked: exactly the two languages, the same str.format fields in both, no key in two
files. JSON, not YAML, because tools/ depends on pydantic only. Numbers are formatted by the
caller with tools/i18n.py. Counted nouns are two keys, NOUN_one and NOUN_many; GB = 10^9 bytes.
"""

from __future__ import annotations

import json
import string
from functools import cache
from importlib import resources

from tools.i18n import LANGUAGES, Language, integer, number

CATALOGUE_FILES = ("texts.json", "perf_texts.json")


@cache
def catalogue() -> dict[str, dict[Language, str]]:
    """The entries of every catalogue file, each checked by `bilingual`."""
    entries: dict[str, dict[Language, str]] = {}
    for name in CATALOGUE_FILES:
        raw = resources.files("tools").joinpath("data", name).read_text(encoding="utf-8")
        for key, entry in json.loads(raw).items():
            if key in entries:
                raise ValueError(f"{name}: {key!r} is already a key of another catalogue file")
            entries[key] = bilingual(entry, f"{name}: {key!r}")
    return entries


def placeholders(template: str) -> set[str]:
    """The str.format fields a template fills: "Hello {name}," -> {"name"}."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


def bilingual(entry: object, where: str) -> dict[Language, str]:
    """A data file's `{"en": ..., "es": ...}` entry, or ValueError naming where it is malformed:
    exactly the two languages, no empty sentence, the same placeholders in both."""
    if not isinstance(entry, dict) or set(entry) != set(LANGUAGES):
        raise ValueError(f"{where} must have exactly the languages {', '.join(LANGUAGES)}")
    if not all(isinstance(value, str) and value.strip() for value in entry.values()):
        raise ValueError(f"{where} has an empty or non-text sentence")
    if placeholders(entry["en"]) != placeholders(entry["es"]):
        raise ValueError(f"{where} has different {{placeholders}} in en and es")
    return entry


def text(key: str, lang: Language, **fields: object) -> str:
    template = catalogue()[key][lang]
    return template.format(**fields) if fields else template


def counted(value: int, noun: str, lang: Language) -> str:
    """A count with its noun in the right number: "1 sequence", "1.024 secuencias"."""
    form = text(f"{noun}_one" if value == 1 else f"{noun}_many", lang)
    return f"{integer(value, lang)} {form}"


__all__ = [
    "CATALOGUE_FILES",
    "bilingual",
    "catalogue",
    "counted",
    "integer",
    "number",
    "placeholders",
    "text",
]
