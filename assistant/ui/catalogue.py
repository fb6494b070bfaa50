"""The web app's bilingual sentences, read from `data/web.yaml` (key -> {en, es}).

`phrase("followup_users", "es", users=20)` is one filled sentence; `label("label_stop")` is a
static label the browser translates by its locale (`i18n_tables()` feeds `gr.I18n`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from assistant.ui.texts import LANGUAGES, Lang

CATALOGUE = Path(__file__).with_name("data") / "web.yaml"
LABEL_PREFIX = "label_"


@lru_cache(maxsize=1)
def _entries() -> dict[str, dict[str, str]]:
    loaded: Any = yaml.safe_load(CATALOGUE.read_text(encoding="utf-8"))
    entries: dict[str, dict[str, str]] = {}
    for key, versions in loaded.items():
        if not isinstance(versions, dict) or set(versions) != set(LANGUAGES):
            raise ValueError(f"{CATALOGUE.name}: {key!r} must have exactly the keys {', '.join(LANGUAGES)}")
        entries[str(key)] = {lang: str(versions[lang]) for lang in LANGUAGES}
    return entries


def phrase(key: str, lang: Lang, **values: object) -> str:
    """The sentence `key` in `lang`, with `{placeholders}` filled in."""
    template = _entries()[key][lang]
    return template.format(**values) if values else template


def all_keys() -> set[str]:
    return set(_entries())


def i18n_tables() -> dict[Lang, dict[str, str]]:
    """The static labels per locale, keyed by catalogue key (for `gr.I18n`)."""
    labels = {key: versions for key, versions in _entries().items() if key.startswith(LABEL_PREFIX)}
    return {lang: {key: versions[lang] for key, versions in labels.items()} for lang in LANGUAGES}
