"""Visitor sessions held by Gradio are bounded in number and forgotten when idle.

Gradio keeps, per session id, a copy of every component's config plus the `gr.State` values
(about 150 KB for this app; `benchmarks/soak.py` measures it), up to 10,000 sessions and for
as long as the process lives. A client picks its own session id, so each fresh id costs that
memory. `bound_sessions` lowers the cap to `SIZING_MAX_SESSIONS` (Gradio then drops the least
recently used), and `session_lifespan` runs a sweep that forgets every session idle for more
than `SIZING_SESSION_IDLE_TIMEOUT_S`. Both work on Gradio's `StateHolder` (gradio/state_holder.py:
`session_data`, `time_last_used`, `lock`), the one place those sessions live.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import gradio as gr

    from assistant.settings import Settings

log = logging.getLogger(__name__)

# How often the sweep looks for idle sessions, at most (a quarter of the timeout when shorter).
SWEEP_EVERY_S = 60.0


def bound_sessions(demo: gr.Blocks, settings: Settings) -> None:
    """Cap the sessions Gradio keeps; call before the Blocks is mounted (the app reads it then)."""
    demo.state_session_capacity = settings.max_sessions


def forget_idle_sessions(state_holder: Any, idle_s: float, now: datetime.datetime | None = None) -> int:
    """Drop every session whose last event is more than `idle_s` ago; returns how many went."""
    now = now or datetime.datetime.now()
    with state_holder.lock:
        last_used: dict[str, datetime.datetime] = state_holder.time_last_used
        stale = [
            session_id
            for session_id in list(state_holder.session_data)
            if (now - last_used.get(session_id, now)).total_seconds() > idle_s
        ]
        for session_id in stale:
            state_holder.session_data.pop(session_id, None)
            last_used.pop(session_id, None)
    return len(stale)


def session_lifespan(
    demos: Sequence[gr.Blocks], idle_s: float
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """A FastAPI lifespan that sweeps idle sessions of every mounted Blocks while the server runs."""
    every_s = min(SWEEP_EVERY_S, idle_s / 4)

    async def sweep() -> None:
        while True:
            await asyncio.sleep(every_s)
            for demo in demos:
                holder = getattr(demo, "state_holder", None)
                if holder is None:
                    continue
                try:
                    forgotten = forget_idle_sessions(holder, idle_s)
                except Exception:  # the sweep must outlive one bad pass
                    log.exception("forgetting idle sessions failed")
                    continue
                if forgotten:
                    log.info("forgot %d visitor sessions idle for more than %g s", forgotten, idle_s)

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        task = asyncio.create_task(sweep())
        try:
            yield
        finally:
            task.cancel()

    return lifespan
