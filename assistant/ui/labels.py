"""Static labels the browser translates, and the visitor's language from the request.

`label(key)` accepts an English label of `data/labels.yaml` or a `label_*` key of the web
catalogue (`data/web.yaml`); `build_i18n()` gives Gradio both tables.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from assistant.texts import LABELS
from assistant.ui.catalogue import LABEL_PREFIX, all_keys, i18n_tables
from assistant.ui.texts import Lang, language_from_header


def labels_es() -> dict[str, str]:
    """English label → Spanish label (data/labels.yaml)."""
    return {key: versions["es"] for key, versions in LABELS.entries.items()}


def build_i18n() -> gr.I18n:
    """Static labels in the browser's language: English keys, Spanish translations, plus the web catalogue's."""
    tables = i18n_tables()
    spanish = labels_es()
    return gr.I18n(en={**{key: key for key in spanish}, **tables["en"]}, es={**spanish, **tables["es"]})


def label(key: str) -> Any:
    """A label the browser translates (data/labels.yaml, or a label_* key of data/web.yaml)."""
    if key.startswith(LABEL_PREFIX):
        if key not in all_keys():
            raise KeyError(f"label {key!r} is not in the catalogue (assistant/ui/data/web.yaml)")
    elif key not in LABELS:
        raise KeyError(f"label {key!r} has no Spanish translation in assistant/{LABELS.path}")
    return gr.I18n()(key)


def browser_lang(request: gr.Request | None) -> Lang:
    if request is None:
        return "en"
    headers = getattr(request, "headers", None) or {}
    return language_from_header(headers.get("accept-language"))
