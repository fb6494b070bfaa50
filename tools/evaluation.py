"""The verdict on each card option: the candidates compared and one Evaluation per candidate.

A card class is judged on its most constrained member card; one requested card × N (more than
NODE_GPUS of them: nodes in pipeline parallel) is one candidate.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from tools.cards import card_classes, card_facts, parse_gpu_spec
from tools.engines import (
    CUDA_CONTEXT_BYTES,
    VLLM_CUDA_GRAPH_BYTES,
    Estimate,
    Hardware,
    ServedModel,
    decode_tokens_per_s,
    estimate_llamacpp,
    estimate_transformers,
    estimate_vllm,
)
from tools.i18n import GB, Language, gb, integer
from tools.scenario import Scenario
from tools.schemas import Card, CardOption, ReplicaPlan
from tools.texts import counted, text

NODE_GPUS = 8  # GPUs in one server (HGX/DGX boards, MI300X platforms)


class Candidate(NamedTuple):
    """One hardware option: a card class (its member cards) or one requested card × N."""

    card_class: str | None
    card: str | None
    label: str
    members: list[Hardware]
    serves: dict[str, str]
    catch: dict[str, str]
    per_card: dict[str, str]  # a class's card in words, per language (labels of ×N suggestions)


class Evaluation(NamedTuple):
    candidate: Candidate
    estimate: Estimate  # on the most constrained member card
    option: CardOption


def candidates(gpu: str | None, lang: Language = "en") -> list[Candidate]:
    """The options to compare: every card class, one class by id ("80gb"), or one card (× N)."""
    classes = []
    for cls in card_classes():
        members = []
        for card_id in cls.cards:
            facts = card_facts(card_id)
            members.append(Hardware(cls.gpus, facts.usable_bytes, facts.card.bandwidth_gbps, card_id))
        label = cls.labels.get(lang, cls.label)
        classes.append(Candidate(cls.id, None, label, members, cls.serves, cls.catch, cls.per_card))
    wanted = (gpu or "").strip().lower().replace(" ", "")
    if wanted:
        chosen = [c for c in classes if c.card_class == wanted]
        if chosen:
            return chosen
        card, count = parse_gpu_spec(gpu or "")
        facts = card_facts(card.id)
        # More than one node of 8: vLLM runs TP inside each node and pipeline parallel across them.
        nodes = count // NODE_GPUS if count > NODE_GPUS and count % NODE_GPUS == 0 else 1
        hw = Hardware(
            count, facts.usable_bytes, card.bandwidth_gbps, card.id, nodes, accelerator=accelerator(card)
        )
        label = card.name if count == 1 else f"{count}× {card.name}"
        if nodes > 1:
            label = text("multi_node", lang, nodes=nodes, gpus=NODE_GPUS, card=card.name)
        return [Candidate(None, card.id if count == 1 else f"{card.id}:{count}", label, [hw], {}, {}, {})]
    return classes


def accelerator(card: Card) -> str:
    return {"apple": "metal", "cpu": "cpu"}.get(card.kind, "cuda")


def estimate(scenario: Scenario, hw: Hardware) -> Estimate:
    arch, extras = scenario.model.arch, scenario.extras
    served = ServedModel(
        arch,
        scenario.weights.bytes + extras.weights_bytes,
        scenario.kv_dtype,
        scenario.context,
        scenario.users,
        extras.kv_archs(arch),
    )
    if scenario.engine == "vllm":
        return estimate_vllm(served, hw, scenario.utilization)
    if scenario.engine in ("llamacpp", "ollama"):
        return estimate_llamacpp(served, scenario.embedding_bytes, hw, scenario.engine)
    return estimate_transformers(served, hw)


def _decode_read_bytes(scenario: Scenario, est: Estimate) -> int:
    info = scenario.model.info
    w = scenario.weights.bytes
    if info.active_params < info.params:
        read = w * info.active_params / info.params
    else:
        read = w - (0 if scenario.model.arch.tie_embeddings else scenario.embedding_bytes)
    return int(read + est.kv_bytes_per_sequence)


def evaluate(scenario: Scenario, candidate: Candidate) -> Evaluation:
    """The verdict on one option; a class is judged on its most constrained member card."""
    estimates = [(estimate(scenario, hw), hw) for hw in candidate.members]
    worst, worst_hw = min(
        estimates, key=lambda pair: (pair[0].headroom_bytes, pair[0].max_concurrent_sequences)
    )
    slowest = min(candidate.members, key=lambda hw: hw.bandwidth_gbps or math.inf)
    decode = decode_tokens_per_s(_decode_read_bytes(scenario, worst), slowest, scenario.engine)
    usable = min(hw.usable_bytes_per_gpu for hw in candidate.members) * worst_hw.gpus
    lang = scenario.lang
    failing = next(((est, hw) for est, hw in estimates if not est.fits), None)
    if failing is not None and not worst.fits:
        failing = (worst, worst_hw)
    code, reason = why_not(scenario, *failing) if failing else (None, None)
    replicas = replica_plan(scenario, failing[1]) if failing and code == "tp_heads" else None
    option = CardOption(
        card_class=candidate.card_class,
        card=candidate.card,
        label=candidate.label,
        gpus=worst_hw.gpus,
        usable_gb=round(usable / GB, 2),
        fits=all(est.fits for est, _ in estimates),
        headroom_gb=round(worst.headroom_bytes / GB, 2),
        max_concurrent_sequences=min(est.max_concurrent_sequences for est, _ in estimates),
        decode_tokens_per_s=decode if worst.fits or worst.max_concurrent_sequences > 0 else None,
        serves=candidate.serves.get(lang, ""),
        catch=candidate.catch.get(lang, ""),
        reason=reason,
        reason_code=code,
        replicas=replicas,
        required_usable_gb=round(required_usable_bytes(scenario, worst) / GB, 2),
        total_gb=round(total_bytes(scenario, worst) / GB, 2),
    )
    return Evaluation(candidate, worst, option)


def _utilization_cap(usable_per_gpu: int, outside: int) -> float:
    """The highest --gpu-memory-utilization (two decimals) whose slack holds `outside` bytes."""
    return math.floor((1 - outside / usable_per_gpu) * 100) / 100


def replica_plan(scenario: Scenario, hw: Hardware) -> ReplicaPlan | None:
    """vLLM refuses a tensor-parallel degree that does not divide the attention heads; the same
    GPUs still serve the model as independent copies (vLLM's data parallel, or one server per copy
    behind a load balancer), each at a degree that does, sharing the users. The plan that leaves
    the fewest GPUs idle, and among those the most copies (each copy's own batch, no all-reduce),
    whose copy holds its share; None when no degree in one node does."""
    if scenario.engine != "vllm" or hw.nodes > 1:
        return None
    heads = scenario.model.arch.num_heads
    for idle, tp in sorted((hw.gpus % tp, tp) for tp in range(1, hw.gpus) if heads % tp == 0):
        copies = hw.gpus // tp
        share = -(-scenario.users // copies)
        est = estimate(scenario._replace(users=share), hw._replace(gpus=tp))
        if est.fits:
            return ReplicaPlan(
                tensor_parallel=tp,
                replicas=copies,
                users_per_replica=share,
                idle_gpus=idle,
                heads=heads,
                max_concurrent_sequences=est.max_concurrent_sequences,
                headroom_gb=round(est.headroom_bytes / GB, 2),
            )
    return None


def copy_estimate(scenario: Scenario, hw: Hardware, plan: ReplicaPlan) -> tuple[Scenario, Estimate]:
    """One copy of a replica plan: its share of the users on its own GPUs, estimated."""
    one = scenario._replace(users=plan.users_per_replica)
    return one, estimate(one, hw._replace(gpus=plan.tensor_parallel))


def replica_text(scenario: Scenario, plan: ReplicaPlan, gpus: int) -> str:
    """The plan in one clause: copies, degree, the vLLM flags, each copy's share and room."""
    lang = scenario.lang
    values = {
        "copies": plan.replicas,
        "tp": plan.tensor_parallel,
        "gpus": gpus,
        "share": integer(plan.users_per_replica, lang),
        "users": integer(scenario.users, lang),
        "seqs": counted(plan.max_concurrent_sequences, "concurrent_sequence", lang),
    }
    key = "replicas_copies" if plan.replicas > 1 else "replicas_single"
    sentence = text(key, lang, **values)
    if plan.idle_gpus:
        sentence += text("replicas_idle", lang, idle=plan.idle_gpus)
    return sentence


def why_not(scenario: Scenario, est: Estimate, hw: Hardware) -> tuple[str, str]:
    """Why this estimate does not fit, as (code, sentence), with the fix worked out where one exists."""
    lang = scenario.lang
    short = gb(max(0, -est.headroom_bytes), lang)
    tp = est.gpus // est.pipeline
    heads = scenario.model.arch.num_heads
    if est.engine == "vllm" and heads % tp:
        valid = ", ".join(str(n) for n in range(1, 2 * NODE_GPUS + 1) if heads % n == 0)
        why = text("why_tp_heads", lang, heads=heads, tp=tp, valid=valid)
        plan = replica_plan(scenario, hw)
        return "tp_heads", f"{why}; {replica_text(scenario, plan, hw.gpus)}" if plan else why
    if est.engine == "vllm":
        usable = hw.usable_bytes_per_gpu
        outside = CUDA_CONTEXT_BYTES + VLLM_CUDA_GRAPH_BYTES
        util = f"{scenario.utilization:.2f}"
        cap = _utilization_cap(usable, outside)
        if not est.slack_ok:
            why = text(
                "why_slack",
                lang,
                slack=gb(usable - est.budget_bytes // est.gpus, lang),
                util=util,
                need=gb(outside, lang),
            )
            lowered = estimate(scenario._replace(utilization=cap), hw) if cap >= 0.05 else None
            if lowered is not None and lowered.fits:
                seqs = counted(lowered.max_concurrent_sequences, "concurrent_sequence", lang)
                return "vllm_slack", f"{why}; {text('fix_lower_util', lang, util=f'{cap:.2f}', seqs=seqs)}"
            eager = _eager_fit(scenario, est, hw)
            if eager is not None:
                return "vllm_slack", f"{why}; {eager}"
            if lowered is not None:
                lack = gb(max(0, -lowered.headroom_bytes), lang)
                return "vllm_slack", f"{why}; {text('fix_none_util', lang, util=f'{cap:.2f}', short=lack)}"
            return "vllm_slack", why
        if cap > scenario.utilization:
            raised = estimate(scenario._replace(utilization=cap), hw)
            if raised.fits:
                seqs = counted(raised.max_concurrent_sequences, "concurrent_sequence", lang)
                return "utilization", text(
                    "why_raise_util", lang, short=short, util=util, new=f"{cap:.2f}", seqs=seqs
                )
    if est.kv_room_bytes <= 0:
        return "memory", text("why_weights", lang, short=short)
    if est.max_concurrent_sequences > 0:
        seqs = integer(est.max_concurrent_sequences, lang)
        return "sequences", text(
            "why_sequences", lang, seqs=seqs, users=integer(scenario.users, lang), short=short
        )
    return "memory", text("why_memory", lang, short=short)


def _eager_fit(scenario: Scenario, est: Estimate, hw: Hardware) -> str | None:
    """--enforce-eager drops the CUDA graphs from the slack: the fix, when that makes it fit."""
    cap = _utilization_cap(hw.usable_bytes_per_gpu, CUDA_CONTEXT_BYTES)
    if cap < 0.05:
        return None
    inside = sum(b for key, b in est.overhead_parts if key not in ("cuda_context", "cuda_graphs"))
    pool = int(cap * hw.usable_bytes_per_gpu) - est.weights_bytes // est.gpus - inside
    seq = est.kv_bytes_per_sequence // est.gpus
    if seq <= 0 or pool < seq * scenario.users:
        return None
    seqs = counted(pool // seq, "concurrent_sequence", scenario.lang)
    graphs = gb(VLLM_CUDA_GRAPH_BYTES, scenario.lang)
    return text("fix_eager", scenario.lang, graphs=graphs, util=f"{cap:.2f}", seqs=seqs)


def total_bytes(scenario: Scenario, est: Estimate) -> int:
    """Weights (with the serving extras) + KV for every sequence + the engine's overhead."""
    kv = est.kv_bytes_per_sequence * scenario.users
    return scenario.weights.bytes + scenario.extras.weights_bytes + kv + est.overhead_bytes


def required_usable_bytes(scenario: Scenario, est: Estimate) -> int:
    """Card memory (all GPUs) this request needs: for vLLM, its share must hold everything inside
    the budget and the slack must hold the CUDA context and graphs."""
    needed = est.weights_bytes + est.overhead_bytes + est.kv_bytes_per_sequence * scenario.users
    if scenario.engine != "vllm":
        return needed
    outside = sum(b for key, b in est.overhead_parts if key in ("cuda_context", "cuda_graphs")) * est.gpus
    inside = needed - outside
    return int(max(inside / scenario.utilization, needed))


__all__ = [
    "NODE_GPUS",
    "Candidate",
    "Evaluation",
    "accelerator",
    "candidates",
    "copy_estimate",
    "estimate",
    "evaluate",
    "replica_plan",
    "replica_text",
    "required_usable_bytes",
    "total_bytes",
    "why_not",
]
