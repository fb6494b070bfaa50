"""Coverage gaps in one question: a model or a card the visitor named that the catalog does not know.

The understanding resolves catalog names; what it leaves is read here with two shapes — a name
followed by a parameter count ("Falcon 180B", "Grok-1 314b") and a card model number ("RTX 5090",
"MI250", "A6000") — so `sizing report` can list what the catalog should add.
"""

from __future__ import annotations

import re
from typing import Any

from assistant.offline.understanding import fold

_BARE_SIZE = re.compile(r"\d+(?:\.\d+)?b")
_NAMED_SIZE = re.compile(r"\b([a-z][a-z0-9.]*(?:[ -][a-z0-9.]+)?)[ -]+(\d+(?:[.,]\d+)?)\s?b\b")
_CARD_NUMBER = re.compile(
    r"\b((?:rtx|gtx|quadro|tesla|radeon|instinct|gaudi)\s?[a-z]?\d{1,4}\w*|mi\d{3}\w*|[ahlbvt]\d{1,4}[a-z]?\d*|a\d{4})\b"
)
# Words that sit before a size without naming a model ("un 70B", "a 7b model").
_NOT_A_NAME = frozenset(
    [
        "a",
        "an",
        "the",
        "un",
        "una",
        "el",
        "la",
        "de",
        "del",
        "para",
        "for",
        "of",
        "model",
        "modelo",
        "llm",
        "size",
        "tamano",
        "servir",
        "serve",
        "run",
        "with",
        "con",
        "y",
        "and",
        "o",
        "or",
        "about",
        "sobre",
    ]
)


def unknown_model(message: str, reading: Any) -> str | None:
    """A model name the catalog did not resolve, as written ("falcon 180b"); None when there is none."""
    model = getattr(reading, "model", None)
    if model and not _BARE_SIZE.fullmatch(str(model)):
        return None  # the catalog knew it
    for match in _NAMED_SIZE.finditer(fold(message)):
        words = [word for word in match.group(1).split() if word not in _NOT_A_NAME]
        if words and not words[-1].isdigit():
            return f"{' '.join(words)} {match.group(2)}b"
    return None


def unknown_card(message: str, reading: Any) -> str | None:
    """A card model number the catalog did not resolve ("rtx 5090", "mi250")."""
    if getattr(reading, "gpu", None) or getattr(reading, "card_class", None):
        return None
    for match in _CARD_NUMBER.finditer(fold(message)):
        name = match.group(1)
        if re.fullmatch(r"[a-z]\d{1,2}", name) and name[0] in "bv":  # "b2", "v1": versions, not cards
            continue
        return name
    return None
