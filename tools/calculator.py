"""calculate_vram: one SizingRequest in, one SizingResult out, with the arithmetic shown.

The flow: resolve the model to an architecture; weights at the precision (tools/precision.py);
the KV layout (tools/kv_cache.py); the engine profile on each card option (tools/engines.py);
then the verdicts, the recommendation, the caveat and the suggestions (tools/advice.py).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from tools.architecture import Architecture
from tools.cards import card_classes, card_facts, parse_gpu_spec
from tools.catalog import ResolvedModel, model_from_config, reference_model, resolve
from tools.engines import (
    VLLM_BLOCK_SIZE,
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
from tools.hub import HubLookup, looks_like_hub_id, resolve_hub_model
from tools.kv_cache import KV_BLOCKS, KvLayout, check_kv_dtype, kv_layout
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
from tools.serving_extras import Extras, check_lora, lora_slot_bytes, mtp_weights_bytes, vision_tower_params
from tools.texts import counted, integer, number, text

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
    if engine in ("vllm", "transformers") and not exact:
        vision = vision_tower_params(request.config) * 2
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


def _gb(value: float, lang: Language) -> str:
    return number(value / GB, lang)


def arithmetic_lines(scenario: Scenario, evaluations: list[Evaluation], reference: Evaluation) -> list[str]:
    lang, info = scenario.lang, scenario.model.info
    w = scenario.weights
    lines = []
    if info.reference_note:
        lines.append(info.reference_note)
    if scenario.host_note:
        lines.append(text(scenario.host_note, lang))
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
    extras = scenario.extras
    if extras.weights_bytes:
        lines.append(_extras_line(scenario))
    est = reference.estimate
    lines.extend(_kv_lines(scenario, est))
    lines.append(_overhead_line(scenario, est))
    kv_total = est.kv_bytes_per_sequence * scenario.users
    total = scenario.weights.bytes + extras.weights_bytes + kv_total + est.overhead_bytes
    lines.append(
        text(
            "line_total_extras" if extras.weights_bytes else "line_total",
            lang,
            weights=_gb(scenario.weights.bytes, lang),
            extras=_gb(extras.weights_bytes, lang),
            kv=_gb(kv_total, lang),
            overhead=_gb(est.overhead_bytes, lang),
            total=_gb(total, lang),
            label=reference.option.label,
        )
    )
    for ev in evaluations:
        lines.append(_option_line(scenario, ev))
    lines.append(text("line_units", lang))
    return lines


def _extras_line(scenario: Scenario) -> str:
    lang, extras = scenario.lang, scenario.extras
    parts = []
    if extras.lora_slot_bytes:
        parts.append(
            text(
                "extra_lora",
                lang,
                loras=extras.max_loras,
                rank=extras.max_lora_rank,
                gb=_gb(extras.lora_slot_bytes, lang),
            )
        )
    if extras.draft_weights_bytes:
        parts.append(
            text("extra_draft", lang, name=extras.draft_name, gb=_gb(extras.draft_weights_bytes, lang))
        )
    if extras.mtp_weights_bytes:
        parts.append(
            text("extra_mtp", lang, layers=extras.mtp_layers, gb=_gb(extras.mtp_weights_bytes, lang))
        )
    if extras.vision_bytes:
        parts.append(text("extra_vision", lang, gb=_gb(extras.vision_bytes, lang)))
    return text("line_extras", lang, parts=" + ".join(parts), gb=_gb(extras.weights_bytes, lang))


def tensor_parallel(scenario: Scenario, est: Estimate) -> int:
    """GPUs that split each layer's KV heads: vLLM's TP degree; llama.cpp and transformers split
    by layers, so every token's cache is on one GPU."""
    return est.gpus // est.pipeline if scenario.engine == "vllm" else 1


def kv_copies_shown(arch: Architecture, layout: KvLayout, tp: int) -> bool:
    """Whether the per-GPU cache times the TP degree is more than one copy of the model's cache
    (the MLA latent on every GPU; KV heads fewer than, or not divisible by, the TP degree)."""
    return tp > 1 and (arch.is_mla or layout.heads_per_gpu * tp != arch.num_kv_heads)


def _kv_lines(scenario: Scenario, est: Estimate) -> list[str]:
    """Per-token cache, sliding layers and the per-sequence total, in the bytes the total uses."""
    lang, arch = scenario.lang, scenario.model.arch
    tp = tensor_parallel(scenario, est)
    layout = kv_layout(arch, scenario.kv_dtype, tp)
    copies = kv_copies_shown(arch, layout, tp)
    shown = layout if copies else kv_layout(arch, scenario.kv_dtype, 1)
    per_block, block_bytes = KV_BLOCKS[scenario.kv_dtype]
    fields = {
        "layers": shown.full_layers,
        "elem": number(block_bytes / per_block, lang, 4 if per_block > 1 else 0),
        "kv": scenario.kv_dtype,
        "bytes": integer(shown.full_bytes_per_token, lang),
    }
    if arch.is_mla:
        line = text("line_kv_mla", lang, latent=arch.kv_lora_rank, rope=arch.qk_rope_head_dim, **fields)
    else:
        line = text("line_kv_gqa", lang, heads=shown.heads_per_gpu, head_dim=arch.head_dim, **fields)
    if copies:
        line += text("kv_copies", lang, gpus=tp, total=integer(layout.full_bytes_per_token * tp, lang))
    lines = [line]
    for extra in scenario.extras.kv_archs(arch):
        other = kv_layout(extra, scenario.kv_dtype, tp)
        what = scenario.extras.draft_name if extra is scenario.extras.draft_arch else "MTP"
        lines.append(
            text(
                "line_kv_extra",
                lang,
                what=what,
                layers=other.full_layers,
                bytes=integer(other.full_bytes_per_token * tp, lang),
            )
        )
    tokens = _kv_tokens(scenario)
    if layout.sliding_layers:
        cells = _sliding_cells(scenario, layout)
        lines.append(
            text(
                "line_kv_sliding",
                lang,
                layers=layout.sliding_layers,
                per_layer=integer(layout.bytes_per_token_per_layer * tp, lang),
                cells=integer(min(cells, tokens), lang),
            )
        )
    per_seq = est.kv_bytes_per_sequence
    blocks = text("kv_blocks", lang, tokens=integer(tokens, lang)) if tokens != scenario.context else ""
    lines.append(
        text(
            "line_kv_total",
            lang,
            per_seq=number(per_seq / GB, lang, 3),
            context=integer(scenario.context, lang) + blocks,
            users=integer(scenario.users, lang),
            gb=_gb(per_seq * scenario.users, lang),
        )
    )
    return lines


def _kv_tokens(scenario: Scenario) -> int:
    """Tokens of cache one sequence holds: vLLM allocates whole 16-token blocks."""
    if scenario.engine == "vllm":
        return math.ceil(scenario.context / VLLM_BLOCK_SIZE) * VLLM_BLOCK_SIZE
    return scenario.context


def _sliding_cells(scenario: Scenario, layout: KvLayout) -> int:
    if scenario.engine in ("llamacpp", "ollama"):
        return llamacpp_sliding_cells(layout) or scenario.context
    if scenario.engine == "vllm" and layout.sliding_window:
        return layout.sliding_window + VLLM_BLOCK_SIZE
    return layout.sliding_window or scenario.context


def _overhead_line(scenario: Scenario, est: Estimate) -> str:
    """The engine's overhead: per-GPU parts times the GPUs, plus parts counted once."""
    lang = scenario.lang
    once = {"prefill_activation"} if scenario.engine == "transformers" else set()
    per_gpu = [(key, value) for key, value in est.overhead_parts if key not in once]
    whole = [(key, value) for key, value in est.overhead_parts if key in once]

    def listed(parts: list[tuple[str, int]]) -> str:
        return " + ".join(text(f"part_{key}", lang, gb=_gb(value, lang)) for key, value in parts)

    engine = ENGINE_LABELS[scenario.engine]
    if est.gpus == 1:
        return text(
            "line_overhead",
            lang,
            engine=engine,
            parts=listed(est.overhead_parts),
            gb=_gb(est.overhead_bytes, lang),
        )
    extra = (" + " + listed(whole)) if whole else ""
    return text(
        "line_overhead_gpus",
        lang,
        engine=engine,
        parts=listed(per_gpu),
        gpus=est.gpus,
        extra=extra,
        gb=_gb(est.overhead_bytes, lang),
    )


def _option_line(scenario: Scenario, ev: Evaluation) -> str:
    lang, est = scenario.lang, ev.estimate
    # A negative room is printed as such, so that usable - weights - overhead still adds up.
    room = est.kv_room_bytes
    fields = {
        "label": ev.option.label,
        "usable": number(ev.option.usable_gb, lang),
        "weights": _gb(est.weights_bytes, lang),
        "room": _gb(room, lang),
        "seqs": counted(ev.option.max_concurrent_sequences, "sequence", lang),
        "context": integer(scenario.context, lang),
    }
    if scenario.engine == "vllm":
        seq_tokens = est.kv_bytes_per_sequence / _kv_tokens(scenario)
        tokens = int(max(0, room) / seq_tokens) if seq_tokens else 0
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
    if scenario.engine == "transformers":
        # The prefill activations grow with each sequence, so they share the room with the KV.
        context_bytes = sum(b for key, b in est.overhead_parts if key == "cuda_context") * est.gpus
        per_seq = est.kv_bytes_per_sequence + (est.overhead_bytes - context_bytes) / scenario.users
        return text(
            "line_option_transformers",
            lang,
            overhead=_gb(context_bytes, lang),
            per_seq=number(per_seq / GB, lang, 3),
            **fields,
        )
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


def calculate_vram(request: SizingRequest, hub: HubLookup | None = None) -> SizingResult:
    """Size a model on every card class (or the requested card): the arithmetic, the verdicts,
    the recommendation, the quantization caveat and what would make it fit."""
    from tools.advice import alternatives, recommendation, suggestions

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
    return SizingResult(
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
