"""`sizing ingest` and `sizing search`: build the article index and query it.

sizing ingest [--rebuild] [--json]
sizing search "what GPU for a 70B?" [--k 3] [--lang es|en] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import TYPE_CHECKING

from assistant.cli.options import add_command, add_json_flag

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.settings import Settings

# Characters of each passage shown by the human-readable `sizing search` output (--json prints all).
PREVIEW_CHARS = 400


def register(subparsers: Subparsers) -> None:
    ingest = add_command(subparsers, "ingest", run_ingest)
    ingest.add_argument("--rebuild", action="store_true", help="drop the index and build it from scratch")
    add_json_flag(ingest, 'print {"chunks", "added", "updated", "removed"}')

    search = add_command(subparsers, "search", run_search)
    search.add_argument("query", help="the question or keywords")
    search.add_argument("--k", type=_positive_int, default=3, help="how many sections to return (default 3)")
    search.add_argument("--lang", choices=("es", "en"), help="only sections written in this language")
    add_json_flag(search, "print a JSON list of passages")


def run_ingest(args: argparse.Namespace, settings: Settings) -> int:
    """index the Markdown articles into Chroma (idempotent)

    Index the articles: new sections are added, changed ones re-embedded, removed ones deleted."""
    from knowledge import open_store

    report = open_store(settings).ingest(rebuild=args.rebuild)
    if args.json:
        print(json.dumps(report.model_dump(include={"chunks", "added", "updated", "removed"})))
    else:
        print(
            f"{report.chunks} sections indexed: {report.added} added, "
            f"{report.updated} updated, {report.removed} removed"
        )
    for skipped in report.skipped_files:
        print(f"sizing ingest: skipped malformed article {skipped}", file=sys.stderr)
    return 0


def run_search(args: argparse.Namespace, settings: Settings) -> int:
    """find the article sections that answer a question (Spanish or English)

    Search the sizing articles; builds the index first if it is missing."""
    from knowledge import open_store

    passages = open_store(settings).search(args.query, k=args.k, lang=args.lang)
    if args.json:
        print(json.dumps([p.model_dump() for p in passages], ensure_ascii=False, indent=2))
        return 0
    if not passages:
        print("no matching sections")
        return 0
    for number, passage in enumerate(passages, start=1):
        print(
            f"{number}. {passage.title} › {passage.section}  [{passage.lang}, {passage.path}, score {passage.score}]"
        )
        preview = passage.text if len(passage.text) <= PREVIEW_CHARS else passage.text[:PREVIEW_CHARS] + "…"
        print(textwrap.indent(preview, "   "))
        print()
    return 0


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number
