"""Does a message ask to talk to an engineer or a salesperson? (patterns: data/ask_for_person.yaml)"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import yaml

from assistant.offline.spans import fold


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    raw = resources.files("assistant").joinpath("data", "ask_for_person.yaml").read_text(encoding="utf-8")
    return tuple(re.compile(pattern) for pattern in yaml.safe_load(raw)["ask_for_person"])


def asks_for_a_person(message: str) -> bool:
    """Matched on the folded message (lowercase, no accents), in English or Spanish."""
    folded = fold(message or "")
    return any(pattern.search(folded) for pattern in _patterns())
