"""One Chroma collection, opened on first use, and what happens when Chroma fails.

Embedded Chroma (`PersistentClient`) on disk at `path` unless `url` names a Chroma server. A server
that fails is reported as `KnowledgeUnavailableError`; an embedded index that cannot be read is
deleted so the caller's retry rebuilds it; a locked one is reported and kept. Not thread-safe on its
own: `knowledge.store.ArticleStore` serialises the calls that change the connection.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from knowledge.disk import describe_free, disk_full
from knowledge.errors import KnowledgeError, KnowledgeUnavailableError

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

    from knowledge.embeddings import MultilingualE5EmbeddingFunction, OpenAICompatibleEmbeddingFunction

log = logging.getLogger("sizing.knowledge")

T = TypeVar("T")

# Chroma's own rule for collection names, checked early so a typo is a clear error, not a broken index.
_COLLECTION_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")
# SQLite's words for a database another process is writing: a reason to wait, not to rebuild.
_BUSY = re.compile(r"database is locked|database table is locked|busy", re.IGNORECASE)


class ChromaConnection:
    """The client and the collection `name`, embedded with `embedding_function`; connects lazily."""

    def __init__(
        self,
        name: str,
        embedding_function: MultilingualE5EmbeddingFunction | OpenAICompatibleEmbeddingFunction,
        path: Path,
        url: str | None = None,
    ) -> None:
        if not _COLLECTION_NAME.fullmatch(name):
            raise KnowledgeError(
                f"collection name {name!r} must be 3-512 letters, digits, '.', '_' or '-', "
                "starting and ending with a letter or digit"
            )
        self.name = name
        self.embedding_function = embedding_function
        self.path = path
        self.url = url
        self._client: ClientAPI | None = None
        self._collection: Collection | None = None

    @property
    def location(self) -> str:
        return self.url or str(self.path)

    def collection(self) -> Collection:
        """The collection, created when missing and started over when another embedder wrote it.

        The same object until the connection is dropped (`close`, a failure, `drop`): a new object
        means the collection may have been emptied since.
        """
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
                self._client.delete_collection(self.name)
                collection = self._get_or_create(self._client)
            self._collection = collection
        return self._collection

    def drop(self) -> None:
        """Delete the collection if it exists; the next `collection()` creates it empty."""

        def drop() -> None:
            if self._client is None:
                self._client = self._connect()
            if any(c.name == self.name for c in self._client.list_collections()):
                self._client.delete_collection(self.name)

        self.guarded(drop)
        self._collection = None

    def guarded(self, operation: Callable[[], T]) -> T:
        """Run a Chroma operation; a server that is down is reported, a broken embedded index is
        deleted and the operation run once more (against an empty collection)."""
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
            if self.url:
                self.close()
                raise KnowledgeUnavailableError(
                    f"Chroma server at {self.url} failed: {_first_line(exc)}"
                ) from None
            if _BUSY.search(str(exc)):  # another process holds the index: wait for it, do not delete it
                raise KnowledgeUnavailableError(
                    f"knowledge index at {self.path} is busy: {_first_line(exc)}"
                ) from None
            if disk_full(exc, self.path):  # a rebuild on a full disk would lose the index too
                raise KnowledgeUnavailableError(
                    f"the disk holding the knowledge index at {self.path} is full "
                    f"({describe_free(self.path)}); free some space (the index was kept)"
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
                    f"knowledge index at {self.path} is unusable even after a rebuild: {_first_line(again)}"
                ) from None

    def healthy(self) -> bool:
        """True when the collection can be reached; never raises."""
        try:
            self.collection().count()
            return True
        except BaseException as exc:  # a Rust panic from Chroma is a BaseException
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            log.debug("knowledge index at %s is not healthy: %s", self.location, exc)
            return False

    def close(self) -> None:
        """Release the client (HTTP sessions, SQLite handles); the next call reconnects."""
        client, self._client, self._collection = self._client, None, None
        if client is None:
            return
        from chromadb.api.shared_system_client import SharedSystemClient

        try:
            # Chroma 1.5 stops a released system but leaves its httpx pool open: remember the systems
            # behind this client (and its internal admin client) to close their pools afterwards.
            systems = [client._system, client._admin_client._system] if self.url else []  # type: ignore[attr-defined]
            client.close()  # type: ignore[attr-defined]  # Client has it; the ClientAPI protocol lacks it
            if systems:
                _close_http_pools(systems, SharedSystemClient)
        except Exception as exc:  # closing a broken client must not hide the original problem
            log.debug("closing the Chroma client failed: %s", exc)

    def _connect(self) -> ClientAPI:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        import knowledge.embeddings  # noqa: F401  registers our embedding functions with Chroma

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if self.url:
            url = urlsplit(self.url)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise KnowledgeError(f"chroma_url {self.url!r} is not an http(s)://host:port URL")
            try:
                return chromadb.HttpClient(
                    host=url.hostname,
                    port=url.port or (443 if url.scheme == "https" else 8000),
                    ssl=url.scheme == "https",
                    settings=chroma_settings,
                )
            except Exception as exc:
                raise KnowledgeUnavailableError(f"Chroma server at {self.url} unreachable: {exc}") from None
        self.path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(self.path), settings=chroma_settings)

    def _get_or_create(self, client: ClientAPI) -> Collection:
        return client.get_or_create_collection(
            name=self.name,
            embedding_function=self.embedding_function,  # type: ignore[arg-type]
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedder": self.embedding_function.identity},
        )

    def _recover(self, exc: BaseException) -> None:
        from chromadb.api.shared_system_client import SharedSystemClient

        log.warning(
            "knowledge index at %s is unreadable (%s); deleting it and rebuilding it from the articles",
            self.path,
            _first_line(exc),
        )
        self.close()
        SharedSystemClient.clear_system_cache()  # Chroma caches one client per path: drop the broken one
        shutil.rmtree(self.path, ignore_errors=True)


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
