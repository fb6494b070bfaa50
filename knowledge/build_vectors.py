"""Embed the shipped articles and write `knowledge/data/article-vectors.npz` (see knowledge.shipped_vectors).

Run after editing anything under knowledge/articles: `make vectors`, or
`.venv/bin/python -m knowledge.build_vectors [--out PATH]`. Takes about as long as a cold ingest.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from knowledge.shipped_vectors import SHIPPED_VECTORS


def record_texts(articles_dir: Path, embedder_identity: str) -> list[str]:
    """Every text ingest embeds for these articles: each section's full-text and heading records."""
    from knowledge.article_format import chunk_articles, load_articles

    articles, problems = load_articles(articles_dir)
    if problems:
        raise SystemExit("malformed articles: " + "; ".join(str(problem) for problem in problems))
    chunks, _ = chunk_articles(articles, embedder_identity)
    return [text for chunk in chunks for text in (chunk.embedding_text, chunk.heading_text)]


def write(path: Path, vectors: dict[str, np.ndarray]) -> None:
    keys = sorted(vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:  # np.savez_compressed appends ".npz" to a str path, not to a file
        np.savez_compressed(
            file,
            keys=np.array([key.encode() for key in keys], dtype="S64"),
            vectors=np.stack([np.asarray(vectors[key], dtype=np.float32) for key in keys]),
        )


def main(argv: list[str] | None = None) -> int:
    from knowledge.embedding_cache import cache_key
    from knowledge.embeddings import MultilingualE5EmbeddingFunction
    from knowledge.shipped_vectors import ShippedVectors
    from knowledge.store import SHIPPED_ARTICLES

    parser = argparse.ArgumentParser(description="Embed the shipped articles and write their vectors.")
    parser.add_argument("--articles", type=Path, default=SHIPPED_ARTICLES, help=f"default {SHIPPED_ARTICLES}")
    parser.add_argument("--out", type=Path, default=SHIPPED_VECTORS, help=f"default {SHIPPED_VECTORS}")
    args = parser.parse_args(argv)
    embedder = MultilingualE5EmbeddingFunction()
    keys = {
        cache_key(embedder.identity, text): text for text in record_texts(args.articles, embedder.identity)
    }
    # Unchanged sections keep their vectors from the current file; only new or edited text is embedded.
    vectors = ShippedVectors(args.out).get_many(list(keys))
    missing = [key for key in keys if key not in vectors]
    if missing:
        vectors.update(zip(missing, embedder([keys[key] for key in missing]), strict=True))
    write(args.out, vectors)
    print(f"wrote {len(vectors)} vectors of {embedder.identity} to {args.out} ({len(missing)} embedded now)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
