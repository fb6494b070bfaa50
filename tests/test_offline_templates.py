"""The offline data files the business edits stay complete and consistent in both languages."""

from __future__ import annotations

import dataclasses
import re
import string

import pytest

from assistant.offline.lexicon import Lexicon, lexicon, load_yaml
from assistant.offline.texts import _templates, faq_entries, texts
from assistant.schemas import SLOT_NAMES
from tools import PRECISIONS


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def flatten(entries: dict[str, object], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in entries.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = str(value)
    return flat


def test_both_languages_have_the_same_templates_with_the_same_placeholders() -> None:
    english, spanish = flatten(_templates()["en"]), flatten(_templates()["es"])
    assert set(english) == set(spanish)
    for key, template in english.items():
        assert fields(template) == fields(spanish[key]), key


@pytest.mark.parametrize("language", ["en", "es"])
def test_every_precision_task_and_slot_has_its_words(language: str) -> None:
    words = texts(language)  # type: ignore[arg-type]
    assert set(PRECISIONS) <= set(words.mapping("precision_labels"))
    task_ids = {task for _, task in lexicon().tasks}
    assert task_ids <= set(words.mapping("task_names")) and task_ids <= set(words.mapping("task_advice"))
    assert set(SLOT_NAMES) == set(words.mapping("followup_items"))


def test_faq_entries_answer_in_both_languages() -> None:
    entries = faq_entries()
    assert len(entries) >= 8
    for entry in entries.values():
        assert set(entry.answer) == {"en", "es"} and set(entry.search) == {"en", "es"}
        assert all(text.strip() for text in entry.answer.values())


def test_faq_answers_quote_no_percentage() -> None:
    """The article's rule: nobody can give a universal quality-loss percentage, so we never do."""
    for entry in faq_entries().values():
        for answer in entry.answer.values():
            assert not re.search(r"\d\s?%", answer), entry.id


def test_lexicon_patterns_compile_and_precision_ids_are_the_calculators() -> None:
    raw = load_yaml("lexicon.yaml")
    assert {entry["id"] for entry in raw["precision"]} <= set(PRECISIONS)
    assert raw["quantized_default"] in PRECISIONS
    assert lexicon().faq_triggers  # compiling happened without error


def test_each_lexicon_field_is_read_as_its_type_says() -> None:
    """The lexicon is compiled by each field's annotation: a pattern, a list of them, (pattern, id) pairs."""
    lex = lexicon()
    for spec in dataclasses.fields(Lexicon):
        value = getattr(lex, spec.name)
        if spec.type == "re.Pattern[str]":
            assert isinstance(value, re.Pattern), spec.name
        elif spec.type == "tuple[re.Pattern[str], ...]":
            assert value and all(isinstance(pattern, re.Pattern) for pattern in value), spec.name
        elif spec.type == "Pairs":
            assert value, spec.name
            assert all(isinstance(pattern, re.Pattern) and isinstance(id_, str) for pattern, id_ in value)
    assert lex.context_k == 1024 and lex.number_words["twenty"] == 20
