"""How an answer is shown in the chat: verdict first, the long parts folded, the sources linked.

The text the `chat` API returns is the whole answer; the chat shows the same text with
the arithmetic and long lists or tables inside `<details>` blocks (open on request), each
cited section as a link to the article page, and follow-up questions as clickable options.
Pure functions of Markdown and a `Reply`; no Gradio.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant.ui.catalogue import phrase
from assistant.ui.texts import Lang, text
from tools import PRECISIONS
from tools.precision import nominal_bits

if TYPE_CHECKING:
    from assistant.schemas import Reply, Source
    from assistant.ui.articles import ArticleLibrary

# A list this long (arithmetic lines, per-card breakdowns) is folded; shorter lists stay open.
FOLD_LIST_ITEMS = 5
# A table with more body rows than this is folded (the verdict's card table has three).
FOLD_TABLE_ROWS = 5
# Follow-up suggestions under an answer: a few, so they read as options, not a menu.
MAX_SUGGESTIONS = 3
# The users a "For N users?" suggestion proposes when the visitor has not said (a small team).
SUGGESTED_USERS = 20

_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


@dataclass(frozen=True)
class AnswerView:
    """What the chat needs to show answers: the article library for source links (None: no links)."""

    library: ArticleLibrary | None = None

    def markdown(self, answer: str, reply: Reply | None, lang: Lang) -> str:
        """The answer as the chat shows it (folded blocks; linked sources once the reply is known)."""
        shown = answer
        if reply is not None:
            shown = self._with_sources(reply)
        return fold_long_blocks(shown, lang)

    def _with_sources(self, reply: Reply) -> str:
        parts = [reply.answer.strip()]
        if reply.notice:
            parts.append(f"> {reply.notice}")
        body = parts[0]
        unlisted: list[Source] = []
        for source in reply.sources:
            url = self.library.link(source, reply.language) if self.library is not None else None
            written = f"*{source.title}* — {source.section}"
            if written in body:
                if url:
                    body = body.replace(written, f"[*{source.title}* — {source.section}]({url})", 1)
            elif source.title not in body:
                unlisted.append(source)
        parts[0] = body
        if unlisted:
            parts.append(self.sources_line(unlisted, reply.language))
        return "\n\n".join(part for part in parts if part)

    def sources_line(self, sources: list[Source], lang: Lang) -> str:
        """One line of linked "title › section" entries, without repeats."""
        seen: list[str] = []
        for source in sources:
            label = f"{source.title} › {source.section}" if source.section else source.title
            url = self.library.link(source, lang) if self.library is not None else None
            entry = f"[_{label}_]({url})" if url else f"_{label}_"
            if entry not in seen:
                seen.append(entry)
        return f"**{text('sources', lang)}:** " + " · ".join(seen) if seen else ""


def fold_long_blocks(markdown: str, lang: Lang) -> str:
    """The arithmetic and long lists or tables wrapped in `<details>`; everything else unchanged.

    A block is a run of lines between blank lines. A list whose lead line names the arithmetic,
    or any list of FOLD_LIST_ITEMS items or more, folds under its lead line; a table with more
    than FOLD_TABLE_ROWS rows folds under "Table: N rows". Text inside code fences is left alone.
    """
    blocks = _blocks(markdown)
    arithmetic = text("arithmetic", lang).lower()
    shown: list[str] = []
    for block in blocks:
        lines = block.splitlines()
        if lines and lines[0].lstrip().startswith(("```", "~~~", "<details")):
            shown.append(block)
            continue
        items = [line for line in lines if _LIST_ITEM.match(line)]
        lead = lines[0] if lines and not _LIST_ITEM.match(lines[0]) else ""
        rows = [line for line in lines if _TABLE_ROW.match(line)]
        if rows and len(rows) == len(lines):
            body_rows = len(rows) - 2 if len(rows) > 1 and _TABLE_RULE.match(rows[1]) else len(rows)
            if body_rows > FOLD_TABLE_ROWS:
                shown.append(_details(phrase("table_summary", lang, rows=body_rows), block))
                continue
        elif (
            lead
            and items
            and len(items) == len(lines) - 1
            and (len(items) >= FOLD_LIST_ITEMS or arithmetic in lead.lower())
        ):
            shown.append(_details(_plain(lead), "\n".join(lines[1:])))
            continue
        shown.append(block)
    return "\n\n".join(shown)


def _blocks(markdown: str) -> list[str]:
    """Blank-line separated blocks; a fenced code block stays one block even with blank lines."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _plain(markdown_line: str) -> str:
    """A lead line as summary text: emphasis marks and a trailing colon removed, HTML escaped."""
    plain = re.sub(r"[*_`]+", "", markdown_line).strip().rstrip(":").strip()
    return html.escape(plain)


def _details(summary: str, body: str) -> str:
    # Blank lines around the body so the Markdown inside is rendered, not shown raw.
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def follow_up_suggestions(reply: Reply) -> list[str]:
    """Questions that fill what the answer lacks, in the reply's language, at most MAX_SUGGESTIONS.

    With a calculation: another precision first (16 → 8, 8 → 4, 4 → 8 bits), then the slots the
    visitor has not given (users, context, tasks), then twice the users. Without one and with no
    model known: two model sizes. Each is a message the assistant understands as a follow-up.
    """
    lang = reply.language
    state = reply.state
    suggestions: list[str] = []
    if reply.calculations:
        latest = reply.calculations[-1]
        bits = nominal_bits(latest.precision) if latest.precision in PRECISIONS else 16
        suggestions.append(phrase("followup_bits", lang, bits=8 if bits != 8 else 4))
        missing = set(reply.missing)
        if "users" in missing or state.users is None:
            suggestions.append(phrase("followup_users", lang, users=SUGGESTED_USERS))
        if "context" in missing or state.context is None:
            suggestions.append(phrase("followup_context", lang))
        if "tasks" in missing or state.tasks is None:
            suggestions.append(phrase("followup_tasks", lang))
        if state.users is not None:
            suggestions.append(phrase("followup_users", lang, users=state.users * 2))
    elif state.model is None and "model" in reply.missing:
        suggestions += [phrase("followup_model_large", lang), phrase("followup_model_small", lang)]
    unique = list(dict.fromkeys(suggestions))
    return unique[:MAX_SUGGESTIONS]
