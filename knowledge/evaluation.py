"""Retrieval quality on a golden question set: recall@k and mean reciprocal rank.

Used by `benchmarks/retrieval.py` (prints the figures) and by the retrieval tests (assert them).
Golden questions name sections as "<english slug>#<english heading>" ("<slug>" alone is the
article's lead); a retrieved section counts when it is that section or its translation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from knowledge.article_format import chunk_articles, load_articles
from knowledge.errors import KnowledgeError
from knowledge.passages import Passage

SearchFunction = Callable[[str, int, str | None], Sequence[Passage]]


@dataclass(frozen=True)
class GoldenQuestion:
    question: str
    lang: str | None  # the language filter passed to search; None searches both
    relevant: tuple[str, ...]


@dataclass
class RetrievalScores:
    questions: int
    recall_at_1: float
    recall_at_3: float
    mrr: float  # mean reciprocal rank of the first relevant section within the top `depth`
    misses: list[str] = field(default_factory=list)  # questions with nothing relevant in the top 3


def load_golden(path: Path) -> list[GoldenQuestion]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        GoldenQuestion(item["question"], item.get("lang"), tuple(item["relevant"]))
        for item in data["questions"]
    ]


class SectionKeys:
    """Maps golden references and retrieved passages to the translation-pair key of their section."""

    def __init__(self, articles_dir: Path) -> None:
        articles, problems = load_articles(articles_dir)
        if problems:
            raise KnowledgeError(f"malformed articles: {'; '.join(str(p) for p in problems)}")
        chunks, _ = chunk_articles(articles, embedder_id="evaluation")
        self._by_reference: dict[str, str] = {}
        self._by_passage: dict[tuple[str, str], str] = {}
        for chunk in chunks:
            self._by_passage[(chunk.path, chunk.section)] = chunk.pair_key
            if chunk.lang == "en":
                reference = chunk.slug if chunk.position == 0 and chunk.section == chunk.title else None
                self._by_reference[reference or f"{chunk.slug}#{chunk.section}"] = chunk.pair_key

    def of_reference(self, reference: str) -> str:
        try:
            return self._by_reference[reference]
        except KeyError:
            raise KnowledgeError(f"golden reference {reference!r} names no English section") from None

    def of_passage(self, passage: Passage) -> str | None:
        return self._by_passage.get((passage.path, passage.section))


def evaluate(
    search: SearchFunction, questions: Sequence[GoldenQuestion], keys: SectionKeys, depth: int = 10
) -> RetrievalScores:
    hits_at_1 = hits_at_3 = 0
    reciprocal_ranks = 0.0
    misses = []
    for golden in questions:
        relevant = {keys.of_reference(reference) for reference in golden.relevant}
        found = search(golden.question, depth, golden.lang)
        rank = next(
            (position for position, passage in enumerate(found, 1) if keys.of_passage(passage) in relevant),
            None,
        )
        if rank is not None:
            reciprocal_ranks += 1 / rank
            hits_at_1 += rank == 1
            hits_at_3 += rank <= 3
        if rank is None or rank > 3:
            top = ", ".join(f"{p.path}#{p.section}" for p in found[:3])
            misses.append(f"{golden.question!r} [{golden.lang}] -> {top}")
    n = len(questions) or 1
    return RetrievalScores(
        questions=len(questions),
        recall_at_1=hits_at_1 / n,
        recall_at_3=hits_at_3 / n,
        mrr=reciprocal_ranks / n,
        misses=misses,
    )
