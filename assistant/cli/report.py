"""`sizing report`: coverage gaps from the question log and the feedback.

    sizing report
    sizing report --since 2026-11-01 --json

Top questions, models and cards asked for that the catalog lacks, answers where nothing fit,
questions whose best passage scored low, and thumbs-down with their comments.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from assistant.cli.options import add_command, add_json_flag
from tools.errors import InvalidInputError

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.settings import Settings


def register(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "report", run)
    parser.add_argument("--since", metavar="DATE", help="only rows from this day on (YYYY-MM-DD)")
    parser.add_argument(
        "--low-score", help="best-passage score below which a question counts as not covered (default 0.87)"
    )
    add_json_flag(parser, "print the report as one JSON object")


def parse_day(value: str) -> datetime:
    try:
        day = datetime.strptime(value.strip(), "%Y-%m-%d")
    except ValueError:
        raise InvalidInputError(f"--since {value!r} must be a date such as 2026-11-01") from None
    return day.replace(tzinfo=UTC)


def run(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    """coverage gaps: top questions, unknown models, nothing-fit"""
    from assistant.desk.report import LOW_RETRIEVAL_SCORE, build_report, report_markdown
    from assistant.desk.store import open_desk

    since = parse_day(args.since) if args.since else None
    low = LOW_RETRIEVAL_SCORE
    if args.low_score is not None:
        try:
            low = float(args.low_score)
        except ValueError:
            raise InvalidInputError(f"--low-score {args.low_score!r} must be a number such as 0.87") from None
        if not 0.0 <= low <= 1.0:
            raise InvalidInputError(
                f"--low-score {args.low_score!r} must be from 0 to 1 (a retrieval score), such as 0.87"
            )
    report = build_report(open_desk(settings), since, low)
    stream = out or sys.stdout
    if args.json:
        stream.write(json.dumps(report.public_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        stream.write(report_markdown(report) + "\n")
    return 0
