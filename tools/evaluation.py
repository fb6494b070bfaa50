"""The verdict on each card option: the candidates compared and one Evaluation per candidate.

A card class is judged on its most constrained member card; one requested card × N (more than
NODE_GPUS of them: nodes in pipeline parallel) is one candidate.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from tools.cards import card_classes, card_facts, parse_gpu_spec
from tools.engines import (
    Estimate,
    Hardware,
    decode_tokens_per_s,
    estimate_llamacpp,
    estimate_transformers,
    estimate_vllm,
)
from tools.i18n import GB, Language
from tools.scenario import Scenario
from tools.schemas import Card, CardOption
from tools.texts import text

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
    w = scenario.weights.bytes + extras.weights_bytes
    extra_kv = extras.kv_archs(arch)
    if scenario.engine == "vllm":
        return estimate_vllm(
            arch,
            w,
            hw,
            scenario.kv_dtype,
            scenario.context,
            scenario.users,
            scenario.utilization,
            extra_kv=extra_kv,
        )
    if scenario.engine in ("llamacpp", "ollama"):
        return estimate_llamacpp(
            arch,
            w,
            scenario.embedding_bytes,
            hw,
            scenario.kv_dtype,
            scenario.context,
            scenario.users,
            scenario.engine,
            extra_kv=extra_kv,
        )
    return estimate_transformers(
        arch, w, hw, scenario.kv_dtype, scenario.context, scenario.users, extra_kv=extra_kv
    )


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
        required_usable_gb=round(required_usable_bytes(scenario, worst) / GB, 2),
    )
    return Evaluation(candidate, worst, option)


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
    "estimate",
    "evaluate",
    "required_usable_bytes",
    "total_bytes",
]
