"""Opening the desk for the web app: a database that cannot be opened must not stop the chat."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tools.errors import SizingError

if TYPE_CHECKING:
    from assistant.desk.store import DeskStore
    from assistant.settings import Settings

log = logging.getLogger(__name__)


def open_desk_or_none(settings: Settings) -> DeskStore | None:
    from assistant.desk.store import open_desk

    try:
        return open_desk(settings)
    except SizingError as exc:
        log.error("sales desk unavailable (leads and feedback are not stored): %s", exc)
        return None
