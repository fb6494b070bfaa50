"""`sizing leads`: the visitors who asked to talk to an engineer.

    sizing leads list                     # newest last, one line each
    sizing leads export --csv > leads.csv # or --json (with transcripts and calculations)
    sizing leads delete --email ana@example.com

Reads the desk database (SIZING_DATABASE_URL, default SQLite in the data folder); rows older than
SIZING_RETENTION_DAYS are deleted first.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from assistant.cli.options import add_command, add_json_flag

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.settings import Settings


def register(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "leads", doc="list, export or delete the stored leads (handoffs)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = add_command(actions, "list", run_list)
    add_json_flag(listing, "print every lead as JSON")
    export = add_command(actions, "export", run_export)
    shape = export.add_mutually_exclusive_group()
    shape.add_argument("--csv", action="store_true", help="comma-separated values (default)")
    shape.add_argument("--json", action="store_true", help="JSON, with transcripts and calculations")
    delete = add_command(actions, "delete", run_delete)
    delete.add_argument("--email", required=True, help="the visitor's e-mail address")


def run_list(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    """one line per lead"""
    from assistant.desk.export import leads_json
    from assistant.desk.store import open_desk

    stream = out or sys.stdout
    leads = open_desk(settings).leads()
    if args.json:
        stream.write(leads_json(leads) + "\n")
        return 0
    if not leads:
        stream.write("no leads\n")
    for lead in leads:
        company = f" ({lead.company})" if lead.company else ""
        first_line = " ".join(lead.message.split())[:80]
        stream.write(
            f"{lead.id}\t{lead.created_at:%Y-%m-%d %H:%M}\t{lead.name} <{lead.email}>{company}\t{lead.language}\t{first_line}\n"
        )
    return 0


def run_export(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    """every lead as CSV (default) or JSON"""
    from assistant.desk.export import leads_csv, leads_json
    from assistant.desk.store import open_desk

    leads = open_desk(settings).leads()
    (out or sys.stdout).write(leads_json(leads) + "\n" if args.json else leads_csv(leads))
    return 0


def run_delete(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    """erase every lead with one e-mail address"""
    from assistant.desk.errors import InvalidLeadError
    from assistant.desk.store import EMAIL_SHAPE, open_desk

    if not EMAIL_SHAPE.fullmatch(args.email.strip()):
        raise InvalidLeadError(f"--email {args.email!r} is not an address like name@company.com")
    deleted = open_desk(settings).delete_leads(args.email)
    (out or sys.stdout).write(
        f"deleted {deleted} lead{'s' if deleted != 1 else ''} for {args.email.strip().lower()}\n"
    )
    return 0
