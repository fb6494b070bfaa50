"""Drafts of what was asked, checked against the calculator: the conversation, a pasted e-mail, the calculator."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assistant.quote import load_price_list
from assistant.sales import (
    Signature,
    draft_from_message,
    draft_from_result,
    draft_from_state,
    format_number,
    plain,
)
from assistant.schemas import ConversationState
from tests.drafts import LLAMA_8B_CONFIG, table_rows
from tools import SizingRequest, calculate_vram

EXAMPLE_PRICES = Path(__file__).resolve().parents[1] / "assistant" / "data" / "prices.example.yaml"


def en_number(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.parametrize("state", [None, ConversationState(), ConversationState(users=4, language="es")])
def test_nothing_to_draft_says_so_with_no_figures(state: ConversationState | None) -> None:
    outcome = draft_from_state(state, "en")
    assert not outcome.drafted and outcome.markdown.startswith("Nothing to draft yet")
    assert not re.search(r"\d", outcome.markdown) and outcome.calculations == ()


def test_the_calculator_is_drafted_only_when_picked_and_then_as_stated() -> None:
    assert not draft_from_result(None, "en").drafted
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", precision="fp8", context=16384, users=10))
    outcome = draft_from_result(result, "en")
    assert (
        "at **8-bit FP8** with 16,384 tokens of context for 10 concurrent users on vLLM" in outcome.markdown
    )
    assert "left a choice open" not in outcome.markdown and outcome.missing == ()


def test_a_conversation_without_a_precision_gets_our_recommendation_not_their_question() -> None:
    state = ConversationState(model="llama-3.1-70b", users=20, language="en")
    outcome = draft_from_state(state, "en")
    thanks = next(line for line in outcome.markdown.splitlines() if line.startswith("Thank you"))
    assert "**Llama 3.1 70B** for 20 concurrent users." in thanks
    assert not re.search(r"\b(at|int4|int8|bf16|INT4|INT8|BF16)\b", thanks)
    # Of the three precisions the chat compares, the best quality that fits anywhere is ours.
    compared = [
        calculate_vram(SizingRequest(model="llama-3.1-70b", precision=p, users=20))
        for p in ("bf16", "int8", "int4")
    ]
    chosen = next(result for result in compared if result.recommended is not None)
    assert outcome.subject is not None and outcome.subject.result.precision == chosen.precision
    assert f"**{chosen.precision.upper()}" in outcome.markdown or chosen.precision.upper() in outcome.markdown
    assert "because that is the highest quality that fits" in outcome.markdown
    assert table_rows(outcome.markdown)["Total needed"] == f"{chosen.total_gb:.1f}"
    assert outcome.missing == ("precision", "context")
    assert (
        "the precision" in outcome.note_for_salesperson and "context length" in outcome.note_for_salesperson
    )


def test_the_headroom_adds_up_for_the_reader() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="int8", users=20))
    recommended = next(o for o in result.options if o.card_class == result.recommended)
    draft = draft_from_result(result, "en").markdown
    sentence = re.search(r"\((\d[\d.,]*) \+ (\d[\d.,]*) \+ (\d[\d.,]*) = (\d[\d.,]*) GB\)", draft)
    assert sentence, draft
    need, reserve, headroom, usable = (en_number(value) for value in sentence.groups())
    assert need == round(result.total_gb, 1) and usable == round(recommended.usable_gb, 1)
    assert headroom == round(recommended.headroom_gb, 1)
    assert round(need + reserve + headroom, 1) == usable
    assert "keeps" in draft and "for its own runtime" in draft  # the reserve is explained
    rows = table_rows(draft)
    assert rows["Engine reserve"] == f"{reserve:.1f}" and rows["Headroom"] == f"{headroom:.1f}"


def test_a_pasted_spanish_email_is_understood_like_the_chat_and_sized_by_the_calculator() -> None:
    email = (
        "Buenos días:\n\nEstamos valorando servir Llama 3.1 8B para unas 50 personas a la vez con "
        "contextos de 32k. ¿Qué servidor nos recomiendan?\n\nGracias, Lucía"
    )
    outcome = draft_from_message(email, customer_name="Lucía")
    assert outcome.drafted and outcome.lang == "es"
    assert outcome.markdown.startswith("Hola, Lucía:")
    assert "**Llama 3.1 8B** con 32.768 tokens de contexto para 50 usuarios concurrentes." in outcome.markdown
    assert outcome.missing == ("precision",)
    assert "El cliente no dijo: la precisión" in outcome.note_for_salesperson
    chosen = outcome.subject.result  # type: ignore[union-attr]
    expected = calculate_vram(
        SizingRequest(model="llama-3.1-8b", precision=chosen.precision, context=32768, users=50)
    )
    assert table_rows(outcome.markdown)["Total necesario"] == format_number(expected.total_gb, "es", 1)
    for english in ("Hello", "recommend", "Weights", "Best regards"):
        assert english not in outcome.markdown


def test_an_email_with_no_model_asks_the_salesperson_for_it() -> None:
    outcome = draft_from_message("Hi, we need a server for our chatbot with 30 users. Price?")
    assert not outcome.drafted and "which model" in outcome.markdown and "GB" not in outcome.markdown


@pytest.mark.parametrize(
    ("message", "lang", "said", "listed"),
    [
        ("Hi, we want llama on 4 L40S, what can we serve?", "en", "the Llama family", "Llama 3.3 70B"),
        ("Hola, queremos montar qwen para 30 usuarios", "es", "la familia Qwen", "Qwen3 32B"),
        ("Can we run gemma 4 on an H100?", "en", "Gemma 4, which the catalog does not have", "Gemma 3 27B"),
    ],
)
def test_an_email_with_only_a_family_asks_which_of_its_models(
    message: str, lang: str, said: str, listed: str
) -> None:
    outcome = draft_from_message(message)
    assert not outcome.drafted and outcome.lang == lang and outcome.calculations == ()
    assert said in outcome.markdown and listed in outcome.markdown
    assert "GB" not in outcome.markdown


def test_a_conversation_left_at_which_llama_is_not_drafted_as_another_model() -> None:
    outcome = draft_from_state(ConversationState(family="llama", users=20), "en")
    assert not outcome.drafted and "the Llama family" in outcome.markdown


def test_no_internal_command_and_a_signature_from_the_settings() -> None:
    outcome = draft_from_message(
        "Can Qwen2.5 32B in fp8 serve 10 users with 8k context?",
        signature=Signature(salesperson="Marta Ruiz", company="ACME GPUs", contact="marta@acme.example"),
    )
    assert "sizing compare" not in outcome.markdown and "`" not in outcome.markdown
    assert "side-by-side evaluation on your tasks" in outcome.markdown
    assert outcome.markdown.rstrip().endswith("Best regards,\nMarta Ruiz\nACME GPUs\nmarta@acme.example")


HOSTILE = "<img src=x onerror=alert(1)> [click](javascript:alert(1)) **bold** | ![x](http://evil/p.png)"


def test_hostile_text_in_any_field_is_inert_in_the_markdown() -> None:
    config = {**LLAMA_8B_CONFIG, "_name_or_path": HOSTILE}
    result = calculate_vram(SizingRequest(model=HOSTILE, config=config, precision="bf16"))
    outcome = draft_from_result(
        result, "en", customer_name=HOSTILE, signature=Signature(HOSTILE, HOSTILE, HOSTILE)
    )
    markdown = outcome.markdown
    assert "<img" not in markdown and "javascript:alert" not in markdown and "http://" not in markdown
    assert not re.search(r"(?<!\\)\]\(", markdown)  # no link or image syntax left unescaped
    assert "**bold**" not in markdown and "\\*\\*bold\\*\\*" in markdown
    assert plain(HOSTILE) in markdown  # still readable, just inert


def test_the_quote_section_comes_only_with_a_price_list() -> None:
    message = "Llama 3.1 70B in AWQ for 20 users with 8k context on vLLM"
    without = draft_from_message(message)
    assert "**Quote**" not in without.markdown and "EUR" not in without.markdown and without.quote is None
    priced = draft_from_message(message, price_list=load_price_list(EXAMPLE_PRICES), utilization=0.5)
    assert priced.quote is not None and priced.quote.configurations
    assert "**Quote**" in priced.markdown and "These are example prices, not an offer." in priced.markdown
    for config in priced.quote.configurations:
        assert config.name in priced.markdown


@pytest.mark.e2e
def test_cli_draft_prints_the_reply_and_the_note_for_the_salesperson(tmp_path: Path) -> None:
    import os

    from tests.sizing_cli import run_sizing

    email = tmp_path / "email.txt"
    email.write_text("Hola, ¿qué servidor para Llama 3.1 8B con 10 usuarios?", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIZING_")}
    env.update(
        SIZING_DATA_DIR=str(tmp_path),
        SIZING_SALESPERSON_NAME="Marta",
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    done = run_sizing("draft", "--file", str(email), "--customer", "Lucía", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Hola, Lucía:") and done.stdout.rstrip().endswith("Marta")
    assert "note: El cliente no dijo: la precisión" in done.stderr and "Presupuesto" not in done.stdout
    email.write_text("Hola, ¿tienen servidores?", encoding="utf-8")
    nothing = run_sizing("draft", "--file", str(email), "--json", env=env)
    assert nothing.returncode == 1 and '"drafted": false' in nothing.stdout


@pytest.mark.parametrize(("lang", "basis"), [("en", "calibrated on"), ("es", "calibrado con")])
def test_the_draft_states_the_expected_speed_with_its_range_and_basis(lang: str, basis: str) -> None:
    from assistant.sales import draft_reply, format_number
    from tools import SizingRequest, calculate_vram

    result = calculate_vram(SizingRequest(model="llama-3.1-8b", users=20, lang=lang))  # type: ignore[arg-type]
    recommended = next(o for o in result.options if result.recommended in (o.card_class, o.card))
    estimate = recommended.performance
    assert estimate is not None
    draft = draft_reply(result, lang)  # type: ignore[arg-type]
    [line] = [
        line for line in draft.splitlines() if line.startswith(("Expected speed", "Velocidad esperada"))
    ]
    per_user = estimate.output_tok_s_per_user
    for value in (per_user.best, per_user.low, per_user.high, estimate.ttft_ms.best):
        assert format_number(value, lang) in line  # type: ignore[arg-type]
    assert basis in line


def test_a_cpu_host_keeps_its_own_calibrated_speed_in_the_draft() -> None:
    from assistant.sales import draft_reply, format_number
    from tools import SizingRequest, calculate_vram

    result = calculate_vram(SizingRequest(model="llama-3.1-8b", precision="q4_k_m", gpu="cpu-ddr5-64gb"))
    option = result.options[0]
    assert option.decode_tokens_per_s
    draft = draft_reply(result, "en")
    assert f"about {format_number(option.decode_tokens_per_s, 'en')} tokens per second" in draft


def test_a_customer_message_with_a_latency_need_gets_the_verdict_against_it() -> None:
    from assistant.sales import draft_outcome, subject_from_message

    subject, lang = subject_from_message("agente de voz con llama 3.1 8b fp8 en una l4, ¿nos vale?")
    assert subject is not None and lang == "es"
    estimate = subject.result.options[0].performance
    assert estimate is not None and estimate.target is not None and estimate.meets_target is not None
    markdown = draft_outcome(subject).markdown
    [line] = [line for line in markdown.splitlines() if line.startswith("Velocidad esperada")]
    assert "agente de voz" in line
    assert ("Eso cumple" in line) == estimate.meets_target


NOT_FITTING = re.compile(
    r"it needs about ([\d,.]+) GB, and on the largest machine, (.+?), \S+ also keeps ([\d,.]+) GB .*?"
    r"so it needs ([\d,.]+) GB of the ([\d,.]+) GB usable, ([\d,.]+) GB short"
)


@pytest.mark.parametrize(
    "request_",
    [
        SizingRequest(model="llama-3.3-70b", precision="fp8", users=30),
        SizingRequest(model="llama-3.1-70b", precision="bf16", users=10),
        SizingRequest(model="llama-3.1-8b", precision="bf16", context=131072, users=40),
        SizingRequest(model="llama-3.1-8b", precision="fp8", context=16384, users=10),
        SizingRequest(model="llama-3.1-70b", precision="int4", users=4),
    ],
)
def test_a_draft_that_does_not_fit_shows_the_engine_reserve_that_makes_it_not_fit(
    request_: SizingRequest,
) -> None:
    result = calculate_vram(request_)
    markdown = draft_from_result(result, "en").markdown
    if result.recommended is not None:
        assert "None of the machines" not in markdown
        recommended = next(o for o in result.options if o.card_class == result.recommended)
        sums = re.search(r"\((\d[\d.,]*) \+ (?:(\d[\d.,]*) \+ )?(-?\d[\d.,]*) = (\d[\d.,]*) GB\)", markdown)
        assert sums, markdown
        need, reserve, headroom, usable = (en_number(v) if v else 0.0 for v in sums.groups())
        assert usable == round(recommended.usable_gb, 1) and round(need + reserve + headroom, 1) == usable
        return
    match = NOT_FITTING.search(markdown)
    assert match, markdown
    need, label, reserve, with_reserve, usable, short = match.groups()
    largest = max(result.options, key=lambda option: option.usable_gb)
    assert en_number(need) == round(result.total_gb, 1) and label == largest.label
    assert en_number(usable) == round(largest.usable_gb, 1)
    # The figures add up, and the shortfall is the calculator's own negative headroom.
    assert en_number(with_reserve) == pytest.approx(en_number(need) + en_number(reserve), abs=0.051)
    assert en_number(short) == pytest.approx(-largest.headroom_gb, abs=0.11)
    assert en_number(with_reserve) > en_number(usable)


def test_the_spanish_draft_that_does_not_fit_names_the_reserve() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.3-70b", precision="fp8", users=30))
    markdown = draft_from_result(result, "es").markdown
    assert "se reserva además" in markdown and "faltan" in markdown


def test_the_draft_says_when_published_runs_on_the_card_were_slower() -> None:
    """At 4 bits no run of DeepSeek-V3 on 8 x MI300X anchors the estimate, and its FP8 runs were
    slower than the roofline: the draft warns. At FP8 the estimate is scaled to those runs and the
    draft says what it rests on instead."""
    result = calculate_vram(SizingRequest(model="deepseek-v3", precision="int4", gpu="mi300x:8", users=16))
    draft = draft_from_result(result, "en")
    assert "Published runs of this model on this card" in draft.markdown and "load-test" in draft.markdown
    spanish = draft_from_result(
        calculate_vram(
            SizingRequest(model="deepseek-v3", precision="int4", gpu="mi300x:8", users=16, lang="es")
        ),
        "es",
    )
    assert "mediciones publicadas" in spanish.markdown
    fp8 = draft_from_result(
        calculate_vram(SizingRequest(model="deepseek-v3", precision="fp8", gpu="mi300x:8", users=16)), "en"
    )
    assert "load-test the endpoint" not in fp8.markdown
    assert "scaled to the published runs of this model on this card" in fp8.markdown
