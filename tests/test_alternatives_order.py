"""When no card class holds a request, the hardware beyond the table comes smallest first: the
offline answer calls the first one "the smallest option that fits", and the sales draft leads
with it. Twice the GPUs and as many larger cards are both found; which is smaller depends on the
cards (4× 80GB has more memory than 2× H200, 2× 48GB more than one 80GB), so the order is
checked over a grid of requests, not for one of them."""

from __future__ import annotations

import itertools

import pytest

from assistant.service import Assistant, build_assistant
from assistant.settings import Settings
from tools import SizingRequest, SizingResult, calculate_vram

MODELS = ("mistral-7b", "llama-3.1-8b", "qwen2.5-32b", "llama-3.1-70b", "mixtral-8x7b", "gemma-2-27b")
GRID = list(itertools.product(MODELS, ("bf16", "fp8"), (8192, 32768), (1, 30, 200)))


def beyond_the_table(model: str, precision: str, context: int, users: int) -> SizingResult | None:
    result = calculate_vram(SizingRequest(model=model, precision=precision, context=context, users=users))
    if result.recommended is None and len(result.alternatives) >= 2:
        return result
    return None


def test_the_grid_has_requests_beyond_the_table_with_both_kinds_of_alternative() -> None:
    found = [r for r in (beyond_the_table(*point) for point in GRID) if r is not None]
    assert len(found) >= 5
    # The case the order is about: a larger card (2× H200) beside twice the GPUs (4× 80GB).
    assert any(any("H200" in alt.label for alt in r.alternatives) for r in found)


@pytest.mark.parametrize("point", GRID, ids=lambda p: "-".join(map(str, p)))
def test_alternatives_come_with_the_least_memory_first(point: tuple[str, str, int, int]) -> None:
    result = beyond_the_table(*point)
    if result is None:
        pytest.skip("a card class holds it, or one option at most lies beyond the table")
    usable = [alt.usable_gb for alt in result.alternatives]
    assert usable == sorted(usable), [(alt.label, alt.usable_gb) for alt in result.alternatives]


def test_a_named_card_that_does_not_hold_it_lists_the_smaller_option_first() -> None:
    # One L40S (48 GB) for a 16-bit 32B with 2 users: one 80GB card and two L40S (96 GB) both hold it.
    result = calculate_vram(SizingRequest(model="qwen2.5-32b", precision="bf16", users=2, gpu="l40s"))
    assert not result.options[0].fits and len(result.alternatives) >= 2
    usable = [alt.usable_gb for alt in result.alternatives]
    assert usable == sorted(usable)


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    data = tmp_path_factory.mktemp("data")
    return build_assistant(Settings(data_dir=data, llm_base_url=None, llm_model=None, chroma_url=None))


@pytest.mark.parametrize(
    ("message", "word"),
    [
        ("mistral 7b bf16 for 200 users on an rtx 4090", "The smallest option that fits: "),
        ("¿Llama 3.1 70B a 16 bits en una L40S?", "La opción más pequeña que cabe: "),
    ],
)
def test_the_offline_answer_calls_smallest_the_option_with_least_memory(
    assistant: Assistant, message: str, word: str
) -> None:
    reply = assistant.answer(message, None)
    assert word in reply.answer, reply.answer[:500]
    named = reply.answer.split(word, 1)[1]
    classes = calculate_vram(
        SizingRequest(
            model=reply.calculations[0].model.id,
            precision=reply.calculations[0].precision,
            context=reply.calculations[0].context,
            users=reply.calculations[0].users,
            lang="es" if word.startswith("La") else "en",
        )
    )
    assert classes.recommended is None and len(classes.alternatives) >= 2
    smallest = min(classes.alternatives, key=lambda alt: alt.usable_gb)
    assert named.startswith(smallest.label), (named[:80], [a.label for a in classes.alternatives])
