"""The sentences LLM mode adds for the visitor, from `data/llm_texts.yaml` (key -> {en, es})."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

DATA_FILE = Path(__file__).resolve().parent / "data" / "llm_texts.yaml"


@lru_cache(maxsize=1)
def _catalogue() -> dict[str, dict[str, str]]:
    loaded: dict[str, dict[str, str]] = yaml.safe_load(DATA_FILE.read_text(encoding="utf-8"))
    return loaded


def llm_text(key: str, lang: str, **values: object) -> str:
    """The sentence `key` in `lang` (English when the language has none), filled with `values`."""
    entry = _catalogue()[key]
    return (entry.get(lang) or entry["en"]).format(**values)


def every_language(key: str) -> list[str]:
    """The sentence `key` in every language, unfilled (to recognise it in a text)."""
    return list(_catalogue()[key].values())


def has_text(key: str) -> bool:
    return key in _catalogue()
