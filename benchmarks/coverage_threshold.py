"""Where `sizing report` draws the line for "retrieval scored low".

Run: `.venv/bin/python benchmarks/coverage_threshold.py` (offline; a temporary index from the
shipped articles and vectors). Prints the best-passage score of every question in
benchmarks/data/coverage_questions.yaml — questions the articles answer and questions they do not —
and the gap between the two groups that assistant/desk/report.py's LOW_RETRIEVAL_SCORE must sit in.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from assistant.desk.report import LOW_RETRIEVAL_SCORE
    from assistant.settings import Settings
    from knowledge import open_store

    questions = yaml.safe_load(
        (ROOT / "benchmarks" / "data" / "coverage_questions.yaml").read_text(encoding="utf-8")
    )
    with tempfile.TemporaryDirectory() as folder:
        os.environ.pop("SIZING_CHROMA_URL", None)
        store = open_store(Settings(data_dir=Path(folder)))
        store.ingest()
        best: dict[str, list[float]] = {}
        for group in ("covered", "uncovered"):
            best[group] = []
            for question in questions[group]:
                passages = store.search(question, k=3)
                score = max((passage.score for passage in passages), default=0.0)
                best[group].append(score)
                print(f"{group:9}  {score:.4f}  {question}")
    lowest_covered, highest_uncovered = min(best["covered"]), max(best["uncovered"])
    print(f"\nlowest covered {lowest_covered:.4f}, highest uncovered {highest_uncovered:.4f}")
    inside = highest_uncovered < LOW_RETRIEVAL_SCORE <= lowest_covered
    print(
        f"LOW_RETRIEVAL_SCORE = {LOW_RETRIEVAL_SCORE} {'separates' if inside else 'does NOT separate'} the groups"
    )
    return 0 if inside else 1


if __name__ == "__main__":
    sys.exit(main())
