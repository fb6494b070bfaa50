"""The sales-desk widgets' messages and labels: named views of assistant/texts.py (DESK, LABELS)."""

from __future__ import annotations

from assistant.texts import DESK
from assistant.ui.labels import label, labels_es

desk_text = DESK.text

__all__ = ["desk_text", "label", "labels_es"]
