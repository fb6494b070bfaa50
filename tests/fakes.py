"""Stand-ins the tests share: an article index held in memory, and a loopback port nobody listens on."""

from __future__ import annotations

import socket
from collections.abc import Sequence

from knowledge import Passage


class FakeArticles:
    """A `knowledge.ArticleSearch` in memory, for tests of what answers do with articles, not of retrieval.

    Every search records `(query, k, lang)` in `searches` and returns `sections` (at most `k`), each
    in the language asked for (English when none): "{lang}" in a section's title or path is replaced
    by it. With `fail`, search and health raise it, the way a broken index does.
    """

    def __init__(
        self, sections: Sequence[Passage] = (), fail: BaseException | None = None, healthy: bool = True
    ) -> None:
        self.sections = list(sections)
        self.fail = fail
        self.is_healthy = healthy
        self.searches: list[tuple[str, int, str | None]] = []

    def search(self, query: str, k: int = 3, lang: str | None = None) -> list[Passage]:
        self.searches.append((query, k, lang))
        if self.fail is not None:
            raise self.fail
        language = lang or "en"
        return [
            section.model_copy(
                update={
                    "title": section.title.format(lang=language),
                    "path": section.path.format(lang=language),
                    "lang": language,
                }
            )
            for section in self.sections[:k]
        ]

    def healthy(self) -> bool:
        if self.fail is not None:
            raise self.fail
        return self.is_healthy


def section(text: str, title: str, path: str, heading: str, score: float = 1.0) -> Passage:
    """A section for FakeArticles; its language is the one each search asks for."""
    return Passage(text=text, title=title, path=path, section=heading, lang="en", score=score)


def free_port() -> int:
    """A loopback TCP port that was free a moment ago and that nothing listens on now.

    For a server a test starts (a small race with other processes, accepted in tests) or for an
    address that must refuse connections.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
