"""The article format: parsing, section chunks, stable ids, translation pairs, malformed files."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.article_format import chunk_articles, load_articles, parse_article
from knowledge.errors import ArticleFormatError
from knowledge.store import SHIPPED_ARTICLES

GOOD_FRONT = "---\ntitle: Weights\nlang: en\nslug: weights\ntranslation_of: pesos\n---\n"


def write(folder: Path, relative: str, text: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_every_shipped_article_parses_and_has_a_translation_with_the_same_sections() -> None:
    articles, problems = load_articles(SHIPPED_ARTICLES)
    assert not problems, [str(p) for p in problems]
    by_slug = {(a.lang, a.slug): a for a in articles}
    assert {a.lang for a in articles} == {"en", "es"}
    for article in articles:
        assert article.translation_of, f"{article.path} names no translation"
        other = "es" if article.lang == "en" else "en"
        twin = by_slug.get((other, article.translation_of))
        assert twin is not None, f"{article.path}: translation {article.translation_of!r} missing"
        assert twin.translation_of == article.slug
        assert len(twin.sections) == len(article.sections), f"{article.path} vs {twin.path}"


def test_every_shipped_section_is_paired_with_its_translation() -> None:
    articles, _ = load_articles(SHIPPED_ARTICLES)
    chunks, warnings = chunk_articles(articles, "test")
    assert not warnings
    pairs: dict[str, set[str]] = {}
    for chunk in chunks:
        pairs.setdefault(chunk.pair_key, set()).add(chunk.lang)
    assert all(langs == {"en", "es"} for langs in pairs.values())


def test_sections_split_at_level_two_headings_outside_code_fences(tmp_path: Path) -> None:
    body = "Lead paragraph.\n\n## First\nOne.\n### Detail\nStill one.\n\n```\n## not a heading\n```\n\n## Second\nTwo.\n"
    article = parse_article(write(tmp_path, "en/weights.md", GOOD_FRONT + body), tmp_path)
    assert [s.heading for s in article.sections] == ["Weights", "First", "Second"]
    assert "### Detail" in article.sections[1].body and "## not a heading" in article.sections[1].body
    assert article.path == "en/weights.md"
    assert article.pair_name == "pesos|weights"


def test_chunk_ids_are_stable_and_hashes_follow_the_content(tmp_path: Path) -> None:
    write(tmp_path, "en/weights.md", GOOD_FRONT + "## Bytes\nTwo bytes each.\n## Cache\nGrows.\n")
    first, _ = chunk_articles(load_articles(tmp_path)[0], "embedder-a")
    again, _ = chunk_articles(load_articles(tmp_path)[0], "embedder-a")
    assert [c.id for c in first] == ["en/weights.md#bytes", "en/weights.md#cache"]
    assert [(c.id, c.content_hash) for c in first] == [(c.id, c.content_hash) for c in again]
    write(tmp_path, "en/weights.md", GOOD_FRONT + "## Bytes\nTwo bytes each, at 16 bits.\n## Cache\nGrows.\n")
    edited, _ = chunk_articles(load_articles(tmp_path)[0], "embedder-a")
    assert edited[0].id == first[0].id and edited[0].content_hash != first[0].content_hash
    assert edited[1].content_hash == first[1].content_hash
    other_embedder, _ = chunk_articles(load_articles(tmp_path)[0], "embedder-b")
    assert other_embedder[1].content_hash != first[1].content_hash


def test_translations_with_different_section_counts_are_not_paired(tmp_path: Path) -> None:
    write(tmp_path, "en/weights.md", GOOD_FRONT + "## A\none\n## B\ntwo\n")
    write(
        tmp_path,
        "es/pesos.md",
        "---\ntitle: Pesos\nlang: es\nslug: pesos\ntranslation_of: weights\n---\n## A\nuno\n",
    )
    chunks, warnings = chunk_articles(load_articles(tmp_path)[0], "test")
    assert len(warnings) == 1 and "en/weights.md" in warnings[0]
    assert len({c.pair_key for c in chunks}) == len(chunks)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no front matter\n## A\ntext\n", "does not start with front matter"),
        ("---\ntitle: x\nlang: en\nslug: x\n## A\ntext\n", "not closed"),
        ("---\ntitle: [unclosed\nlang: en\nslug: x\n---\n## A\ntext\n", "not valid YAML"),
        ("---\nlang: en\nslug: x\n---\n## A\ntext\n", "lacks 'title'"),
        ("---\ntitle: x\nlang: fr\nslug: x\n---\n## A\ntext\n", "lang 'fr'"),
        ("---\ntitle: x\nlang: es\nslug: x\n---\n## A\ntext\n", "does not match its folder"),
        ("---\ntitle: x\nlang: en\nslug: x\n---\n\n", "has no text"),
        ("---\n- a list\n---\n## A\ntext\n", "not a set of 'key: value' lines"),
        (
            "---\ntitle: x\nlang: en\nslug: x\nkind: faq\n---\n## A\ntext\n",
            "kind 'faq' is not one of article, glossary",
        ),
    ],
)
def test_malformed_article_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, "en/broken.md", text)
    with pytest.raises(ArticleFormatError) as caught:
        parse_article(path, tmp_path)
    assert str(caught.value).startswith("en/broken.md: ")
    assert problem in str(caught.value)


def test_non_utf8_article_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "latin1.md").write_bytes("---\ntitle: caché\n".encode("latin-1"))
    write(tmp_path, "en/weights.md", GOOD_FRONT + "## A\ntext\n")
    articles, problems = load_articles(tmp_path)
    assert [a.path for a in articles] == ["en/weights.md"]
    assert [str(p) for p in problems] == ["en/latin1.md: not UTF-8 text"]


def test_duplicate_slug_in_one_language_is_skipped_with_a_reason(tmp_path: Path) -> None:
    write(tmp_path, "en/a.md", GOOD_FRONT + "## A\ntext\n")
    write(tmp_path, "en/b.md", GOOD_FRONT + "## B\ntext\n")
    articles, problems = load_articles(tmp_path)
    assert [a.path for a in articles] == ["en/a.md"]
    assert "en/b.md" in str(problems[0]) and "already used by en/a.md" in str(problems[0])


def test_the_kind_of_an_article_reaches_its_sections_and_their_hash(tmp_path: Path) -> None:
    text = "---\ntitle: Words\nlang: en\nslug: words\n{kind}---\n## VRAM\nThe memory on the card.\n"
    plain = parse_article(write(tmp_path, "en/words.md", text.format(kind="")), tmp_path)
    glossary = parse_article(write(tmp_path, "en/words.md", text.format(kind="kind: glossary\n")), tmp_path)
    assert (plain.kind, glossary.kind) == ("article", "glossary")
    [plain_chunk], _ = chunk_articles([plain], embedder_id="e")
    [glossary_chunk], _ = chunk_articles([glossary], embedder_id="e")
    assert glossary_chunk.metadata()["kind"] == "glossary" and plain_chunk.metadata()["kind"] == "article"
    # Same text, different kind: the stored metadata differs, so an index must re-store the section.
    assert glossary_chunk.content_hash != plain_chunk.content_hash
