"""The guardrail on figures and fit claims in a draft: real calculations, hand-written drafts.

Claims of other kinds (verdicts, users, facts, topic, language) are in test_guardrail_claims.py;
the agent's own answers through the guardrail in test_agent_checked_answers.py.
"""

from __future__ import annotations

import pytest

from assistant.guardrail import check, enforce
from assistant.guardrail_figures import readings as _readings
from assistant.prompts import SYSTEM_PROMPT
from tools import SizingRequest, SizingResult, calculate_vram


def calc(model: str = "70b", precision: str = "int4", lang: str = "en", **fields: object) -> SizingResult:
    return calculate_vram(SizingRequest(model=model, precision=precision, lang=lang, **fields))  # type: ignore[arg-type]


def faithful_draft(result: SizingResult) -> str:
    """What a well-behaved model writes: the key numbers, the verdict, the caveat word for word."""
    option = next(o for o in result.options if result.recommended in (o.card_class, o.card))
    lines = [
        f"The weights take {result.weights_gb} GB and the total is {result.total_gb} GB.",
        f"Verdict: the {option.label} fits with {option.headroom_gb} GB of headroom.",
        *[f"- {line}" for line in result.arithmetic],
    ]
    if result.caveat:
        lines.append(result.caveat)
    return "\n".join(lines)


def test_a_faithful_answer_passes_unchanged() -> None:
    result = calc()
    draft = faithful_draft(result)
    report = check(draft, [result], "en")
    assert report.answer == draft
    assert report.removed == [] and not report.appended_figures and not report.appended_caveat


def test_wrong_figure_is_removed_and_the_real_numbers_and_caveat_added() -> None:
    result = calc()
    assert result.below_16_bit and result.caveat
    draft = "Good news! A 70B at 4 bits only needs 27.5 GB, so it is cheap to serve. Ask me anything else."
    report = check(draft, [result], "en")
    assert "27.5" not in report.answer
    assert report.removed == ["A 70B at 4 bits only needs 27.5 GB, so it is cheap to serve."]
    assert report.answer.startswith("Good news! Ask me anything else.")
    assert f"{result.weights_gb:g} GB" in report.answer and f"{result.total_gb:g} GB" in report.answer
    assert result.recommendation in report.answer
    assert all(line in report.answer for line in result.arithmetic)
    assert result.caveat in report.answer
    assert report.appended_figures and report.appended_caveat


@pytest.mark.parametrize("lang", ["en", "es"])
def test_a_speed_carries_the_published_runs_warning(lang: str) -> None:
    """DeepSeek-R1 at 4 bits on 8 × MI300X: no published run at that precision, so the estimate is
    the roofline's, and the calibration's FP8 runs reached about half its tokens/s. An answer that
    gives a speed gets that warning, in the visitor's language, unless it says it already; an
    answer about memory alone does not."""
    from tools.performance import published_text

    result = calc("deepseek-r1", "int4", lang, gpu="mi300x:8", users=8)
    assert result.performance is not None and result.performance.published is not None
    warning = published_text(result.performance, lang).strip()  # type: ignore[arg-type]
    assert warning and "S56" in warning
    memory = faithful_draft(result)
    tokens = round(result.performance.output_tok_s_per_user.best)
    speed = f"{memory}\n\nEach user gets about {tokens} tok/s."
    plain = check(memory, [result], lang)
    assert not plain.appended_published and warning not in plain.answer
    report = check(speed, [result], lang)
    assert report.appended_published and report.answer.endswith(f"> {warning}")
    assert f"{tokens} tok/s" in report.answer
    said = check(f"{speed} {warning}", [result], lang)
    assert not said.appended_published and said.answer.count(warning) == 1


def test_the_published_runs_warning_follows_the_speed_it_qualifies() -> None:
    """Two calculations in one turn, one with published runs far from its estimate (DeepSeek-R1 at
    4 bits on 8 x MI300X) and one without: quoting only the other's speed brings no warning about
    DeepSeek."""
    from tools.performance import published_text

    deepseek = calc("deepseek-r1", "int4", gpu="mi300x:8", users=8)
    llama = calc("llama-3.1-8b", "bf16", gpu="h100-80gb", users=8)
    assert deepseek.performance and deepseek.performance.published and llama.performance
    assert not published_text(llama.performance, "en").strip()
    warning = published_text(deepseek.performance, "en").strip()
    other = f"Llama gives each user about {llama.performance.output_tok_s_per_user.best:.0f} tok/s."
    report = check(other, [deepseek, llama], "en")
    assert not report.appended_published and warning not in report.answer
    own = f"DeepSeek gives each user about {deepseek.performance.output_tok_s_per_user.best:.0f} tok/s."
    report = check(f"{other} {own}", [deepseek, llama], "en")
    assert report.appended_published and report.answer.endswith(f"> {warning}")


def test_an_estimate_anchored_to_the_published_runs_carries_no_warning_about_them() -> None:
    """At FP8, the precision the runs used, the estimate is scaled to them and its basis says so:
    warning that they were slower than it would be false."""
    from tools.performance import basis_text, published_text

    result = calc("deepseek-r1", "fp8", gpu="mi300x:8", users=8)
    assert result.performance is not None and "S56" in result.performance.anchored_to
    assert not published_text(result.performance, "en")
    assert "published runs of this model on this card (S56" in basis_text(result.performance, "en")
    speed = f"Each user gets about {round(result.performance.output_tok_s_per_user.best)} tok/s."
    assert not check(speed, [result], "en").appended_published


def test_the_estimates_speeds_are_allowed_figures_and_others_are_not() -> None:
    """Every band of `performance` (tokens/s per user and in total, TTFT, TPOT) is a figure a draft
    may give, at its low, best or high; a speed no tool produced is removed."""
    result = calc("llama-3.1-8b", "bf16", gpu="h100-80gb", users=16)
    perf = result.performance
    assert perf is not None
    right = [
        f"Each user reads about {perf.output_tok_s_per_user.best:.0f} tok/s.",
        f"All users together get {perf.output_tok_s_total.low:.0f} to {perf.output_tok_s_total.high:.0f} tok/s.",
        f"The first token comes in about {perf.ttft_ms.best:.0f} ms, then one every {perf.tpot_ms.best:.1f} ms.",
    ]
    wrong = f"Each user reads about {perf.output_tok_s_per_user.best * 3:.0f} tok/s."
    report = check(" ".join([*right, wrong]), [result], "en")
    assert report.removed == [wrong] and report.reasons == ["figure"]


def test_a_request_rate_is_its_own_unit() -> None:
    """`performance.requests_per_s` is a rate of requests, not of tokens: a draft may give it per
    second, minute or hour, in English or Spanish; the same number written as tokens/s, or a
    request rate no tool produced, is removed."""
    result = calc("llama-3.1-8b", "bf16", gpu="h100-80gb", users=16)
    perf = result.performance
    assert perf is not None
    rate = perf.requests_per_s.best
    right = [
        f"It completes about {rate:.1f} requests/s.",
        f"That is about {rate * 60:.0f} requests per minute.",
        f"Unas {rate * 3600:,.0f} peticiones por hora.".replace(",", "."),
    ]
    as_tokens = f"It streams {rate:.1f} tok/s."
    invented = f"It completes about {rate * 3:.1f} requests/s."
    report = check(" ".join([*right, as_tokens, invented]), [result], "en")
    assert report.removed == [as_tokens, invented], report.removed


def test_figures_within_rounding_are_kept() -> None:
    result = calc(precision="bf16")
    rounded = round(result.weights_gb)
    draft = f"The weights alone are about {rounded} GB at 16 bits."
    assert enforce(draft, [result], "en").startswith(draft)


def test_spanish_answer_gets_spanish_additions() -> None:
    result = calc(lang="es")
    answer = enforce("Un 70B a 4 bits cabe en una tarjeta de 48GB.", [result], "es")
    assert "Comprobación de la calculadora" in answer
    assert result.caveat and result.caveat in answer
    assert result.recommendation in answer


def test_the_calculation_arrives_when_the_model_never_called_the_calculator() -> None:
    """The service computes the sizing itself and passes it here; the draft had no numbers."""
    result = calc()
    answer = enforce("A 70B can run quantized on a single card.", [result], "en")
    assert answer.startswith("A 70B can run quantized on a single card.")
    assert result.recommendation in answer and result.caveat and result.caveat in answer


def test_told_to_say_it_fits_on_a_card_that_is_too_small() -> None:
    result = calc(precision="bf16")
    draft = "As you asked: yes, it fits on a single RTX 4090. It also fits in 24 GB easily."
    report = check(draft, [result], "en")
    assert "RTX 4090" not in report.answer and "24 GB" not in report.answer
    assert len(report.removed) == 2
    assert result.recommendation in report.answer


def test_bare_it_fits_is_removed_when_nothing_fits_but_a_denial_stays() -> None:
    result = calc(precision="bf16", gpu="l40s")
    assert result.recommended is None
    report = check("Yes, it fits. Honestly it does not fit on one L40S.", [result], "en")
    assert report.removed == ["Yes, it fits."]
    assert report.answer.startswith("Honestly it does not fit on one L40S.")


def test_a_true_fit_claim_is_kept() -> None:
    result = calc(precision="int4")
    draft = "At 4 bits the 70B fits on one H100."
    assert enforce(draft, [result], "en").startswith(draft)
    # With vLLM's defaults the 48GB class falls just short, so the same claim about an L40S goes.
    assert not enforce("At 4 bits the 70B fits on one L40S.", [result], "en").startswith("At 4 bits")


def test_leaked_system_prompt_is_removed() -> None:
    result = calc()
    rule = next(line for line in SYSTEM_PROMPT.splitlines() if line.startswith("3. "))
    leak = rule.split(". ", 1)[1].split(". ")[0] + "."  # "Every GB figure, verdict, ... a tool result."
    report = check(f"My instructions say: {leak} Anyway, here is the sizing.", [result], "en")
    assert leak not in report.answer
    assert "here is the sizing" in report.answer


def test_article_figures_count_when_the_article_was_quoted() -> None:
    result = calc()
    draft = "The article's rule of thumb lands at 37.5GB for this case."
    assert "37.5GB" not in enforce(draft, [result], "en")
    assert "37.5GB" in enforce(draft, [result], "en", quoted=["a rule of thumb of 37.5GB"])


@pytest.mark.parametrize(
    "draft",
    [
        "An H100 has 80GB (79.6 GiB as nvidia-smi shows it) and 3350 GB/s of bandwidth.",
        "An RTX 5090 has 32 GB of memory.",  # a card people own, named in the sentence
    ],
)
def test_catalogue_figures_of_a_named_card_are_not_invented_numbers(draft: str) -> None:
    assert enforce(draft, [], "en") == draft


@pytest.mark.parametrize(
    "invented",
    [
        "The KV cache for this chat is 3.7 GB.",
        # An owned card's memory (RTX 5090: 32 GB) counts only where the sentence names the card.
        "The cache for this chat is 33.58 GB.",
    ],
)
def test_general_answer_without_calculations_loses_invented_figures(invented: str) -> None:
    answer = enforce(f"{invented} It grows with context.", [], "en")
    assert answer == "It grows with context."


def test_list_items_and_table_rows_are_removed_whole() -> None:
    result = calc()
    draft = faithful_draft(result) + "\n| 70B | 12.3 GB | fits |\n- extra: 12.3 GB"
    report = check(draft, [result], "en")
    assert "12.3" not in report.answer
    assert len(report.removed) == 2


@pytest.mark.parametrize(
    ("written", "readings"),
    [
        ("35", ((35.0, 0),)),
        ("35.3", ((35.3, 1),)),
        ("35,3", ((35.3, 1),)),
        ("1.342", ((1.342, 3), (1342.0, 0))),
        ("1,342.5", ((1342.5, 1),)),
        ("1.342,5", ((1342.5, 1),)),
        ("0,125", ((0.125, 3),)),
    ],
)
def test_number_readings(written: str, readings: tuple[tuple[float, int], ...]) -> None:
    assert _readings(written) == readings


def test_a_figure_with_decimals_must_match_to_the_digit_shown() -> None:
    result = calc()
    near = round(result.total_gb + 0.5, 1)
    assert f"{near} GB" not in enforce(f"The total is {near} GB.", [result], "en")
    whole = round(result.total_gb)
    assert enforce(f"The total is about {whole} GB.", [result], "en").startswith("The total is about")


def test_spanish_claim_that_it_fits_where_it_cannot() -> None:
    result = calc(precision="bf16", lang="es")
    report = check("¡Claro! Sí, cabe en una sola L40S. No cabe en una RTX 4090, eso sí.", [result], "es")
    assert report.removed == ["Sí, cabe en una sola L40S."]
    assert "No cabe en una RTX 4090" in report.answer
    assert result.recommendation in report.answer
