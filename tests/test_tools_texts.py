"""The engine's text catalogue: every sentence in English and Spanish with the same fields,
read by one loader (the rule for every layer: tests/test_text_catalogues.py)."""

from __future__ import annotations

import json
import string
from importlib import resources

import pytest

from tools.cards import CLASS_TEXTS
from tools.i18n import as_language, gb, integer, number, shortest
from tools.texts import CATALOGUE_FILES, bilingual, catalogue, counted, text


def _raw(name: str) -> dict:
    return json.loads(resources.files("tools").joinpath("data", name).read_text(encoding="utf-8"))


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


CATALOGUE = {key: entry for name in CATALOGUE_FILES for key, entry in _raw(name).items()}
CLASS_ENTRIES = {
    f"{raw['id']}.{name}": raw[name] for raw in _raw("card_classes.json")["classes"] for name in CLASS_TEXTS
}


@pytest.mark.parametrize("key", sorted(CATALOGUE) + sorted(CLASS_ENTRIES))
def test_both_languages_with_the_same_fields(key: str) -> None:
    entry = CATALOGUE.get(key) or CLASS_ENTRIES[key]
    assert set(entry) == {"en", "es"} and entry["en"].strip() and entry["es"].strip()
    assert _fields(entry["en"]) == _fields(entry["es"])


def test_the_loader_reads_the_catalogue() -> None:
    assert text("train_fits", "es") == "cabe"
    assert text("verdict_no", "es") == "sigue sin caber"
    assert "{" not in text("kv_copies", "en", gpus=2, total="140,544")
    assert set(catalogue()) == set(CATALOGUE)


def test_every_counted_noun_has_both_forms() -> None:
    nouns = {key.rsplit("_", 1)[0] for key in CATALOGUE if key.endswith(("_one", "_many"))}
    assert nouns == {"sequence", "concurrent_sequence", "gpu"}
    for noun in nouns:
        assert counted(1, noun, "es").startswith("1 ") and counted(2, noun, "en").startswith("2 ")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"en": "x"}, "exactly the languages en, es"),
        ({"en": "x", "es": " "}, "empty"),
        ("x", "exactly"),
        ({"en": "{users} users", "es": "usuarios"}, "placeholders"),
    ],
)
def test_a_malformed_entry_is_named(entry: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bilingual(entry, "texts.json: 'k'")


@pytest.mark.parametrize(
    ("value", "lang", "decimals", "written"),
    [
        (12345.678, "en", 2, "12,345.68"),
        (12345.678, "es", 2, "12.345,68"),
        (-2.5, "es", 1, "-2,5"),
        (0.4, "es", 0, "0"),
    ],
)
def test_numbers_are_written_as_each_language_writes_them(value, lang, decimals, written) -> None:
    assert number(value, lang, decimals) == written
    assert number(3.0, lang, 1, sign=True).startswith("+")


def test_integers_and_gigabytes() -> None:
    assert integer(131072, "en") == "131,072" and integer(131072, "es") == "131.072"
    assert gb(70_553_706_496, "es") == "70,55" and gb(2_684_354_560, "en", 3) == "2.684"


def test_the_shortest_form_keeps_every_digit_and_the_decimal_mark() -> None:
    assert shortest(2.5, "es") == "2,5" and shortest(2.5, "en") == "2.5"
    assert shortest(30.0, "es") == "30" and shortest(0.25, "es") == "0,25"
    assert shortest(141.16, "es") == "141,16"


def test_a_language_code_is_read_or_refused() -> None:
    assert as_language(" ES ") == "es" and as_language("en") == "en"
    assert as_language("fr") is None and as_language("") is None
