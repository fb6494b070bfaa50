"""The article index in Chroma: idempotent ingestion and hybrid bilingual search.

Build one with `open_store(settings)` from `main()`; nothing connects or reads files until the
first `ingest()`, `search()` or `healthy()` call. Embedded Chroma (`PersistentClient`) on disk
under `settings.chroma_path` unless `settings.chroma_url` names a Chroma server.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from knowledge.article_format import Chunk, chunk_articles, load_articles
from knowledge.disk import describe_free, disk_full
from knowledge.embedding_cache import EmbeddingCache, cache_key
from knowledge.errors import KnowledgeError, KnowledgeUnavailableError
from knowledge.passages import IngestReport, Passage
from knowledge.ranking import Candidate, rank
from knowledge.shipped_vectors import SHIPPED_VECTORS, ShippedVectors

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

    from knowledge.embeddings import MultilingualE5EmbeddingFunction, OpenAICompatibleEmbeddingFunction

log = logging.getLogger("sizing.knowledge")

SHIPPED_ARTICLES = Path(__file__).resolve().parent / "articles"
LANGUAGES = ("en", "es")
# Nearest records Chroma returns, both languages together, before the hybrid re-ranking. The shipped
# articles have 436 records (218 sections, each with a full-text and a heading record, see
# HEADING_SUFFIX), so today every record is scored: exact, and one distances-only query costs less
# than the two per-language queries of 120 records it replaced (search CPU 33 -> 28 ms, one more top-3
# hit over the 315 golden questions, README). A larger article set keeps the nearest 480.
CANDIDATES = 480
# Record ids are "<section id>@<content hash>" (the "path + section + content hash"), so a
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
# Chroma's own rule for collection names, checked early so a typo is a clear error, not a broken index.
_COLLECTION_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")
_CONTENT_HASH = re.compile(r"[0-9a-f]{16}")
# SQLite's words for a database another process is writing: a reason to wait, not to rebuild.
_BUSY = re.compile(r"database is locked|database table is locked|busy", re.IGNORECASE)
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
    """Sections of the Markdown articles, embedded in a Chroma collection."""

    def __init__(
        self,
        collection_name: str,
        articles_dir: Path,
        embedding_function: MultilingualE5EmbeddingFunction | OpenAICompatibleEmbeddingFunction,
        chroma_path: Path,
        chroma_url: str | None = None,
        shipped_vectors: ShippedVectors | None = None,
    ) -> None:
        if not _COLLECTION_NAME.fullmatch(collection_name):
            raise KnowledgeError(
                f"collection name {collection_name!r} must be 3-512 letters, digits, '.', '_' or '-', "
                "starting and ending with a letter or digit"
            )
        self.collection_name = collection_name
        self.articles_dir = articles_dir
        self.embedding_function = embedding_function
        self.chroma_path = chroma_path
        self.chroma_url = chroma_url
        self._client: ClientAPI | None = None
        self._collection: Collection | None = None
        self._ready = False
        self._lock = threading.RLock()
        # Next to the index, outside it: a corrupt index is deleted, but its vectors can be reused.
        self.embedding_cache = EmbeddingCache(chroma_path.parent / "embedding-cache.sqlite3")
        # Precomputed vectors of the shipped articles (none: embed everything, as benchmarks measure).
        self.shipped_vectors = shipped_vectors or ShippedVectors(None)
        # Keyword overrides for knowledge.ranking.rank, for benchmarks comparing ranking variants.
        self.ranking_options: dict[str, Any] = {}
        # False ignores the title + heading records at search time (benchmarks compare both).
        self.heading_records = True
        # Record id -> (document, metadata). Safe to share across threads and to keep across ingests
        # and reconnections: a record id includes its content hash, so it always names the same text.
        self._records: dict[str, tuple[str, dict[str, Any]]] = {}

    @property
    def location(self) -> str:
        return self.chroma_url or str(self.chroma_path)

    # ---- public API -------------------------------------------------------------------------------

    def ingest(self, rebuild: bool = False) -> IngestReport:
        """Bring the index in line with the articles: add new sections, re-embed changed ones, drop gone ones."""
        with self._lock:
            if rebuild:
                self._drop_collection()
            return self._guarded(self._sync)

    def search(self, query: str, k: int = 3, lang: str | None = None) -> list[Passage]:
        """The `k` sections that best answer `query`, best first; `lang` keeps one language only."""
        if lang is not None and lang not in LANGUAGES:
            raise KnowledgeError(f"unknown language {lang!r}; valid choices: {', '.join(LANGUAGES)}")
        if k < 1:
            raise KnowledgeError(f"k must be at least 1, got {k}")
        if not query.strip():
            return []
        with self._lock:
            self._guarded(self._ensure_ready)
        return self._guarded(lambda: self._search(query, k, lang))

    def healthy(self) -> bool:
        """True when the index can be reached; never raises."""
        try:
            with self._lock:
                self._open_collection().count()
            return True
        except BaseException as exc:  # a Rust panic from Chroma is a BaseException
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            log.debug("knowledge index at %s is not healthy: %s", self.location, exc)
            return False

    def close(self) -> None:
        """Release the Chroma client (HTTP sessions, SQLite handles); the store reconnects if used again."""
        with self._lock:
            self._forget_client()

    def __enter__(self) -> ArticleStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- connection -------------------------------------------------------------------------------

    def _connect(self) -> ClientAPI:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        import knowledge.embeddings  # noqa: F401  registers our embedding functions with Chroma

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if self.chroma_url:
            url = urlsplit(self.chroma_url)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise KnowledgeError(f"chroma_url {self.chroma_url!r} is not an http(s)://host:port URL")
            try:
                return chromadb.HttpClient(
                    host=url.hostname,
                    port=url.port or (443 if url.scheme == "https" else 8000),
                    ssl=url.scheme == "https",
                    settings=chroma_settings,
                )
            except Exception as exc:
                raise KnowledgeUnavailableError(
                    f"Chroma server at {self.chroma_url} unreachable: {exc}"
                ) from None
        self.chroma_path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(self.chroma_path), settings=chroma_settings)

    def _open_collection(self) -> Collection:
        if self._collection is None:
            if self._client is None:
                self._client = self._connect()
            collection = self._get_or_create(self._client)
            stored = (collection.metadata or {}).get("embedder")
            if stored != self.embedding_function.identity:
                # Vectors from another embedding function are not comparable with ours: start over.
                log.warning(
                    "knowledge index at %s was embedded with %s, not %s; rebuilding it",
                    self.location,
                    stored,
                    self.embedding_function.identity,
                )
                self._client.delete_collection(self.collection_name)
                collection = self._get_or_create(self._client)
            self._collection = collection
        return self._collection

    def _get_or_create(self, client: ClientAPI) -> Collection:
        return client.get_or_create_collection(
            name=self.collection_name,
            embedding_function=self.embedding_function,  # type: ignore[arg-type]
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedder": self.embedding_function.identity},
        )

    def _drop_collection(self) -> None:
        def drop() -> None:
            if self._client is None:
                self._client = self._connect()
            if any(c.name == self.collection_name for c in self._client.list_collections()):
                self._client.delete_collection(self.collection_name)

        self._guarded(drop)
        self._collection = None
        self._ready = False

    def _ensure_ready(self) -> None:
        """Build the index on first use (an empty or missing collection)."""
        if self._ready:
            return
        if self._open_collection().count() == 0:
            log.info("knowledge index at %s is empty; building it from %s", self.location, self.articles_dir)
            self._sync()
        self._ready = True

    def _guarded(self, operation: Any) -> Any:
        """Run a Chroma operation; a server that is down is reported, a broken embedded index is rebuilt."""
        from chromadb.errors import InvalidArgumentError

        try:
            return operation()
        except KnowledgeError:
            raise
        except InvalidArgumentError as exc:  # our request was wrong; the index is fine, so keep it
            raise KnowledgeError(f"Chroma refused the request: {_first_line(exc)}") from None
        except BaseException as exc:  # Chroma's Rust core raises pyo3 PanicException, a BaseException
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            if self.chroma_url:
                self._forget_client()
                raise KnowledgeUnavailableError(
                    f"Chroma server at {self.chroma_url} failed: {_first_line(exc)}"
                ) from None
            if _BUSY.search(str(exc)):  # another process holds the index: wait for it, do not delete it
                raise KnowledgeUnavailableError(
                    f"knowledge index at {self.chroma_path} is busy: {_first_line(exc)}"
                ) from None
            if disk_full(exc, self.chroma_path):  # a rebuild on a full disk would lose the index too
                raise KnowledgeUnavailableError(
                    f"the disk holding the knowledge index at {self.chroma_path} is full "
                    f"({describe_free(self.chroma_path)}); free some space (the index was kept)"
                ) from None
            self._recover(exc)
            try:
                return operation()
            except KnowledgeError:
                raise
            except BaseException as again:
                if isinstance(again, KeyboardInterrupt | SystemExit):
                    raise
                raise KnowledgeUnavailableError(
                    f"knowledge index at {self.chroma_path} is unusable even after a rebuild: {_first_line(again)}"
                ) from None

    def _recover(self, exc: BaseException) -> None:
        from chromadb.api.shared_system_client import SharedSystemClient

        log.warning(
            "knowledge index at %s is unreadable (%s); deleting it and rebuilding it from the articles",
            self.chroma_path,
            _first_line(exc),
        )
        self._forget_client()
        SharedSystemClient.clear_system_cache()  # Chroma caches one client per path: drop the broken one
        shutil.rmtree(self.chroma_path, ignore_errors=True)

    def _forget_client(self) -> None:
        client, self._client, self._collection, self._ready = self._client, None, None, False
        if client is None:
            return
        from chromadb.api.shared_system_client import SharedSystemClient

        try:
            # Chroma 1.5 stops a released system but leaves its httpx pool open: remember the systems
            # behind this client (and its internal admin client) to close their pools afterwards.
            systems = [client._system, client._admin_client._system] if self.chroma_url else []  # type: ignore[attr-defined]
            client.close()  # type: ignore[attr-defined]  # Client has it; the ClientAPI protocol lacks it
            if systems:
                _close_http_pools(systems, SharedSystemClient)
        except Exception as exc:  # closing a broken client must not hide the original problem
            log.debug("closing the Chroma client failed: %s", exc)

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
        collection = self._open_collection()
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
        self._ready = True
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
        collection = self._open_collection()
        query_embedding = self.embedding_function.embed_query([query])
        best_similarity: dict[str, float] = {}
        record_of_section: dict[str, str] = {}
        found = collection.query(
            query_embeddings=query_embedding,  # type: ignore[arg-type]
            n_results=CANDIDATES,
            include=["distances"],
        )
        for record_id, distance in zip(found["ids"][0], (found["distances"] or [[]])[0], strict=True):
            if record_id.endswith(HEADING_SUFFIX) and not self.heading_records:
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
        for ranked in rank(query, candidates, k=k, lang=lang, **self.ranking_options):
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


def _close_http_pools(systems: list[Any], shared: Any) -> None:
    """Close the HTTP connection pools of Chroma systems that no client uses any more.

    `Client.close()` stops a system once its last client is gone but never closes the httpx session
    of that system's HTTP client, and `AdminClient.from_system` leaves an unreferenced alias of the
    client's system in the shared cache. Both keep sockets to the server open until garbage
    collection. Systems still held by another client are left alone.
    """
    live = {
        id(system)
        for identifier, system in shared._identifier_to_system.items()
        if identifier in shared._identifier_to_refcount
    }
    for identifier, system in list(shared._identifier_to_system.items()):
        if identifier not in shared._identifier_to_refcount and id(system) not in live:
            shared._identifier_to_system.pop(identifier, None)  # a stale alias of a released system
    for system in systems:
        if id(system) in live:
            continue
        for component in getattr(system, "_instances", {}).values():
            session = getattr(component, "_session", None)
            if session is not None:
                session.close()


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
