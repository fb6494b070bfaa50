"""Every visitor-facing sentence of the assistant, in English and Spanish, and its one loader.

    SALES.text("hello", "es", name="Ana")   -> "Hola, Ana:"
    WEB.versions("example_1")               -> {"en": "...", "es": "..."}

Each catalogue is a YAML file of `key -> {en, es}`, split by topic (listed at the end). A file
is read once, on first use, and refused (ValueError naming the file and key) unless every entry
has exactly the two languages with the same `{placeholders}` (tools/texts.py: `bilingual`, the
engine's rule too). Numbers are formatted by the caller with tools/i18n.py, the one home of the
language type and number formatting.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

import yaml

from tools.i18n import Language
from tools.texts import bilingual

PACKAGE = Path(__file__).resolve().parent


class Catalogue:
    """One catalogue file, by its path in the `assistant` package (e.g. `data/sales.yaml`)."""

    def __init__(self, path: str, root: Path = PACKAGE) -> None:
        self.path = path
        self.file = root / path

    @cached_property
    def entries(self) -> Mapping[str, Mapping[Language, str]]:
        raw = self.file.read_text(encoding="utf-8")
        return {key: self._checked(key, entry) for key, entry in yaml.safe_load(raw).items()}

    def _checked(self, key: object, entry: object) -> dict[Language, str]:
        if not isinstance(key, str):  # YAML reads a bare yes, no or 1 as a bool or a number
            raise ValueError(f"{self.path}: the key {key!r} must be quoted text")
        return bilingual(entry, f"{self.path}: {key!r}")

    def text(self, key: str, lang: Language, **values: object) -> str:
        """The sentence `key` in `lang`, with its `{placeholders}` filled in."""
        template = self.entries[key][lang]
        return template.format(**values) if values else template

    def versions(self, key: str) -> Mapping[Language, str]:
        """The sentence `key` in every language, unfilled."""
        return self.entries[key]

    def keys(self) -> set[str]:
        return set(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries


WEB = Catalogue("ui/data/web.yaml")  # the web chat, the widget and the article pages
OUTPUTS = Catalogue("ui/data/outputs.yaml")  # the calculator, the chart and the Compare tab
LABELS = Catalogue("ui/data/labels.yaml")  # static labels keyed by their English text (gr.I18n)
DESK = Catalogue("data/desk.yaml")  # the sales desk: leads, handoff, feedback, admin
SALES = Catalogue("data/sales.yaml")  # the sales draft and the quote
LLM = Catalogue("data/llm_texts.yaml")  # what LLM mode adds: guardrail notes, notices, steps
OFFLINE = Catalogue("offline/data/templates.yaml")  # the offline answers
READING_NOTES = Catalogue("offline/data/reading_notes.yaml")  # values the visitor wrote that were not usable
CLI = Catalogue("data/cli.yaml")  # the words of `sizing calc`'s report
FORMATS = Catalogue("offline/data/formats.yaml")  # what each weights format is ("what is fp8?")

CATALOGUES = (WEB, OUTPUTS, LABELS, DESK, SALES, LLM, OFFLINE, READING_NOTES, CLI, FORMATS)
