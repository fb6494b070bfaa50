"""A full disk under the embedded index is reported as a full disk, and the index is kept.

Chroma reports a write that found no space as, say, "Error in compaction"; read as a corrupt
index, the store would delete the index and fail to rebuild it on the same full disk.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from knowledge import ArticleStore
from knowledge.disk import MIN_FREE_BYTES, disk_full
from knowledge.embeddings import MultilingualE5EmbeddingFunction
from knowledge.errors import KnowledgeUnavailableError
from tests.article_pair import write_articles


class Usage(NamedTuple):
    total: int
    used: int
    free: int


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ArticleStore]:
    articles = write_articles(tmp_path / "articles")
    with ArticleStore(
        "test-articles", articles, MultilingualE5EmbeddingFunction(), tmp_path / "data" / "chroma"
    ) as opened:
        opened.ingest()
        yield opened


def test_a_compaction_error_on_a_full_disk_says_the_disk_is_full(
    store: ArticleStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chromadb.errors import InternalError

    def compaction_failed() -> Any:
        raise InternalError("Error executing plan: Internal error: Error in compaction: Failed to apply logs")

    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10**9, 10**9, 4096))
    with pytest.raises(
        KnowledgeUnavailableError, match=r"disk holding the knowledge index .* is full \(no free"
    ):
        store.chroma.guarded(compaction_failed)
    assert (store.chroma_path / "chroma.sqlite3").exists()  # kept, not deleted for a rebuild
    monkeypatch.undo()
    assert store.search("KV cache", k=1, lang="en")


def test_the_rust_words_for_no_space_are_a_full_disk(store: ArticleStore) -> None:
    def no_space() -> Any:
        raise RuntimeError("Failed to write segment: No space left on device (os error 28)")

    with pytest.raises(KnowledgeUnavailableError, match="is full"):
        store.chroma.guarded(no_space)
    assert (store.chroma_path / "chroma.sqlite3").exists()


def test_disk_full_reads_errno_causes_and_free_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space")
        except OSError as inner:
            raise RuntimeError("Error in compaction") from inner
    except RuntimeError as wrapped:
        assert disk_full(wrapped, tmp_path / "chroma")
    corrupt = RuntimeError("Error in compaction: malformed segment")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10**12, 0, 10**12))
    assert not disk_full(corrupt, tmp_path / "chroma")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10**12, 10**12, MIN_FREE_BYTES - 1))
    assert disk_full(corrupt, tmp_path / "not" / "yet" / "made")
