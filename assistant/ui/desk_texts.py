"""Labels and messages of the sales-desk widgets (assistant/data/desk_ui.yaml) and its small loader."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

import yaml

from assistant.ui.texts import Lang


@cache
def _catalogue() -> dict[str, Any]:
    raw = resources.files("assistant").joinpath("data", "desk_ui.yaml").read_text(encoding="utf-8")
    return dict(yaml.safe_load(raw))


def labels_es() -> dict[str, str]:
    """English label → Spanish label, merged into the app's gr.I18n table."""
    return dict(_catalogue()["labels"])


def label(key: str) -> Any:
    """A label the browser translates; the key is the English text."""
    import gradio as gr

    if key not in labels_es():
        raise KeyError(f"label {key!r} has no Spanish translation in desk_ui.yaml")
    return gr.I18n()(key)


def desk_text(key: str, lang: Lang, **values: object) -> str:
    template = _catalogue()["messages"][key][lang]
    return template.format(**values) if values else template


@cache
def _asks_for_person() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in _catalogue()["ask_for_person"])


def asks_for_a_person(message: str) -> bool:
    """Does the message ask to talk to an engineer or a salesperson?"""
    from assistant.offline.understanding import fold

    folded = fold(message or "")
    return any(pattern.search(folded) for pattern in _asks_for_person())
