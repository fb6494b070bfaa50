"""The article index in Chroma: idempotent ingestion and hybrid bilingual search.

Build one with `open_store(settings)` from `main()`; nothing connects or reads files until the
first `ingest()`, `search()` or `healthy()` call. Embedded Chroma (`PersistentClient`) on disk
under `settings.chroma_path` unless `settings.chroma_url` names a Chroma server; the connection,
its failures and the rebuild of a corrupt index are `knowledge.chroma_client`'s.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from knowledge.article_format import Chunk, chunk_articles, load_articles
from knowledge.chroma_client import ChromaConnection
from knowledge.embedding_cache import EmbeddingCache, cache_key
from knowledge.errors import KnowledgeError
from knowledge.passages import IngestReport, Passage
from knowledge.ranking import SHIPPED_RANKING, Candidate, RankingOptions, rank
from knowledge.shipped_vectors import SHIPPED_VECTORS, ShippedVectors
from tools.i18n import LANGUAGES

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from knowledge.embeddings import MultilingualE5EmbeddingFunction, OpenAICompatibleEmbeddingFunction

log = logging.getLogger("sizing.knowledge")

SHIPPED_ARTICLES = Path(__file__).resolve().parent / "articles"
# Nearest records Chroma returns, both languages together, before the hybrid re-ranking. The shipped
# articles have 436 records (218 sections, each with a full-text and a heading record, see
# HEADING_SUFFIX), so every record is scored: exact, and one distances-only query costs less than two
# per-language queries of 120 records (measured with benchmarks/retrieval.py: less search CPU, one more
# top-3 hit over the 315 golden questions). A larger article set keeps the nearest 480.
CANDIDATES = 480
# Record ids are "<section id>@<content hash>" (article path, section, content hash), so a
# record id always names the same text: search caches each record's document and metadata by id and
# asks Chroma for distances only, which costs 2-3 ms per query instead of 8-9 ms with documents and
# metadata included (measured on the shipped articles).
RECORD_HASH_SEPARATOR = "@"
# Every section is also indexed by its title and heading alone, under "<record id><HEADING_SUFFIX>",
# and a section's similarity is the better of its two records. A long section's vector blurs
# several topics; the heading states the topic in a few words, which is what short and definitional
# questions ("What is a KV cache?") match. Measured on three golden sets with
# `benchmarks/retrieval.py --variants` (README): recall@3 up on both held-out sets.
HEADING_SUFFIX = "~heading"
_CONTENT_HASH = re.compile(r"[0-9a-f]{16}")
# Sections embedded per call during ingestion: bounds memory on large article sets.
EMBED_BATCH = 32
# Documents and metadata kept in memory for search, by record id; far above any real article set, it
# only bounds memory when articles are edited over and over in a long-running process.
RECORD_CACHE_LIMIT = 20_000


class KnowledgeSettings(Protocol):
    """What the store reads from the settings (assistant.settings.Settings fits)."""

    @property
    def chroma_path(self) -> Path: ...
    @property
    def chroma_url(self) -> str | None: ...
    @property
    def collection(self) -> str: ...
    @property
    def articles_dir(self) -> Path | None: ...
    @property
    def embeddings_base_url(self) -> str | None: ...
    @property
    def embeddings_model(self) -> str: ...
    @property
    def embeddings_api_key(self) -> Any: ...


def open_store(settings: KnowledgeSettings) -> ArticleStore:
    """The store the settings describe; connects lazily."""
    from knowledge.embeddings import build_embedding_function

    key = settings.embeddings_api_key
    api_key = key.get_secret_value() if hasattr(key, "get_secret_value") else key
    return ArticleStore(
        collection_name=settings.collection,
        articles_dir=Path(settings.articles_dir) if settings.articles_dir else SHIPPED_ARTICLES,
        embedding_function=build_embedding_function(
            settings.embeddings_base_url, settings.embeddings_model, api_key
        ),
        chroma_path=Path(settings.chroma_path),
        chroma_url=settings.chroma_url,
        shipped_vectors=ShippedVectors(SHIPPED_VECTORS),
    )


class ArticleStore:
    """Sections of the Markdown articles, embedded in a Chroma collection.

    `ranking` is fixed for the store's life: the shipped ranking unless a benchmark compares variants.
    """

    def __init__(
        self,
        collection_name: str,
        articles_dir: Path,
        embedding_function: MultilingualE5EmbeddingFunction | OpenAICompatibleEmbeddingFunction,
        chroma_path: Path,
        chroma_url: str | None = None,
        shipped_vectors: ShippedVectors | None = None,
        ranking: RankingOptions = SHIPPED_RANKING,
    ) -> None:
        self.chroma = ChromaConnection(collection_name, embedding_function, chroma_path, chroma_url)
        self.collection_name = collection_name
        self.articles_dir = articles_dir
        self.embedding_function = embedding_function
        self.chroma_path = chroma_path
        self.chroma_url = chroma_url
        self.ranking = ranking
        # The collection object last found to hold the articles; another object (after a reconnection
        # or a rebuild) is checked again before a search.
        self._built: Collection | None = None
        self._lock = threading.RLock()
        # Next to the index, outside it: a corrupt index is deleted, but its vectors can be reused.
        self.embedding_cache = EmbeddingCache(chroma_path.parent / "embedding-cache.sqlite3")
        # Precomputed vectors of the shipped articles (none: embed everything, as benchmarks measure).
        self.shipped_vectors = shipped_vectors or ShippedVectors(None)
        # Record id -> (document, metadata). Safe to share across threads and to keep across ingests
        # and reconnections: a record id includes its content hash, so it always names the same text.
        self._records: dict[str, tuple[str, dict[str, Any]]] = {}

    @property
    def location(self) -> str:
        return self.chroma.location

    # ---- public API -------------------------------------------------------------------------------

    def ingest(self, rebuild: bool = False) -> IngestReport:
        """Bring the index in line with the articles: add new sections, re-embed changed ones, drop gone ones."""
        with self._lock:
            if rebuild:
                self.chroma.drop()
            return self.chroma.guarded(self._sync)

    def search(self, query: str, k: int = 3, lang: str | None = None) -> list[Passage]:
        """The `k` sections that best answer `query`, best first; `lang` keeps one language only."""
        if lang is not None and lang not in LANGUAGES:
            raise KnowledgeError(f"unknown language {lang!r}; valid choices: {', '.join(LANGUAGES)}")
        if k < 1:
            raise KnowledgeError(f"k must be at least 1, got {k}")
        if not query.strip():
            return []
        with self._lock:
            self.chroma.guarded(self._ensure_built)
        return self.chroma.guarded(lambda: self._search(query, k, lang))

    def healthy(self) -> bool:
        """True when the index can be reached; never raises."""
        with self._lock:
            return self.chroma.healthy()

    def close(self) -> None:
        """Release the Chroma client (HTTP sessions, SQLite handles); the store reconnects if used again."""
        with self._lock:
            self.chroma.close()
            self._built = None

    def __enter__(self) -> ArticleStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _ensure_built(self) -> None:
        """Build the index on first use (an empty or missing collection)."""
        collection = self.chroma.collection()
        if collection is self._built:
            return
        if collection.count() == 0:
            log.info("knowledge index at %s is empty; building it from %s", self.location, self.articles_dir)
            self._sync()
        self._built = collection

    # ---- ingestion --------------------------------------------------------------------------------

    def _sync(self) -> IngestReport:
        started = time.perf_counter()
        if not self.articles_dir.is_dir():
            raise KnowledgeError(f"articles folder {self.articles_dir} does not exist")
        articles, problems = load_articles(self.articles_dir)
        for problem in problems:
            log.warning("skipping malformed article %s", problem)
        chunks, warnings = chunk_articles(articles, self.embedding_function.identity)
        for warning in warnings:
            log.warning("%s", warning)
        collection = self.chroma.collection()
        stored = set(collection.get(include=[])["ids"])
        wanted = {_record_id(chunk) for chunk in chunks}
        wanted |= {record_id + HEADING_SUFFIX for record_id in wanted}
        stored_sections = {_section_id(record_id) for record_id in stored}
        # A section is new when no record of it exists, changed when its full-text record is missing
        # under the current hash. Each kind of record is written when absent, so an index missing only
        # heading records (an older version, an interrupted ingest) gets them without counting a change.
        new = [c for c in chunks if c.id not in stored_sections]
        changed = [c for c in chunks if c.id in stored_sections and _record_id(c) not in stored]
        gone = sorted(stored - wanted)
        if gone:
            collection.delete(ids=gone)
        self._upsert(collection, [c for c in chunks if _record_id(c) not in stored], full_text=True)
        self._upsert(
            collection, [c for c in chunks if _record_id(c) + HEADING_SUFFIX not in stored], full_text=False
        )
        identity = self.embedding_function.identity
        self.embedding_cache.prune(
            [cache_key(identity, text) for c in chunks for text in (c.embedding_text, c.heading_text)]
        )
        live_sections = {chunk.id for chunk in chunks}
        report = IngestReport(
            chunks=len(chunks),
            added=len(new),
            updated=len(changed),
            removed=len(stored_sections - live_sections),
            skipped_files=[str(problem) for problem in problems],
        )
        log.info(
            "ingested %d articles from %s into %s in %.1f s: %d sections, %d added, %d updated, %d removed",
            len(articles),
            self.articles_dir,
            self.location,
            time.perf_counter() - started,
            report.chunks,
            report.added,
            report.updated,
            report.removed,
        )
        self._built = collection
        return report

    def _upsert(self, collection: Collection, chunks: list[Chunk], full_text: bool) -> None:
        """Embed and store the sections' full-text records, or their title + heading records.

        Both kinds carry the section's text and metadata, so either one alone yields a Passage.
        """
        for start in range(0, len(chunks), EMBED_BATCH):
            batch = chunks[start : start + EMBED_BATCH]
            texts = [c.embedding_text if full_text else c.heading_text for c in batch]
            collection.upsert(
                ids=[_record_id(c) + ("" if full_text else HEADING_SUFFIX) for c in batch],
                documents=[c.text for c in batch],
                embeddings=self._embed_passages(texts),  # type: ignore[arg-type]
                metadatas=[c.metadata() for c in batch],  # type: ignore[misc]
            )

    def _embed_passages(self, texts: list[str]) -> list[Any]:
        """Vectors for `texts`: from the embedding cache or the shipped vectors where the same text was
        embedded before by the same model, computed otherwise."""
        identity = self.embedding_function.identity
        keys = [cache_key(identity, text) for text in texts]
        cached = self.embedding_cache.get_many(keys)
        cached.update(self.shipped_vectors.get_many([key for key in keys if key not in cached]))
        missing = [i for i, key in enumerate(keys) if key not in cached]
        if missing:
            fresh = self.embedding_function([texts[i] for i in missing])
            computed = {keys[i]: vector for i, vector in zip(missing, fresh, strict=True)}
            self.embedding_cache.put_many(computed)
            cached.update(computed)
        return [cached[key] for key in keys]

    # ---- search -----------------------------------------------------------------------------------

    def _search(self, query: str, k: int, lang: str | None) -> list[Passage]:
        collection = self.chroma.collection()
        query_embedding = self.embedding_function.embed_query([query])
        best_similarity: dict[str, float] = {}
        record_of_section: dict[str, str] = {}
        found = collection.query(
            query_embeddings=query_embedding,  # type: ignore[arg-type]
            n_results=CANDIDATES,
            include=["distances"],
        )
        for record_id, distance in zip(found["ids"][0], (found["distances"] or [[]])[0], strict=True):
            if record_id.endswith(HEADING_SUFFIX) and not self.ranking.heading_records:
                continue
            chunk_id = _section_id(record_id)
            record_of_section[chunk_id] = record_id.removesuffix(HEADING_SUFFIX)
            similarity = 1.0 - float(distance)  # cosine space: distance = 1 - similarity
            best_similarity[chunk_id] = max(similarity, best_similarity.get(chunk_id, -1.0))
        by_id = self._documents(collection, record_of_section)
        candidates = []
        for chunk_id, similarity in best_similarity.items():
            if chunk_id not in by_id:  # deleted by another process between the two calls
                continue
            document, metadata = by_id[chunk_id]
            candidates.append(
                Candidate(
                    id=chunk_id,
                    text=f"{metadata.get('title', '')} {metadata.get('section', '')} {document}",
                    lang=str(metadata.get("lang", "")),
                    pair_key=str(metadata.get("pair_key", chunk_id)),
                    similarity=similarity,
                    definitions=metadata.get("kind") == "glossary",
                )
            )
        passages = []
        options = self.ranking
        for ranked in rank(
            query,
            candidates,
            k=k,
            lang=lang,
            lexical_weight=options.lexical_weight,
            pool_translations=options.pool_translations,
            bilingual_terms=options.bilingual_terms,
            definition_boost=options.definition_boost,
        ):
            document, metadata = by_id[ranked.id]
            passages.append(
                Passage(
                    text=document,
                    title=str(metadata.get("title", "")),
                    path=str(metadata.get("path", "")),
                    section=str(metadata.get("section", "")),
                    lang=str(metadata.get("lang", "")),
                    score=ranked.score,
                )
            )
        return passages

    def _documents(
        self, collection: Collection, record_of_section: dict[str, str]
    ) -> dict[str, tuple[str, dict[str, Any]]]:
        """Document and metadata of each section's record: from memory, or fetched once from Chroma."""
        missing = [record_id for record_id in record_of_section.values() if record_id not in self._records]
        if missing:
            fetched = collection.get(ids=missing, include=["documents", "metadatas"])
            if len(self._records) + len(fetched["ids"]) > RECORD_CACHE_LIMIT:
                self._records = {}
            for record_id, document, metadata in zip(
                fetched["ids"], fetched["documents"] or [], fetched["metadatas"] or [], strict=True
            ):
                self._records[record_id] = (document or "", dict(metadata or {}))
        records = self._records
        return {
            chunk_id: records[record_id]
            for chunk_id, record_id in record_of_section.items()
            if record_id in records
        }


def _record_id(chunk: Chunk) -> str:
    """The id of a section's full-text record; its heading record adds HEADING_SUFFIX."""
    return f"{chunk.id}{RECORD_HASH_SEPARATOR}{chunk.content_hash}"


def _section_id(record_id: str) -> str:
    """The section a record belongs to: its id without the heading suffix and the content hash.

    Ids written before records carried a hash are section ids already.
    """
    base = record_id.removesuffix(HEADING_SUFFIX)
    section, separator, digest = base.rpartition(RECORD_HASH_SEPARATOR)
    return section if separator and _CONTENT_HASH.fullmatch(digest) else base
