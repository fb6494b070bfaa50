"""What answering needs from the article index, as a type: `ArticleStore` fits, and so do test fakes."""

from __future__ import annotations

from typing import Protocol

from knowledge.passages import Passage


class ArticleSearch(Protocol):
    """Searches the sizing articles and says whether the index can be reached."""

    def search(self, query: str, k: int = 3, lang: str | None = None) -> list[Passage]:
        """The `k` sections that best answer `query`, best first; `lang` ("en", "es") keeps one language."""
        ...

    def healthy(self) -> bool:
        """True when the index can be reached; never raises."""
        ...
