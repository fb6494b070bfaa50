"""calculate_vram: one SizingRequest in, one SizingResult out, with the arithmetic shown.

The flow: resolve the model to an architecture; weights at the precision (tools/precision.py);
the KV layout (tools/kv_cache.py); the engine profile on each card option (tools/engines.py);
then the verdicts, the recommendation, the caveat and the suggestions (tools/advice.py).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from tools.cards import card_classes, card_facts, parse_gpu_spec
from tools.catalog import ResolvedModel, model_from_config, reference_model, resolve
from tools.engines import (
    Estimate,
    Hardware,
    check_engine,
    decode_tokens_per_s,
    estimate_llamacpp,
    estimate_transformers,
    estimate_vllm,
    llamacpp_sliding_cells,
)
from tools.errors import InvalidInputError, UnknownModelError
from tools.kv_cache import KV_BLOCKS, check_kv_dtype, kv_layout
from tools.precision import (
    GGUF_PRECISIONS,
    PRECISIONS,
    Weights,
    check_precision,
    nominal_bits,
    token_embedding_bytes,
    weights,
)
from tools.schemas import CardOption, Language, SizingRequest, SizingResult
from tools.texts import counted, integer, number, text

GB = 1e9
MAX_CONTEXT = 10_000_000
MAX_USERS = 1_000_000

ENGINE_LABELS = {"vllm": "vLLM", "llamacpp": "llama.cpp", "ollama": "Ollama", "transformers": "transformers"}
# Which weight formats and KV types each engine can load.
_ENGINE_PRECISIONS = {
    "vllm": PRECISIONS,
    "llamacpp": ("fp32", "bf16", "fp16", "mxfp4", *GGUF_PRECISIONS),
    "ollama": ("fp32", "bf16", "fp16", "mxfp4", *GGUF_PRECISIONS),
    "transformers": tuple(p for p in PRECISIONS if p not in GGUF_PRECISIONS),
}


def default_engine(precision: str) -> str:
    """The engine a visitor most likely means when they name a format but no engine.

    GGUF files (Q4_K_M, Q8_0, ...) are what llama.cpp and Ollama load; everything else is
    sized for vLLM, the default serving engine.
    """
    return "llamacpp" if precision.strip().lower() in GGUF_PRECISIONS else "vllm"


_ENGINE_KV = {
    "vllm": ("bf16", "fp16", "fp8"),
    "llamacpp": ("bf16", "fp16", "q8_0", "q4_0"),
    "ollama": ("fp16", "q8_0", "q4_0"),
    "transformers": ("bf16", "fp16"),
}


class Candidate(NamedTuple):
    """One hardware option: a card class (its member cards) or one requested card × N."""

    card_class: str | None
    card: str | None
    label: str
    members: list[Hardware]
    serves: dict[str, str]
    catch: dict[str, str]
    per_card: dict[str, str]  # a class's card in words, per language (labels of ×N suggestions)


class Scenario(NamedTuple):
    """Everything about the request that does not depend on the card."""

    model: ResolvedModel
    precision: str
    kv_dtype: str
    engine: str
    context: int
    users: int
    utilization: float
    weights: Weights
    embedding_bytes: int
    lang: Language


class Evaluation(NamedTuple):
    candidate: Candidate
    estimate: Estimate  # on the most constrained member card
    option: CardOption


def _check_positive_int(name: str, value: object, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be a whole number from 1 to {limit:,}, got {value!r}")
    if not 1 <= value <= limit:
        raise InvalidInputError(f"{name} must be from 1 to {limit:,}, got {value:,}")
    return value


def build_scenario(request: SizingRequest) -> Scenario:
    """Validate the request and work out the card-independent facts (raises SizingError)."""
    context = _check_positive_int("context", request.context, MAX_CONTEXT)
    users = _check_positive_int("users", request.users, MAX_USERS)
    utilization = request.gpu_memory_utilization
    if not (isinstance(utilization, int | float) and 0.05 <= utilization <= 1.0):
        raise InvalidInputError(f"gpu_memory_utilization must be between 0.05 and 1.0, got {utilization!r}")
    engine = check_engine(request.engine)
    precision = check_precision(request.precision)
    if precision not in _ENGINE_PRECISIONS[engine]:
        raise InvalidInputError(
            f"precision {precision!r} is not a format {ENGINE_LABELS[engine]} loads; "
            f"valid choices with {engine}: {', '.join(_ENGINE_PRECISIONS[engine])}"
        )
    kv_dtype = check_kv_dtype(request.kv_dtype or ("fp16" if engine in ("llamacpp", "ollama") else "bf16"))
    if kv_dtype not in _ENGINE_KV[engine]:
        raise InvalidInputError(
            f"kv dtype {kv_dtype!r} is not a cache type of {ENGINE_LABELS[engine]}; "
            f"valid choices with {engine}: {', '.join(_ENGINE_KV[engine])}"
        )
    model = resolve_request_model(request)
    w = weights(model.arch, precision, model.params_override)
    embedding = token_embedding_bytes(model.arch, precision)
    if model.params_override:
        embedding = round(embedding * model.params_override / model.arch.total_params())
    return Scenario(
        model, precision, kv_dtype, engine, context, users, float(utilization), w, embedding, request.lang
    )


def resolve_request_model(request: SizingRequest) -> ResolvedModel:
    if request.params_b is not None and not (
        isinstance(request.params_b, int | float) and request.params_b > 0
    ):
        raise InvalidInputError(f"params_b must be a positive number of billions, got {request.params_b!r}")
    if request.config is not None:
        return model_from_config(request.config, request.model, request.params_b)
    if request.params_b is not None:
        return reference_model(float(request.params_b), request.lang, request.model.strip() or None)
    if not request.model.strip():
        raise UnknownModelError("", ["a catalog id such as llama-3.1-70b", "or a bare size such as 70b"])
    return resolve(request.model, request.lang)


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
        hw = Hardware(count, facts.usable_bytes, card.bandwidth_gbps, card.id)
        label = card.name if count == 1 else f"{count}× {card.name}"
        return [Candidate(None, card.id if count == 1 else f"{card.id}:{count}", label, [hw], {}, {}, {})]
    return classes


def estimate(scenario: Scenario, hw: Hardware) -> Estimate:
    arch, w = scenario.model.arch, scenario.weights.bytes
    if scenario.engine == "vllm":
        return estimate_vllm(
            arch, w, hw, scenario.kv_dtype, scenario.context, scenario.users, scenario.utilization
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
        )
    return estimate_transformers(arch, w, hw, scenario.kv_dtype, scenario.context, scenario.users)


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
    )
    return Evaluation(candidate, worst, option)


def below_16_bit(scenario: Scenario) -> bool:
    return (
        nominal_bits(scenario.precision) < 16
        or KV_BLOCKS[scenario.kv_dtype][1] / KV_BLOCKS[scenario.kv_dtype][0] < 2
    )


def caveat(scenario: Scenario) -> str | None:
    lang = scenario.lang
    parts = []
    if nominal_bits(scenario.precision) < 16:
        parts.append(text("caveat_weights", lang, precision=scenario.precision))
    if KV_BLOCKS[scenario.kv_dtype][1] / KV_BLOCKS[scenario.kv_dtype][0] < 2:
        parts.append(text("caveat_kv", lang, kv=scenario.kv_dtype))
    if not parts:
        return None
    return text("caveat", lang, what=text("caveat_and", lang).join(parts))


def _gb(value: float, lang: Language) -> str:
    return number(value / GB, lang)


def arithmetic_lines(scenario: Scenario, evaluations: list[Evaluation], reference: Evaluation) -> list[str]:
    lang, arch, info = scenario.lang, scenario.model.arch, scenario.model.info
    w = scenario.weights
    lines = []
    if info.reference_note:
        lines.append(info.reference_note)
    lines.append(
        text(
            "line_weights",
            lang,
            params=f"{number(w.params / 1e9, lang)} B",
            precision=scenario.precision,
            note=text(f"fmt_{w.note}", lang),
            gb=_gb(w.bytes, lang),
            bpw=number(w.bits_per_weight, lang),
        )
    )
    layout = kv_layout(arch, scenario.kv_dtype, 1)
    per_block, block_bytes = KV_BLOCKS[scenario.kv_dtype]
    elem = number(block_bytes / per_block, lang, 4 if per_block > 1 else 0)
    if arch.is_mla:
        lines.append(
            text(
                "line_kv_mla",
                lang,
                layers=layout.full_layers,
                latent=arch.kv_lora_rank,
                rope=arch.qk_rope_head_dim,
                elem=elem,
                kv=scenario.kv_dtype,
                bytes=integer(layout.full_bytes_per_token, lang),
            )
        )
    else:
        lines.append(
            text(
                "line_kv_gqa",
                lang,
                layers=layout.full_layers,
                heads=arch.num_kv_heads,
                head_dim=arch.head_dim,
                elem=elem,
                kv=scenario.kv_dtype,
                bytes=integer(layout.full_bytes_per_token, lang),
            )
        )
    if layout.sliding_layers:
        cells = (
            llamacpp_sliding_cells(layout)
            if scenario.engine in ("llamacpp", "ollama")
            else min(scenario.context, layout.sliding_window or scenario.context)
        )
        lines.append(
            text(
                "line_kv_sliding",
                lang,
                layers=layout.sliding_layers,
                per_layer=integer(layout.bytes_per_token_per_layer, lang),
                cells=integer(min(cells or scenario.context, scenario.context), lang),
            )
        )
    est = reference.estimate
    per_seq = est.kv_bytes_per_sequence
    lines.append(
        text(
            "line_kv_total",
            lang,
            per_seq=number(per_seq / GB, lang, 3),
            context=integer(scenario.context, lang),
            users=integer(scenario.users, lang),
            gb=_gb(per_seq * scenario.users, lang),
        )
    )
    per_gpu = text("per_gpu", lang) if est.gpus > 1 else ""
    parts = ", ".join(
        text(f"part_{key}", lang, gb=_gb(value, lang)) + per_gpu for key, value in est.overhead_parts
    )
    lines.append(
        text(
            "line_overhead",
            lang,
            engine=ENGINE_LABELS[scenario.engine],
            parts=parts,
            gb=_gb(est.overhead_bytes, lang),
        )
    )
    total = scenario.weights.bytes + per_seq * scenario.users + est.overhead_bytes
    lines.append(
        text(
            "line_total",
            lang,
            weights=_gb(scenario.weights.bytes, lang),
            kv=_gb(per_seq * scenario.users, lang),
            overhead=_gb(est.overhead_bytes, lang),
            total=_gb(total, lang),
            label=reference.option.label,
        )
    )
    for ev in evaluations:
        lines.append(_option_line(scenario, ev))
    lines.append(text("line_units", lang))
    return lines


def _option_line(scenario: Scenario, ev: Evaluation) -> str:
    lang, est = scenario.lang, ev.estimate
    room = max(0, est.kv_room_bytes)
    fields = {
        "label": ev.option.label,
        "usable": number(ev.option.usable_gb, lang),
        "weights": _gb(est.weights_bytes, lang),
        "room": _gb(room, lang),
        "seqs": counted(ev.option.max_concurrent_sequences, "sequence", lang),
        "context": integer(scenario.context, lang),
    }
    if scenario.engine == "vllm":
        seq_tokens = est.kv_bytes_per_sequence / scenario.context if scenario.context else 0
        tokens = int(room / seq_tokens) if seq_tokens else 0
        # vLLM's own overhead inside its budget: activation + non-torch (context and graphs sit in the slack).
        inside = sum(b for key, b in est.overhead_parts if key in ("activation", "non_torch")) * est.gpus
        line = text(
            "line_option_vllm",
            lang,
            util=number(scenario.utilization * 100, lang, 0),
            budget=_gb(est.budget_bytes, lang),
            overhead=_gb(inside, lang),
            tokens=integer(tokens, lang),
            **fields,
        )
        if not est.slack_ok:
            slack = ev.option.usable_gb * GB - est.budget_bytes
            need = (
                sum(b for key, b in est.overhead_parts if key in ("cuda_context", "cuda_graphs")) * est.gpus
            )
            line += "; " + text(
                "line_slack", lang, label=ev.option.label, slack=_gb(slack, lang), need=_gb(need, lang)
            )
        return line
    host = scenario.weights.bytes - est.weights_bytes
    if host > 0:
        # llama.cpp keeps the input embedding (token lookup table) in host RAM, not on the GPU.
        return text(
            "line_option_host_embedding",
            lang,
            overhead=_gb(est.overhead_bytes, lang),
            all_weights=_gb(scenario.weights.bytes, lang),
            host=_gb(host, lang),
            **fields,
        )
    return text("line_option", lang, overhead=_gb(est.overhead_bytes, lang), **fields)


def required_usable_bytes(scenario: Scenario, est: Estimate) -> int:
    """Card memory (all GPUs) this request needs: for vLLM, its share must hold everything inside
    the budget and the slack must hold the CUDA context and graphs."""
    needed = est.weights_bytes + est.overhead_bytes + est.kv_bytes_per_sequence * scenario.users
    if scenario.engine != "vllm":
        return needed
    outside = sum(b for key, b in est.overhead_parts if key in ("cuda_context", "cuda_graphs")) * est.gpus
    inside = needed - outside
    return int(max(inside / scenario.utilization, needed))


def calculate_vram(request: SizingRequest) -> SizingResult:
    """Size a model on every card class (or the requested card): the arithmetic, the verdicts,
    the recommendation, the quantization caveat and what would make it fit."""
    from tools.advice import alternatives, recommendation, suggestions

    scenario = build_scenario(request)
    evaluations = [evaluate(scenario, c) for c in candidates(request.gpu, request.lang)]
    fitting = [ev for ev in evaluations if ev.option.fits]
    reference = fitting[0] if fitting else evaluations[-1]
    est = reference.estimate
    kv_total = est.kv_bytes_per_sequence * scenario.users
    total = scenario.weights.bytes + kv_total + est.overhead_bytes
    recommended = (reference.option.card_class or reference.option.card) if fitting else None
    result = SizingResult(
        model=scenario.model.info,
        precision=scenario.precision,
        engine=scenario.engine,
        context=scenario.context,
        users=scenario.users,
        kv_dtype=scenario.kv_dtype,
        weights_gb=round(scenario.weights.bytes / GB, 2),
        kv_bytes_per_token=est.kv_bytes_per_token,
        kv_cache_gb=round(kv_total / GB, 2),
        overhead_gb=round(est.overhead_bytes / GB, 2),
        total_gb=round(total / GB, 2),
        options=[ev.option for ev in evaluations],
        recommended=recommended,
        recommendation=recommendation(
            scenario, evaluations, reference if fitting else None, required_usable_bytes(scenario, est)
        ),
        arithmetic=arithmetic_lines(scenario, evaluations, reference),
        caveat=caveat(scenario),
        suggestions=suggestions(scenario, evaluations, request.gpu),
        below_16_bit=below_16_bit(scenario),
        alternatives=[] if fitting else [ev.option for ev in alternatives(scenario, evaluations[-1])],
    )
    from tools.performance_sizing import add_performance

    return add_performance(request, scenario, evaluations, result)
