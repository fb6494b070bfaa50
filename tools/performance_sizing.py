"""The serving estimate inside a sizing result: on every option, for the recommended one, and in
the recommendation when the request has a latency target.

With a target, the recommendation is the smallest option that holds the request in memory and
meets the target. When none does, the suggestions say what would: more independent servers of
the recommended option sharing the users, more GPUs in tensor parallel, or a faster card.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.cards import card_facts, list_cards, resolve_card
from tools.evaluation import NODE_GPUS, Evaluation, candidates, evaluate
from tools.performance import (
    Workload,
    estimate_performance,
    perf_text,
    performance_curve,
    performance_line,
    target_text,
    workload_from_request,
)
from tools.performance_measured import load_measurements
from tools.performance_physics import LLAMACPP_ENGINES
from tools.scenario import Scenario, build_scenario
from tools.schemas import Band, CardOption, Measurement, PerformanceEstimate
from tools.texts import integer, number

if TYPE_CHECKING:
    from tools.i18n import Language
    from tools.schemas import SizingRequest, SizingResult

MAX_REPLICAS = 16
TENSOR_PARALLEL = (2, 4, 8)


def option_card(evaluation: Evaluation) -> tuple[str, int]:
    """The card an option is judged on for speed: its slowest member card, and the GPU count."""
    slowest = min(evaluation.candidate.members, key=lambda hw: hw.bandwidth_gbps or 0.0)
    return slowest.card_id, slowest.gpus


def gpu_calibrated(evaluation: Evaluation) -> bool:
    """Whether the serving estimate covers this option's hardware: GPUs (its fit has no CPU or
    Apple figure) in one node (it splits every GPU in tensor parallel; across nodes vLLM runs
    pipeline stages that take turns, which the calculator's own rate models)."""

    return gpu_host(evaluation) and evaluation.estimate.pipeline == 1


def gpu_host(evaluation: Evaluation) -> bool:
    """Whether the option runs on GPUs, the only hardware the serving fit has figures for."""
    return card_facts(option_card(evaluation)[0]).card.kind not in ("apple", "cpu")


def calibrated_estimate(option: CardOption) -> PerformanceEstimate | None:
    """An option's serving estimate where its calibration covers the hardware (GPUs in one node,
    as `gpu_calibrated`); None elsewhere, where the option's own `decode_tokens_per_s` stands."""

    if option.performance is None or option.gpus > NODE_GPUS:
        return None
    if option.card and resolve_card(option.card.partition(":")[0]).kind in ("apple", "cpu"):
        return None
    return option.performance


def acceptable(estimate: PerformanceEstimate | None) -> bool:
    """Keeps up with the load (not saturated) and meets the target where there is one."""
    return estimate is not None and not estimate.saturated and estimate.meets_target is not False


def option_performance(
    scenario: Scenario, evaluation: Evaluation, workload: Workload, measured: list[Measurement]
) -> PerformanceEstimate | None:
    card, gpus = option_card(evaluation)
    plan = evaluation.option.replicas
    if plan is not None:
        # vLLM refuses the split over every GPU; the copies it runs instead share the load.
        share = workload._replace(
            users=max(1, -(-workload.users // plan.replicas)),
            rate=workload.rate / plan.replicas if workload.rate is not None else None,
        )
        one = estimate_performance(
            scenario, card, plan.tensor_parallel, share, plan.max_concurrent_sequences, measured
        )
        if one is None:
            return None
        # Fixed users split unevenly (30 over 8 copies: 4 each on 7.5 copies' worth); a rate or a
        # saturated run loads every copy alike.
        fixed = workload.rate is None and not workload.saturate and not workload.fill_target
        return _times(
            one, workload.users / share.users if fixed else plan.replicas, plan.replicas, scenario.lang
        )
    if evaluation.option.max_concurrent_sequences < 1:
        return None
    return estimate_performance(
        scenario, card, gpus, workload, held_sequences(evaluation, workload, scenario), measured
    )


def held_sequences(evaluation: Evaluation, workload: Workload, scenario: Scenario) -> int:
    """Sequences the option's memory holds under this load. The memory verdict counts sequences of
    the whole context; where the request's lengths were given, a capacity is asked (its answer is
    in users sending the request the estimate assumes: the class's typical one when none was
    given), a rate or the memory filled (the requests in flight are such requests too), and the engine pages its KV cache (vLLM, SGLang, TensorRT-LLM allocate blocks as a
    sequence grows), each holds only its prompt and answer, so the same room holds more, up to the
    engine's sequence limit (vLLM's --max-num-seqs). The sliding-window layers' share is kept at
    the context's: never more than the room holds. llama.cpp gives every slot the whole context
    up front."""
    held = evaluation.option.max_concurrent_sequences
    est = evaluation.estimate
    tokens = workload.input_len + workload.output_len
    paged = workload.lengths_given or workload.fill_target or workload.rate is not None or workload.saturate
    if not paged or est.engine in (*LLAMACPP_ENGINES, "transformers"):
        return held
    if tokens >= scenario.context or est.kv_bytes_per_sequence <= 0 or est.pipeline > 1:
        return held
    fixed = max(est.kv_bytes_per_sequence - est.kv_bytes_per_token * scenario.context, 0)
    per_sequence = est.kv_bytes_per_token * tokens + fixed
    more = int(est.kv_room_bytes // per_sequence) if per_sequence > 0 else held
    if est.scheduler is not None:
        more = min(more, est.scheduler[0])
    return max(held, more)


def _times(one: PerformanceEstimate, factor: float, copies: int, lang: Language) -> PerformanceEstimate:
    """One copy's estimate as the whole option's: `factor` copies' worth of sequences, tokens and
    requests."""

    def scaled(band: Band) -> Band:
        return Band(low=band.low * factor, best=band.best * factor, high=band.high * factor)

    held = one.held_sequences * copies if one.held_sequences is not None else None
    return one.model_copy(
        update={
            "held_sequences": held,
            "capacity": scaled(one.capacity) if one.capacity is not None else None,
            "concurrency": scaled(one.concurrency),
            "output_tok_s_total": scaled(one.output_tok_s_total),
            "requests_per_s": scaled(one.requests_per_s),
            "basis_detail": perf_text("perf_copies", lang, copies=copies, detail=one.basis_detail),
        }
    )


def _replicas(
    scenario: Scenario, evaluation: Evaluation, workload: Workload, measured: list[Measurement]
) -> tuple[int, PerformanceEstimate] | None:
    """The fewest independent copies of the option that meet the target, each with its share."""
    for count in range(2, MAX_REPLICAS + 1):
        share = workload._replace(
            users=max(1, -(-workload.users // count)),
            rate=workload.rate / count if workload.rate is not None else None,
        )
        estimate = option_performance(scenario, evaluation, share, measured)
        if estimate is not None and acceptable(estimate):
            return count, estimate
    return None


def _bigger(
    scenario: Scenario, card: str, workload: Workload, measured: list[Measurement]
) -> list[tuple[str, int, PerformanceEstimate]]:
    """Options beyond the compared ones that meet the target: this card × more GPUs in tensor
    parallel, then faster cards (ordered by bandwidth) at the fewest GPUs that hold the model."""

    found: list[tuple[str, int, PerformanceEstimate]] = []

    def first_meeting(card_id: str, counts: tuple[int, ...]) -> tuple[str, int, PerformanceEstimate] | None:
        for count in counts:
            ev = evaluate(scenario, candidates(f"{card_id}:{count}", scenario.lang)[0])
            if not ev.option.fits:
                continue
            estimate = option_performance(scenario, ev, workload, measured)
            if estimate is not None and acceptable(estimate):
                return card_id, count, estimate
        return None

    if scenario.engine in ("vllm", "transformers"):
        more = first_meeting(card, TENSOR_PARALLEL)
        if more:
            found.append(more)
            return found

    base = card_facts(card).card.bandwidth_gbps or 0.0
    faster = sorted(
        (c for c in list_cards() if (c.bandwidth_gbps or 0) > base), key=lambda c: c.bandwidth_gbps or 0.0
    )
    for other in faster:
        hit = first_meeting(other.id, (1, *TENSOR_PARALLEL) if scenario.engine != "llamacpp" else (1, 2, 4))
        if hit:
            found.append(hit)
            break
    return found


def _alternatives_with_performance(
    scenario: Scenario, alternatives: list[CardOption], workload: Workload, measured: list[Measurement]
) -> list[CardOption]:
    """The hardware beyond the compared options (named cards × N) with its estimate too."""

    out = []
    for option in alternatives:
        estimate, single = None, None
        if option.card:
            evaluation = evaluate(scenario, candidates(option.card, scenario.lang)[0])
            estimate = option_performance(scenario, evaluation, workload, measured)
            single = single_user_rate(scenario, evaluation, workload, estimate, measured)
        out.append(_with_estimate(option, estimate, single))
    return out


def single_user_rate(
    scenario: Scenario,
    evaluation: Evaluation,
    workload: Workload,
    estimate: PerformanceEstimate | None,
    measured: list[Measurement],
) -> float | None:
    """The tokens/s one user alone gets on the option (best estimate, the workload's lengths): what
    `CardOption.decode_tokens_per_s` reports, so every speed shown comes from one estimate. None
    when the option has no estimate, and on CPU and Apple hosts: the serving fit has GPU figures
    only, their bandwidth figure is calibrated on their own measurements (tools/data/calibration.json)."""
    if estimate is None:
        return None
    stages = evaluation.estimate.pipeline
    if stages > 1 and gpu_host(evaluation):
        # Pipeline stages take turns: one stream's token passes every stage, each read by one
        # node's tensor-parallel group, so it decodes no faster than the whole model would on one
        # node's group (that estimate, without the hop between nodes, is the ceiling stated).
        card, gpus = option_card(evaluation)
        one = workload._replace(users=1, rate=None, saturate=False)
        stage = estimate_performance(scenario, card, gpus // stages, one, 1, measured)
        return round(stage.output_tok_s_per_user.best, 1) if stage is not None else None
    if not gpu_calibrated(evaluation):
        return None
    alone = workload.rate is None and not workload.saturate and workload.users == 1
    if not alone:
        one = workload._replace(users=1, rate=None, saturate=False)
        estimate = option_performance(scenario, evaluation, one, measured)
    return round(estimate.output_tok_s_per_user.best, 1) if estimate is not None else None


def _with_estimate(
    option: CardOption, estimate: PerformanceEstimate | None, single: float | None
) -> CardOption:
    update: dict[str, object] = {"performance": estimate}
    if single is not None and option.decode_tokens_per_s is not None:
        update["decode_tokens_per_s"] = single
    return option.model_copy(update=update)


def _latency_s(estimate: PerformanceEstimate) -> float:
    return (estimate.ttft_ms.best + (estimate.output_len - 1) * estimate.tpot_ms.best) / 1000


def add_performance(
    request: SizingRequest, scenario: Scenario, evaluations: list[Evaluation], result: SizingResult
) -> SizingResult:
    """The result with `performance` on every option and at the top (the recommended option),
    and, when a latency target is given, the recommendation that meets it."""
    workload = workload_from_request(request, scenario.context)
    measured = list(request.measured) if request.measured is not None else load_measurements()
    estimates = [option_performance(scenario, ev, workload, measured) for ev in evaluations]
    options: list[CardOption] = [
        _with_estimate(ev.option, est, single_user_rate(scenario, ev, workload, est, measured))
        for ev, est in zip(evaluations, estimates, strict=True)
    ]
    update: dict[str, object] = {"options": options}
    recommended_id = result.recommended
    ids = [o.card_class or o.card for o in options]
    lang = scenario.lang
    target = workload.target
    has_target = target is not None and (target.ttft_ms is not None or target.tpot_ms is not None)
    if has_target or workload.rate is not None:
        meeting = [
            i for i, (o, est) in enumerate(zip(options, estimates, strict=True)) if o.fits and acceptable(est)
        ]
        current = ids.index(recommended_id) if recommended_id in ids else None
        if meeting and (current is None or current not in meeting):
            pick = meeting[0]
            recommended_id = ids[pick]
            est = estimates[pick]
            assert est is not None
            update["recommended"] = recommended_id
            key = "perf_pick" if target is not None and has_target else "perf_pick_rate"
            update["recommendation"] = " ".join(
                (
                    perf_text(
                        key,
                        lang,
                        label=options[pick].label,
                        target=target_text(target, lang) if target else "",
                    ),
                    performance_line(est, options[pick].label, lang),
                )
            )
        elif not meeting:
            for_load = _target_suggestions(scenario, evaluations, options, workload, measured)
            missed = (
                [perf_text("perf_none_meets", lang, target=target_text(target, lang))]
                if target is not None and has_target and for_load
                else []
            )
            update["suggestions"] = [*result.suggestions, *missed, *for_load]
            update["performance_suggestions"] = for_load
    if result.alternatives:
        alternatives = _alternatives_with_performance(scenario, result.alternatives, workload, measured)
        update["alternatives"] = alternatives
        if not any(o.fits for o in options) and (has_target or workload.rate is not None):
            update["suggestions"] = [
                *result.suggestions,
                *(
                    perf_text("perf_alternative", lang, line=performance_line(o.performance, o.label, lang))
                    for o in alternatives
                    if o.performance is not None and acceptable(o.performance)
                ),
            ]
    if recommended_id in ids:
        update["performance"] = estimates[ids.index(recommended_id)]
    elif estimates and result.recommended is None:
        update["performance"] = None
    return result.model_copy(update=update)


def _target_suggestions(
    scenario: Scenario,
    evaluations: list[Evaluation],
    options: list[CardOption],
    workload: Workload,
    measured: list[Measurement],
) -> list[str]:
    lang = scenario.lang
    fitting = [i for i, o in enumerate(options) if o.fits]
    if not fitting:
        return []  # the memory suggestions come first
    lines = []
    index = fitting[0]
    ev = evaluations[index]

    first = options[index].performance
    if first is not None and first.saturated and workload.rate is not None:
        lines.append(
            perf_text(
                "perf_saturated",
                lang,
                rate=number(workload.rate, lang, 2),
                needed=integer(round(workload.rate * _latency_s(first)), lang),
                held=integer(held_sequences(ev, workload, scenario), lang),
            )
        )
    replicas = _replicas(scenario, ev, workload, measured) if workload.users > 1 or workload.rate else None
    if replicas:
        count, est = replicas
        lines.append(
            perf_text(
                "perf_replicas",
                lang,
                count=count,
                label=options[index].label,
                ttft=integer(round(est.ttft_ms.best), lang),
                tps=number(est.output_tok_s_per_user.best, lang, 0),
            )
        )
        return lines
    card, _ = option_card(ev)
    bigger = _bigger(scenario, card, workload, measured)

    for card_id, count, est in bigger:
        key = "perf_more_gpus" if card_id == card else "perf_faster_card"
        lines.append(
            perf_text(
                key,
                lang,
                count=count,
                card=card_facts(card_id).card.name,
                ttft=integer(round(est.ttft_ms.best), lang),
                tps=number(est.output_tok_s_per_user.best, lang, 0),
            )
        )
    if not bigger:
        lines.append(perf_text("perf_out_of_reach", lang))
    return lines


def recommended_curve(
    request: SizingRequest, result: SizingResult
) -> tuple[str, list[PerformanceEstimate]] | None:
    """The recommended option's label and its estimate at 1, 2, 4, ... users up to what its memory
    holds (the calculator panel's speed chart); None without a recommendation or bandwidth data."""

    if result.recommended is None:
        return None
    scenario = build_scenario(request)
    for candidate in candidates(request.gpu, request.lang):
        if (candidate.card_class or candidate.card) != result.recommended:
            continue
        evaluation = evaluate(scenario, candidate)
        card, gpus = option_card(evaluation)
        workload = workload_from_request(request, scenario.context)
        points = performance_curve(scenario, card, gpus, workload, evaluation.option.max_concurrent_sequences)
        return (evaluation.option.label, points) if points else None
    return None
