"""The offline answers' sentences and FAQ entries, read from the data files the business edits.

`texts("es").fill("headline_fits", model=..., ...)` fills one template of `data/templates.yaml`
(read by assistant/texts.py); `faq_entries()` are the general questions of `data/faq.yaml`. Both
files are read once per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from assistant.offline.understanding import load_yaml
from assistant.schemas import Language
from assistant.texts import FORMATS, OFFLINE
from tools.i18n import LANGUAGES
from tools.precision import GGUF_PRECISIONS
from tools.texts import bilingual


class Texts:
    """The templates of one language."""

    def __init__(self, language: Language, entries: dict[str, Any]) -> None:
        self.language = language
        self._entries = entries

    def __getitem__(self, key: str) -> str:
        return str(self._entries[key])

    def fill(self, key: str, **values: object) -> str:
        return str(self._entries[key]).format(**values)

    def mapping(self, key: str) -> dict[str, str]:
        return {str(name): str(text) for name, text in self._entries[key].items()}

    def step(self, key: str) -> str:
        return str(self._entries["steps"][key])

    def keys(self) -> set[str]:
        return set(self._entries)


@lru_cache(maxsize=1)
def _templates() -> dict[Language, dict[str, Any]]:
    """Each language's templates; a catalogue key NAME.ID is entry ID of the word list NAME."""
    by_language: dict[Language, dict[str, Any]] = {lang: {} for lang in LANGUAGES}
    for key, versions in OFFLINE.entries.items():
        name, _, item = key.partition(".")
        for lang, template in versions.items():
            if item:
                by_language[lang].setdefault(name, {})[item] = template
            else:
                by_language[lang][key] = template
    return by_language


def texts(language: Language) -> Texts:
    return Texts(language, _templates()[language])


@dataclass(frozen=True)
class FaqEntry:
    id: str
    answer: dict[str, str]
    search: dict[str, str]
    example_model: str | None = None  # a worked example computed by the calculator follows the answer
    card_table: bool = False  # the card-class table follows the answer
    only_without_model: bool = False  # a concept answer, left out when the message sizes a model


@lru_cache(maxsize=1)
def faq_entries() -> dict[str, FaqEntry]:
    return {entry["id"]: _faq_entry(entry) for entry in load_yaml("faq.yaml")["faq"]}


def _faq_entry(entry: dict[str, Any]) -> FaqEntry:
    """One entry of data/faq.yaml; its answer and search query checked for both languages."""
    where = f"faq.yaml: {entry['id']}"
    return FaqEntry(
        id=entry["id"],
        answer={lang: text.strip() for lang, text in bilingual(entry["answer"], where).items()},
        search={lang: query for lang, query in bilingual(entry["search"], f"{where} search").items()},
        example_model=entry.get("example_model"),
        card_table=bool(entry.get("card_table", False)),
        only_without_model=bool(entry.get("only_without_model", False)),
    )


def format_definition(key: str, language: Language) -> str | None:
    """What the format `key` (a tools.PRECISIONS id, or "kv_fp8") is; None when data/formats.yaml
    has no entry for it. A GGUF k-quant without its own entry takes `gguf_kquant` with its name."""
    if key in FORMATS:
        return FORMATS.text(key, language)
    if key in GGUF_PRECISIONS:
        return FORMATS.text("gguf_kquant", language, label=key.upper())
    return None
