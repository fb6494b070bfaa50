"""A request's card-independent facts: the Scenario every card option is judged on.

build_scenario validates a SizingRequest (SizingError on bad input), resolves the model (catalog,
config.json, bare size or Hub id), picks the engine's formats, and works out the weights and the
serving extras (LoRA slots, a draft model or MTP heads, a vision tower).
"""

from __future__ import annotations

from typing import NamedTuple

from tools.cards import card_classes, parse_gpu_spec
from tools.catalog import ResolvedModel, model_from_config, reference_model, release_precisions, resolve
from tools.engines import ENGINE_LABELS, check_engine
from tools.errors import InvalidInputError, UnknownModelError, check_range
from tools.hub import HubLookup, looks_like_hub_id, resolve_hub_model
from tools.i18n import Language
from tools.kv_cache import check_kv_dtype
from tools.precision import (
    GGUF_PRECISIONS,
    PRECISIONS,
    Weights,
    check_precision,
    token_embedding_bytes,
    weights,
)
from tools.schemas import SizingRequest
from tools.serving_extras import Extras, check_lora, lora_slot_bytes, mtp_weights_bytes

MAX_CONTEXT = 10_000_000
MAX_USERS = 1_000_000

# Which weight formats and KV types each engine can load.
ENGINE_PRECISIONS = {
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
    released: bool = False  # no precision named: sized in the format the model is published in


def _check_positive_int(name: str, value: object, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be a whole number from 1 to {limit:,}, got {value!r}")
    return check_range(value, 1, limit, name, f"{name} must be from 1 to {limit:,}, got {value:,}")


def build_scenario(request: SizingRequest, hub: HubLookup | None = None) -> Scenario:
    """Validate the request and work out the card-independent facts (raises SizingError)."""
    context = _check_positive_int("context", request.context, MAX_CONTEXT)
    users = _check_positive_int("users", request.users, MAX_USERS)
    utilization = request.gpu_memory_utilization
    message = f"gpu_memory_utilization must be between 0.05 and 1.0, got {utilization!r}"
    check_range(utilization, 0.05, 1.0, "gpu_memory_utilization", message)
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
    named = "precision" in request.model_fields_set
    if checkpoint in ENGINE_PRECISIONS[engine] and not named:
        precision = checkpoint or precision
    # A catalog model named as such (not a bare size scaled from it, not a config.json).
    catalog = request.config is None and request.params_b is None and model.info.reference_note is None
    release = release_precisions().get(model.info.id) if catalog else None
    released = not named and checkpoint is None and release is not None
    if released and release in ENGINE_PRECISIONS[engine]:
        precision = release or precision
    else:
        released = False
    if precision not in ENGINE_PRECISIONS[engine]:
        raise InvalidInputError(
            f"precision {precision!r} is not a format {ENGINE_LABELS[engine]} loads; "
            f"valid choices with {engine}: {', '.join(ENGINE_PRECISIONS[engine])}",
            code="engine_precision",
            precision=precision,
            engine=ENGINE_LABELS[engine],
            choices=", ".join(ENGINE_PRECISIONS[engine]),
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
        released,
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
    extras = Extras(
        lora_slot_bytes=lora_slot_bytes(arch, request.max_loras, request.max_lora_rank),
        max_loras=request.max_loras,
        max_lora_rank=request.max_lora_rank,
    )
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
        draft_bytes = model_weights(draft, precision, engine)[0].bytes
        extras = extras._replace(
            draft_name=draft.info.name, draft_arch=draft.arch, draft_weights_bytes=draft_bytes
        )
    if request.mtp:
        if not arch.model_type.startswith(("deepseek_v3", "deepseek_v32")):
            raise InvalidInputError(
                f"{model.info.name} has no multi-token-prediction heads (DeepSeek-V3 and R1 do); "
                "use a draft model instead"
            )
        mtp_layers = 1  # DeepSeek-V3 config: num_nextn_predict_layers = 1
        mtp_bytes = mtp_weights_bytes(arch, mtp_layers, w.bits_per_weight / 8)
        extras = extras._replace(mtp_layers=mtp_layers, mtp_weights_bytes=mtp_bytes)
    exact = request.file_weights is not None or bool(model.checkpoint and model.checkpoint[1])
    if engine in ("vllm", "transformers") and not exact:  # the headers already count the tower
        extras = extras._replace(vision_bytes=model.vision_params * 2)
    return extras


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


def with_precision(scenario: Scenario, precision: str) -> Scenario:
    """The same request with the weights at another precision."""
    w, embedding = model_weights(scenario.model, precision, scenario.engine)
    return scenario._replace(precision=precision, weights=w, embedding_bytes=embedding)


__all__ = [
    "ENGINE_PRECISIONS",
    "MAX_CONTEXT",
    "MAX_USERS",
    "Scenario",
    "build_scenario",
    "default_engine",
    "model_weights",
    "resolve_request_model",
    "serving_extras",
    "with_precision",
]
