"""Notes about values the visitor wrote that could not be used as written (data/reading_notes.yaml).

A note is a catalogue key and the values its sentence needs; the answer writer shows `note.text(lang)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from assistant.schemas import Language

CATALOGUE = Path(__file__).resolve().parent / "data" / "reading_notes.yaml"


_THOUSANDS = re.compile(r"-?\d{1,3}(?:,\d{3})+")


@dataclass(frozen=True)
class ReadingNote:
    key: str  # an id of data/reading_notes.yaml
    values: tuple[tuple[str, str], ...] = ()

    def text(self, language: Language) -> str:
        values = dict(self.values)
        if language == "es":  # thousands with a dot in Spanish: 1.000.000
            values = {k: v.replace(",", ".") if _THOUSANDS.fullmatch(v) else v for k, v in values.items()}
        return str(reading_notes()[self.key][language]).format(**values)


def note(key: str, **values: object) -> ReadingNote:
    return ReadingNote(key, tuple((name, _shown(value)) for name, value in values.items()))


def _shown(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


@lru_cache(maxsize=1)
def reading_notes() -> dict[str, dict[str, str]]:
    import yaml  # only the offline path needs it

    with CATALOGUE.open(encoding="utf-8") as handle:
        return dict(yaml.safe_load(handle))
