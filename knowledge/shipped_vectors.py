"""Vectors of the shipped articles, computed once and shipped with the package.

A fresh machine builds its index from these instead of running the embedding model over every
section: `make run` answers sooner, and the Docker image builds faster. Only exact matches are used:
each vector is stored under `cache_key(embedder identity, text)`, so an edited section, an article
the business adds, or another embedding model simply misses and gets embedded at ingest as usual.

Regenerate after editing the shipped articles (a test fails until you do): `make vectors`, which
runs `knowledge/build_vectors.py`.
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

log = logging.getLogger("sizing.knowledge")

SHIPPED_VECTORS = Path(__file__).resolve().parent / "data" / "article-vectors.npz"


class ShippedVectors:
    """Read-only float32 vectors by cache key; a missing or unreadable file means no vectors."""

    def __init__(self, path: Path | None = SHIPPED_VECTORS) -> None:
        self.path = path

    @cached_property
    def _table(self) -> dict[str, np.ndarray]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            with np.load(self.path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
                if vectors.ndim != 2 or len(keys) != len(vectors):
                    raise ValueError(f"{len(keys)} keys for vectors of shape {vectors.shape}")
                return {
                    key.decode(): vector for key, vector in zip(keys, vectors.astype(np.float32), strict=True)
                }
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            log.warning(
                "shipped article vectors %s are unreadable (%s); embedding without them", self.path, exc
            )
            return {}

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        table = self._table
        return {key: table[key] for key in keys if key in table}

    def __len__(self) -> int:
        return len(self._table)
