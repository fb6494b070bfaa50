"""The sentences LLM mode adds for the visitor (`data/llm_texts.yaml`): a named view of assistant/texts.py (LLM)."""

from __future__ import annotations

from assistant.texts import LLM


def llm_text(key: str, lang: str, **values: object) -> str:
    """The sentence `key` in `lang` (English when the language has none), filled with `values`."""
    return LLM.text(key, "es" if lang == "es" else "en", **values)


def every_language(key: str) -> list[str]:
    """The sentence `key` in every language, unfilled (to recognise it in a text)."""
    return list(LLM.versions(key).values())


def has_text(key: str) -> bool:
    return key in LLM
