"""Typed failures of the knowledge base (articles, ingestion, the Chroma store)."""

from __future__ import annotations

from pathlib import Path

from tools.errors import SizingError


class KnowledgeError(SizingError):
    """Root of every failure the knowledge base raises on purpose."""


class KnowledgeUnavailableError(KnowledgeError):
    """The Chroma server (or the embeddings endpoint) cannot be reached; callers degrade gracefully."""


class ArticleFormatError(KnowledgeError):
    """An article file does not follow the article format; the message names the file."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")
