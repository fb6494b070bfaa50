"""How well the offline assistant answers the question the visitor asked.

Run:  PYTHONPATH=. .venv/bin/python benchmarks/conversation.py [--sealed | --fresh | --blind] [--failures]

Scores the held-out conversation set (tests/golden/conversation_heldout*.jsonl; with --sealed the
sealed split, with --fresh the split written last, with --performance the speed and latency questions, with --performance-fresh those written after the code, with --performance-rates rates and nightly jobs written as people write them ("3,600 requests an hour", "20k tickets a night"), with --blind the set written without reading the conversation code, with --training the training questions that give micro-batch, sequence length, optimizer or checkpointing, written before their reader; with --capacity / --capacity-fresh the 'how many users can it serve?' questions, both written before their code, the second scored only once it was done; with --followups terse answers to the assistant's own questions, "20" after "how many users?" and "users" after "32 of what?"; with --concepts "what is fp8?" alone and after a model; with --names a family and a size several catalog models match; with --cards two cards compared with no model; with --asked a question with no slot about the model already named) with tests/conversation_scoring.py: per kind and per language, the share of
questions whose every check passes and the share of checks passed, then the median length of a
sizing answer's lead (what comes before its table and arithmetic block) and of a plain sizing
answer up to its arithmetic block (lead and table). --failures lists the
failed checks of each question.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conversation_scoring import GOLDEN, Score, load, score_conversations, score_singles

# The splits other than the held-out one, with what each holds; the first one asked for is scored.
SPLITS = {
    "sealed": "the sealed split",
    "fresh": "the fresh split (written last)",
    "blind": "the blind split (written unseen)",
    "performance": "the speed and latency split (no conversations)",
    "performance_fresh": "the speed and latency questions written after the code (no conversations)",
    "performance_rates": "request rates and batch jobs as people write them (written before their code)",
    "performance_load": "the memory filled ('maximum throughput') and latency targets in looser words (written before their code)",
    "training": "the training questions that give micro-batch, sequence, optimizer or checkpointing",
    "capacity": "the capacity questions ('how many users can it serve?') used while building",
    "capacity_fresh": "the capacity questions held out until the code was written",
    "concepts": "what a weights format is (fp8, int4, awq, gguf...), alone and after a model (written before their code)",
    "names": 'a family and a size that several catalog models match ("qwen 30b", "gemma 27b"), written before their code',
    "cards": 'two cards compared with no model ("h100 or h200?"), then a model, written before their code',
    "asked": 'a question with no slot about the model already named ("how fast is it?", "any cheaper option?"), written before its code',
    "followups": "terse answers to the assistant's own questions and a number's unit said next (written before their code)",
}


def table(scores: list[Score], key: str) -> list[str]:
    groups: dict[str, list[Score]] = defaultdict(list)
    for score in scores:
        groups[getattr(score, key)].append(score)
    lines = [f"{key:<22} {'passed':>10} {'checks':>8}"]
    for name in sorted(groups):
        group = groups[name]
        passed = sum(score.passed for score in group)
        checks = [ok for score in group for ok in score.checks.values()]
        lines.append(f"{name:<22} {passed:>4}/{len(group):<5} {sum(checks) / len(checks):>7.0%}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for split, scored in SPLITS.items():
        parser.add_argument(f"--{split.replace('_', '-')}", action="store_true", help=f"score {scored}")
    parser.add_argument("--failures", action="store_true", help="list each question's failed checks")
    args = parser.parse_args()
    split = next((name for name in SPLITS if getattr(args, name)), "heldout")
    single_file = GOLDEN / f"conversation_{split}.jsonl"
    singles = score_singles(load(single_file.name)) if single_file.exists() else []
    turns = GOLDEN / f"conversation_{split}_turns.jsonl"
    conversations = score_conversations(load(turns.name)) if turns.exists() else []
    scores = singles + conversations
    print(f"Conversation set: {split} ({len(singles)} questions, {len(conversations)} conversations)\n")
    print("\n".join(table(scores, "kind")))
    print()
    print("\n".join(table(singles, "lang")))
    passed = sum(score.passed for score in scores)
    print(f"\nall: {passed}/{len(scores)} = {passed / len(scores):.0%}")
    leads = [score.lead_chars for score in singles if score.sizing and score.lead_chars is not None]
    if leads:
        print(
            f"median lead of a sizing answer: {statistics.median(leads):.0f} characters ({len(leads)} answers)"
        )
    before = [
        score.before_arithmetic_chars
        for score in singles
        if score.sizing and score.kind == "plain" and score.before_arithmetic_chars is not None
    ]
    if before:
        print(f"median plain sizing answer before its arithmetic: {statistics.median(before):.0f} characters")
    whole = [score.answer_chars for score in singles if score.sizing and score.answer_chars is not None]
    if whole:
        print(f"median whole sizing answer: {statistics.median(whole):.0f} characters")
    if args.failures:
        print()
        for score in scores:
            failed = [name for name, ok in score.checks.items() if not ok]
            if failed:
                print(f"{score.case_id}: {', '.join(failed)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
