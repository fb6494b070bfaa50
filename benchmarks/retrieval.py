"""Retrieval benchmark: quality on the golden questions, query latency, cold ingest time.

Run: `.venv/bin/python benchmarks/retrieval.py` (add `--variants` to compare ranking variants).
Works offline in a temporary folder; never touches your real index.

Prints recall@1, recall@3 and MRR on every golden set in tests/golden (how each was written and
used is in its "about" field and in the README); the p50/p95 latency of `ArticleStore.search`
in-process after warm-up; and the time of a cold `ingest()` of every shipped article two ways:
computing every vector (embedding model load included, empty embedding cache, no shipped vectors)
and as a fresh machine does it (vectors from knowledge/data/article-vectors.npz); then an
idempotent re-run and a `--rebuild` served by the embedding cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from knowledge.embeddings import MultilingualE5EmbeddingFunction  # noqa: E402
from knowledge.evaluation import RetrievalScores, SectionKeys, evaluate, load_golden  # noqa: E402
from knowledge.ranking import SHIPPED_RANKING, RankingOptions  # noqa: E402
from knowledge.shipped_vectors import ShippedVectors  # noqa: E402
from knowledge.store import SHIPPED_ARTICLES, ArticleStore  # noqa: E402

GOLDEN_DIR = ROOT / "tests" / "golden"
# The golden set, the held-out sets in the order they were written, and the sealed set.
SETS = {
    "golden": "retrieval_questions.json",
    **{f"held-out{n}": f"retrieval_heldout{n}.json" for n in ("", "2", "3", "4")},
    "sealed": "retrieval_sealed.json",
}
WARM_UP_QUERIES = 10
LATENCY_REPEATS = 3

# Ranking variants scored by --variants; RankingOptions() is what ships.
VARIANTS: dict[str, RankingOptions] = {
    "dense only": RankingOptions(
        lexical_weight=0.0, pool_translations=False, heading_records=False, definition_boost=0.0
    ),
    "dense + translation pooling": RankingOptions(
        lexical_weight=0.0, heading_records=False, definition_boost=0.0
    ),
    "lexical only (BM25 + bilingual terms)": RankingOptions(
        lexical_weight=1000.0, pool_translations=False, definition_boost=0.0
    ),
    "dense + pooling + BM25 0.05": RankingOptions(
        heading_records=False, bilingual_terms=False, definition_boost=0.0
    ),
    "+ bilingual terms": RankingOptions(heading_records=False, definition_boost=0.0),
    "+ heading records": RankingOptions(definition_boost=0.0),
    "shipped: + glossary for definition questions": SHIPPED_RANKING,
    "shipped without heading records": RankingOptions(heading_records=False),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", action="store_true", help="also score the ranking variants")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"retrieval benchmark: {cores} cores, articles in {SHIPPED_ARTICLES.relative_to(ROOT)}")
    with tempfile.TemporaryDirectory(prefix="sizing-retrieval-") as folder:
        computing = _store(Path(folder) / "computing", ShippedVectors(None))
        started, cpu_started = time.perf_counter(), time.process_time()
        report = computing.ingest()
        cold, cold_cpu = time.perf_counter() - started, time.process_time() - cpu_started
        computing.close()
        print(
            f"cold ingest computing every vector: {report.chunks} sections in {cold:.1f} s wall, "
            f"{cold_cpu:.1f} s CPU (model load included; load average {os.getloadavg()[0]:.1f} when done)"
        )
        store = _store(Path(folder) / "fresh", ShippedVectors())
        started, cpu_started = time.perf_counter(), time.process_time()
        report = store.ingest()
        print(
            f"cold ingest on a fresh machine (shipped vectors): {report.chunks} sections in "
            f"{time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu_started:.1f} s CPU"
        )
        started = time.perf_counter()
        rerun = store.ingest()
        warm = time.perf_counter() - started
        print(f"idempotent re-run: {rerun.added} added, {rerun.updated} updated in {warm:.2f} s")
        started = time.perf_counter()
        rebuilt = store.ingest(rebuild=True)
        print(
            f"rebuild (--rebuild) from the embedding cache: {rebuilt.added} sections in "
            f"{time.perf_counter() - started:.1f} s wall"
        )

        keys = SectionKeys(SHIPPED_ARTICLES)
        sets = {name: load_golden(GOLDEN_DIR / file) for name, file in SETS.items()}
        variants = VARIANTS if args.variants else {"shipped": SHIPPED_RANKING}
        print()
        print(f"{'ranking':42s} {'set':9s} {'n':>3s} {'R@1':>6s} {'R@3':>6s} {'MRR':>6s}")
        misses: list[str] = []
        for name, ranking in variants.items():
            # The same index read with another ranking: a second store on the same folder and model.
            with ArticleStore(
                "benchmark", SHIPPED_ARTICLES, store.embedding_function, store.chroma_path, ranking=ranking
            ) as ranked:
                for set_name, questions in sets.items():
                    scores = evaluate(lambda q, k, lang: ranked.search(q, k=k, lang=lang), questions, keys)
                    _print_scores(name, set_name, scores)
                    if ranking == SHIPPED_RANKING:
                        misses += [f"[{set_name}] {miss}" for miss in scores.misses]

        questions = [q for qs in sets.values() for q in qs]
        for question in questions[:WARM_UP_QUERIES]:
            store.search(question.question, k=3, lang=question.lang)
        timings: list[float] = []
        cpu_timings: list[float] = []
        for _ in range(LATENCY_REPEATS):
            for question in questions:
                started, cpu_started = time.perf_counter(), time.process_time()
                store.search(question.question, k=3, lang=question.lang)
                timings.append((time.perf_counter() - started) * 1000)
                cpu_timings.append((time.process_time() - cpu_started) * 1000)
        # Wall time includes waiting for a core when other processes compete; CPU time does not.
        print()
        print(f"search latency over {len(timings)} queries, in-process after warm-up:")
        print(f"  wall: {_percentiles(timings)}")
        print(f"  CPU:  {_percentiles(cpu_timings)}")
        if misses:
            print("\nquestions with nothing relevant in the top 3 (shipped ranking):")
            for miss in misses:
                print(f"  {miss}")
        store.close()
    return 0


def _store(folder: Path, shipped_vectors: ShippedVectors) -> ArticleStore:
    return ArticleStore(
        collection_name="benchmark",
        articles_dir=SHIPPED_ARTICLES,
        embedding_function=MultilingualE5EmbeddingFunction(),
        chroma_path=folder / "chroma",
        shipped_vectors=shipped_vectors,
    )


def _percentiles(milliseconds: list[float]) -> str:
    ordered = sorted(milliseconds)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms, max {ordered[-1]:.1f} ms"


def _print_scores(name: str, set_name: str, scores: RetrievalScores) -> None:
    print(
        f"{name:42s} {set_name:9s} {scores.questions:3d} "
        f"{scores.recall_at_1:6.3f} {scores.recall_at_3:6.3f} {scores.mrr:6.3f}"
    )


if __name__ == "__main__":
    sys.exit(main())
