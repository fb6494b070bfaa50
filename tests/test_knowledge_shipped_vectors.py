"""The precomputed vectors of the shipped articles: complete, faithful to the model, used, optional."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from knowledge import ArticleStore
from knowledge.build_vectors import record_texts, write
from knowledge.embedding_cache import cache_key
from knowledge.embeddings import MultilingualE5EmbeddingFunction
from knowledge.shipped_vectors import SHIPPED_VECTORS, ShippedVectors
from knowledge.store import SHIPPED_ARTICLES
from tests.article_pair import WEIGHTS_AND_CARDS, write_articles
from tests.fakes import CountingEmbeddings


def test_shipped_vectors_are_exactly_those_of_the_shipped_articles() -> None:
    identity = MultilingualE5EmbeddingFunction().identity
    wanted = {cache_key(identity, text) for text in record_texts(SHIPPED_ARTICLES, identity)}
    with np.load(SHIPPED_VECTORS, allow_pickle=False) as data:
        shipped = {key.decode() for key in data["keys"]}
    advice = "the shipped articles changed: run `make vectors` and commit knowledge/data/article-vectors.npz"
    assert wanted <= shipped, f"{len(wanted - shipped)} section texts have no shipped vector; {advice}"
    assert shipped <= wanted, (
        f"{len(shipped - wanted)} shipped vectors belong to no current section; {advice}"
    )


def test_shipped_vectors_equal_what_the_model_computes_now() -> None:
    embedder = MultilingualE5EmbeddingFunction()
    texts = record_texts(SHIPPED_ARTICLES, embedder.identity)
    sample = [texts[0], texts[1], texts[len(texts) // 2], texts[-2], texts[-1]]  # en and es, both kinds
    shipped = ShippedVectors().get_many([cache_key(embedder.identity, text) for text in sample])
    assert len(shipped) == len(sample)
    # The model's kernels differ by CPU (AVX-512 BF16/VNNI paths vs AVX2): the same text gives vectors
    # within ~1.5e-3 per element (cosine > 0.99995) on different machines. A stale vector of an edited
    # text is far further away (a one-figure edit of a sentence: cosine ~0.990), which is what this guards.
    for text, computed in zip(sample, embedder(sample), strict=True):
        stored = np.asarray(shipped[cache_key(embedder.identity, text)])
        cosine = float(np.dot(stored, computed) / (np.linalg.norm(stored) * np.linalg.norm(computed)))
        assert cosine > 0.9999, f"{text[:80]!r}: cosine {cosine:.6f}"
        np.testing.assert_allclose(stored, computed, atol=5e-3, err_msg=text[:80])


def test_a_fresh_index_of_the_shipped_articles_embeds_nothing(tmp_path: Path) -> None:
    embeddings = CountingEmbeddings()
    with ArticleStore(
        "shipped", SHIPPED_ARTICLES, embeddings, tmp_path / "chroma", shipped_vectors=ShippedVectors()
    ) as store:
        report = store.ingest()
        assert report.added == report.chunks > 100
        assert embeddings.embedded == []
        assert store.search("¿Qué es la caché KV?", k=3, lang="es")


def test_an_edited_section_is_embedded_and_the_rest_come_from_the_shipped_vectors(tmp_path: Path) -> None:
    articles = write_articles(tmp_path / "articles", WEIGHTS_AND_CARDS)
    embedder = MultilingualE5EmbeddingFunction()
    texts = record_texts(articles, embedder.identity)
    vectors_file = tmp_path / "vectors.npz"
    write(
        vectors_file,
        {cache_key(embedder.identity, t): v for t, v in zip(texts, embedder(texts), strict=True)},
    )
    weights = articles / "en" / "weights.md"
    weights.write_text(weights.read_text().replace("half a byte", "half a byte plus scales"))
    embeddings = CountingEmbeddings()
    with ArticleStore(
        "edited", articles, embeddings, tmp_path / "chroma", shipped_vectors=ShippedVectors(vectors_file)
    ) as store:
        assert store.ingest().chunks == 5
        assert len(embeddings.embedded) == 1 and "plus scales" in embeddings.embedded[0]


@pytest.mark.parametrize("content", [b"not a numpy file at all", b""])
def test_unreadable_shipped_vectors_are_logged_and_ignored(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "vectors.npz"
    broken.write_bytes(content)
    articles = write_articles(tmp_path / "articles", WEIGHTS_AND_CARDS)
    embeddings = CountingEmbeddings()
    with (
        caplog.at_level(logging.WARNING, logger="sizing.knowledge"),
        ArticleStore(
            "broken", articles, embeddings, tmp_path / "chroma", shipped_vectors=ShippedVectors(broken)
        ) as store,
    ):
        assert store.ingest().chunks == 5
    assert len(embeddings.embedded) == 10
    assert any("vectors.npz are unreadable" in record.message for record in caplog.records)
