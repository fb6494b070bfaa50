"""Text primitives every reader of a message shares.

Messages are read in folded form (lowercase, no accents); each span a reader recognises is
blanked, so one phrase never fills two slots ("2x80GB" is a card, not a context).
"""

from __future__ import annotations

import re
import unicodedata

from assistant.offline.lexicon import lexicon


def fold(text: str) -> str:
    """Lowercase with accents removed, so patterns are written once without accents."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return folded.replace("’", "'").replace("×", "x")


def blank(text: str, start: int, end: int) -> str:
    """The text with a span read replaced by spaces, so every position after it stays put."""
    return text[:start] + " " * (end - start) + text[end:]


def message_span(message: str, folded: str) -> str:
    """The visitor's own spelling of a folded span when it can be found, else the folded span."""
    match = re.search(re.escape(folded), message, flags=re.IGNORECASE)
    return match.group(0) if match else folded


def is_ruled_out(text: str, position: int) -> bool:
    """True when a correction ("not the 7B", "en vez de la A100") comes right before `position`."""
    return bool(lexicon().ruled_out.search(text[max(0, position - 24) : position]))
