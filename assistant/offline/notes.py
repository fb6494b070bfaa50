"""Notes about values the visitor wrote that could not be used as written (data/reading_notes.yaml).

A note is a catalogue key and the values its sentence needs; the answer writer shows `note.text(lang)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant.schemas import Language
from assistant.texts import READING_NOTES
from tools.i18n import integer


@dataclass(frozen=True)
class ReadingNote:
    key: str  # an id of data/reading_notes.yaml
    values: tuple[tuple[str, str | int], ...] = ()

    def text(self, language: Language) -> str:
        values = {k: integer(v, language) if isinstance(v, int) else v for k, v in self.values}
        return READING_NOTES.text(self.key, language, **values)


def note(key: str, **values: object) -> ReadingNote:
    return ReadingNote(key, tuple((name, _shown(value)) for name, value in values.items()))


def _shown(value: object) -> str | int:
    """Whole numbers stay numbers, written in the visitor's language by `ReadingNote.text`."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) else str(value)
