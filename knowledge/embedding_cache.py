"""Passage embeddings kept by content hash, so a rebuild re-embeds only the text that changed.

One SQLite file next to the index (`<data dir>/embedding-cache.sqlite3`). The key hashes the
embedding function's identity together with the exact text, so vectors of another model or of edited
text are never reused. The cache is an optimisation only: a file that cannot be read or written is
logged and ignored, and ingestion embeds everything as if it were absent.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np

log = logging.getLogger("sizing.knowledge")


def cache_key(embedder_identity: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_identity}\x1f{text}".encode()).hexdigest()


class EmbeddingCache:
    """float32 vectors by `cache_key`; every failure degrades to "not cached"."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        if not keys or not self.path.exists():
            return {}
        try:
            with self._connect() as connection:
                found: dict[str, np.ndarray] = {}
                # SQLite limits bound parameters per statement (999 in older builds): ask in slices.
                for start in range(0, len(keys), 500):
                    wanted = list(keys[start : start + 500])
                    rows = connection.execute(
                        f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(wanted))})",
                        wanted,
                    )
                    found.update({key: np.frombuffer(blob, dtype=np.float32).copy() for key, blob in rows})
                return found
        except sqlite3.Error as exc:
            log.warning("embedding cache %s is unreadable (%s); embedding without it", self.path, exc)
            return {}

    def put_many(self, vectors: dict[str, np.ndarray]) -> None:
        if not vectors:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                    [(key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in vectors.items()],
                )
        except (OSError, sqlite3.Error) as exc:
            log.warning("embedding cache %s could not be written (%s); continuing without it", self.path, exc)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection committed on success and always closed."""
        with closing(sqlite3.connect(self.path, timeout=10)) as connection, connection:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
            )
            yield connection
