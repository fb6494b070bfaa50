"""Passage embeddings kept by content hash, so a rebuild re-embeds only the text that changed.

One SQLite file next to the index (`<data dir>/embedding-cache.sqlite3`). The key hashes the
embedding function's identity together with the exact text, so vectors of another model or of edited
text are never reused. Each row remembers when it was last written or read; `prune()` drops rows
unused for `KEEP_UNUSED_DAYS`, so a long-running deployment that keeps editing articles does not
grow the file forever. The cache is an optimisation only: a file that cannot be read or written is
logged and ignored, and ingestion embeds everything as if it were absent.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np

log = logging.getLogger("sizing.knowledge")

# Vectors of text no ingest has asked for in this long are dropped: old versions of edited sections,
# or another embedding model's. Long enough that a rebuild after a holiday still finds its vectors.
KEEP_UNUSED_DAYS = 90


def cache_key(embedder_identity: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_identity}\x1f{text}".encode()).hexdigest()


class EmbeddingCache:
    """float32 vectors by `cache_key`; every failure degrades to "not cached"."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock

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
                connection.executemany(
                    "UPDATE vectors SET last_used = ? WHERE key = ?", [(self.clock(), key) for key in found]
                )
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
                now = self.clock()
                connection.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vector, last_used) VALUES (?, ?, ?)",
                    [(key, np.asarray(v, dtype=np.float32).tobytes(), now) for key, v in vectors.items()],
                )
        except (OSError, sqlite3.Error) as exc:
            log.warning("embedding cache %s could not be written (%s); continuing without it", self.path, exc)

    def prune(self, in_use: Sequence[str], keep_unused_days: float = KEEP_UNUSED_DAYS) -> int:
        """Mark `in_use` as used now, then drop vectors unused for `keep_unused_days`; returns the count."""
        if not self.path.exists():
            return 0
        try:
            with self._connect() as connection:
                now = self.clock()
                connection.executemany(
                    "UPDATE vectors SET last_used = ? WHERE key = ?", [(now, k) for k in in_use]
                )
                cutoff = now - keep_unused_days * 86_400
                return connection.execute("DELETE FROM vectors WHERE last_used < ?", (cutoff,)).rowcount
        except sqlite3.Error as exc:
            log.warning("embedding cache %s could not be pruned (%s); leaving it as it is", self.path, exc)
            return 0

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection committed on success and always closed."""
        with closing(sqlite3.connect(self.path, timeout=10)) as connection, connection:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS vectors "
                "(key TEXT PRIMARY KEY, vector BLOB NOT NULL, last_used REAL NOT NULL DEFAULT 0)"
            )
            columns = {row[1] for row in connection.execute("PRAGMA table_info(vectors)")}
            if "last_used" not in columns:  # a cache written before rows remembered their use
                connection.execute("ALTER TABLE vectors ADD COLUMN last_used REAL NOT NULL DEFAULT 0")
            yield connection
