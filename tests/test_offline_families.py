"""A model family named with no size ("llama on a 4090", "deepseek for 20 users") is answered
within that family: the largest of its models that fit the card named, and how many cards its
largest needs; with no card, the question "which one?" with the family's models listed. A model
published with a catalog entry's architecture (DeepSeek R1) is sized as that entry and says so.
A card id ("MI300X") is no marker of the visitor's language."""

from __future__ import annotations

import pytest

from assistant.offline.read_models import family_label, family_members, find_family
from assistant.offline.understanding import detect_language
from tests.conversation_scoring import ask_turns
from tools import SizingRequest
from tools.catalog import resolve
from tools.reverse import fewest_gpus, largest_model


def _lead(answer: str) -> str:
    return answer.split("\n\n")[0]


@pytest.mark.parametrize(
    ("text", "phrase", "members"),
    [
        ("can I run llama on a 4090", "llama", 6),
        ("qwen 2.5 please", "qwen 2.5", 4),
        ("Gemma-3 on an L4", "gemma 3", 1),
        ("gpt-oss on a 5090?", "gpt oss", 2),
        ("mi300x 192gb deepseek", "deepseek", 2),
    ],
)
def test_a_family_and_its_version_are_read(text: str, phrase: str, members: int) -> None:
    assert find_family(text) == phrase
    assert len(family_members(phrase)) == members


@pytest.mark.parametrize(
    "text",
    [
        "how do I install llama.cpp on a 4090",
        "llama-server flags for a 3090",
        "mi empresa se llama Acme",
        "llama 4 scout on an h100",  # a version the catalog does not have
        "something like gpt-4 on an h100",
    ],
)
def test_a_tool_a_verb_or_an_unknown_version_is_no_family(text: str) -> None:
    assert find_family(text) is None


def test_the_family_is_spelled_as_the_catalog_spells_it() -> None:
    assert family_label("gpt oss") == "gpt-oss"
    assert family_label("qwen 2.5") == "Qwen2.5"
    assert family_label("deepseek") == "DeepSeek"


@pytest.mark.parametrize("text", ["mi300x 192gb deepseek", "a100 llama", "H200 qwen3 8b"])
def test_card_and_model_ids_are_no_language_markers(text: str) -> None:
    assert detect_language(text, "en") == ("en", False)


def test_a_spanish_message_with_a_card_id_stays_spanish() -> None:
    assert detect_language("¿qué modelo cabe en mi MI300X?", "en")[0] == "es"


@pytest.mark.parametrize(
    ("question", "card", "lang"),
    [
        ("qwen on an l40s?", "l40s", "en"),
        ("could phi run on my rtx 3060?", "rtx-3060", "en"),
        ("¿qué gemma cabe en una rtx 3090?", "rtx-3090", "es"),
        ("mi300x 192gb deepseek", "mi300x", "en"),
        ("gpt-oss on an h100", "h100-80gb", "en"),
    ],
)
def test_a_family_on_a_card_is_searched_within_the_family(question: str, card: str, lang: str) -> None:
    (reply,) = ask_turns(question)
    assert reply.language == lang
    family = find_family(question)
    assert family is not None
    ids = {model.model_id for model in family_members(family)}
    assert reply.calculations, reply.answer
    assert {result.model.id for result in reply.calculations} <= ids
    assert all(result.options[0].fits for result in reply.calculations)
    assert family_label(family) in _lead(reply.answer)
    # What it shows is the largest of the family that fits, as the search finds it.
    shown = reply.calculations[0]
    request = SizingRequest(model="", gpu=card, precision=shown.precision, lang=lang)
    best = largest_model(card, request.model_copy(update={"engine": shown.engine}), ids)
    assert best.result is not None and best.model_id == shown.model.id


def test_the_familys_largest_says_how_many_cards_it_needs() -> None:
    (reply,) = ask_turns("gpt-oss on a 5090?")
    lead = _lead(reply.answer)
    needed = fewest_gpus(SizingRequest(model="gpt-oss-120b", precision="mxfp4", gpu="rtx-5090"), "rtx-5090")
    assert needed.count is not None and needed.count > 1
    assert f"gpt-oss 120B, the family's largest, needs {needed.count}× RTX 5090" in lead, lead


def test_a_family_with_no_card_asks_which_and_lists_the_models() -> None:
    (reply,) = ask_turns("we'd like to deploy deepseek for 20 users")
    lead = _lead(reply.answer)
    assert lead.startswith("**Which DeepSeek?**")
    assert "DeepSeek V3 (671B)" in lead and "DeepSeek R1 Distill Llama 70B" in lead
    (reply,) = ask_turns("quiero montar qwen para mi empresa, unos 30 usuarios")
    assert reply.language == "es" and _lead(reply.answer).startswith("**¿Qué Qwen?**")


def test_the_family_carries_to_the_card_and_then_to_the_size() -> None:
    first, second, third = ask_turns("thinking about llama", "on an h100 then", "ok the 70b, 4 bit")
    assert first.answer.startswith("**Which Llama?**")
    assert second.calculations and all(r.model.id.startswith("llama-") for r in second.calculations)
    assert third.calculations[0].model.id == "llama-3.1-70b"
    assert third.calculations[0].precision == "int4"


def test_another_family_replaces_the_model_of_the_conversation() -> None:
    _, second = ask_turns("llama 3.1 70b on an h100", "and qwen?")
    assert second.calculations and all(r.model.id.startswith("qwen") for r in second.calculations)


@pytest.mark.parametrize(
    ("question", "lang", "said"),
    [
        ("deepseek r1 on 8x h200?", "en", "DeepSeek R1 is sized as DeepSeek V3 (671B)"),
        ("¿cabe deepseek-ai/DeepSeek-R1-0528 en 8 H200?", "es", "DeepSeek R1 se dimensiona como DeepSeek V3"),
    ],
)
def test_a_model_released_with_an_entrys_architecture_is_sized_as_it(
    question: str, lang: str, said: str
) -> None:
    (reply,) = ask_turns(question)
    assert reply.language == lang
    assert reply.calculations[0].model.id == "deepseek-v3"
    assert said in reply.answer


def test_the_distill_is_not_the_release() -> None:
    (reply,) = ask_turns("deepseek r1 70b on an h100")
    assert reply.calculations[0].model.id == "deepseek-r1-distill-llama-70b"
    assert "is sized as" not in reply.answer


def test_released_spellings_resolve_in_the_calculator() -> None:
    assert resolve("deepseek-ai/DeepSeek-R1").info.id == "deepseek-v3"
    assert resolve("DeepSeek-R1-0528").info.id == "deepseek-v3"


def test_no_count_is_given_when_a_model_of_the_largests_size_fits() -> None:
    (reply,) = ask_turns("gemma for 50 users on 2x l40s")
    fitting = {result.model.id for result in reply.calculations}
    assert "gemma-3-27b" in fitting, reply.answer
    assert "the family's largest" not in reply.answer


@pytest.mark.parametrize(
    ("question", "lang", "sized", "said"),
    [
        (
            "qwen 2.5 on a single a100 40gb, 16k context",
            "en",
            "qwen2.5-7b",
            "the catalog also has Qwen2.5 14B",
        ),
        ("¿mixtral en 2 h100?", "es", "mixtral-8x7b", "el catálogo también tiene Mixtral 8x22B"),
    ],
)
def test_a_name_with_no_size_says_which_size_it_sized(
    question: str, lang: str, sized: str, said: str
) -> None:
    (reply,) = ask_turns(question)
    assert reply.language == lang
    assert reply.calculations[0].model.id == sized
    assert said in reply.answer


def test_a_name_with_one_model_needs_no_size_note() -> None:
    (reply,) = ask_turns("llama3.3 on h100")
    assert reply.calculations[0].model.id == "llama-3.3-70b"
    assert "No size named" not in reply.answer


@pytest.mark.parametrize(
    ("question", "prefix", "lang"),
    [
        ("which qwen 3 fits an l4?", "qwen3", "en"),
        ("¿cuál llama 3.1 cabe en una A100?", "llama-3.1-", "es"),
    ],
)
def test_which_before_a_name_with_no_size_asks_for_the_family(question: str, prefix: str, lang: str) -> None:
    (reply,) = ask_turns(question)
    assert reply.language == lang
    assert reply.calculations and all(r.model.id.startswith(prefix) for r in reply.calculations)
    assert "No size named" not in reply.answer and "Sin tamaño indicado" not in reply.answer
    assert "Largest" in reply.answer or "largest" in reply.answer or "más grandes" in reply.answer


def test_a_name_with_no_size_and_no_which_keeps_its_default() -> None:
    (reply,) = ask_turns("what about qwen3 on an l4")
    assert reply.calculations[0].model.id == "qwen3-8b"


@pytest.mark.parametrize(
    ("question", "lang", "written", "listed"),
    [
        ("can I run gemma 4 on a 4090?", "en", "Gemma 4", "Gemma 3 27B"),
        ("phi-3 mini on a 3060", "en", "Phi 3", "Phi-4 (14B)"),
        ("¿qwen 4 en una l40s?", "es", "Qwen 4", "Qwen3 32B"),
    ],
)
def test_a_version_the_catalog_lacks_is_said_not_searched(
    question: str, lang: str, written: str, listed: str
) -> None:
    (reply,) = ask_turns(question)
    assert reply.language == lang
    assert not reply.calculations, "no other model is sized in its place"
    lead = _lead(reply.answer)
    assert written in lead and listed in lead, lead


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("mistral large 2 on an h100", "Mistral Large 2"),
        ("qwen max on 8 h100", "Qwen Max"),
        ("mistral nemo en una 4090", "Mistral Nemo"),
    ],
)
def test_a_variant_the_family_lacks_is_no_default_model(text: str, written: str) -> None:
    (reply,) = ask_turns(text)
    assert not reply.calculations and reply.state.model is None
    assert written in reply.answer and "Mistral 7B" not in _lead(reply.answer).split(";")[0]


def test_a_variant_the_catalog_has_is_that_model() -> None:
    (small,) = ask_turns("mistral small on a 4090")
    assert small.state.model == "mistral-small-24b"
    _, chosen = ask_turns("mistral large 2 on an h100", "ok the 24b then")
    assert chosen.state.model == "mistral-small-24b" and chosen.calculations
