"""`sizing draft`: the customer reply to a pasted e-mail, from a terminal.

    sizing draft < customer-email.txt
    sizing draft --file email.txt --customer "Lucía" --json

Reads the message as the chat reads one, sizes it with the calculator, and prints the Markdown
draft (with a Quote section when SIZING_PRICES_FILE is set); what the customer did not say goes to
stderr as a note for the salesperson. With no model in the message it prints the "nothing to
draft yet" text and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from assistant.cli.files import read_failure
from assistant.cli.options import add_command, add_json_flag
from tools.errors import InvalidInputError

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.settings import Settings

MAX_MESSAGE_CHARS = 20_000


def register(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "draft", run)
    parser.add_argument(
        "--file", default=None, metavar="PATH", help="the e-mail as a text file (default: stdin)"
    )
    parser.add_argument("--customer", default=None, help="the customer's name for the greeting")
    add_json_flag(parser, "print the draft and its details as JSON")


def run(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    """draft the reply to a customer's e-mail (stdin or --file)"""
    from assistant.quote import price_list_from_settings
    from assistant.sales import Signature, draft_from_message

    if args.file:
        try:
            message = Path(args.file).read_text(encoding="utf-8")[:MAX_MESSAGE_CHARS]
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"cannot read --file {args.file!r}: {read_failure(exc)}") from None
    else:
        message = sys.stdin.read(MAX_MESSAGE_CHARS)
    if not message.strip():
        source = f"--file {args.file!r}" if args.file else "standard input"
        raise InvalidInputError(f"{source} is empty; paste the customer's e-mail or give --file PATH")
    outcome = draft_from_message(
        message,
        customer_name=args.customer,
        signature=Signature.from_settings(settings),
        price_list=price_list_from_settings(settings),
        utilization=settings.quote_utilization,
    )
    stream = out or sys.stdout
    if args.json:
        stream.write(
            json.dumps({"markdown": outcome.markdown, **outcome.public_json()}, ensure_ascii=False, indent=2)
            + "\n"
        )
    else:
        stream.write(outcome.markdown)
        if outcome.note_for_salesperson:
            print(f"note: {outcome.note_for_salesperson}", file=sys.stderr)
    return 0 if outcome.drafted else 1
