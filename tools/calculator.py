"""calculate_vram: one SizingRequest in, one SizingResult out, with the arithmetic shown.

The flow: resolve the model to an architecture; weights at the precision (tools/precision.py);
the KV layout (tools/kv_cache.py); the engine profile on each card option (tools/engines.py);
then the verdicts, the recommendation, the caveat and the suggestions (tools/advice.py) and
the printed arithmetic (tools/arithmetic.py). Fine-tuning requests go to tools/training.py.
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
)
from tools.errors import InvalidInputError, UnknownModelError
from tools.hub import HubLookup, looks_like_hub_id, resolve_hub_model
from tools.kv_cache import KV_BLOCKS, check_kv_dtype
from tools.precision import (
    GGUF_PRECISIONS,
    PRECISIONS,
    Weights,
    check_precision,
    nominal_bits,
    token_embedding_bytes,
    weights,
)
from tools.schemas import Card, CardOption, Language, SizingRequest, SizingResult
from tools.serving_extras import Extras, check_lora, lora_slot_bytes, mtp_weights_bytes
from tools.texts import text

GB = 1e9
NODE_GPUS = 8  # GPUs in one server (HGX/DGX boards, MI300X platforms)
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
    host_note: str | None = None  # why the engine was switched (Apple silicon, CPU only)
    extras: Extras = Extras()  # LoRA slots, draft model / MTP, vision tower


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


def build_scenario(request: SizingRequest, hub: HubLookup | None = None) -> Scenario:
    """Validate the request and work out the card-independent facts (raises SizingError)."""
    context = _check_positive_int("context", request.context, MAX_CONTEXT)
    users = _check_positive_int("users", request.users, MAX_USERS)
    utilization = request.gpu_memory_utilization
    if not (isinstance(utilization, int | float) and 0.05 <= utilization <= 1.0):
        raise InvalidInputError(f"gpu_memory_utilization must be between 0.05 and 1.0, got {utilization!r}")
    engine = check_engine(request.engine)
    host = _host_kind(request.gpu)
    host_note = None
    if host in ("apple", "cpu") and engine == "vllm":
        # vLLM serves CUDA/ROCm GPUs; on a Mac or a CPU the engine people run is llama.cpp.
        engine, host_note = "llamacpp", f"host_{host}_engine"
    model = resolve_request_model(request, hub)
    precision = check_precision(request.precision)
    # A Hub checkpoint is sized in the format it ships in, where this engine loads it.
    checkpoint = model.checkpoint[0] if model.checkpoint else None
    if checkpoint in _ENGINE_PRECISIONS[engine] and "precision" not in request.model_fields_set:
        precision = checkpoint or precision
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
    w, embedding = model_weights(model, precision, engine)
    if request.file_weights is not None:
        # A GGUF header lists every tensor's type and size: nothing to derive.
        w = Weights(request.file_weights.bytes, model.info.params, "gguf_file")
        embedding = request.file_weights.token_embedding_bytes
    extras = serving_extras(request, model, precision, engine, w, hub)
    return Scenario(
        model,
        precision,
        kv_dtype,
        engine,
        context,
        users,
        float(utilization),
        w,
        embedding,
        request.lang,
        host_note,
        extras,
    )


def serving_extras(
    request: SizingRequest,
    model: ResolvedModel,
    precision: str,
    engine: str,
    w: Weights,
    hub: HubLookup | None,
) -> Extras:
    """LoRA slots, a draft model or MTP heads, and a vision tower, where the engine loads them."""
    check_lora(request.max_loras, request.max_lora_rank)
    arch = model.arch
    lora = lora_slot_bytes(arch, request.max_loras, request.max_lora_rank)
    draft_name, draft_bytes, draft_arch = None, 0, None
    if request.draft_model:
        if request.mtp:
            raise InvalidInputError("give either a draft model or --mtp, not both")
        draft_request = request.model_copy(
            update={"model": request.draft_model, "config": None, "params_b": None}
        )
        draft = resolve_request_model(draft_request, hub)
        if draft.arch.vocab_size != arch.vocab_size:
            raise InvalidInputError(
                f"draft model {request.draft_model!r} has a {draft.arch.vocab_size:,}-token vocabulary, the "
                f"model {arch.vocab_size:,}: speculative decoding needs the same tokenizer"
            )
        draft_name, draft_arch = draft.info.name, draft.arch
        draft_bytes = model_weights(draft, precision, engine)[0].bytes
    mtp_layers, mtp_bytes = 0, 0
    if request.mtp:
        if not arch.model_type.startswith(("deepseek_v3", "deepseek_v32")):
            raise InvalidInputError(
                f"{model.info.name} has no multi-token-prediction heads (DeepSeek-V3 and R1 do); "
                "use a draft model instead"
            )
        mtp_layers = 1  # DeepSeek-V3 config: num_nextn_predict_layers = 1
        mtp_bytes = mtp_weights_bytes(arch, mtp_layers, w.bits_per_weight / 8)
    vision = 0
    exact = request.file_weights is not None or bool(model.checkpoint and model.checkpoint[1])
    if engine in ("vllm", "transformers") and not exact:  # the headers already count the tower
        vision = model.vision_params * 2
    return Extras(
        lora_slot_bytes=lora,
        max_loras=request.max_loras,
        max_lora_rank=request.max_lora_rank,
        draft_name=draft_name,
        draft_weights_bytes=draft_bytes,
        draft_arch=draft_arch,
        mtp_layers=mtp_layers,
        mtp_weights_bytes=mtp_bytes,
        vision_bytes=vision,
    )


def _host_kind(gpu: str | None) -> str | None:
    """The kind of one requested card (apple, cpu, ...), None for card classes or no card."""
    wanted = (gpu or "").strip().lower().replace(" ", "")
    if not wanted or wanted in {c.id for c in card_classes()}:
        return None
    card, _ = parse_gpu_spec(gpu or "")
    return card.kind


def model_weights(model: ResolvedModel, precision: str, engine: str) -> tuple[Weights, int]:
    """The weights and the input-embedding bytes of the files this engine loads."""
    gguf = engine in ("llamacpp", "ollama")
    w = weights(model.arch, precision, model.params_override, gguf=gguf)
    exact = model.checkpoint[1] if model.checkpoint and model.checkpoint[0] == precision else None
    if exact and not gguf:
        w = w._replace(bytes=exact, note="checkpoint")  # byte for byte, from the headers
    embedding = token_embedding_bytes(model.arch, precision, gguf=gguf)
    if model.params_override:
        embedding = round(embedding * model.params_override / model.arch.total_params())
    return w, embedding


def resolve_request_model(request: SizingRequest, hub: HubLookup | None = None) -> ResolvedModel:
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
    if looks_like_hub_id(request.model) and (hub is not None or not _in_catalog(request.model)):
        return resolve_hub_model(request.model, hub, request.lang)
    return resolve(request.model, request.lang)


def _in_catalog(name: str) -> bool:
    try:
        resolve(name)
    except UnknownModelError:
        return False
    return True


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


def required_usable_bytes(scenario: Scenario, est: Estimate) -> int:
    """Card memory (all GPUs) this request needs: for vLLM, its share must hold everything inside
    the budget and the slack must hold the CUDA context and graphs."""
    needed = est.weights_bytes + est.overhead_bytes + est.kv_bytes_per_sequence * scenario.users
    if scenario.engine != "vllm":
        return needed
    outside = sum(b for key, b in est.overhead_parts if key in ("cuda_context", "cuda_graphs")) * est.gpus
    inside = needed - outside
    return int(max(inside / scenario.utilization, needed))


def calculate_vram(request: SizingRequest, hub: HubLookup | None = None) -> SizingResult:
    """Size a model on every card class (or the requested card): the arithmetic, the verdicts,
    the recommendation, the quantization caveat and what would make it fit."""
    from tools.advice import alternatives, recommendation, suggestions
    from tools.arithmetic import arithmetic_lines

    if request.finetune is not None:
        from tools.training import size_finetune

        return size_finetune(request, hub)
    scenario = build_scenario(request, hub)
    evaluations = [evaluate(scenario, c) for c in candidates(request.gpu, request.lang)]
    fitting = [ev for ev in evaluations if ev.option.fits]
    reference = fitting[0] if fitting else evaluations[-1]
    est = reference.estimate
    kv_total = est.kv_bytes_per_sequence * scenario.users
    total = scenario.weights.bytes + scenario.extras.weights_bytes + kv_total + est.overhead_bytes
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
