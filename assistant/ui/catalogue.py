"""The web chat's sentences (`data/web.yaml`): a named view of assistant/texts.py (WEB).

`phrase("followup_users", "es", users=20)` is one filled sentence; `label("label_stop")` is a
static label the browser translates by its locale (`i18n_tables()` feeds `gr.I18n`).
"""

from __future__ import annotations

from assistant.texts import WEB
from assistant.ui.texts import LANGUAGES, Lang

LABEL_PREFIX = "label_"

phrase = WEB.text
all_keys = WEB.keys


def i18n_tables() -> dict[Lang, dict[str, str]]:
    """The static labels per locale, keyed by catalogue key (for `gr.I18n`)."""
    labels = {key: versions for key, versions in WEB.entries.items() if key.startswith(LABEL_PREFIX)}
    return {lang: {key: versions[lang] for key, versions in labels.items()} for lang in LANGUAGES}
