"""tools/data/engine_texts.json: every sentence in English and Spanish, with the same fields."""

from __future__ import annotations

import json
import string
from importlib import resources

import pytest

from tools.texts import TEXTS, text

CATALOGUE = {
    key: value
    for key, value in json.loads(
        resources.files("tools").joinpath("data", "engine_texts.json").read_text(encoding="utf-8")
    ).items()
    if isinstance(value, dict)
}


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@pytest.mark.parametrize("key", sorted(CATALOGUE))
def test_both_languages_with_the_same_fields(key: str) -> None:
    entry = CATALOGUE[key]
    assert set(entry) == {"en", "es"} and entry["en"].strip() and entry["es"].strip()
    assert _fields(entry["en"]) == _fields(entry["es"])
    assert key not in TEXTS  # one home per sentence


def test_the_loader_reads_the_catalogue() -> None:
    assert text("train_fits", "es") == "cabe"
    assert "{" not in text("kv_copies", "en", gpus=2, total="140,544")
