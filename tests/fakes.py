"""Stand-ins the tests share: an article index held in memory, a scripted chat model, and the real
embedding model counting what it embeds.

Servers on loopback (a free port, waiting for one to answer) are in `tests/servers.py`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from knowledge import Passage
from knowledge.embeddings import MultilingualE5EmbeddingFunction


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

    @property
    def queries(self) -> list[str]:
        """The queries searched so far, in order."""
        return [query for query, _, _ in self.searches]

    def healthy(self) -> bool:
        if self.fail is not None:
            raise self.fail
        return self.is_healthy


def section(text: str, title: str, path: str, heading: str, score: float = 1.0) -> Passage:
    """A section for FakeArticles; its language is the one each search asks for."""
    return Passage(text=text, title=title, path=path, section=heading, lang="en", score=score)


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model that accepts tools (it answers from its script whatever they are)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def scripted(*messages: AIMessage) -> ScriptedChatModel:
    """A chat model that answers each call with the next of `messages`."""
    replies: Iterator[AIMessage] = iter(messages)
    # The fake's stream yields nothing for a tool-call turn; its plain path is what the agent needs.
    return ScriptedChatModel(messages=replies, disable_streaming=True)


class CountingEmbeddings(MultilingualE5EmbeddingFunction):
    """The real model, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def __call__(self, input: list[str]) -> list:  # type: ignore[override]
        self.embedded += list(input)
        return super().__call__(input)
