"""The sales draft: a customer-ready reply about exactly what the customer asked.

    outcome = draft_from_message("Hola, ¿qué servidor para Llama 3.1 70B con 20 usuarios?")
    outcome = draft_from_state(session.conversation, "es")       # the chat's conversation
    outcome = draft_from_result(calculator_result, "en")         # the calculator, picked explicitly

A pasted e-mail is read with the chat's own understanding (`assistant.offline.understanding`)
and sized with the chat's own plan (`assistant.offline.sizing`). What the customer stated is
repeated as their question; every choice they left open (precision, context, users, engine) is
presented as our recommendation with its reason, and listed for the salesperson to confirm. With
no model named there is nothing to draft, and the outcome says so with no figures.

Numbers add up for the reader: need + engine reserve + headroom = usable. Every number comes from
the calculator; every sentence from assistant/data/sales.yaml; text from outside (names, model
names from a config.json, settings) is neutralised so it cannot inject Markdown, HTML or links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from assistant.offline.read_models import family_label, family_list
from assistant.offline.sizing import merge_slots, plan_sizing, run_plan
from assistant.offline.understanding import understand
from assistant.quote import build_quote
from assistant.sales_texts import sales_text
from assistant.schemas import ConversationState
from tools.advice import smaller_alternative
from tools.engines import ENGINE_LABELS
from tools.errors import SizingError
from tools.i18n import Language, number
from tools.performance import basis_text, published_text, target_text
from tools.performance_sizing import calibrated_estimate
from tools.precision import nominal_bits

if TYPE_CHECKING:
    from assistant.quote import Quote
    from tools import CardOption, SizingResult


# The choices a customer may leave open; each one not stated becomes our recommendation.
OPEN_CHOICES = ("precision", "context", "users", "engine")
# Those the salesperson is asked to confirm (the engine is ours to pick).
ASK_SALESPERSON = ("precision", "context", "users")

# Below this many GB a reserve or headroom is rounding, not something to explain.
SHOWN_GB = 0.05

# Markdown and HTML punctuation that could turn outside text into emphasis, links, tables or tags.
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]|#~])")


def plain(text: str, limit: int = 200) -> str:
    """Outside text made inert in Markdown: one line, no tags, no links, no emphasis, clipped."""
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = " ".join(text.split())[:limit]
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # A URL scheme would be linkified by many renderers; a space after the colon stops it.
    text = re.sub(r"(?i)\b([a-z][a-z0-9+.-]*):(?=/|\\)", r"\1: ", text)
    text = re.sub(r"(?i)\b(javascript|data|vbscript):", r"\1: ", text)
    return _MARKDOWN_ACTIVE.sub(r"\\\1", text)


def _w(key: str, lang: Language, **values: object) -> str:
    return sales_text(key, lang, **values)


def format_number(value: float, lang: Language, decimals: int = 0, sign: bool = False) -> str:
    """A number as each language writes it (tools/i18n.py): 8,192.5 in English, 8.192,5 in Spanish."""
    return number(value, lang, decimals, sign)


def precision_label(precision: str, lang: Language) -> str:
    """'int4' -> '4-bit INT4' (English) or 'INT4 de 4 bits' (Spanish)."""
    bits = nominal_bits(precision)
    shown_bits = format_number(bits, lang, 0 if float(bits).is_integer() else 1)
    return _w("precision_label", lang, bits=shown_bits, name=precision.upper())


@dataclass(frozen=True)
class Signature:
    """The closing block: who writes, for which company, how to reach them (from the settings)."""

    salesperson: str = ""
    company: str = ""
    contact: str = ""

    @classmethod
    def from_settings(cls, settings: Any) -> Signature:
        return cls(settings.salesperson_name, settings.company_name, settings.salesperson_contact)

    def lines(self) -> list[str]:
        return [plain(part) for part in (self.salesperson, self.company, self.contact) if part.strip()]


@dataclass(frozen=True)
class DraftSubject:
    """What is being drafted: one calculation and which of its choices the customer stated."""

    result: SizingResult
    lang: Language
    stated: frozenset[str] = frozenset(OPEN_CHOICES)
    # Precisions sized when the customer named none, best quality first (the reason for ours).
    compared: tuple[SizingResult, ...] = ()
    card_named: bool = False


@dataclass(frozen=True)
class DraftOutcome:
    """A draft, or the reason there is none; plus what the salesperson should ask the customer."""

    markdown: str
    lang: Language
    drafted: bool
    missing: tuple[str, ...] = ()
    note_for_salesperson: str = ""
    calculations: tuple[SizingResult, ...] = ()
    quote: Quote | None = None
    subject: DraftSubject | None = field(default=None, repr=False)

    def public_json(self) -> dict[str, Any]:
        return {
            "drafted": self.drafted,
            "language": self.lang,
            "missing": list(self.missing),
            "note_for_salesperson": self.note_for_salesperson,
            "calculations": [result.model_dump(mode="json") for result in self.calculations],
            "quote": self.quote.public_json() if self.quote else None,
        }


# ---------------------------------------------------------------- subjects


def subject_from_state(
    state: ConversationState | None, lang: Language, understanding: Any = None
) -> DraftSubject | None:
    """The subject of a conversation: its slots sized as the chat sizes them; None without a model."""
    if state is None:
        return None
    plan = plan_sizing(state, lang, understanding)
    if plan is None:
        return None
    calculations = run_plan(plan)
    results = calculations.on_card or calculations.by_class
    stated = frozenset(
        name
        for name, said in (
            ("precision", bool(state.precision) or (len(plan.precisions) > 1 and not plan.side_by_side)),
            ("context", state.context is not None),
            ("users", state.users is not None),
            ("engine", state.engine is not None),
        )
        if said
    )
    if len(results) == 1:
        return DraftSubject(results[0], lang, stated, card_named=bool(plan.gpu))
    chosen = next((result for result in results if _fits(result)), results[-1])
    return DraftSubject(
        chosen, lang, stated - {"precision"}, compared=tuple(results), card_named=bool(plan.gpu)
    )


def _fits(result: SizingResult) -> bool:
    return result.recommended is not None or any(option.fits for option in result.options if option.card)


def subject_from_message(message: str, default_lang: Language = "en") -> tuple[DraftSubject | None, Language]:
    """The subject of a pasted customer message, read as the chat reads one."""
    reading = understand(message, default_lang)
    state = merge_slots(ConversationState(), reading)
    return subject_from_state(state, reading.language, reading), reading.language


# ---------------------------------------------------------------- outcomes


def nothing_to_draft(
    lang: Language, from_message: bool = False, family: str | None = None, unknown: str | None = None
) -> DraftOutcome:
    """No model to size. A family named with no size ("llama on 4 L40S") or a version the catalog
    lacks ("gemma 4") is said with the family's catalog models, for the salesperson to ask which."""
    if family and unknown:
        text = _w("nothing_to_draft_unknown", lang, written=plain(unknown), models=family_list(family))
    elif family:
        text = _w("nothing_to_draft_family", lang, family=family_label(family), models=family_list(family))
    else:
        text = _w("nothing_to_draft_message" if from_message else "nothing_to_draft", lang)
    return DraftOutcome(markdown=text, lang=lang, drafted=False)


def draft_outcome(
    subject: DraftSubject,
    customer_name: str | None = None,
    signature: Signature | None = None,
    quote: Quote | None = None,
) -> DraftOutcome:
    lang = subject.lang
    missing = tuple(name for name in ASK_SALESPERSON if name not in subject.stated)
    note = ""
    if missing:
        listed = ", ".join(_w(f"slot_{name}", lang) for name in missing)
        note = _w("ask_salesperson", lang, missing=listed)
    return DraftOutcome(
        markdown=draft_reply(
            subject.result, lang, customer_name, signature=signature, quote=quote, subject=subject
        ),
        lang=lang,
        drafted=True,
        missing=missing,
        note_for_salesperson=note,
        calculations=(*subject.compared,) if subject.compared else (subject.result,),
        quote=quote,
        subject=subject,
    )


class DraftExtras(TypedDict, total=False):
    """What every draft entry point may add: the customer's name, the signature, prices."""

    customer_name: str | None
    signature: Signature | None
    price_list: Any  # assistant.quote.PriceList; None drafts without a quote
    utilization: float  # share of the month the server generates (default 0.5)


def draft_from_message(
    message: str, default_lang: Language = "en", **extras: Unpack[DraftExtras]
) -> DraftOutcome:
    reading = understand(message, default_lang)
    if reading.model is None and (reading.family or reading.unknown_family):
        family = reading.family or reading.unknown_family
        return nothing_to_draft(reading.language, family=family, unknown=reading.unknown_model)
    subject, lang = subject_from_message(message, default_lang)
    return _drafted(subject, lang, extras, from_message=True)


def draft_from_state(
    state: ConversationState | None, lang: Language, **extras: Unpack[DraftExtras]
) -> DraftOutcome:
    subject = subject_from_state(state, state.language or lang if state else lang)
    if subject is None and state is not None and state.family and not state.model:
        return nothing_to_draft(lang, family=state.family)  # "which Llama?" is still open
    return _drafted(subject, lang, extras)


def draft_from_result(
    result: SizingResult | None, lang: Language, **extras: Unpack[DraftExtras]
) -> DraftOutcome:
    """The calculator's result, every field as the salesperson set it (so every choice is stated)."""
    if result is None:
        return nothing_to_draft(lang)
    subject = DraftSubject(result, lang, card_named=any(option.card for option in result.options))
    return _drafted(subject, lang, extras)


def _drafted(
    subject: DraftSubject | None, lang: Language, extras: DraftExtras, from_message: bool = False
) -> DraftOutcome:
    if subject is None:
        return nothing_to_draft(lang, from_message=from_message)
    quote = _quote_for(subject, extras.get("price_list"), extras.get("utilization", 0.5))
    return draft_outcome(subject, extras.get("customer_name"), extras.get("signature"), quote)


def _quote_for(subject: DraftSubject, price_list: Any, utilization: float) -> Quote | None:
    if price_list is None:
        return None
    try:
        return build_quote(subject.result.request(lang=subject.lang), price_list, utilization)
    except SizingError:
        return None


# ---------------------------------------------------------------- the reply


def _option_id(option: CardOption) -> str | None:
    return option.card_class or option.card


def _recommended_option(result: SizingResult) -> CardOption | None:
    if result.recommended is None:
        # A single named card has no class to recommend; it is the recommendation when it fits.
        named = [option for option in result.options if option.card]
        return named[0] if len(named) == 1 and named[0].fits else None
    return next((o for o in result.options if _option_id(o) == result.recommended), None)


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _users(users: int, lang: Language) -> dict[str, str]:
    """The `users` and `users_word` fields of a sentence: "1 user", "8.192 usuarios"."""
    return {"users": format_number(users, lang), "users_word": _w("user" if users == 1 else "users", lang)}


def _asked_phrase(subject: DraftSubject) -> str:
    """The customer's question in their own terms: the model and only what they stated."""
    result, lang = subject.result, subject.lang
    parts = [f"**{plain(result.model.name)}**"]
    if "precision" in subject.stated:
        parts.append(_w("asked_precision", lang, precision=f"**{precision_label(result.precision, lang)}**"))
    if "context" in subject.stated:
        parts.append(_w("asked_context", lang, context=format_number(result.context, lang)))
    if "users" in subject.stated:
        parts.append(_w("asked_users", lang, **_users(result.users, lang)))
    if "engine" in subject.stated:
        parts.append(_w("asked_engine", lang, engine=ENGINE_LABELS.get(result.engine, result.engine)))
    if subject.card_named:
        named = next((option for option in result.options if option.card), None)
        if named is not None:
            parts.append(_w("asked_card", lang, card=plain(named.label)))
    return " ".join(parts)


def _open_points(subject: DraftSubject) -> list[str]:
    """One bullet per choice the customer left open: what we recommend and why."""
    result, lang = subject.result, subject.lang
    points: list[str] = []
    if "precision" not in subject.stated:
        points.append(_precision_reason(subject))
    if "context" not in subject.stated:
        points.append(_w("recommend_context", lang, context=format_number(result.context, lang)))
    if "users" not in subject.stated:
        points.append(_w("recommend_users", lang, **_users(result.users, lang)))
    if "engine" not in subject.stated:
        points.append(_w("recommend_engine", lang, engine=ENGINE_LABELS.get(result.engine, result.engine)))
    return [f"- {point}" for point in points]


def _precision_reason(subject: DraftSubject) -> str:
    result, lang = subject.result, subject.lang
    label = precision_label(result.precision, lang)
    recommended = _recommended_option(result)
    if recommended is None:
        return _w("recommend_precision_none", lang, precision=label)
    if nominal_bits(result.precision) >= 16:
        return _w("recommend_precision_full", lang, precision=label, label=plain(recommended.label))
    higher = [
        other for other in subject.compared if nominal_bits(other.precision) > nominal_bits(result.precision)
    ]
    if not higher:
        return _w("recommend_precision_full", lang, precision=label, label=plain(recommended.label)).replace(
            "full quality", "quality"
        )
    closest = higher[-1]
    largest = max(closest.options, key=lambda option: option.usable_gb)
    return _w(
        "recommend_precision_lower",
        lang,
        precision=label,
        higher=precision_label(closest.precision, lang),
        higher_need=format_number(
            round(closest.total_gb, 1) + max(_reserve_gb(closest, largest), 0.0), lang, 1
        ),
        largest=plain(largest.label),
        largest_usable=format_number(largest.usable_gb, lang, 1),
    )


def _reserve_gb(result: SizingResult, option: CardOption) -> float:
    """What the engine keeps outside its budget: usable = need + reserve + headroom (as displayed)."""
    return round(option.usable_gb, 1) - round(result.total_gb, 1) - round(option.headroom_gb, 1)


def _adds_up(result: SizingResult, option: CardOption, lang: Language) -> str:
    reserve = _reserve_gb(result, option)
    shown_reserve = reserve >= SHOWN_GB
    return _w(
        "adds_up",
        lang,
        need=format_number(result.total_gb, lang, 1),
        label=plain(option.label),
        usable=format_number(option.usable_gb, lang, 1),
        reserve_clause=_w("reserve_clause", lang, reserve=format_number(reserve, lang, 1))
        if shown_reserve
        else "",
        reserve_sum=f"{format_number(reserve, lang, 1)} + " if shown_reserve else "",
        headroom=format_number(option.headroom_gb, lang, 1),
    )


def _arithmetic_table(result: SizingResult, lang: Language, recommended: CardOption | None) -> list[str]:
    engine = ENGINE_LABELS.get(result.engine, result.engine)
    params_b = result.model.params / 1e9
    bytes_per_param = result.weights_gb / params_b if params_b else 0.0
    rows = [
        (
            _w("weights", lang),
            _w(
                "weights_how",
                lang,
                params=format_number(params_b, lang, 1),
                bytes=format_number(bytes_per_param, lang, 2),
                precision=result.precision,
            ),
            format_number(result.weights_gb, lang, 1),
        ),
        (
            _w("kv", lang),
            _w(
                "kv_how",
                lang,
                per_token=format_number(result.kv_bytes_per_token, lang),
                context=format_number(result.context, lang),
                kv_dtype=result.kv_dtype,
                **_users(result.users, lang),
            ),
            format_number(result.kv_cache_gb, lang, 1),
        ),
        (
            _w("overhead", lang),
            _w("overhead_how", lang, engine=engine),
            format_number(result.overhead_gb, lang, 1),
        ),
        (f"**{_w('total', lang)}**", "", f"**{format_number(result.total_gb, lang, 1)}**"),
    ]
    if recommended is not None:
        reserve = _reserve_gb(result, recommended)
        if reserve >= SHOWN_GB:
            rows.append(
                (_w("reserve", lang), _w("reserve_how", lang, engine=engine), format_number(reserve, lang, 1))
            )
        rows.append(
            (_w("headroom", lang), _w("headroom_how", lang), format_number(recommended.headroom_gb, lang, 1))
        )
        rows.append(
            (
                f"**{_w('usable', lang, label=plain(recommended.label))}**",
                _w("usable_how", lang),
                f"**{format_number(recommended.usable_gb, lang, 1)}**",
            )
        )
    table = [f"| {_w('part', lang)} | {_w('how', lang)} | GB |", "|---|---|---:|"]
    table += [f"| {_cell(part)} | {_cell(how)} | {gb} |" for part, how, gb in rows]
    return table


def _quantization_note(result: SizingResult, lang: Language) -> str:
    notes = []
    if nominal_bits(result.precision) < 16:
        notes.append(_w("quantized", lang, precision=precision_label(result.precision, lang)))
    else:
        notes.append(_w("full_precision", lang, precision=precision_label(result.precision, lang)))
    if result.kv_dtype not in ("bf16", "fp16"):
        notes.append(_w("kv_quantized", lang, kv_dtype=result.kv_dtype.upper()))
    return " ".join(notes)


def smaller_machine_alternative(result: SizingResult, lang: Language) -> str:
    """The honest smaller option: the next card class down at a cheaper precision, if one fits
    (tools.advice.smaller_alternative decides, with the engine's own ladder); says plainly when
    the recommendation already is the smallest fit or when nothing smaller works.
    """
    recommended = _recommended_option(result)
    alternative = smaller_alternative(result, recommended, lang)
    if alternative is None:
        return _w("already_smallest", lang, label=plain(recommended.label)) if recommended else ""
    fit = alternative.fit
    if fit is None:
        return _w(
            "no_smaller_fit" if recommended is not None else "none_even_quantized",
            lang,
            label=plain(alternative.target.label),
        )
    return _w(
        "alternative" if recommended is not None else "alternative_when_none",
        lang,
        label=plain(fit.option.label),
        precision=precision_label(fit.precision, lang),
        weights=format_number(fit.weights_gb, lang, 1),
        need=format_number(fit.total_gb, lang, 1),
        usable=format_number(fit.option.usable_gb, lang, 1),
    )


def _hardware_beyond_options(result: SizingResult, lang: Language) -> str:
    """The first one or two computed alternatives (e.g. 2× H200, 4× 80GB cards) that hold the
    request unchanged, so the customer hears about more hardware before hearing about quantization."""
    shown = [_beyond_option(result, option, lang) for option in result.alternatives[:2] if option.fits]
    return _w("fits_beyond", lang, options=_w("or_on", lang).join(shown)) if shown else ""


def _beyond_option(result: SizingResult, option: CardOption, lang: Language) -> str:
    reserve = _reserve_gb(result, option)
    values = {
        "label": plain(option.label),
        "usable": format_number(option.usable_gb, lang, 1),
        "headroom": format_number(option.headroom_gb, lang, 1),
    }
    if reserve < SHOWN_GB:
        return _w("beyond_option", lang, **values)
    need = format_number(result.total_gb, lang, 1)
    return _w("beyond_option_reserve", lang, need=need, reserve=format_number(reserve, lang, 1), **values)


def _recommend_none(result: SizingResult, lang: Language) -> str:
    """Why nothing fits, in figures that add up: need + the engine's reserve against the largest usable."""
    need = format_number(result.total_gb, lang, 1)
    if not result.options:
        return _w("recommend_none", lang, need=need, usable=format_number(0.0, lang, 1))
    largest = max(result.options, key=lambda option: option.usable_gb)
    reserve = _reserve_gb(result, largest)
    usable = format_number(largest.usable_gb, lang, 1)
    if reserve < SHOWN_GB:
        return _w("recommend_none", lang, need=need, usable=usable)
    with_reserve = round(result.total_gb, 1) + reserve
    return _w(
        "recommend_none_reserve",
        lang,
        need=need,
        label=plain(largest.label),
        engine=ENGINE_LABELS.get(result.engine, result.engine),
        reserve=format_number(reserve, lang, 1),
        with_reserve=format_number(with_reserve, lang, 1),
        usable=usable,
        short=format_number(with_reserve - round(largest.usable_gb, 1), lang, 1),
    )


def money(value: float, lang: Language) -> str:
    return format_number(value, lang, 0 if value >= 100 else 2)


def quote_markdown(quote: Quote, lang: Language) -> list[str]:
    """The Quote section: one row per configuration, its ranks, costs and the price source."""
    lines = [f"**{_w('quote_title', lang)}**", ""]
    if not quote.configurations:
        return [*lines, _w("quote_none", lang), ""]
    currency = plain(quote.currency, 12)
    lines.append(
        _w("quote_intro", lang, currency=currency, utilization=format_number(quote.utilization * 100, lang))
    )
    lines.append("")
    header = [
        _w("quote_server", lang),
        _w("quote_cards", lang),
        _w("quote_why", lang),
        _w("quote_headroom", lang),
        _w("quote_monthly", lang),
        _w("quote_three_year", lang),
        _w("quote_per_million", lang),
        _w("quote_lead_time", lang),
    ]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|")
    rank_words = {"cheapest": "rank_cheapest", "most_headroom": "rank_headroom", "fewest_gpus": "rank_fewest"}
    for config in quote.configurations:
        per_million = (
            money(config.cost_per_million_output_tokens, lang)
            if config.cost_per_million_output_tokens is not None
            else "—"
        )
        if config.cost_per_million_output_tokens_high is not None and per_million != "—":
            worst = money(config.cost_per_million_output_tokens_high, lang)
            per_million = _w("quote_per_million_range", lang, best=per_million, worst=worst)
        lead = (
            _w("quote_weeks", lang, weeks=format_number(config.lead_time_weeks, lang))
            if config.lead_time_weeks is not None
            else "—"
        )
        cells = [
            plain(config.name),
            plain(config.cards),
            ", ".join(_w(rank_words[rank], lang) for rank in config.ranks) or "—",
            format_number(config.headroom_gb, lang, 1),
            money(config.monthly_cost, lang),
            money(config.three_year_cost, lang),
            per_million,
            lead,
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines.append("")
    if quote.example_prices:
        source = (
            f"{_w('quote_source', lang, source=_w('quote_example_source', lang))} {_w('quote_example', lang)}"
        )
    else:
        source = _w("quote_source", lang, source=plain(quote.price_source))
    return [*lines, source, ""]


def _speed(option: CardOption, lang: Language) -> str | None:
    """The expected speed with its calibrated range and what it rests on (the serving estimate);
    the single-stream figure where the estimate's calibration does not reach (CPU, Apple, nodes)."""

    estimate = calibrated_estimate(option)
    if estimate is None:
        if not option.decode_tokens_per_s:
            return None
        return _w("speed", lang, tokens=format_number(option.decode_tokens_per_s, lang))
    users = estimate.concurrency.best
    verdict = ""
    if estimate.meets_target is not None and estimate.target is not None:
        key = "speed_meets" if estimate.meets_target else "speed_misses"
        verdict = " " + _w(key, lang, target=target_text(estimate.target, lang))
    return (
        _w(
            "speed_estimate",
            lang,
            tps=format_number(estimate.output_tok_s_per_user.best, lang),
            tps_low=format_number(estimate.output_tok_s_per_user.low, lang),
            tps_high=format_number(estimate.output_tok_s_per_user.high, lang),
            users=format_number(users, lang, 0 if users >= 10 or users == round(users) else 1),
            total=format_number(estimate.output_tok_s_total.best, lang),
            ttft=format_number(estimate.ttft_ms.best, lang),
            ttft_low=format_number(estimate.ttft_ms.low, lang),
            ttft_high=format_number(estimate.ttft_ms.high, lang),
            basis=basis_text(estimate, lang),
        )
        + verdict
        + published_text(estimate, lang)
    )


def draft_reply(
    result: SizingResult,
    lang: Language,
    customer_name: str | None = None,
    *,
    signature: Signature | None = None,
    quote: Quote | None = None,
    subject: DraftSubject | None = None,
) -> str:
    """A customer-ready Markdown reply for one calculation, in `lang` (the customer's language).

    Without a subject every field of the result counts as stated by the customer (the calculator).
    """
    subject = subject or DraftSubject(result, lang, card_named=any(option.card for option in result.options))
    recommended = _recommended_option(result)
    greeting = (
        _w("hello", lang, name=plain(customer_name, 80)) if customer_name else _w("hello_anonymous", lang)
    )
    lines = [greeting, "", f"{_w('thanks', lang, asked=_asked_phrase(subject))} {_w('here_is', lang)}", ""]
    open_points = _open_points(subject)
    if open_points:
        lines += [_w("open_points", lang), "", *open_points, ""]
    if recommended is not None:
        lines.append(
            f"{_w('recommend', lang, label=plain(recommended.label))} {_adds_up(result, recommended, lang)}"
        )
        speed = _speed(recommended, lang)
        if speed:
            lines += ["", speed]
    else:
        recommend_none = _recommend_none(result, lang)
        beyond = _hardware_beyond_options(result, lang)
        lines.append(f"{recommend_none} {beyond}" if beyond else recommend_none)
    lines += ["", f"**{_w('table_title', lang)}**", "", *_arithmetic_table(result, lang, recommended), ""]
    lines += [f"**{_w('caveat_title', lang)}:** {_quantization_note(result, lang)}", ""]
    alternative = smaller_machine_alternative(result, lang)
    if alternative:
        title = _w("alternative_title" if recommended is not None else "what_fits_title", lang)
        lines += [f"**{title}:** {alternative}", ""]
    if quote is not None:
        lines += quote_markdown(quote, lang)
    lines += [_w("closing", lang), "", _w("regards", lang)]
    if signature is not None:
        lines += signature.lines()
    return "\n".join(lines) + "\n"
