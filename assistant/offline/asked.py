"""Answers to what was asked when it is not only "does it fit": reverse searches, comparisons,
speed, KV bytes, the smallest card, fine-tuning, and the notes on what an answer assumed.

Each function takes the conversation's plan, runs the calculator (`tools.calculate_vram`,
`tools.reverse`) and returns the lead sentences from `data/templates.yaml` with the results
they quote. Every tokens-per-second figure is the serving estimate of tools/performance.py
(`CardOption.performance`, through `decode_rate` and `performance_lead`): the number, its
calibrated range and what it rests on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from assistant.offline import composer
from assistant.offline.composer import count, gb, precision_label, users_label, users_short
from assistant.offline.lexicon import rules
from assistant.offline.read_models import family_label, family_members
from assistant.offline.sizing import Calculations, SizingPlan, calculate, head_count_share, native_formats
from assistant.offline.texts import Texts
from assistant.offline.understanding import Understanding
from tools import CardOption, SizingRequest, SizingResult, card_classes, default_engine, list_cards
from tools.cards import generic_memory_gb, is_generic, resolve_card
from tools.catalog import resolve
from tools.engines import ENGINE_LABELS
from tools.errors import SizingError
from tools.finetune import FinetuneSpec
from tools.performance import (
    basis_text,
    capacity_range,
    memory_limits,
    perf_text,
    published_text,
    target_text,
)
from tools.performance_physics import LLAMACPP_ENGINES
from tools.performance_sizing import acceptable, calibrated_estimate
from tools.reverse import GPU_COUNTS, fewest_gpus, largest_model, longest_context, smallest_card
from tools.schemas import Band, PerformanceEstimate
from tools.texts import number

GB = 1e9
# One side of a comparison: its result and the card option it is judged on.
Side = tuple[SizingResult, CardOption]


@dataclass
class Asked:
    """The answer to one question: lead sentences, the results they quote, the one result whose
    arithmetic is shown, and what must still be asked."""

    lead: list[str]
    results: list[SizingResult] = field(default_factory=list)
    block: SizingResult | None = None
    table: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # Slots the answer settles for the rest of the conversation ("the largest model" found).
    settles: dict[str, str] = field(default_factory=dict)
    # False for a training answer: no serving assumptions, and its own quality point (a QLoRA
    # base is not a serving quantization).
    serving: bool = True


# --------------------------------------------------------------------------- helpers


def card_label(spec: str | None, lang: str) -> str:
    """A card spec or class id in words: "2× H100 80GB (SXM)", "48GB class (L40S, L40)"."""
    if not spec:
        return ""
    for card_class in card_classes():
        if card_class.id == spec:
            return card_class.labels.get(lang, card_class.label)
    name, _, times = spec.partition(":")
    label = resolve_card(name).name
    return f"{times}× {label}" if times and times != "1" else label


def class_card(spec: str) -> str:
    """A class id to the card its verdicts rest on (the member with the least usable memory)."""
    for card_class in card_classes():
        if card_class.id == spec:
            members = [card for card in list_cards() if card.id in card_class.cards]
            tightest = min(members, key=lambda card: card.usable_gb)
            return tightest.id + (f":{card_class.gpus}" if card_class.gpus > 1 else "")
    return spec


def request_for(plan: SizingPlan, precision: str | None = None, gpu: str | None = None) -> SizingRequest:
    """The plan's request at one precision on one card (or across the classes when gpu is None),
    with the LoRA slots and draft model the plan carries: a search for the fewest cards or the
    longest context holds them too."""
    return plan.request(precision or plan.precisions[0], gpu)


def estimate_of(option: CardOption) -> PerformanceEstimate | None:
    """The option's serving estimate where its calibration covers the hardware (GPUs in one node);
    elsewhere the calculator's own calibrated single-stream figure stands."""
    return calibrated_estimate(option)


def decode_rate(option: CardOption) -> float | None:
    """Tokens per second each user gets on this option under the request's load: the serving
    estimate's best, else the calculator's single-stream figure."""
    estimate = estimate_of(option)
    return estimate.output_tok_s_per_user.best if estimate else option.decode_tokens_per_s


def duration(seconds: float, texts: Texts) -> str:
    """A job's time in the unit a visitor reads: minutes under 90, hours under two days, days."""
    lang = texts.language
    if seconds < 90 * 60:
        return texts.fill("duration_minutes", value=number(max(seconds / 60, 1), lang, 0))
    if seconds < 48 * 3600:
        return texts.fill("duration_hours", value=number(seconds / 3600, lang, 1))
    return texts.fill("duration_days", value=number(seconds / 86400, lang, 1))


def rate_text(per_second: float, texts: Texts) -> str:
    """An offered rate in the unit a visitor reads: per second from one a second, else per minute
    from one a minute, else per hour ("2k requests a day" is 83 an hour, not 0.02 a second)."""
    if per_second >= 1:
        key, value = "rate_per_s", per_second
    elif per_second * 60 >= 1:
        key, value = "rate_per_min", per_second * 60
    else:
        key, value = "rate_per_hour", per_second * 3600
    whole = value >= 10 or abs(value - round(value)) < 0.05
    if whole and round(value) == 1:
        return texts[f"{key}_one"]
    return texts.fill(key, value=number(value, texts.language, 0 if whole else 1))


# The questions answered with the speed estimate first.
SPEED_QUESTIONS = ("throughput", "latency", "capacity")
# A request's workload fields that the calculator tool (assistant.llm_tools) takes as arguments.
SPEED_ARGUMENTS = ("input_len", "output_len", "rate", "service", "users_target", "users_max")


def asks_speed(question: str | None, plan: SizingPlan) -> bool:
    """A question about speed or latency, or a message naming a load or a latency target."""
    return bool(plan.workload) or question in SPEED_QUESTIONS


def performance_lead(
    question: str | None, plan: SizingPlan, calculations: Calculations, texts: Texts
) -> list[str]:
    """For a question about speed or latency, or a message naming a load or a target: the
    estimate with its range and what it rests on, the verdict against the target, first. On a
    named card that does not hold the model, the figures of the option that does."""
    if not asks_speed(question, plan):
        return []
    shown = calculations.on_card or calculations.by_class
    # Side by side, the speed is the recommended precision's, as the answer's advice is.
    chosen = composer.recommended_precision(shown, plan) if len(shown) > 1 else None
    index = shown.index(chosen) if chosen is not None else 0
    result = shown[index]
    option = composer.focus_option(result, plan)
    lead: list[str] = []
    if (option is None or not option.fits) and calculations.by_class:
        result = calculations.by_class[index if index < len(calculations.by_class) else 0]
        fallback = composer.recommended_option(result)
        if fallback is None:  # no class holds it: the smallest hardware beyond them that does
            fallback = next((alt for alt in result.alternatives if alt.fits and alt.performance), None)
        if fallback is not None and option is not None:
            lead.append(texts.fill("lead_perf_elsewhere", card=option.label, option=fallback.label))
        option = fallback
    estimate = estimate_of(option) if option is not None and option.fits else None
    if option is None or estimate is None:
        return []
    lang = texts.language

    def band(values: Band, scale: float = 1.0) -> dict[str, str]:
        return {
            "best": count(round(values.best * scale), texts),
            "low": count(round(values.low * scale), texts),
            "high": count(round(values.high * scale), texts),
        }

    tps, ttft, total = (
        band(estimate.output_tok_s_per_user),
        band(estimate.ttft_ms),
        band(estimate.output_tok_s_total),
    )
    users = estimate.concurrency.best
    in_flight = number(users, lang, 0 if users >= 10 or users == round(users) else 1 if users >= 0.1 else 2)
    label = option.label
    if len(shown) > 1:
        precision = precision_label(result.precision, texts)
        label = texts.fill("lead_option_precision", option=label, precision=precision)
    common = {
        "option": label,
        "users": in_flight,
        "requests": texts["requests_one"]
        if in_flight == "1"
        else texts.fill("requests_many", requests=in_flight),
        "prompt": count(estimate.input_len, texts),
        "answer": count(estimate.output_len, texts),
        "total": total["best"],
        "basis": basis_text(estimate, lang),
    }
    if plan.users_target and estimate.capacity is not None:
        lead.append(capacity_lead(estimate, common, tps, ttft, texts))
        memory_note = capacity_memory_note(estimate, option, result, texts)
        if memory_note:
            lead.append(memory_note)
    elif plan.service == "batch_offline":
        docs = band(estimate.requests_per_s, 3600)
        lead.append(
            texts.fill(
                "lead_documents", docs=docs["best"], docs_low=docs["low"], docs_high=docs["high"], **common
            )
        )
        rate = estimate.requests_per_s
        if plan.job_count and rate.low > 0:  # "10,000 e-mails overnight": how long it takes, same band
            lead.append(
                texts.fill(
                    "lead_job",
                    job=count(plan.job_count, texts),
                    time=duration(plan.job_count / rate.best, texts),
                    time_low=duration(plan.job_count / rate.high, texts),
                    time_high=duration(plan.job_count / rate.low, texts),
                )
            )
    else:
        lead.append(
            texts.fill(
                "lead_performance",
                tps=tps["best"],
                tps_low=tps["low"],
                tps_high=tps["high"],
                ttft=ttft["best"],
                ttft_low=ttft["low"],
                ttft_high=ttft["high"],
                total_low=total["low"],
                total_high=total["high"],
                **common,
            )
        )
    published = published_text(estimate, lang)
    if published:  # published runs of this model on this card disagree with the estimate
        lead[-1] += published
    if plan.users_max:  # "maximum throughput": what filling the memory costs each user
        lead.append(texts["lead_memory_full"])
        lighter = lighter_load(plan, result, option, texts)
        if lighter:
            lead.append(lighter)
    if estimate.saturated:  # the load needs more sequences than the memory holds
        lead.append(perf_text("perf_queue", lang).strip())
    elif plan.rate is not None:
        lead.append(texts.fill("lead_rate", rate=rate_text(plan.rate, texts), requests=common["requests"]))
        if plan.rate_period:  # "50k a day": the day's average, and traffic comes in peaks
            lead.append(texts.fill("lead_rate_average", period=texts[f"period_{plan.rate_period}"]))
    if (plan.users_max or plan.rate is not None) and users > option.max_concurrent_sequences:
        # More requests in flight than the table's users: the paged cache holds each one's tokens.
        lead.append(paged_note(estimate, option, result, texts))
    if estimate.meets_target is not None and estimate.target is not None and not plan.users_target:
        key = "lead_perf_meets" if estimate.meets_target else "lead_perf_misses"
        lead.append(texts.fill(key, target=target_text(estimate.target, lang)))
    if not plan.side_by_side and len(shown) > 1 and not plan.users_target:
        # "how much slower is int4 than fp8?": each precision named, with what one user gets.
        each = precision_speeds(shown, calculations, plan, texts)
        if each:
            lead.append(texts.fill("lead_perf_each", items=each))
    return [" ".join(lead)]


def precision_speeds(
    shown: list[SizingResult], calculations: Calculations, plan: SizingPlan, texts: Texts
) -> str:
    """Each precision named, with the tokens/s per user of the option that holds it at this load
    (the named card, else the recommended one); empty when one of them has no estimate."""
    items = []
    for index, result in enumerate(shown):
        option = composer.focus_option(result, plan)
        if (option is None or not option.fits) and index < len(calculations.by_class):
            option = composer.recommended_option(calculations.by_class[index])
        estimate = estimate_of(option) if option is not None and option.fits else None
        if option is None or estimate is None:
            return ""
        items.append(
            texts.fill(
                "lead_perf_each_item",
                precision=precision_label(result.precision, texts),
                tps=count(round(estimate.output_tok_s_per_user.best), texts),
                option=option.label,
            )
        )
    return texts["followup_join"].join(items[:-1]) + texts["followup_last"] + items[-1]


def capacity_lead(
    estimate: PerformanceEstimate,
    common: dict[str, str],
    tps: dict[str, str],
    ttft: dict[str, str],
    texts: Texts,
) -> str:
    """ "How many users can it serve?": the most users the option serves within the latency target,
    with the range the estimate's band gives, what each of them gets, and whether the memory or
    the speed sets the limit. With none served, what one user alone gets."""
    assert estimate.target is not None and estimate.held_sequences is not None
    users = estimate.capacity
    assert users is not None
    fields = {
        **common,
        "target": target_text(estimate.target, texts.language),
        "users": count(round(users.best), texts),
        "range": capacity_range(users, texts.language),
        "held": count(estimate.held_sequences, texts),
        "tps": tps["best"],
        "tps_low": tps["low"],
        "tps_high": tps["high"],
        "ttft": ttft["best"],
        "ttft_low": ttft["low"],
        "ttft_high": ttft["high"],
    }
    if users.best < 1:
        key = "lead_capacity_none_fast_edge" if users.high >= 1 else "lead_capacity_none"
        return texts.fill(key, **fields)
    limit = "lead_capacity_memory" if memory_limits(estimate) else "lead_capacity_speed"
    return " ".join((texts.fill("lead_capacity", **fields), texts.fill(limit, **fields)))


def capacity_memory_note(
    estimate: PerformanceEstimate, option: CardOption, result: SizingResult, texts: Texts
) -> str:
    """Why a capacity's memory count is not the table's, where it is not and users are served: a
    paged KV cache (vLLM) holds each request's own tokens, the table counts whole contexts; where
    the memory sets the limit on llama.cpp or Ollama, each slot holds the whole context, so a
    shorter one holds more. Empty otherwise."""
    held, users = estimate.held_sequences, estimate.capacity
    if held is None or users is None or users.best < 1:
        return ""
    tokens = estimate.input_len + estimate.output_len
    fields = {
        "tokens": count(tokens, texts),
        "max_users": count(option.max_concurrent_sequences, texts),
        "context": count(result.context, texts),
    }
    if held > option.max_concurrent_sequences:
        return paged_note(estimate, option, result, texts)
    if result.engine in LLAMACPP_ENGINES and memory_limits(estimate) and 2 * tokens <= result.context:
        return texts.fill("lead_capacity_slots", **fields)
    return ""


def lighter_load(plan: SizingPlan, result: SizingResult, option: CardOption, texts: Texts) -> str:
    """With the memory full, the lighter load that keeps the latency target (the one said, else
    the default service class's): how many users at once, what each gets. Empty when even one
    user misses it, or the option is no named card."""
    if option.card is None:
        return ""
    lighter = replace(plan, users_max=None, users_target=True)
    try:  # the option's card id carries its count ("l40s:4")
        found = calculate(lighter.request(result.precision, option.card))
    except SizingError:
        return ""
    focus = found.options[0] if found.options else None
    estimate = estimate_of(focus) if focus is not None and focus.fits else None
    if estimate is None or estimate.capacity is None or estimate.target is None:
        return ""
    if estimate.capacity.best < 1:
        return ""
    return texts.fill(
        "lead_lighter_load",
        users=count(round(estimate.capacity.best), texts),
        target=target_text(estimate.target, texts.language),
        tps=count(round(estimate.output_tok_s_per_user.best), texts),
        ttft=count(round(estimate.ttft_ms.best), texts),
    )


def paged_note(estimate: PerformanceEstimate, option: CardOption, result: SizingResult, texts: Texts) -> str:
    """Why more requests are in flight than the table's user count: the table counts sequences
    that fill the whole context, a paged KV cache (vLLM) gives each request only the tokens it uses."""
    return texts.fill(
        "lead_capacity_paged",
        tokens=count(estimate.input_len + estimate.output_len, texts),
        max_users=count(option.max_concurrent_sequences, texts),
        context=count(result.context, texts),
    )


def _common(result: SizingResult, option: CardOption, texts: Texts) -> dict[str, str]:
    return {
        "model": result.model.name,
        "precision": precision_label(result.precision, texts),
        "card": option.label,
        "option": option.label,
        "total_gb": gb(result.total_gb, texts),
        "usable_gb": gb(option.usable_gb, texts),
        "headroom_gb": gb(option.headroom_gb, texts),
        "max_users": users_label(option.max_concurrent_sequences, texts),
        "users": users_label(result.users, texts),
        "context": count(result.context, texts),
    }


# --------------------------------------------------------------------------- notes


def notes(plan: SizingPlan | None, reading: Understanding, texts: Texts) -> list[str]:
    """What the answer assumed or could not use, said plainly, in the lead."""
    out: list[str] = []
    if reading.unknown_hardware and not reading.cards:
        out.append(texts.fill("hardware_unknown", name=reading.unknown_hardware))
    if plan is not None:
        spec = plan.gpu or ""
        name = spec.partition(":")[0]
        gigabytes = generic_memory_gb(name) if name and is_generic(name) else None
        if gigabytes is not None:
            if reading.unknown_hardware:
                out.append(texts.fill("hardware_unknown_sized", name=reading.unknown_hardware))
            if reading.hardware_kind == "apple":
                out.append(texts.fill("hardware_apple", gb=gigabytes))
            elif reading.hardware_kind == "cpu":
                out.append(texts.fill("hardware_cpu", gb=gigabytes))
            else:
                out.append(texts.fill("hardware_generic", gb=gigabytes, mib=count(gigabytes * 1024, texts)))
        if reading.head_count and not plan.head_count:
            out.append(
                texts.fill(
                    "head_count_kept",
                    head_count=count(reading.head_count, texts),
                    users=count(plan.users, texts),
                )
            )
        if plan.head_count:
            out.append(
                texts.fill(
                    "head_count_note",
                    head_count=count(plan.head_count, texts),
                    users=count(plan.users, texts),
                    share=f"{head_count_share() * 100:g}",
                )
            )
        limit = _context_limit(plan)
        if limit and plan.context > limit:
            out.append(texts.fill("context_over_limit", model=_model_name(plan), limit=count(limit, texts)))
        # The format sized when none was named: the engine's default pull, or the model's release.
        for reason in ("engine_default", "native"):
            if reason in plan.assumed:
                out.append(
                    texts.fill(
                        f"{reason}_note",
                        model=_model_name(plan),
                        precision=precision_label(plan.precisions[0], texts),
                        engine=ENGINE_LABELS.get(plan.engine or "", plan.engine or ""),
                    )
                )
    # Values the reading could not use (out of range, fractional counts, a substituted model).
    for reading_note in plan.notes if plan is not None else reading.notes:
        if reading_note.key == "context_over_model" and any("context" in line for line in out):
            continue  # already said by context_over_limit above
        out.append(reading_note.text(texts.language))
    if reading.budget:
        out.append(texts.fill("budget_note", budget=reading.budget))
    elif reading.question == "price":
        out.append(texts["price_note"])
    return out


def escalation(plan: SizingPlan, result: SizingResult, texts: Texts) -> list[str]:
    """When the named card does not hold the request: the smallest count of that card that does;
    when no card class does and nothing beyond them was found: the fewest GPUs of any card."""
    option = result.options[0] if result.options else None
    if not plan.gpu and not plan.card_class and result.options and not result.recommended:
        if result.alternatives:
            return []
        found_any = fewest_gpus(request_for(plan, result.precision))
        if found_any.result is None or found_any.count is None:
            return []
        best_any = found_any.result.options[0]
        return [
            texts.fill(
                "escalate_any",
                option=best_any.label,
                total_gb=gb(found_any.result.total_gb, texts),
                max_users=users_label(best_any.max_concurrent_sequences, texts),
                context=count(result.context, texts),
            )
        ]
    if not plan.gpu or option is None or option.fits:
        return []
    if option.reason_code in ("vllm_slack", "utilization"):
        return []  # the fix is a flag on the same card (the reason says which), not more cards
    card = plan.gpu.partition(":")[0]
    found = fewest_gpus(request_for(plan, result.precision), card)
    if found.result is None or found.count is None:
        return [texts.fill("escalate_none", count=GPU_COUNTS[-1], card=card_label(card, texts.language))]
    best = found.result.options[0]
    return [
        texts.fill(
            "escalate",
            option=best.label,  # "2× H100 80GB (SXM)"; beyond one node, the nodes and the pipeline
            total_gb=gb(found.result.total_gb, texts),
            max_users=users_label(best.max_concurrent_sequences, texts),
            context=count(result.context, texts),
        )
    ]


def _context_limit(plan: SizingPlan) -> int | None:
    try:
        return resolve(plan.model, plan.language).arch.max_position_embeddings
    except SizingError:
        return None


def _model_name(plan: SizingPlan) -> str:
    return calculate(request_for(plan)).model.name


# --------------------------------------------------------------------------- leads of a sizing answer


def sizing_lead(
    question: str | None, result: SizingResult, option: CardOption | None, texts: Texts
) -> list[str]:
    """For "how fast", "pages per hour" and "KV bytes per token": the number asked, first."""
    if question == "kv_bytes":
        per_seq = result.kv_bytes_per_token * result.context / GB
        return [
            texts.fill(
                "lead_kv",
                model=result.model.name,
                kv_bytes=count(result.kv_bytes_per_token, texts),
                kv=result.kv_dtype,
                per_seq_gb=gb(per_seq, texts),
                context=count(result.context, texts),
                kv_total_gb=gb(result.kv_cache_gb, texts),
                users=users_label(result.users, texts),
            )
        ]
    if question not in ("throughput", "pages") or option is None:
        return []
    rate = decode_rate(option)
    if not rate and not option.fits:
        return [texts.fill("lead_throughput_no_fit", option=option.label)]
    if not rate:
        return [texts.fill("lead_throughput_unknown", option=option.label)]
    common = _common(result, option, texts)
    if question == "pages":
        per_page = int(rules()["tokens_per_page"])
        pages = rate * 3600 / per_page
        return [
            texts.fill(
                "lead_pages",
                pages=count(round(pages), texts),
                rate=count(round(rate), texts),
                tokens_per_page=count(per_page, texts),
                words_per_page=count(int(rules()["words_per_page"]), texts),
                **{k: v for k, v in common.items() if k not in ("users",)},
            )
        ]
    return [texts.fill("lead_throughput", rate=count(round(rate), texts), **common)]


def unit_lead(reading: Understanding, results: list[SizingResult], texts: Texts) -> list[str]:
    """A message that names GiB or MiB gets the weights, and the total, in that unit and in GB."""
    if "gb_vs_gib" not in reading.faq or not results:
        return []
    parts = [
        texts.fill(
            "lead_weights_gib",
            precision=precision_label(result.precision, texts),
            weights_gb=gb(result.weights_gb, texts),
            weights_gib=gb(result.weights_gb * GB / GIB, texts),
            total_gb=gb(result.total_gb, texts),
            total_gib=gb(result.total_gb * GB / GIB, texts),
        )
        for result in results
    ]
    return [texts.fill("lead_units", model=composer.model_label(results[0]), weights="; ".join(parts))]


GIB = 2**30


# --------------------------------------------------------------------------- reverse questions


def answer_largest(
    plan: SizingPlan, gpu: str, precision_named: bool, texts: Texts, family: str | None = None
) -> Asked:
    """The largest catalog model that fits the card (of the family named, if one was); with no
    precision named, the largest at each of the common precisions too (llama.cpp's Q4_K_M where
    no 4-bit vLLM format fits). Where the family's largest does not fit, how many cards it needs."""
    among = {model.model_id for model in family_members(family)} if family else None
    scope = {"family": family_label(family)} if family else {}
    suffix = "_family" if family else ""
    precisions = (plan.precisions[0],) if precision_named else LARGEST_PRECISIONS
    found = _largest_each(plan, gpu, precisions, plan.engine, among)
    if not precision_named and found["int4"] is None and not plan.engine:
        found = _largest_each(plan, gpu, GGUF_PRECISIONS, "llamacpp", among)
    fitting = [result for result in found.values() if result is not None]
    beyond = _family_beyond(plan, gpu, family, fitting, texts) if family else []
    if not fitting:
        lead = texts.fill(
            f"lead_largest_none{suffix}",
            card=card_label(gpu, texts.language),
            precision=precision_label(precisions[-1], texts),
            users=users_label(plan.users, texts),
            context=count(plan.context, texts),
            **scope,
        )
        return Asked(lead=[lead, *beyond])
    result = max(fitting, key=lambda each: each.model.params)
    option = result.options[0]
    lead = texts.fill(f"lead_largest{suffix}", **_common(result, option, texts), **scope)
    settles = {"model": result.model.id, "precision": result.precision}
    if precision_named:
        return Asked(lead=[lead, *beyond], results=[result], block=result, settles=settles)
    each_fits = [
        texts.fill("largest_at", model=at.model.name, precision=precision_label(each, texts))
        if at is not None
        else texts.fill("largest_none_at", precision=precision_label(each, texts))
        for each, at in found.items()
    ]
    lead = texts.fill(
        f"lead_largest_each{suffix}",
        card=card_label(gpu, texts.language),
        users=users_label(plan.users, texts),
        context=count(plan.context, texts),
        each=texts["note_list_sep"].join(each_fits),
        **scope,
    )
    rows = [texts["largest_table_header"], "|---|---|---|---|---|"]
    for each, at in found.items():
        if at is None:
            rows.append(f"| {precision_label(each, texts)} | {texts['largest_none_short']} | — | — | — |")
        else:
            rows.append(texts.fill("largest_table_row", **_common(at, at.options[0], texts)))
    return Asked(lead=[lead, *beyond], results=[result], block=result, settles=settles, table=rows)


def _family_beyond(
    plan: SizingPlan, gpu: str, family: str, fitting: list[SizingResult], texts: Texts
) -> list[str]:
    """How many of the card the family's largest model needs, when it is not among those that fit:
    at the precision named, else in the format it is published in, else at 4 bits."""
    members = family_members(family)
    largest = max(members, key=lambda model: model.params_b)
    if any(result.model.params >= 0.9 * largest.params_b * 1e9 for result in fitting):
        return []  # it, or a model of its size (Gemma 3 27B beside Gemma 2 27B), fits
    precision = (
        plan.precisions[0]
        if len(plan.precisions) == 1
        else native_formats().get(largest.model_id, LARGEST_PRECISIONS[-1])
    )
    card = gpu.partition(":")[0]
    request = request_for(replace(plan, model=largest.model_id), precision, card)
    try:
        needed = fewest_gpus(request, card)
    except SizingError:
        return []
    key = "largest_family_beyond" if needed.count is not None else "largest_family_beyond_none"
    return [
        texts.fill(
            key,
            model=largest.label,
            precision=precision_label(precision, texts),
            count=needed.count or GPU_COUNTS[-1],
            card=card_label(card, texts.language),
        )
    ]


# The precisions a card's reverse search lists when none was named, highest first; where no
# 4-bit vLLM format fits (small cards, after vLLM's memory reserve), llama.cpp's GGUF ones.
LARGEST_PRECISIONS = ("bf16", "int8", "int4")
GGUF_PRECISIONS = ("bf16", "q8_0", "q4_k_m")


def _largest_each(
    plan: SizingPlan,
    gpu: str,
    precisions: tuple[str, ...],
    engine: str | None,
    among: set[str] | None = None,
) -> dict[str, SizingResult | None]:
    found: dict[str, SizingResult | None] = {}
    for each in precisions:
        update = {"model": "", "engine": engine or default_engine(each)}
        request = request_for(plan, each, gpu).model_copy(update=update)
        found[each] = largest_model(gpu, request, among).result
    return found


def answer_context(plan: SizingPlan, texts: Texts) -> Asked:
    gpu = plan.gpu or class_card(plan.card_class or "")
    found = longest_context(request_for(plan, gpu=gpu))
    base = calculate(request_for(plan, gpu=gpu).model_copy(update={"context": max(found.context, 128)}))
    option = base.options[0]
    common = _common(base, option, texts)
    if found.result is None:
        common["context"] = count(128, texts)
        return Asked(lead=[texts.fill("lead_context_none", **common)], results=[base], block=base)
    key = "lead_context_capped" if found.capped_by_model else "lead_context"
    lead = texts.fill(key, kv_bytes=count(base.kv_bytes_per_token, texts), **common)
    return Asked(lead=[lead], results=[found.result], block=found.result)


def answer_gpus(plan: SizingPlan, texts: Texts) -> Asked:
    named = plan.gpu or (class_card(plan.card_class) if plan.card_class else None)
    card = named.partition(":")[0] if named else None
    found = fewest_gpus(request_for(plan), card)
    if found.result is None or found.count is None:
        largest = GPU_COUNTS[-1]
        label = card_label(found.card, texts.language)
        result = calculate(request_for(plan))
        lead = texts.fill(
            "lead_gpus_none",
            model=result.model.name,
            precision=precision_label(result.precision, texts),
            count=largest,
            card=label,
        )
        return Asked(lead=[lead], results=[result], block=result)
    result = found.result
    option = result.options[0]
    common = _common(result, option, texts)
    common["card"] = card_label(found.card, texts.language)
    key = "lead_gpus_any" if card is None else "lead_gpus_one" if found.count == 1 else "lead_gpus"
    lead = texts.fill(key, count=found.count, **common)
    # A load was named ("10 requests per second"): how fast the count that holds it serves it,
    # and when it cannot keep up, what would (the calculator's suggestions for the load).
    speed = performance_lead(None, plan, Calculations(plan, [result], []), texts)
    estimate = estimate_of(option) if speed else None
    more = result.performance_suggestions if estimate is not None and not acceptable(estimate) else []
    return Asked(lead=[lead, *speed, *more, texts["gpus_counts_note"]], results=[result], block=result)


def answer_cheapest(plan: SizingPlan, texts: Texts) -> Asked:
    """The card with the least memory that holds the model (no prices are kept). With no precision
    named, the smallest card at each of the three, the one with the least memory first."""
    if plan.side_by_side:
        return _cheapest_each(plan, texts)
    result = smallest_card(request_for(plan))
    if result is None:
        return _cheapest_several(plan, texts)
    option = result.options[0]
    return Asked(
        lead=[texts.fill("lead_cheapest", **_common(result, option, texts))], results=[result], block=result
    )


def _cheapest_each(plan: SizingPlan, texts: Texts) -> Asked:
    found = {precision: smallest_card(request_for(plan, precision)) for precision in plan.precisions}
    fitting = [result for result in found.values() if result is not None]
    if not fitting:
        return _cheapest_several(plan, texts)
    # The least memory wins; at the same card the higher precision (listed first) does.
    best = min(fitting, key=lambda result: result.options[0].usable_gb)
    items = [
        texts.fill(
            "cheapest_item" if result else "cheapest_item_none",
            precision=precision_label(precision, texts),
            card=result.options[0].label if result else "",
        )
        for precision, result in found.items()
    ]
    lead = [
        texts.fill("lead_cheapest_precision", **_common(best, best.options[0], texts)),
        texts.fill("cheapest_each", items=_listed(items, texts)),
    ]
    return Asked(lead=lead, results=fitting, block=best)


def _cheapest_several(plan: SizingPlan, texts: Texts) -> Asked:
    """No single card holds it: the fewest cards that do at each precision of the plan, the
    least memory in all first."""
    found = {precision: fewest_gpus(request_for(plan, precision)) for precision in plan.precisions}
    fitting = {precision: count for precision, count in found.items() if count.result is not None}
    if not fitting:
        return Asked(lead=[texts.fill("lead_cheapest_none", count=GPU_COUNTS[-1])])
    best = min(fitting.values(), key=lambda count: count.result.options[0].usable_gb if count.result else 0)
    assert best.result is not None
    option = best.result.options[0]
    common = _common(best.result, option, texts)
    lead = [texts.fill("lead_cheapest_several", **common)]
    if len(plan.precisions) > 1:
        items = [
            texts.fill(
                "cheapest_item" if count.result else "cheapest_item_none",
                precision=precision_label(precision, texts),
                card=f"{count.count}× {card_label(count.card, texts.language)}" if count.result else "",
            )
            for precision, count in found.items()
        ]
        lead.append(texts.fill("cheapest_each_several", items=_listed(items, texts)))
    results = [count.result for count in fitting.values() if count.result is not None]
    return Asked(lead=lead, results=results, block=best.result)


# --------------------------------------------------------------------------- comparisons


def answer_comparison(sides: list[SizingPlan], texts: Texts, question: str | None = None) -> Asked:
    """Each side sized on its card; the lead names which wins and why."""
    evaluated: list[Side] = []
    for side in sides:
        gpu = side.gpu or side.card_class
        result = calculate(request_for(side, gpu=gpu)) if gpu else calculate(request_for(side))
        option = (
            composer.focus_option(result, replace(side, gpu=gpu))
            if gpu
            else composer.recommended_option(result)
        )
        option = option or result.options[-1]
        evaluated.append((result, option))
    cards_compared = (
        len({option.label for _, option in evaluated}) > 1
        and len({(result.model.id, result.precision) for result, _ in evaluated}) == 1
    )
    first = evaluated[0]
    rows = [texts["compare_header"], texts["compare_rule"]]
    for result, option in evaluated:
        side_text = texts.fill(
            "compare_side", model=result.model.name, precision=precision_label(result.precision, texts)
        )
        rows.append(
            texts.fill(
                "compare_row",
                side=side_text if not cards_compared else option.label,
                total_gb=gb(result.total_gb, texts),
                option=option.label,
                fits=texts["fits_yes"] if option.fits else texts["fits_no"],
                headroom_gb=gb(option.headroom_gb, texts),
                max_users=count(option.max_concurrent_sequences, texts),
            )
        )
    fitting = [pair for pair in evaluated if pair[1].fits]
    lead: list[str] = []
    rates = [(decode_rate(option) or 0.0, (result, option)) for result, option in evaluated if option.fits]
    if cards_compared and question in ("throughput", "pages") and len(rates) > 1 and all(r for r, _ in rates):
        fastest = max(rates, key=lambda item: item[0])
        slowest = min(rates, key=lambda item: item[0])
        winner = fastest[1]
        lead.append(
            texts.fill(
                "compare_faster",
                winner=fastest[1][1].label,
                loser=slowest[1][1].label,
                rate=count(round(fastest[0]), texts),
                other_rate=count(round(slowest[0]), texts),
            )
        )
    elif cards_compared:
        what = texts.fill(
            "compare_what", model=first[0].model.name, precision=precision_label(first[0].precision, texts)
        )
        sentence, winner = _compare_outcome(
            evaluated,
            ("compare_one_fits", "compare_both_fit", "compare_neither"),
            lambda pair: pair[1].label,
            _tightest,
            texts,
            what=what,
        )
        lead.append(sentence)
    else:
        mixed = len({option.label for _, option in evaluated}) > 1  # each model on its own card

        def side_name(pair: Side) -> str:
            return texts.fill(
                "compare_side_on" if mixed else "compare_side",
                model=pair[0].model.name,
                precision=precision_label(pair[0].precision, texts),
                card=pair[1].label,
            )

        prefix = "compare_pairs" if mixed else "compare_models"
        sentence, winner = _compare_outcome(
            evaluated,
            (f"{prefix}_one", f"{prefix}_both", f"{prefix}_neither"),
            side_name,
            _tightest if mixed else _most_users,
            texts,
            card=first[1].label,
        )
        lead.append(sentence)
        lead.append(texts["compare_models_quality"])
    if cards_compared and len(evaluated) > 2:
        short = [option.label for _, option in evaluated if not option.fits]
        if short and fitting:
            lead.append(texts.fill("compare_others_short", options=texts["note_or"].join(short)))
    results = [result for result, _ in evaluated]
    return Asked(lead=lead, results=results, block=winner[0], table=rows)


def _tightest(fitting: list[Side]) -> Side:
    """Of sides that all fit, the one on the least memory."""
    return min(fitting, key=lambda pair: pair[1].usable_gb)


def _most_users(fitting: list[Side]) -> Side:
    """Of models that all fit one card, the one serving the most users, then the most headroom."""
    return max(fitting, key=lambda pair: (pair[1].max_concurrent_sequences, pair[1].headroom_gb))


def _compare_outcome(
    evaluated: list[Side],
    keys: tuple[str, str, str],
    name: Callable[[Side], str],
    better: Callable[[list[Side]], Side],
    texts: Texts,
    **shared: str,
) -> tuple[str, Side]:
    """The lead sentence of a comparison and the side it favours: the one side that fits, the
    `better` of those that fit, or the nearer of two that do not. `keys` are the templates of
    those three outcomes; `shared` fills what they have in common."""
    fitting = [pair for pair in evaluated if pair[1].fits]
    one_fits, all_fit, none_fits = keys
    if len(fitting) == 1:
        winner = fitting[0]
        loser = next(pair for pair in evaluated if pair is not winner)
        figures = {"why": composer.why_not(loser[1], texts)}
        return texts.fill(one_fits, winner=name(winner), loser=name(loser), **figures, **shared), winner
    if fitting:
        winner = better(fitting)
        loser = next(pair for pair in fitting if pair is not winner)
        figures = {
            "headroom_gb": gb(winner[1].headroom_gb, texts),
            "max_users": users_short(winner[1].max_concurrent_sequences, texts),
            "other_headroom_gb": gb(loser[1].headroom_gb, texts),
            "other_max_users": users_short(loser[1].max_concurrent_sequences, texts),
        }
        return texts.fill(all_fit, winner=name(winner), loser=name(loser), **figures, **shared), winner
    first, second = evaluated[0], evaluated[1]
    winner = max(evaluated, key=lambda pair: pair[1].headroom_gb)
    sentence = texts.fill(
        none_fits,
        first=name(first),
        first_why=composer.why_not(first[1], texts),
        second=name(second),
        second_why=composer.why_not(second[1], texts),
        **shared,
    )
    return sentence, winner


# --------------------------------------------------------------------------- fine-tuning


def answer_finetuning(plan: SizingPlan | None, texts: Texts) -> Asked:
    """The calculator's fine-tuning mode for full, LoRA and QLoRA: the card that holds each, the
    per-GPU breakdown of the one the question points at, and the defaults it assumed."""
    if plan is None:
        return Asked(lead=[texts["finetune_generic"]])
    spec = training_spec(plan)
    results = {method: calculate(request) for method, request in training_requests(plan, spec).items()}
    methods = tuple(results)
    focus = results[methods[0]]
    rows = [texts["finetune_table_header"], "|---|---|---|---|"]
    verdicts = {}
    for method, result in results.items():
        option = _training_home(result)
        verdicts[method] = _training_verdict(result, option, texts)
        rows.append(
            f"| {texts['finetune_method_' + method]} | {_training_need(result, texts)} | "
            f"{verdicts[method]} | {_training_headroom(option, texts)} |"
        )
    lead = texts.fill(
        "finetune_lead",
        model=focus.model.name,
        method=texts["finetune_method_" + methods[0]],
        need=_training_need(focus, texts),
        verdict=verdicts[methods[0]],
        others="; ".join(
            texts.fill(
                "finetune_other",
                method=texts["finetune_method_" + method],
                need=_training_need(results[method], texts),
                verdict=verdicts[method],
            )
            for method in methods[1:]
        ),
    )
    sentences = [lead, *training_setup(plan, spec, texts)]
    qlora = results["qlora"]
    if qlora.caveat:
        sentences.append(texts.fill("finetune_qlora_quality", caveat=qlora.caveat))
    sentences.append(texts["finetune_serving"])
    return Asked(lead=sentences, results=list(results.values()), block=focus, table=rows, serving=False)


def _training_need(result: SizingResult, texts: Texts) -> str:
    """What the training needs per GPU, and on how many when the calculator shards it (the
    result's total is every GPU's together)."""
    ft = result.finetune
    if ft is None or ft.gpus <= 1:
        return texts.fill("finetune_need_one", gb=gb(ft.total_gb if ft else result.total_gb, texts))
    return texts.fill("finetune_need_sharded", gb=gb(ft.total_gb, texts), gpus=ft.gpus)


def _training_headroom(option: CardOption | None, texts: Texts) -> str:
    """The option's spare memory: every GPU's together when it has several."""
    if option is None:
        return "—"
    if option.gpus > 1:
        return texts.fill("finetune_headroom_all", gb=gb(option.headroom_gb, texts))
    return f"{gb(option.headroom_gb, texts)} GB"


def training_requests(plan: SizingPlan, spec: FinetuneSpec | None = None) -> dict[str, SizingRequest]:
    """The calculator requests of a training answer, one per method, the one asked first (the
    method named; QLoRA when a 4-bit base is; else full fine-tuning)."""
    spec = spec or training_spec(plan)
    gpu = plan.gpu or (class_card(plan.card_class) if plan.card_class else None)
    qlora_asked = not plan.side_by_side and plan.precisions[0] in QLORA_PRECISIONS
    asked = plan.finetune_method or ("qlora" if qlora_asked else "full")
    methods = (asked, *(method for method in FINETUNE_METHODS if method != asked))
    return {
        method: SizingRequest(
            model=plan.model,
            engine="transformers",
            finetune=spec.model_copy(update={"method": method}),
            gpu=gpu,
            lang=plan.language,
        )
        for method in methods
    }


def training_spec(plan: SizingPlan) -> FinetuneSpec:
    """The training the plan describes: what the conversation said, the calculator's defaults
    for the rest."""
    said = {
        "lora_rank": plan.lora_rank,
        "batch": plan.train_batch,
        "seq": plan.train_seq,
        "optimizer": plan.train_optimizer,
        "gradient_checkpointing": plan.gradient_checkpointing,
    }
    return FinetuneSpec(**{name: value for name, value in said.items() if value is not None})


def training_setup(plan: SizingPlan, spec: FinetuneSpec, texts: Texts) -> list[str]:
    """What the training answer took as said ("As you said: ...") and what it assumed, one
    sentence each, every knob of the calculator in one of the two."""
    told: list[str] = []
    assumed: list[str] = []
    if plan.train_optimizer is None:
        assumed.append(texts["finetune_item_states"])
    else:
        assumed.append(texts["finetune_item_bf16"])
        told.append(texts["finetune_item_optimizer_" + spec.optimizer])
    sequences = (
        texts["finetune_sequences_one"]
        if spec.batch == 1
        else texts.fill("finetune_sequences_many", count=count(spec.batch, texts))
    )
    checkpointing = "on" if spec.gradient_checkpointing else "off"
    for said, item in (
        (plan.train_batch, texts.fill("finetune_item_batch", batch=sequences)),
        (plan.train_seq, texts.fill("finetune_item_seq", seq=count(spec.seq, texts))),
        (plan.gradient_checkpointing, texts["finetune_item_checkpointing_" + checkpointing]),
        (plan.lora_rank, texts.fill("finetune_rank", rank=spec.lora_rank)),
    ):
        (assumed if said is None else told).append(item)
    sentences = [texts.fill("finetune_told", items=_listed(told, texts))] if told else []
    return [*sentences, texts.fill("finetune_assumed", items=_listed(assumed, texts))]


def _listed(items: list[str], texts: Texts) -> str:
    """'a, b and c' / 'a, b y c'."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + texts["finetune_and"] + items[-1]


# The methods a fine-tuning answer sizes, in the order the table lists them after the one asked.
FINETUNE_METHODS = ("full", "lora", "qlora")
# Precisions a fine-tuning question carries when it asks for QLoRA (a 4-bit base).
QLORA_PRECISIONS = ("nf4", "int4", "q4_k_m")


def _training_home(result: SizingResult) -> CardOption | None:
    """The option a training verdict names: the requested card, else the smallest fitting one."""
    if len(result.options) == 1:
        return result.options[0]
    fitting = [option for option in result.options if option.fits]
    return fitting[0] if fitting else (result.options[-1] if result.options else None)


def _training_verdict(result: SizingResult, option: CardOption | None, texts: Texts) -> str:
    if option is None:
        return "—"
    if option.fits:
        return texts.fill("finetune_fits_sharded" if option.gpus > 1 else "finetune_fits", card=option.label)
    return texts.fill("finetune_no_fit", card=option.label, gb=gb(-option.headroom_gb, texts))


@dataclass(frozen=True)
class CardCount:
    usable_gb: float  # per card
    count: int


def card_facts_of(spec: str) -> CardCount:
    name, _, times = spec.partition(":")
    return CardCount(resolve_card(name).usable_gb, int(times) if times else 1)
