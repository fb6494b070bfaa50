"""The embedding cache: vectors by content hash, last use remembered, unused ones pruned."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from knowledge.embedding_cache import KEEP_UNUSED_DAYS, EmbeddingCache, cache_key

DAY = 86_400.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000_000.0

    def __call__(self) -> float:
        return self.now


def vector(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(4, dtype=np.float32)


def test_vectors_come_back_as_written(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite3")
    assert cache.get_many(["absent"]) == {}  # no file yet: nothing, and no error
    cache.put_many({"a": vector(1), "b": vector(2)})
    found = cache.get_many(["a", "b", "c"])
    assert set(found) == {"a", "b"}
    np.testing.assert_array_equal(found["a"], vector(1))


def test_prune_drops_only_vectors_unused_for_the_keep_period(tmp_path: Path) -> None:
    clock = Clock()
    cache = EmbeddingCache(tmp_path / "cache.sqlite3", clock=clock)
    cache.put_many({"old-edit": vector(1), "read-lately": vector(2), "current": vector(3)})
    clock.now += (KEEP_UNUSED_DAYS - 10) * DAY
    cache.get_many(["read-lately"])  # a rebuild read it 10 days before the cutoff
    clock.now += 20 * DAY
    # "current" is still a section of the articles: the ingest marks it in use, so it stays.
    assert cache.prune(in_use=["current"]) == 1
    assert set(cache.get_many(["old-edit", "read-lately", "current"])) == {"read-lately", "current"}


def test_a_cache_written_before_rows_remembered_their_use_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        connection.execute("INSERT INTO vectors VALUES (?, ?)", ("kept", vector(1).tobytes()))
        connection.execute("INSERT INTO vectors VALUES (?, ?)", ("stale", vector(2).tobytes()))
    connection.close()
    cache = EmbeddingCache(path)
    np.testing.assert_array_equal(cache.get_many(["kept"])["kept"], vector(1))
    assert cache.prune(in_use=["kept"]) == 1  # never used since the migration: older than any cutoff
    assert set(cache.get_many(["kept", "stale"])) == {"kept"}


def test_prune_of_a_missing_or_unreadable_file_is_harmless(tmp_path: Path) -> None:
    assert EmbeddingCache(tmp_path / "absent.sqlite3").prune(in_use=["x"]) == 0
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database" * 100)
    assert EmbeddingCache(broken).prune(in_use=["x"]) == 0


def test_keys_depend_on_the_model_and_the_exact_text() -> None:
    assert cache_key("model-a", "text") != cache_key("model-b", "text")
    assert cache_key("model-a", "text") != cache_key("model-a", "text ")
    assert cache_key("model-a", "text") == cache_key("model-a", "text")
