"""Text in two languages has one shape and one home per layer: catalogue files of `key -> {en, es}`
read by one loader (tools/texts.py for tools/, assistant/texts.py for assistant/), never a Python
`{"en": ..., "es": ...}` literal nor a table per language."""

from __future__ import annotations

import ast
import json
import re
import string
from pathlib import Path

import pytest
import yaml

from assistant.texts import CATALOGUES, Catalogue
from tools.texts import CATALOGUE_FILES

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("tools", "knowledge", "assistant")
LANGUAGES = {"en", "es"}

# The loaders may name the languages while they build each entry from its file; no other module
# holds bilingual text. Today neither needs a literal, and this list is all the exceptions there are.
LOADERS = {
    "tools/texts.py": "reads tools/data/texts.json and perf_texts.json",
    "assistant/texts.py": "reads the assistant's YAML catalogues",
}
# A table of one language whose other language lives elsewhere, kept on purpose.
ONE_LANGUAGE_TABLES = {
    # The English is the CLI's own error message (assistant/evals/errors.py: TASK_PROBLEMS), with
    # pydantic's English `detail`; the Spanish words pydantic's checks one by one and leaves the
    # English detail out, so the two do not have the same placeholders or keys.
    ("assistant/ui/texts.py", "TASK_PROBLEMS_ES"),
}
# Data files with en/es values inside records rather than a catalogue: the texts sit beside the
# figures or patterns they describe. Each such value is still held to both languages below.
RECORD_FILES = {
    "tools/data/card_classes.json": "each class's texts beside the claims that back its figures",
    "tools/data/service_classes.json": "each service class's name beside its targets",
    "assistant/offline/data/faq.yaml": "each answer beside its triggers and search queries",
    "assistant/offline/data/lexicon.yaml": "words to recognise per language, not sentences to show",
}

CATALOGUE_PATHS = [f"tools/data/{name}" for name in CATALOGUE_FILES] + [
    f"assistant/{catalogue.path}" for catalogue in CATALOGUES
]


def python_files() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


def bilingual_literals(path: Path) -> list[int]:
    """Lines of dict literals (or dict(...) calls) keyed by a language code."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        keys: list[object] = []
        if isinstance(node, ast.Dict):
            keys = [key.value for key in node.keys if isinstance(key, ast.Constant)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys = [keyword.arg for keyword in node.keywords]
        if isinstance(node, (ast.Dict, ast.Call)) and LANGUAGES & set(keys):
            found.append(node.lineno)
    return found


def one_language_tables(path: Path) -> list[tuple[str, int]]:
    """Module-level names such as LABELS_ES or words_en: a table of one language."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for target in targets:
            if isinstance(target, ast.Name) and re.search(r"(?i)_(en|es)$", target.id):
                found.append((target.id, node.lineno))
    return found


def test_no_bilingual_literal_outside_the_loaders() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in python_files()
        if str(path.relative_to(ROOT)) not in LOADERS
        for line in bilingual_literals(path)
    ]
    assert offenders == [], "bilingual text belongs in a catalogue file: " + ", ".join(offenders)


def test_no_table_per_language() -> None:
    offenders = [
        f"{where}:{line} {name}"
        for path in python_files()
        for name, line in one_language_tables(path)
        if ((where := str(path.relative_to(ROOT))), name) not in ONE_LANGUAGE_TABLES
    ]
    assert offenders == [], "a table per language is a second home for bilingual text: " + ", ".join(
        offenders
    )


def test_the_exceptions_are_real() -> None:
    assert all((ROOT / path).is_file() for path in LOADERS)
    for where, name in ONE_LANGUAGE_TABLES:
        assert any(found == name for found, _ in one_language_tables(ROOT / where))


def test_the_scans_find_what_they_look_for(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        'WORDS = {"en": "yes", "es": "sí"}\nOTHER = dict(es="no")\nNAMES_ES: dict = {}\ndef f():\n    X_EN = 1\n',
        encoding="utf-8",
    )
    assert bilingual_literals(probe) == [1, 2]
    assert one_language_tables(probe) == [("NAMES_ES", 3)]


def _load(path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _language_maps(value: object) -> list[dict]:
    """Every mapping in a data file that is keyed by a language code."""
    if isinstance(value, dict):
        own = [value] if LANGUAGES & set(value) else []
        return own + [found for item in value.values() for found in _language_maps(item)]
    if isinstance(value, list):
        return [found for item in value for found in _language_maps(item)]
    return []


@pytest.mark.parametrize("path", CATALOGUE_PATHS)
def test_every_entry_has_both_languages_and_the_same_placeholders(path: str) -> None:
    entries = _load(ROOT / path)
    assert isinstance(entries, dict) and entries
    for key, entry in entries.items():
        assert isinstance(key, str) and isinstance(entry, dict) and set(entry) == LANGUAGES, f"{path}: {key}"
        assert all(isinstance(version, str) and version.strip() for version in entry.values()), (
            f"{path}: {key}"
        )
        assert _fields(entry["en"]) == _fields(entry["es"]), f"{path}: {key}"


def test_every_bilingual_data_file_is_a_catalogue_or_a_record_file() -> None:
    data_files = sorted(
        path
        for folder in FOLDERS
        for pattern in ("*.json", "*.yaml")
        for path in (ROOT / folder).rglob(pattern)
        if "articles" not in path.parts
    )
    bilingual = {str(path.relative_to(ROOT)) for path in data_files if _language_maps(_load(path))}
    assert bilingual == set(CATALOGUE_PATHS) | set(RECORD_FILES)


@pytest.mark.parametrize("path", sorted(RECORD_FILES))
def test_the_texts_in_record_files_have_both_languages(path: str) -> None:
    maps = _language_maps(_load(ROOT / path))
    assert maps and all(set(found) == LANGUAGES for found in maps), path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('one: {en: "only English"}\n', "exactly the languages en, es"),
        ('two: {en: "x", es: "y", fr: "z"}\n', "exactly the languages en, es"),
        ('blank: {en: "x", es: " "}\n', "empty"),
        ('fields: {en: "{count} users", es: "usuarios"}\n', "placeholders"),
        ('yes: {en: "yes", es: "sí"}\n', "must be quoted text"),
    ],
)
def test_the_loader_refuses_a_malformed_entry(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "probe.yaml").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        _ = Catalogue("probe.yaml", root=tmp_path).entries


def test_the_loader_fills_and_lists(tmp_path: Path) -> None:
    (tmp_path / "probe.yaml").write_text('ok: {en: "Hello {name}", es: "Hola {name}"}\n', encoding="utf-8")
    probe = Catalogue("probe.yaml", root=tmp_path)
    assert probe.text("ok", "es", name="Ana") == "Hola Ana" and probe.text("ok", "en") == "Hello {name}"
    assert "ok" in probe and probe.keys() == {"ok"} and dict(probe.versions("ok"))["en"] == "Hello {name}"


def test_every_catalogue_loads() -> None:
    for catalogue in CATALOGUES:
        assert catalogue.keys(), catalogue.path


@pytest.mark.parametrize(
    ("lang", "words"),
    [
        ("en", ["option", "usable GB", "Arithmetic:", "Recommendation:", "  yes  "]),
        ("es", ["opción", "GB útiles", "Aritmética:", "Recomendación:", "  sí  "]),
    ],
)
def test_the_calc_report_reads_its_words_from_the_catalogue(lang: str, words: list[str]) -> None:
    from assistant.cli.calc import render_table
    from tools import SizingRequest, calculate_vram

    report = render_table(calculate_vram(SizingRequest(model="llama-3.1-8b", lang=lang)))
    assert all(word in report for word in words), report
