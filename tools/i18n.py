"""The visitor's language and how numbers are written in it, for every module in tools/.

    number(12345.678, "es")  -> "12.345,68"      integer(131072, "en") -> "131,072"
    shortest(2.5, "es")      -> "2,5"
    gb(70_553_706_496, "es") -> "70,55"          (GB = 10^9 bytes, as every *_gb field)

Sentences live in tools/data/texts.json, read by tools/texts.py.
"""

from __future__ import annotations

from typing import Literal

Language = Literal["en", "es"]
LANGUAGES: tuple[Language, ...] = ("en", "es")

GB = 1e9

# Spanish swaps the English thousands and decimal separators: 12,345.67 -> 12.345,67.
_SPANISH_SEPARATORS = str.maketrans(",.", ".,")


def as_language(value: str) -> Language | None:
    """'ES ' -> 'es'; None for anything that is not a language of the texts."""
    folded = value.strip().lower()
    return next((lang for lang in LANGUAGES if lang == folded), None)


def number(value: float, lang: Language, decimals: int = 2, sign: bool = False) -> str:
    """12,345.67 in English, 12.345,67 in Spanish; `sign` writes a + before positive values."""
    written = f"{value:{'+' if sign else ''},.{decimals}f}"
    return written.translate(_SPANISH_SEPARATORS) if lang == "es" else written


def shortest(value: float, lang: Language) -> str:
    """The fewest digits that write the value (2.5, 30, 0.25), with the language's decimal mark."""
    written = f"{value:g}"
    return written.translate(_SPANISH_SEPARATORS) if lang == "es" else written


def integer(value: int, lang: Language) -> str:
    return number(value, lang, 0)


def gb(value_bytes: float, lang: Language, decimals: int = 2) -> str:
    """Bytes written as GB of 10^9 bytes, without the unit."""
    return number(value_bytes / GB, lang, decimals)


__all__ = ["GB", "LANGUAGES", "Language", "as_language", "gb", "integer", "number", "shortest"]
