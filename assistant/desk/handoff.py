"""A visitor's lead is stored: notify the team, and mark the lead notified when that went out."""

from __future__ import annotations

from typing import Any

from assistant.desk.notify import notify_lead
from assistant.desk.store import DeskStore, LeadRecord


def notify_team(store: DeskStore, settings: Any, lead_id: int) -> LeadRecord:
    """Send the notifications for the lead `store.add_lead` just stored; the lead as it is now."""
    lead = store.lead(lead_id)
    assert lead is not None  # just written in its own committed transaction
    if notify_lead(settings, lead):
        store.mark_notified(lead_id)
        lead = store.lead(lead_id) or lead
    return lead
