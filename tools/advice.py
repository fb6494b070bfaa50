"""The recommendation sentence and the suggestions that would make a request fit.

Every suggestion is itself computed with the calculator (shorter context, a cheaper KV cache,
a smaller quantization, tensor parallelism, a smaller model at higher precision), so none is a
guess.
"""

from __future__ import annotations

from typing import NamedTuple

from tools.cards import MIB, apple_raised_limit_mib, card_facts, list_cards
from tools.catalog import ResolvedModel, catalog_architecture, list_models
from tools.engines import ENGINE_LABELS, Hardware, vllm_activation_bytes, vllm_scheduler_defaults
from tools.errors import SizingError
from tools.evaluation import NODE_GPUS, Candidate, Evaluation, accelerator, candidates, evaluate, total_bytes
from tools.hub import HubLookup
from tools.i18n import GB, Language, gb, integer, number
from tools.kv_cache import KV_BLOCKS
from tools.offload import DEFAULT_RAM_CARD, plan_offload
from tools.precision import nominal_bits, weights
from tools.scenario import Scenario, build_scenario, with_precision
from tools.schemas import CardOption, SizingRequest, SizingResult
from tools.texts import counted, text

# The weight formats offered as cheaper steps, best quality first, per engine family: vLLM and
# transformers load FP8 and 4-bit AWQ checkpoints; llama.cpp and Ollama GGUF quantizations.
_VLLM_LADDER = ("fp32", "bf16", "fp8", "awq")
_GGUF_LADDER = ("fp32", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")
_CHEAPER_KV = {"vllm": "fp8", "llamacpp": "q8_0", "ollama": "q8_0"}
_MIN_CONTEXT = 512


def below_16_bit(scenario: Scenario) -> bool:
    return (
        nominal_bits(scenario.precision) < 16
        or KV_BLOCKS[scenario.kv_dtype][1] / KV_BLOCKS[scenario.kv_dtype][0] < 2
    )


def caveat(scenario: Scenario) -> str | None:
    lang = scenario.lang
    parts = []
    # The format a model is published in is the model itself, not a quantization of it.
    if nominal_bits(scenario.precision) < 16 and not scenario.released:
        parts.append(text("caveat_weights", lang, precision=scenario.precision))
    if KV_BLOCKS[scenario.kv_dtype][1] / KV_BLOCKS[scenario.kv_dtype][0] < 2:
        parts.append(text("caveat_kv", lang, kv=scenario.kv_dtype))
    if not parts:
        return None
    return text("caveat", lang, what=text("caveat_and", lang).join(parts))


def recommendation(
    scenario: Scenario, evaluations: list[Evaluation], chosen: Evaluation | None, total: float
) -> str:
    lang = scenario.lang
    common = {
        "model": scenario.model.info.name,
        "precision": scenario.precision,
        "context": integer(scenario.context, lang),
        "users": integer(scenario.users, lang),
        "engine": ENGINE_LABELS[scenario.engine],
    }
    if chosen is not None:
        return text(
            "rec_fits",
            lang,
            label=chosen.option.label,
            headroom=number(chosen.option.headroom_gb, lang),
            seqs=counted(chosen.option.max_concurrent_sequences, "concurrent_sequence", lang),
            **common,
        )
    labels = ", ".join(ev.option.label for ev in evaluations)
    if len(evaluations) == 1 and evaluations[0].option.replicas is not None:
        # The GPUs serve it, as copies: say so rather than "does not fit".
        return text("rec_replicas", lang, labels=labels, reason=evaluations[0].option.reason, **common)
    if len(evaluations) == 1 and evaluations[0].option.reason_code not in (None, "memory"):
        # Memory alone is not what stops it: the total would contradict the usable figure.
        return text("rec_none_why", lang, labels=labels, reason=evaluations[0].option.reason, **common)
    return text("rec_none", lang, labels=labels, total=gb(total, lang), **common)


def _verdict(scenario: Scenario, ev: Evaluation) -> str:
    if ev.option.fits:
        seqs = counted(ev.option.max_concurrent_sequences, "concurrent_sequence", scenario.lang)
        return text("verdict_fits", scenario.lang, seqs=seqs)
    if ev.option.reason_code not in (None, "memory"):
        return text("verdict_no_why", scenario.lang, reason=ev.option.reason)
    return text("verdict_no", scenario.lang)


def _longest_context(scenario: Scenario, target: Candidate) -> int | None:
    low, high = _MIN_CONTEXT, scenario.context - 1
    if high < low or not evaluate(scenario._replace(context=low), target).option.fits:
        return None
    while low < high:
        mid = (low + high + 1) // 2
        if evaluate(scenario._replace(context=mid), target).option.fits:
            low = mid
        else:
            high = mid - 1
    return low - low % 256 if low >= 1024 else low


def cheaper_precisions(engine: str, precision: str) -> list[str]:
    """The formats of the engine's ladder with fewer bits per weight than `precision`, best first."""
    ladder = _GGUF_LADDER if engine in ("llamacpp", "ollama") else _VLLM_LADDER
    return [step for step in ladder if nominal_bits(step) < nominal_bits(precision)]


def quantized_fit(scenario: Scenario, target: Candidate) -> tuple[Scenario, Evaluation] | None:
    """The smaller alternative: the best-quality cheaper precision at which the request fits on
    `target`, computed; None when no step of the ladder makes it fit."""
    for precision in cheaper_precisions(scenario.engine, scenario.precision):
        alt = with_precision(scenario, precision)
        if alt.weights.bytes >= scenario.weights.bytes:
            continue
        ev = evaluate(alt, target)
        if ev.option.fits:
            return alt, ev
    return None


class QuantizedFit(NamedTuple):
    """A request re-sized at a cheaper precision, in the result's units: its weights, the total
    calculate_vram reports for it at that precision, and the verdict on the option it fits."""

    precision: str
    weights_gb: float
    total_gb: float
    option: CardOption


def quantized_fit_on(request: SizingRequest, gpu: str, hub: HubLookup | None = None) -> QuantizedFit | None:
    """`quantized_fit` for a request on one card class or card ("48gb", "l40s:2"); raises
    SizingError as calculate_vram does."""
    scenario = build_scenario(request, hub)
    found = quantized_fit(scenario, candidates(gpu, request.lang)[0])
    if found is None:
        return None
    alt, ev = found
    compared = [evaluate(alt, c) for c in candidates(request.gpu, request.lang)]
    reference = next((other for other in compared if other.option.fits), compared[-1])
    total = total_bytes(alt, reference.estimate)
    return QuantizedFit(alt.precision, round(alt.weights.bytes / GB, 2), round(total / GB, 2), ev.option)


class SmallerAlternative(NamedTuple):
    """The card class just below the recommended option, and the best-quality cheaper format at
    which the request fits there (None when no step of the engine's ladder does)."""

    target: CardOption
    fit: QuantizedFit | None


def smaller_alternative(
    result: SizingResult, recommended: CardOption | None, lang: Language | None = None
) -> SmallerAlternative | None:
    """The smaller machine to offer: the largest compared card class below `recommended` (below
    every option when none fits) that does not hold the request as asked, with the cheaper
    format that would fit it; None when no such class was compared."""
    ceiling = recommended.usable_gb if recommended is not None else float("inf")
    smaller = [o for o in result.options if not o.fits and o.usable_gb < ceiling and o.card_class]
    if not smaller:
        return None
    target = max(smaller, key=lambda option: option.usable_gb)
    try:
        fit = quantized_fit_on(result.request(lang=lang), target.card_class or "")
    except SizingError:
        fit = None
    return SmallerAlternative(target, fit)


def _doubled(target: Candidate, lang: Language) -> Candidate:
    members = [hw._replace(gpus=hw.gpus * 2) for hw in target.members]
    gpus = members[0].gpus
    if target.card is not None:
        card_id = target.card.split(":")[0]
        label = f"{gpus}× {target.label.split('× ')[-1]}"
        return Candidate(None, f"{card_id}:{gpus}", label, members, {}, {}, {})
    per_card = target.per_card.get(lang)
    label = text("multi_card", lang, gpus=gpus, per_card=per_card) if per_card else target.label
    return Candidate(None, None, label, members, {}, {}, {})


def _larger_card(scenario: Scenario, target: Candidate) -> Evaluation | None:
    """As many GPUs as the target, of the smallest card with more memory per GPU that holds it."""
    gpus = target.members[0].gpus
    biggest = max(hw.usable_bytes_per_gpu for hw in target.members)
    group = target.members[0].accelerator
    larger = sorted(
        (
            facts
            for facts in map(card_facts, (card.id for card in list_cards()))
            if facts.usable_bytes > biggest
            and accelerator(facts.card) == group
            # GPUs: the lineup we propose; a Mac or a CPU box: the next size of the same kind.
            and (facts.card.suggested or group != "cuda")
        ),
        key=lambda facts: facts.usable_bytes,
    )
    if group != "cuda":
        gpus = 1  # one Mac, one machine's RAM
    for facts in larger:
        card = facts.card
        label = card.name if gpus == 1 else f"{gpus}× {card.name}"
        hw = Hardware(gpus, facts.usable_bytes, card.bandwidth_gbps, card.id, accelerator=group)
        spec = card.id if gpus == 1 else f"{card.id}:{gpus}"
        ev = evaluate(scenario, Candidate(None, spec, label, [hw], {}, {}, {}))
        if ev.option.fits:
            return ev
    return None


def alternatives(scenario: Scenario, target: Evaluation) -> list[Evaluation]:
    """Hardware beyond the target that holds the request unchanged, the least memory first: twice
    the GPUs, or as many larger cards (two H200 hold less than four 80GB cards, one 80GB card less
    than two of 48GB); when neither does, the smallest count of each suitable card within one node
    of 8, then (vLLM) several nodes in pipeline parallel. Empty only when even that falls short."""
    cuda = target.candidate.members[0].accelerator == "cuda"
    found = [
        ev
        for ev in (
            evaluate(scenario, _doubled(target.candidate, scenario.lang)) if cuda else None,
            _larger_card(scenario, target.candidate),
        )
        if ev is not None and ev.option.fits
    ]
    found.sort(key=lambda ev: (ev.option.usable_gb, ev.estimate.gpus))
    return found or (escalation(scenario, target.candidate) if cuda else [])


# Beyond one node of NODE_GPUS, vLLM runs tensor parallel inside each node and pipeline
# parallel across nodes (--pipeline-parallel-size).
MAX_NODES = 8
_MAX_ESCALATIONS = 3


def _gpu_counts(scenario: Scenario) -> tuple[int, ...]:
    # vLLM's TP degree must divide the attention heads; powers of two are what deployments use.
    if scenario.engine == "vllm":
        return tuple(n for n in (1, 2, 4, 8) if scenario.model.arch.num_heads % n == 0)
    return tuple(range(1, NODE_GPUS + 1))


def _escalation_cards(target: Candidate) -> list[str]:
    """The target's own cards, then every data-centre card with more memory per GPU."""
    own = [hw.card_id for hw in target.members]
    smallest = min(hw.usable_bytes_per_gpu for hw in target.members)
    larger = [
        card.id
        for card in list_cards()
        if card.suggested and card.kind == "datacenter" and card_facts(card.id).usable_bytes > smallest
    ]
    return list(dict.fromkeys([*own, *larger]))


def _card_candidate(card_id: str, gpus: int, nodes: int, lang: Language) -> Candidate:
    facts = card_facts(card_id)
    card = facts.card
    hw = Hardware(gpus, facts.usable_bytes, card.bandwidth_gbps, card.id, nodes)
    if nodes > 1:
        label = text("multi_node", lang, nodes=nodes, gpus=gpus // nodes, card=card.name)
    else:
        label = card.name if gpus == 1 else f"{gpus}× {card.name}"
    return Candidate(None, card.id if gpus == 1 else f"{card.id}:{gpus}", label, [hw], {}, {}, {})


def escalation(scenario: Scenario, target: Candidate) -> list[Evaluation]:
    """For each suitable card, the fewest GPUs in one node that hold the request (cheapest total
    memory first); if no node does, the fewest nodes of 8 (vLLM pipeline parallel)."""
    cards = _escalation_cards(target)
    in_node: list[Evaluation] = []
    for card_id in cards:
        for gpus in _gpu_counts(scenario):
            ev = evaluate(scenario, _card_candidate(card_id, gpus, 1, scenario.lang))
            if ev.option.fits:
                in_node.append(ev)
                break
    if in_node:
        return sorted(in_node, key=lambda ev: ev.option.usable_gb)[:_MAX_ESCALATIONS]
    if scenario.engine != "vllm" or NODE_GPUS not in _gpu_counts(scenario):
        return []
    across: list[Evaluation] = []
    for card_id in cards:
        for nodes in range(2, MAX_NODES + 1):
            ev = evaluate(scenario, _card_candidate(card_id, nodes * NODE_GPUS, nodes, scenario.lang))
            if ev.option.fits:
                across.append(ev)
                break
    return sorted(across, key=lambda ev: ev.option.usable_gb)[:_MAX_ESCALATIONS]


def _tp_heads_line(scenario: Scenario, evaluations: list[Evaluation]) -> str | None:
    """vLLM refuses a TP degree that does not divide the attention heads: say which would."""
    if scenario.engine != "vllm":
        return None
    heads = scenario.model.arch.num_heads
    bad = sorted(
        {ev.estimate.gpus // ev.estimate.pipeline for ev in evaluations}
        - {n for n in range(1, heads + 1) if heads % n == 0}
    )
    if not bad:
        return None
    valid = [n for n in range(1, 2 * NODE_GPUS + 1) if heads % n == 0]
    return text(
        "sug_tp_heads",
        scenario.lang,
        heads=heads,
        tp=", ".join(map(str, bad)),
        valid=", ".join(map(str, valid)),
    )


def _smaller_model(scenario: Scenario, target: Candidate) -> tuple[ResolvedModel, Evaluation] | None:
    """The largest dense catalog model, smaller than this one, that fits at 16 bits on the target."""
    precision = "bf16" if scenario.engine != "ollama" else "fp16"
    best: tuple[ResolvedModel, Evaluation] | None = None
    for info in list_models():
        if info.architecture != "dense" or info.params >= scenario.model.info.params:
            continue
        if best and info.params <= best[0].info.params:
            continue
        arch = catalog_architecture(info.id)
        override = info.params if info.params != arch.total_params() else None
        candidate = with_precision(scenario._replace(model=ResolvedModel(info, arch, override)), precision)
        ev = evaluate(candidate, target)
        if ev.option.fits:
            best = (candidate.model, ev)
    return best


def _fit_suggestions(scenario: Scenario, target: Evaluation) -> list[str]:
    lang, out = scenario.lang, []

    def line(key: str, **values: object) -> str:  # each one says what it does on the target option
        return text(key, lang, label=target.option.label, **values)

    context = _longest_context(scenario, target.candidate)
    if context:
        out.append(line("sug_context", context=integer(context, lang), users=integer(scenario.users, lang)))
    cheaper_kv = _CHEAPER_KV.get(scenario.engine)
    if cheaper_kv and scenario.kv_dtype in ("bf16", "fp16"):
        alt = scenario._replace(kv_dtype=cheaper_kv)
        ev = evaluate(alt, target.candidate)
        kv_gb = gb(ev.estimate.kv_bytes_per_sequence * scenario.users, lang)
        old_gb = gb(target.estimate.kv_bytes_per_sequence * scenario.users, lang)
        out.append(line("sug_kv", kv=cheaper_kv, kv_gb=kv_gb, old_gb=old_gb, verdict=_verdict(alt, ev)))
    cheaper = cheaper_precisions(scenario.engine, scenario.precision)
    found = quantized_fit(scenario, target.candidate)
    if found is None and cheaper:
        # Nothing fits: the cheapest step, to say how far even it falls short.
        last = with_precision(scenario, cheaper[-1])
        found = (last, evaluate(last, target.candidate))
    if found is not None:
        alt, ev = found
        weights_gb = gb(alt.weights.bytes, lang)
        out.append(line("sug_quant", precision=alt.precision, gb=weights_gb, verdict=_verdict(alt, ev)))
    if target.candidate.members[0].accelerator == "cuda":
        out.append(_hardware_line("sug_tp", scenario, evaluate(scenario, _doubled(target.candidate, lang))))
    larger = _larger_card(scenario, target.candidate)
    if larger:
        out.append(_hardware_line("sug_larger_card", scenario, larger))
    return out


def _hardware_line(key: str, scenario: Scenario, ev: Evaluation) -> str:
    """Other hardware for the same request: its label, usable memory and verdict."""
    usable = number(ev.option.usable_gb, scenario.lang)
    return text(key, scenario.lang, label=ev.option.label, usable=usable, verdict=_verdict(scenario, ev))


def _smaller_model_line(scenario: Scenario, target: Evaluation) -> str | None:
    found = _smaller_model(scenario, target.candidate)
    if not found:
        return None
    model, ev = found
    precision = "bf16" if scenario.engine != "ollama" else "fp16"
    w = weights(model.arch, precision, model.params_override)
    return text(
        "sug_smaller_model",
        scenario.lang,
        model=model.info.name,
        precision=precision,
        gb=gb(w.bytes, scenario.lang),
        label=target.option.label,
        seqs=counted(ev.option.max_concurrent_sequences, "concurrent_sequence", scenario.lang),
    )


def _max_num_seqs_line(scenario: Scenario, target: Evaluation) -> str | None:
    hw: Hardware = target.candidate.members[0]
    default_seqs, batched = vllm_scheduler_defaults(hw.usable_bytes_per_gpu, hw.card_id)
    if scenario.engine != "vllm" or scenario.users >= default_seqs:
        return None
    arch = scenario.model.arch
    now = vllm_activation_bytes(arch, default_seqs, batched, hw.gpus)
    lean = vllm_activation_bytes(arch, scenario.users, batched, hw.gpus)
    if now - lean < 0.5 * GB:
        return None
    return text(
        "sug_max_num_seqs",
        scenario.lang,
        seqs=default_seqs,
        gb=gb(now, scenario.lang),
        users=scenario.users,
    )


def _apple_wired_line(scenario: Scenario, target: Evaluation) -> str | None:
    """On a Mac: what raising the GPU's wired-memory limit would do, computed."""
    hw = target.candidate.members[0]
    if hw.accelerator != "metal":
        return None
    card = card_facts(hw.card_id).card
    raised_mib = apple_raised_limit_mib(card.memory_mib)
    if raised_mib * MIB <= hw.usable_bytes_per_gpu:
        return None
    raised = target.candidate._replace(members=[hw._replace(usable_bytes_per_gpu=raised_mib * MIB)])
    ev = evaluate(scenario, raised)
    lang = scenario.lang
    return text(
        "sug_apple_wired",
        lang,
        usable=gb(hw.usable_bytes_per_gpu, lang),
        total=gb(card.memory_mib * MIB, lang),
        limit=raised_mib,
        raised=gb(raised_mib * MIB, lang),
        keep=gb((card.memory_mib - raised_mib) * MIB, lang),
        verdict=_verdict(scenario, ev),
    )


def _offload_line(scenario: Scenario, target: Evaluation) -> str | None:
    """llama.cpp on a GPU that is short: the least partial offload to RAM and its speed cost."""
    hw = target.candidate.members[0]
    if scenario.engine not in ("llamacpp", "ollama") or hw.accelerator != "cuda":
        return None
    model = scenario.model
    scale = (model.params_override or model.arch.total_params()) / model.arch.total_params()
    ram = card_facts(DEFAULT_RAM_CARD).card
    est = target.estimate
    plan = plan_offload(
        model.arch,
        scenario.precision,
        scale,
        -est.headroom_bytes,
        est.weights_bytes,
        hw.bandwidth_gbps,
        ram.bandwidth_gbps,
    )
    if plan is None:
        return None
    lang = scenario.lang
    return text(
        "sug_offload_moe" if plan.flag == "--n-cpu-moe" else "sug_offload_layers",
        lang,
        value=plan.value,
        ram=gb(plan.ram_bytes, lang),
        label=target.option.label,
        rate=number(plan.decode_tokens_per_s or 0, lang, 0),
        ram_name=ram.marketing,
        ram_bw=number(ram.bandwidth_gbps or 0, lang, 1),
    )


def suggestions(scenario: Scenario, evaluations: list[Evaluation], gpu: str | None) -> list[str]:
    """What would make it fit (when nothing does), or what is worth knowing when it does."""
    lang, out = scenario.lang, []
    limit = scenario.model.arch.max_position_embeddings
    if limit and scenario.context > limit:
        out.append(
            text(
                "sug_context_limit", lang, context=integer(scenario.context, lang), limit=integer(limit, lang)
            )
        )
    tp_line = _tp_heads_line(scenario, evaluations)
    if tp_line:
        out.append(tp_line)
    fitting = [ev for ev in evaluations if ev.option.fits]
    target = fitting[0] if fitting else evaluations[-1]
    if not fitting and target.option.replicas is not None:
        # Copies at a valid degree serve it (the reason says how); a cheaper cache, a smaller
        # format or more GPUs would meet the same split, and the rest is measured on the split.
        return out
    if not fitting:
        out.extend(_fit_suggestions(scenario, target))
        offload = _offload_line(scenario, target)
        if offload:
            out.append(offload)
    if not fitting or target.option.max_concurrent_sequences < 4 * scenario.users:
        wired = _apple_wired_line(scenario, target)
        if wired:
            out.append(wired)
    line = _max_num_seqs_line(scenario, target)
    if line and (not fitting or target.option.max_concurrent_sequences < 4 * scenario.users):
        out.append(line)
    if not fitting or scenario.weights.bits_per_weight < 12:
        smaller = _smaller_model_line(scenario, target)
        if smaller:
            out.append(smaller)
    return out


__all__ = [
    "QuantizedFit",
    "SmallerAlternative",
    "alternatives",
    "below_16_bit",
    "caveat",
    "cheaper_precisions",
    "escalation",
    "quantized_fit",
    "quantized_fit_on",
    "recommendation",
    "smaller_alternative",
    "suggestions",
    "with_precision",
]
