"""When an answer opens the "Talk to an engineer" form, in either mode.

One rule for the offline composer's answers and the LLM agent's, so the web chat reads one field
(`Reply.handoff`): the agent offered it (`offer_engineer`), nothing compared fits, or the visitor
asked for a person.
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.schemas import HandoffOffer
from tools import SizingResult


def nothing_fit(calculations: Sequence[SizingResult]) -> bool:
    return bool(calculations) and not any(option.fits for result in calculations for option in result.options)


def handoff_for(
    message: str, calculations: Sequence[SizingResult], agent_reason: str | None = None
) -> HandoffOffer | None:
    """The offer this answer makes, or None when the form stays closed."""
    # The desk's phrase list is plain data; imported here so the service starts without it.
    from assistant.person_request import asks_for_a_person

    if agent_reason is not None:
        return HandoffOffer(why="agent", reason=agent_reason)
    if nothing_fit(calculations):
        return HandoffOffer(why="nothing_fit")
    if asks_for_a_person(message):
        return HandoffOffer(why="asked_for_person")
    return None
