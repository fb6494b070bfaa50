"""Leads as CSV or JSON, for `sizing leads export` and the Admin tab's download."""

from __future__ import annotations

import csv
import io
import json

from assistant.desk.store import LeadRecord

CSV_COLUMNS = ("id", "created_at", "name", "email", "company", "message", "consent", "language", "notified")


def _cell(value: object) -> str:
    text = str(value)
    # A cell starting with = + - @ runs as a formula in spreadsheets; a leading quote keeps it text.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def leads_csv(leads: list[LeadRecord]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for lead in leads:
        row = lead.public_json()
        writer.writerow([_cell(row[column]) for column in CSV_COLUMNS])
    return out.getvalue()


def leads_json(leads: list[LeadRecord]) -> str:
    return json.dumps([lead.public_json() for lead in leads], ensure_ascii=False, indent=2)
