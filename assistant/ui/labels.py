"""Static labels the browser translates, and the visitor's language from the request.

`label(key)` accepts an English label of `texts.LABELS_ES` or a `label_*` key of the
catalogue (`data/web.yaml`); `build_i18n()` gives Gradio both tables.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from assistant.ui.catalogue import LABEL_PREFIX, all_keys, i18n_tables
from assistant.ui.texts import LABELS_ES, Lang, language_from_header


def build_i18n() -> gr.I18n:
    """Static labels in the browser's language: English keys, Spanish translations, plus the catalogue's."""
    from assistant.ui.desk_texts import labels_es as desk_labels_es

    tables = i18n_tables()
    desk = desk_labels_es()
    return gr.I18n(
        en={**{key: key for key in LABELS_ES}, **{key: key for key in desk}, **tables["en"]},
        es={**LABELS_ES, **desk, **tables["es"]},
    )


def label(key: str) -> Any:
    """A label the browser translates (see texts.LABELS_ES and the catalogue's label_* keys)."""
    if key.startswith(LABEL_PREFIX):
        if key not in all_keys():
            raise KeyError(f"label {key!r} is not in the catalogue (assistant/ui/data/web.yaml)")
    elif key not in LABELS_ES:
        raise KeyError(f"label {key!r} has no Spanish translation in texts.LABELS_ES")
    return gr.I18n()(key)


def browser_lang(request: gr.Request | None) -> Lang:
    if request is None:
        return "en"
    headers = getattr(request, "headers", None) or {}
    return language_from_header(headers.get("accept-language"))
