"""The guardrail checks claims, not only positive fits: each way a wrong answer used to reach
the visitor (found running a real small model), with real calculations and hand-written drafts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.guardrail import check, enforce
from assistant.guardrail_claims import wrong_verdict
from assistant.service import build_assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles
from tests.openai_stub import StubOpenAI, text
from tools import SizingRequest, SizingResult, calculate_vram


def calc(model: str = "70b", precision: str = "int4", lang: str = "en", **fields: Any) -> SizingResult:
    return calculate_vram(SizingRequest(model=model, precision=precision, lang=lang, **fields))


# ---------------------------------------------------------------------------- verdicts


def test_a_false_negative_verdict_is_removed() -> None:
    result = calc(users=4, gpu="h100")
    assert result.options[0].fits and result.options[0].headroom_gb > 10
    report = check("Sadly it does not serve 4 users on an H100. Ask me more.", [result], "en")
    assert report.removed == ["Sadly it does not serve 4 users on an H100."]
    assert report.reasons == ["verdict"]
    assert result.recommendation in report.answer


def test_a_false_negative_fit_on_a_card_the_answer_never_compared() -> None:
    """The named card is sized again: a 70B at 4 bits fits an H200 though the answer compared classes."""
    result = calc()
    report = check("It will not fit on an H200. It does not fit on one L40S.", [result], "en")
    assert report.removed == ["It will not fit on an H200."]
    assert "It does not fit on one L40S." in report.answer


def test_spanish_false_negative() -> None:
    result = calc(lang="es", gpu="h100")
    report = check("No cabe en una H100, lo siento.", [result], "es")
    assert report.reasons == ["verdict"]


def test_serves_more_users_than_the_calculator_allows() -> None:
    result = calc(gpu="h100")
    most = result.options[0].max_concurrent_sequences
    draft = f"One H100 serves {most * 3} concurrent users. One H100 serves {most} concurrent users."
    report = check(draft, [result], "en", message="70B at 4 bits on an H100")
    assert report.removed == [f"One H100 serves {most * 3} concurrent users."]


def test_a_capacity_claim_on_a_card_the_answer_never_compared_counts_its_paged_requests() -> None:
    """The L40S is sized again with its speed where a capacity was asked: its paged KV cache holds
    151 of the assumed requests though only 23 whole contexts, so "serves 100" is no wrong verdict
    and "serves 400" is. Sized again for memory alone, "serves 100" was judged wrong."""
    result = calc(model="llama-3.1-8b", precision="bf16", users_target=True, gpu="h100")
    again = calc(model="llama-3.1-8b", precision="bf16", users_target=True, gpu="l40s").options[0]
    assert again.performance is not None and again.performance.held_sequences is not None
    assert again.max_concurrent_sequences < 100 < again.performance.held_sequences < 400
    assert not wrong_verdict("One L40S serves 100 users at once.", [result])
    assert wrong_verdict("One L40S serves 400 users at once.", [result])


def test_a_card_sized_again_for_memory_alone_gets_the_same_verdicts() -> None:
    """The guardrail's memory-only recalculation (`speed=False`) skips the estimate, nothing else."""
    request = SizingRequest(model="70b", precision="int4", users=8, gpu="l40s:2")
    full, memory = calculate_vram(request), calculate_vram(request, speed=False)
    assert full.options[0].performance is not None and memory.options[0].performance is None
    keep = {"card", "gpus", "fits", "total_gb", "headroom_gb", "max_concurrent_sequences"}
    assert memory.options[0].model_dump(include=keep) == full.options[0].model_dump(include=keep)
    assert memory.recommendation == full.recommendation


def test_needs_the_wrong_number_of_gpus() -> None:
    result = calc()
    report = check("You need four H100s for this. Two L40S cards hold it.", [result], "en")
    assert "You need four H100s for this." in report.removed
    assert report.reasons[report.removed.index("You need four H100s for this.")] == "verdict"


def test_a_claim_about_one_precision_is_checked_against_that_calculation() -> None:
    side_by_side = [calc(precision=p) for p in ("bf16", "int8", "int4")]
    report = check("At 4 bits it fits on one H100. At 16 bits it fits on one H100.", side_by_side, "en")
    assert report.removed == ["At 16 bits it fits on one H100."]


# ---------------------------------------------------------------------------- figures


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("The KV cache takes 3 GB.", "2.68 GB rounded the wrong way round is not a round figure"),
        ("The overhead is 6 GB.", "6.46 GB"),
        ("It needs 49 GB in total.", "48.33 GB: within the old ±0.6 GB, but not its rounding"),
        ("With 5 GB of overhead.", "6.46 GB overhead; the nearest other figure is 5.21 GB, 4 % away"),
    ],
)
def test_small_invented_whole_numbers_are_removed(sentence: str, why: str) -> None:
    report = check(sentence, [calc()], "en")
    assert report.removed == [sentence], why


def test_round_figures_of_large_values_and_catalogue_sizes_about_cards_stay() -> None:
    result = calc(precision="bf16")
    draft = f"The weights are about {round(result.weights_gb)} GB. An H100 has 80 GB."
    assert check(draft, [result], "en").removed == []


def test_mb_figures_are_checked() -> None:
    result = calc()
    per_token_mb = result.kv_bytes_per_token / 1e6
    good = f"Each token of KV cache takes {per_token_mb:.2f} MB."
    bad = "Each token of KV cache takes 500 MB."
    report = check(f"{good} {bad}", [result], "en")
    assert report.removed == [bad]


@pytest.mark.parametrize(
    "sentence",
    [
        "It streams at 45 tok/s.",
        "The first token arrives in 80 ms.",
        "It holds 37 concurrent users.",
        "Use a context of 50,000 tokens.",
    ],
)
def test_invented_figures_in_other_units_are_removed(sentence: str) -> None:
    assert check(sentence, [calc()], "en").removed == [sentence]


def test_figures_the_visitor_gave_and_the_calculator_made_stay() -> None:
    result = calc(users=20, context=32768)
    draft = "For 20 users with 32k tokens each the cache grows. That is 32,768 tokens per sequence."
    report = check(draft, [result], "en", message="70B at 4 bits, 20 users, 32k context")
    assert report.removed == []


# ---------------------------------------------------------------------------- facts without figures


@pytest.mark.parametrize(
    "sentence",
    [
        "A GB is 1024 megabytes.",
        "Un GB son 1024 MB.",
        "GB and GiB are the same thing.",
        "bf16 uses 8 bits per weight.",
        "At int4 each parameter takes 2 bytes per parameter.",
        "Quantization has no effect on answer quality.",
        "The KV cache does not depend on the context length.",
    ],
)
def test_facts_the_articles_contradict_are_removed(sentence: str) -> None:
    report = check(f"{sentence} Ask me anything.", [], "en")
    assert report.removed == [sentence]
    assert report.reasons == ["fact"]


@pytest.mark.parametrize(
    "sentence",
    [
        "A GiB is 1.0737 GB.",
        "1 GB = 1000 MB.",
        "GB and GiB are not the same thing.",
        "bf16 uses 16 bits per weight.",
        "The KV cache grows with the context length.",
    ],
)
def test_true_facts_stay(sentence: str) -> None:
    assert check(sentence, [], "en").removed == []


# ---------------------------------------------------------------------------- topic, language, stale blocks

POEM = (
    "The sea is wide and the sea is deep,\n"
    "its waves roll in while sailors sleep;\n"
    "the gulls cry out above the foam,\n"
    "and every tide will bring them home."
)


def test_off_topic_text_is_flagged_and_not_shown() -> None:
    report = check(POEM, [], "en")
    assert report.off_topic
    assert "sailors" not in report.answer and report.reasons == ["off_topic"]


def test_an_off_topic_paragraph_inside_a_sizing_answer_goes() -> None:
    result = calc()
    report = check(f"A 70B at 4 bits fits one H100.\n\n{POEM}", [result], "en")
    assert not report.off_topic and "sailors" not in report.answer
    assert report.answer.startswith("A 70B at 4 bits fits one H100.")


def test_an_answer_in_the_other_language_is_flagged() -> None:
    result = calc(lang="es")
    english = "The model fits on one H100 with room to spare, and you should use the recommended card."
    assert check(english, [result], "es").wrong_language
    spanish = "El modelo cabe en una H100 con margen de sobra, y le recomiendo esa tarjeta para servirlo."
    assert not check(spanish, [result], "es").wrong_language


def test_lines_of_an_earlier_turns_calculator_block_are_not_repeated() -> None:
    earlier_result = calc(model="8b", precision="bf16")
    earlier = enforce("An 8B model at 16 bits.", [earlier_result], "en")
    assert "**Calculator check**" in earlier
    copied = "\n".join(earlier.splitlines()[2:5])  # the old block's heading line and arithmetic
    result = calc()
    report = check(f"Here is the sizing.\n{copied}", [result], "en", earlier=[earlier])
    assert f"{earlier_result.weights_gb:g} GB" not in report.answer.split("**Calculator check**")[0]
    assert set(report.reasons) == {"stale"}
    assert result.recommendation in report.answer


# ---------------------------------------------------------------------------- through the service


def llm_assistant(url: str, tmp_path: Path) -> Any:
    settings = Settings(data_dir=tmp_path, llm_base_url=url, llm_model="stub-model", llm_timeout=5)
    return build_assistant(settings, store=FakeArticles())


def test_the_visitor_gets_the_steering_answer_instead_of_a_poem(tmp_path: Path) -> None:
    with StubOpenAI([text(POEM)]) as stub:
        reply = llm_assistant(stub.url, tmp_path).answer("Write me a poem about the sea")
    assert "sailors" not in reply.answer
    assert reply.mode == "offline" and "GPU sizing assistant" in reply.answer
    assert reply.notice and "not about GPU sizing" in reply.notice


def test_a_spanish_visitor_never_gets_an_english_answer(tmp_path: Path) -> None:
    english = "The model fits on one H100 with room to spare, so you should pick that card for it."
    with StubOpenAI([text(english)]) as stub:
        reply = llm_assistant(stub.url, tmp_path).answer("¿Qué GPU necesito para Llama 3.1 70B a 4 bits?")
    assert reply.language == "es" and reply.mode == "offline"
    assert "room to spare" not in reply.answer
    assert reply.notice and "otro idioma" in reply.notice


def test_a_looping_small_model_is_cut_to_what_it_said_once() -> None:
    """What SmolLM2-135M wrote on the real lane: echoed template markup, a loop, a cut-off end."""
    loop = "It is about the 16-bit quantization, and it is about the 16-bit quantization."
    draft = f'<tool_response>\n"The weights decide the card. {loop} {loop} {loop} It is about the'
    report = check(draft, [calc()], "en")
    assert "<tool_response>" not in report.answer
    assert report.answer.count(loop) == 1
    assert not report.answer.split("\n\n")[0].endswith("It is about the")
    assert sorted(set(report.reasons)) == ["repeat", "unfinished"]


def test_a_claim_about_a_precision_nobody_calculated_is_not_judged() -> None:
    """The card-class text says a 70B at 8 bits does not fit an 80GB card; quoted in a 4-bit answer it stays."""
    result = calc(precision="int4", gpu="h100")
    sentence = "At 8 bits a 70B does not fit on one H100."
    assert check(sentence, [result], "en").removed == []


def test_a_run_on_claim_in_spanish_is_a_verdict() -> None:
    """An article's line about 4 bits, repeated in an 8-bit answer, says something false there."""
    result = calc(precision="int8", lang="es")
    sentence = "La cuantización permite ejecutar un modelo 70B en una tarjeta de 48GB."
    assert check(sentence, [result], "es").reasons == ["verdict"]


def test_checking_an_answer_again_removes_nothing() -> None:
    """Seen on the real lane: removing the one sizing sentence of a paragraph left the rest off topic."""
    result = calc(precision="int8", lang="es")
    draft = (
        "La cuantización permite ejecutar un modelo 70B en una tarjeta de 48GB. No sale gratis, pero "
        "tampoco es un desastre: el coste es real y se puede medir. Este artículo explica dónde suele "
        "ser inofensiva y cómo averiguarlo en su caso."
    )
    first = check(draft, [result], "es")
    assert "off_topic" in first.reasons
    assert check(first.answer, [result], "es").removed == []


def test_echoed_tool_output_and_half_tags_are_not_shown() -> None:
    """Also seen on the real lane: the calculator's JSON copied out, and a tag cut in half."""
    result = calc()
    draft = '<tool_response\n{"model": "70B", "precision": "int4", "total_gb": 48.33}\nThe weights decide the card.'
    report = check(draft, [result], "en")
    assert "tool_response" not in report.answer and '"precision"' not in report.answer
    assert report.answer.startswith("The weights decide the card.")
    assert report.reasons == ["tool_echo"]


@pytest.mark.parametrize(
    ("lang", "context", "weights"), [("es", "32.768 tokens", "16,06 GB"), ("en", "32,768 tokens", "16.06 GB")]
)
def test_the_appended_calculation_writes_numbers_the_readers_way(
    lang: str, context: str, weights: str
) -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", context=32768, lang=lang))
    answer = enforce("OK.", [result], lang)
    assert context in answer and weights in answer
