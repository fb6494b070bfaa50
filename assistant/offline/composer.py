"""Markdown answers built from calculator results and the templates, in the visitor's language.

Every figure printed here is a field of a `SizingResult` (or a card class of `tools`); the
sentences come from `data/templates.yaml` and `data/faq.yaml`. Nothing here calculates.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from assistant.offline.sizing import Calculations, SizingPlan
from assistant.offline.texts import FaqEntry, Texts, format_definition
from assistant.schemas import Source
from tools import CardOption, SizingResult, card_classes
from tools.cards import card_facts
from tools.i18n import Language, integer, number
from tools.performance_facts import hardware
from tools.precision import GGUF_PRECISIONS, nominal_bits
from tools.schemas import Card
from tools.texts import text as tool_text


def gb(value: float, texts: Texts) -> str:
    """A GB figure as the calculator prints it: two decimals, decimal comma in Spanish."""
    return number(value, texts.language, 2)


def count(value: int, texts: Texts) -> str:
    return integer(value, texts.language)


def precision_label(precision: str, texts: Texts) -> str:
    return texts.mapping("precision_labels").get(precision, precision)


def model_label(result: SizingResult) -> str:
    return result.model.name


# --------------------------------------------------------------------------- verdicts


def focus_option(result: SizingResult, plan: SizingPlan) -> CardOption | None:
    """The option the verdict is about: the named card or class, else the recommended one."""
    options = result.options
    if plan.gpu and options:
        return options[0]
    if plan.card_class:
        named = [option for option in options if option.card_class == plan.card_class]
        if named:
            return named[0]
    return recommended_option(result)


def serves(option: CardOption | None) -> bool:
    """It fits, or vLLM serves it there as copies at a degree that divides the heads."""
    return option is not None and (option.fits or option.replicas is not None)


def copies_sentence(result: SizingResult, option: CardOption, texts: Texts) -> str:
    """Yes, as copies: how many, at which degree, why not as one model, each copy's share and room."""
    plan = option.replicas
    assert plan is not None
    idle = texts.fill("copies_idle", idle=count(plan.idle_gpus, texts)) if plan.idle_gpus else ""
    return texts.fill(
        "verdict_copies" if plan.replicas > 1 else "verdict_copies_one",
        model=model_label(result),
        precision=precision_label(result.precision, texts),
        card=option.label,
        copies=count(plan.replicas, texts),
        tp=plan.tensor_parallel,
        heads=plan.heads,
        gpus=count(option.gpus, texts),
        share=count(plan.users_per_replica, texts),
        users=users_label(result.users, texts),
        seqs=users_short(plan.max_concurrent_sequences, texts),
        idle=idle,
    )


def recommended_option(result: SizingResult) -> CardOption | None:
    for option in result.options:
        if result.recommended and result.recommended in (option.card_class, option.card):
            return option
    fitting = [option for option in result.options if option.fits]
    return fitting[0] if fitting else None


def _headline(result: SizingResult, class_result: SizingResult, plan: SizingPlan, texts: Texts) -> str:
    option = focus_option(result, plan)
    common = {
        "model": model_label(result),
        "precision": precision_label(result.precision, texts),
        "total_gb": gb(result.total_gb, texts),
        "context": count(result.context, texts),
    }
    if option is None:
        nothing = texts.fill("headline_nothing_fits", **common)
        return f"{nothing} {_beyond_table(result.alternatives, texts)}".strip()
    if option.replicas is not None and not option.fits:
        return copies_sentence(result, option, texts)
    if option.fits:
        return texts.fill(
            "headline_fits",
            option=option.label,
            headroom_gb=gb(option.headroom_gb, texts),
            max_users=users_label(option.max_concurrent_sequences, texts),
            **common,
        )
    best = recommended_option(class_result)
    if best is None and class_result.alternatives:
        best = class_result.alternatives[0]
    best_text = (
        texts.fill("best_option", headroom_gb=gb(best.headroom_gb, texts), **_option_words(best, texts))
        if best
        else ""
    )
    if 0 < option.max_concurrent_sequences < result.users:  # it runs, not for this many at once
        return texts.fill(
            "headline_no_fit_users",
            option=option.label,
            users=users_label(result.users, texts),
            max_users_short=users_short(option.max_concurrent_sequences, texts),
            best=best_text,
            **common,
        ).strip()
    if -0.005 < option.headroom_gb < 0.005 and not option.reason:  # short by less than the printed precision
        return texts.fill("headline_no_fit_tight", option=option.label, best=best_text, **common).strip()
    return texts.fill(
        "headline_no_fit", option=option.label, why=why_not(option, texts), best=best_text, **common
    ).strip()


def _beyond_table(alternatives: Sequence[CardOption], texts: Texts) -> str:
    """What holds a request no card class does: the first option found beyond the table, with its
    own total, then the others by name."""
    if not alternatives:
        return ""
    first, *rest = alternatives
    others = (
        texts.fill("beyond_table_others", options=texts["note_or"].join(alt.label for alt in rest))
        if rest
        else ""
    )
    return texts.fill("beyond_table_option", others=others, **_option_words(first, texts))


def _option_words(option: CardOption, texts: Texts) -> dict[str, str]:
    """An option put forward, in words: its label, its own total and the users it holds."""
    return {
        "option": option.label,
        "total_gb": gb(option.total_gb, texts),
        "max_users": users_label(option.max_concurrent_sequences, texts),
    }


def _options_table(result: SizingResult, texts: Texts) -> list[str]:
    rows = [texts["options_header"], texts["options_rule"]]
    for option in result.options:
        rows.append(
            texts.fill(
                "options_row",
                label=option.label,
                usable_gb=gb(option.usable_gb, texts),
                fits=fits_cell(option, texts),
                headroom_gb=gb(option.headroom_gb, texts),
                max_users=count(shown_max_users(option, result.users), texts),
            )
        )
    return rows


def fits_cell(option: CardOption, texts: Texts) -> str:
    if option.fits:
        return texts["fits_yes"]
    plan = option.replicas
    if plan is not None:
        return texts.fill("fits_copies", copies=count(plan.replicas, texts), tp=plan.tensor_parallel)
    return texts["fits_no"]


def shown_max_users(option: CardOption, users: int) -> int:
    """Max users beside a verdict: when the KV cache holds every user but the card still does not
    fit (the engine's own reservations), no number of users fits, so 0 — never "5" beside "does not fit".
    Served as copies: what the copies hold between them."""
    if option.replicas is not None and not option.fits:
        return option.replicas.replicas * option.replicas.max_concurrent_sequences
    if not option.fits and option.max_concurrent_sequences >= users:
        return 0
    return option.max_concurrent_sequences


def _side_by_side_table(results: Sequence[SizingResult], plan: SizingPlan, texts: Texts) -> list[str]:
    rows = [texts["table_header"], texts["table_rule"]]
    for result in results:
        option = focus_option(result, plan) or _largest_option(result)
        rows.append(
            texts.fill(
                "table_row",
                precision=precision_label(result.precision, texts),
                weights_gb=gb(result.weights_gb, texts),
                total_gb=gb(result.total_gb, texts),
                option=option.label if option else "—",
                fits=fits_cell(option, texts) if option else texts["fits_no"],
                headroom_gb=gb(option.headroom_gb, texts) if option else "—",
                max_users=count(shown_max_users(option, result.users), texts) if option else "0",
                note=_cell(_row_note(result, option, texts)),
            )
        )
    return rows


def _row_note(result: SizingResult, option: CardOption | None, texts: Texts) -> str:
    """One short note on this precision's verdict, from this result alone: why this option, or
    what would hold it when nothing in the table does; plus a pointer to the caveat below 16 bits."""
    notes: list[str] = []
    if option is not None and option.replicas is not None and not option.fits:
        notes.append(texts.fill("note_copies", heads=option.replicas.heads, gpus=count(option.gpus, texts)))
    elif option is not None and option.fits:
        smaller = [other for other in result.options[: result.options.index(option)] if not other.fits]
        if smaller:
            notes.append(
                texts.fill(
                    "note_smaller_short",
                    option=smaller[-1].label,
                    why=why_not(smaller[-1], texts, brief=True),
                )
            )
        elif len(result.options) > 1:
            notes.append(texts["note_smallest"])
        if option.decode_tokens_per_s:
            notes.append(texts.fill("note_decode", rate=count(round(option.decode_tokens_per_s), texts)))
    else:
        best = recommended_option(result)
        if best is not None:
            notes.append(
                texts.fill(
                    "note_fits_elsewhere",
                    option=best.label,
                    max_users=users_short(best.max_concurrent_sequences, texts),
                )
            )
        elif result.alternatives:
            shown = [
                texts.fill(
                    "note_alternative",
                    option=alt.label,
                    max_users=users_short(alt.max_concurrent_sequences, texts),
                )
                for alt in result.alternatives
            ]
            # On a named card the table compares precisions, not card classes.
            key = "note_card_elsewhere" if option is not None and option.card else "note_beyond_table"
            notes.append(texts.fill(key, options=texts["note_or"].join(shown)))
        else:
            notes.append(texts["note_nothing_fits"])
    if result.below_16_bit:
        notes.append(texts["note_quantized"])
    return texts["note_join"].join(notes)


def _largest_option(result: SizingResult) -> CardOption | None:
    return max(result.options, key=lambda option: option.usable_gb * option.gpus, default=None)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "/").split())


# --------------------------------------------------------------------------- whole answers


def compose_sizing(
    calculations: Calculations,
    texts: Texts,
    *,
    task: str | None,
    injection: bool,
    lead: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> str:
    """The answer to a sizing question: the answer to what was asked (`lead`, else the verdict),
    the notes on what was assumed, a compact table, ONE arithmetic block, caveat, alternative."""
    plan = calculations.plan
    shown = calculations.on_card or calculations.by_class
    parts: list[str] = []
    if injection:
        parts.append(texts["injection"])
    parts.extend(lead)
    if len(shown) == 1:
        result = shown[0]
        headline = _headline(result, calculations.by_class[0], plan, texts)
        parts.append(" ".join([headline, *notes, *_extras(result)]))
        parts.append("\n".join(_options_table(calculations.by_class[0], texts)))
        parts.append(arithmetic_block(result, texts, focus_option(result, plan)))
    else:
        intro_key = "side_by_side_intro" if plan.side_by_side else "named_intro"
        on_card = (
            texts.fill("on_card", card=shown[0].options[0].label) if plan.gpu and shown[0].options else ""
        )
        chosen = recommended_precision(shown, plan)
        intro = texts.fill(
            intro_key,
            model=model_label(shown[0]),
            context=count(plan.context, texts),
            users=users_label(plan.users, texts),
            on_card=on_card,
        )
        advice = ""
        if chosen is not None:
            option = focus_option(chosen, plan) or recommended_option(chosen)
            if option is not None and option.fits:
                advice = texts.fill(
                    "recommended", precision=precision_label(chosen.precision, texts), option=option.label
                )
        elif plan.gpu and shown[0].options:
            advice = texts.fill("none_fits_card", card=shown[0].options[0].label)
        block_for = chosen or shown[0]
        extras = _extras(block_for)
        # The intro introduces the table; with sentences after it, it ends first.
        if advice or notes or extras:
            intro = intro.rstrip(":") + "."
        if plan.side_by_side and plan.gpu and not lead:
            parts.append(_fit_verdict(shown, plan, texts))
        parts.append(" ".join(part for part in (intro, advice, *notes, *extras) if part))
        parts.append("\n".join(_side_by_side_table(shown, plan, texts)))
        parts.append(
            texts["other_precisions"]
            + "\n\n"
            + arithmetic_block(block_for, texts, focus_option(block_for, plan))
        )
    parts.extend(_caveat_and_alternative(shown, texts, task))
    note = shown[0].model.reference_note
    if note:
        parts.append(texts.fill("reference_note", note=note))
    assumed = assumed_line(plan, texts)
    if assumed:
        parts.append(assumed)
    return "\n\n".join(part for part in parts if part)


def _extras(result: SizingResult) -> list[str]:
    """What the draft model, MTP layers or LoRA slots the visitor asked for add to the total."""
    return [result.extras_note] if result.extras_note else []


def arithmetic_block(result: SizingResult, texts: Texts, focus: CardOption | None = None) -> str:
    """The calculator's arithmetic lines for one result, under one title: the per-card line only
    for the option the answer is about (the table has the others)."""
    focus = focus or recommended_option(result) or (result.options[-1] if result.options else None)
    others = {option.label for option in result.options if focus is None or option.label != focus.label}
    lines = [
        line
        for line in result.arithmetic
        if line != result.model.reference_note and not any(line.startswith(f"{label}:") for label in others)
    ]
    return "\n".join([texts["arithmetic_title"], *(f"- {line}" for line in lines)])


def recommended_precision(results: Sequence[SizingResult], plan: SizingPlan) -> SizingResult | None:
    """The precision to recommend side by side: on a named card the highest precision that fits
    it; otherwise the one that fits the smallest card class, at the highest precision there."""
    if plan.gpu or plan.card_class:
        for result in results:
            if serves(focus_option(result, plan)):
                return result
        return None
    ranked = []
    for result in results:
        for index, option in enumerate(result.options):
            if option.fits:
                ranked.append((index, results.index(result), result))
                break
    return min(ranked, key=lambda item: (item[0], item[1]))[2] if ranked else None


def users_label(users: int, texts: Texts) -> str:
    return texts["users_one"] if users == 1 else texts.fill("users_many", users=count(users, texts))


def users_short(users: int, texts: Texts) -> str:
    """A user count in a table note: "1 user", "4 users"."""
    return (
        texts["users_short_one"] if users == 1 else texts.fill("users_short_many", users=count(users, texts))
    )


def _fit_verdict(results: Sequence[SizingResult], plan: SizingPlan, texts: Texts) -> str:
    """Yes or no first, for "does it fit this card?" with no precision named: the highest
    precision that fits, and that 16 bits does not where so."""
    verdicts = [(result, focus_option(result, plan)) for result in results]
    top, top_option = verdicts[0]
    fitting = [(result, option) for result, option in verdicts if option is not None and option.fits]
    if top_option is None:
        return ""
    common = {"model": model_label(top), "card": top_option.label}
    copies = next(((result, option) for result, option in verdicts if option and serves(option)), None)
    if not fitting and copies is not None and copies[1] is not None:
        return copies_sentence(copies[0], copies[1], texts)
    if not fitting:
        low, low_option = verdicts[-1]
        precision = precision_label(low.precision, texts)
        if low_option is not None and low_option.headroom_gb >= 0 and low_option.reason:
            # Memory to spare, refused for another reason (vLLM's slack, the sequences asked).
            reason = low_option.reason.rstrip(".")
            return texts.fill("verdict_no_reason", precision=precision, reason=reason, **common)
        short = -low_option.headroom_gb if low_option else 0.0
        return texts.fill("verdict_no", precision=precision, gb=gb(short, texts), **common)
    best, option = fitting[0]
    found = {
        "precision": precision_label(best.precision, texts),
        "total_gb": gb(best.total_gb, texts),
        "max_users": users_label(option.max_concurrent_sequences, texts),
        **common,
    }
    if best is top:
        return texts.fill("verdict_yes_top", headroom_gb=gb(option.headroom_gb, texts), **found)
    return texts.fill(
        "verdict_yes_lower",
        top=precision_label(top.precision, texts),
        why=why_not(top_option, texts),
        **found,
    )


def why_not(option: CardOption, texts: Texts, brief: bool = False) -> str:
    """The memory an option lacks, or the engine's reason it does not fit where a flag on the same
    card is the fix: memory to spare (vLLM's slack), or a budget a higher utilization covers (not
    in a `brief` table note, where the gigabytes missing are enough)."""
    flag_fixes = option.headroom_gb >= 0 or (option.reason_code == "utilization" and not brief)
    if option.reason and flag_fixes:
        return option.reason.rstrip(".")
    return texts.fill("short_by", gb=gb(-option.headroom_gb, texts))


def most_compressed(results: Sequence[SizingResult]) -> SizingResult | None:
    """The below-16-bit result with the smallest weights: its caveat speaks for the others."""
    quantized = [result for result in results if result.below_16_bit]
    return min(quantized, key=lambda result: result.weights_gb, default=None)


def _caveat_and_alternative(results: Sequence[SizingResult], texts: Texts, task: str | None) -> list[str]:
    parts: list[str] = []
    compressed = most_compressed(results)
    task_advice = texts.mapping("task_advice").get(task or "")
    if compressed and compressed.caveat:
        lines = [texts.fill("caveat_title", quality=texts["quality_cost"]), compressed.caveat]
        if task_advice:
            lines.append(task_advice)
        parts.append(" ".join(lines))
    elif task_advice and task == "finetuning":
        parts.append(task_advice)
    # Side by side, the alternatives of the most compressed version are the relevant ones.
    source = [compressed] if len(results) > 1 and compressed else results
    suggestions = _unique(suggestion for result in source for suggestion in result.suggestions)
    if suggestions:
        # Their figures are that version's, not those of the arithmetic above it: said in the title.
        title = (
            texts.fill("alternative_title_precision", precision=precision_label(compressed.precision, texts))
            if len(results) > 1 and compressed
            else texts["alternative_title"]
        )
        parts.append("\n".join([title, *(f"- {text}" for text in suggestions)]))
    return parts


def _unique(items: Iterable[str | None]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.append(item)
    return seen


def assumed_line(plan: SizingPlan, texts: Texts) -> str:
    """The defaults the answer used because the visitor did not say them, in one line."""
    items = []
    if "context" in plan.assumed:
        items.append(texts.fill("assumed_context", context=count(plan.context, texts)))
    if "users" in plan.assumed:
        items.append(texts["assumed_users"])
    if "quantized" in plan.assumed:
        items.append(texts["assumed_quantized"])
    if "native" in plan.assumed:
        items.append(texts["assumed_native"])
    if "engine_default" in plan.assumed:
        items.append(texts["assumed_engine_default"])
    if not items:
        return ""
    return texts.fill("assumed", items=texts["assumed_items_join"].join(items))


def compose_worked_example(calculations: Calculations, texts: Texts) -> str:
    """A FAQ's example: weights and card class at 16, 8 and 4 bits, with the arithmetic."""
    results = calculations.by_class
    lines = [
        texts.fill(
            "example_title",
            model=model_label(results[0]),
            context=count(calculations.plan.context, texts),
        ),
        "\n".join(_side_by_side_table(results, calculations.plan, texts)),
    ]
    compressed = most_compressed(results)
    if compressed and compressed.caveat:
        lines.append(" ".join([texts.fill("caveat_title", quality=texts["quality_cost"]), compressed.caveat]))
    return "\n\n".join(lines)


def compose_card_classes(texts: Texts) -> str:
    rows = [texts["card_class_header"], texts["card_class_rule"]]
    for card_class in card_classes():
        rows.append(
            texts.fill(
                "card_class_row",
                label=card_class.labels.get(texts.language, card_class.label),
                serves=_cell(card_class.serves.get(texts.language, "")),
                catch=_cell(card_class.catch.get(texts.language, "")),
            )
        )
    return "\n".join(rows)


def compose_faq(entry: FaqEntry, texts: Texts) -> str:
    return entry.answer[texts.language].replace("{caveat_pointer}", texts["caveat_pointer"])


def compose_format(key: str, texts: Texts) -> str:
    """What a format is (data/formats.yaml), how the calculator counts its bits (the same note as
    the arithmetic block's) and, below 16 bits, where its quality cost is measured."""
    definition = format_definition(key, texts.language)
    assert definition is not None, key  # responder.defined_format only names formats with an entry
    parts = [definition]
    if key != "kv_fp8":
        note = tool_text(f"fmt_{'gguf' if key in GGUF_PRECISIONS else key}", texts.language)
        parts.append(texts.fill("format_counted", note=note))
        if nominal_bits(key) < 16:
            parts.append(texts["caveat_pointer"])
    return " ".join(parts)


def compose_card_comparison(card_ids: Sequence[str], texts: Texts) -> str:
    """Cards weighed with no model ("h100 or h200?"): each one's memory, bandwidth, compute, FP8
    units and link between cards (tools/data/cards.json, perf_hardware.json), what each figure
    means for serving, the most of each against the least, and the model asked for."""
    cards = [card_facts(card_id).card for card_id in card_ids]
    lang = texts.language
    names = [card.name for card in cards]
    joined = texts["followup_join"].join(names[:-1]) + texts["followup_last"] + names[-1]
    rows = [texts["cards_compare_header"]]
    for card in cards:
        linked = hardware(card.id, 1)
        link = "unknown" if linked is None else linked.interconnect
        if link == "nvlink" and card.vendor == "amd":
            link = "infinity"
        rows.append(
            texts.fill(
                "cards_compare_row",
                card=card.name,
                memory=card.marketing or _memory_gb(card, lang),
                bandwidth=integer(round(card.bandwidth_gbps), lang) if card.bandwidth_gbps else "—",
                tflops=integer(round(card.bf16_dense_tflops), lang) if card.bf16_dense_tflops else "—",
                fp8=texts["cards_compare_yes" if card.fp8 else "cards_compare_no"],
                link=texts.mapping("card_links").get(link, texts["cards_compare_unknown"]),
            )
        )

    def figures(value: Callable[[Card], float | None]) -> list[tuple[float | None, str]]:
        return [(figure, integer(round(figure or 0), lang)) for figure in map(value, cards)]

    facts = [
        _compared(cards, figures(lambda card: card.bandwidth_gbps), "cards_compare_decode", texts),
        _compared(cards, figures(lambda card: card.bf16_dense_tflops), "cards_compare_prefill", texts),
        _compared(
            cards,
            [(card.memory_mib, _memory_gb(card, lang)) for card in cards],
            "cards_compare_memory",
            texts,
        ),
    ]
    without_fp8 = [card.name for card in cards if not card.fp8]
    if without_fp8 and len(without_fp8) < len(cards):
        key = "cards_compare_fp8_one" if len(without_fp8) == 1 else "cards_compare_fp8_many"
        facts.append(texts.fill(key, cards=texts["followup_last"].join(without_fp8)))
    return "\n\n".join(
        (
            texts.fill("cards_compare_lead", cards=joined),
            "\n".join(rows),
            " ".join(fact for fact in facts if fact),
            texts["cards_compare_ask"],
        )
    )


# The memory a card is sold with, as its marketing says it ("141 GB HBM3e": 141 GB).
_MARKETED_GB = re.compile(r"^\s*(\d+(?:[.,]\d+)?)\s*GB\b")


def _memory_gb(card: Card, lang: Language) -> str:
    marketed = _MARKETED_GB.match(card.marketing or "")
    if marketed:
        return f"{marketed.group(1)} GB"
    return f"{integer(round(card.memory_mib * 1024 * 1024 / 1e9), lang)} GB"


def _compared(
    cards: Sequence[Card], figures: Sequence[tuple[float | None, str]], key: str, texts: Texts
) -> str:
    """The card with the most of one figure against the one with the least, each with its
    figure as shown, or that they are about the same (within 5 %); empty when a card lacks it."""
    if any(figure is None or figure <= 0 for figure, _ in figures):
        return ""
    ranked = sorted(zip(figures, cards, strict=True), key=lambda pair: pair[0][0] or 0.0, reverse=True)
    (high, high_shown), top = ranked[0]
    (low, low_shown), bottom = ranked[-1]
    assert high is not None and low is not None
    if high <= low * 1.05:
        return texts.fill(f"{key}_same", value=high_shown)
    return texts.fill(
        key,
        top=top.name,
        bottom=bottom.name,
        ratio=number(high / low, texts.language, 1),
        top_value=high_shown,
        bottom_value=low_shown,
    )


def compose_followup(missing: Sequence[str], texts: Texts) -> str:
    """ONE short question asking for every missing slot."""
    if not missing:
        return ""
    items = [texts.mapping("followup_items")[slot] for slot in missing]
    if len(items) == 1:
        joined = items[0]
    else:
        joined = texts["followup_join"].join(items[:-1]) + texts["followup_last"] + items[-1]
    return texts.fill("followup", items=joined)


def compose_sources(sources: Sequence[Source], available: bool, texts: Texts) -> str:
    if not available:
        return texts["sources_unavailable"]
    if not sources:
        return ""
    lines = [texts["sources_title"]]
    lines.extend(texts.fill("source_line", title=source.title, section=source.section) for source in sources)
    return "\n".join(lines)
