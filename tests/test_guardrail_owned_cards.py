"""The guardrail after the catalogue grew: figures of the cards people own count only in a
sentence that names the card, so a new card's memory cannot launder an invented figure."""

from __future__ import annotations

from assistant.guardrail import enforce


def test_a_named_owned_card_keeps_its_memory_figure() -> None:
    draft = "An RTX 5090 has 32 GB of memory."
    assert enforce(draft, [], "en") == draft


def test_the_same_figure_without_the_card_is_removed() -> None:
    answer = enforce("The cache for this chat is 33.58 GB. It grows with context.", [], "en")
    assert answer == "It grows with context."
