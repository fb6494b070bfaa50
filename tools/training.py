"""size_finetune: a fine-tuning request on every card option, with the arithmetic shown.

The memory model is tools/finetune.py; this module compares it with each option (a class's
most constrained card, or the requested card × N with the weights, gradients and optimizer
states sharded), finds the largest micro-batch that fits, and writes the lines and
suggestions in the visitor's language.
"""

from __future__ import annotations

import math

from tools.catalog import ResolvedModel
from tools.engines import check_engine
from tools.errors import InvalidInputError
from tools.evaluation import Candidate, candidates
from tools.finetune import (
    FinetuneSpec,
    TrainingMemory,
    breakdown,
    check_spec,
    full_bytes_per_param,
    max_batch,
    training_memory,
)
from tools.hub import HubLookup
from tools.i18n import GB, Language, gb, integer, number
from tools.scenario import resolve_request_model
from tools.schemas import CardOption, SizingRequest, SizingResult
from tools.texts import text


def _check_engine(request: SizingRequest) -> None:
    """Training is sized for PyTorch (transformers / PEFT / TRL / Unsloth), not a serving engine."""
    if "engine" not in request.model_fields_set:
        return
    engine = check_engine(request.engine)
    if engine != "transformers":
        raise InvalidInputError(
            f"fine-tuning is sized for PyTorch training (transformers, PEFT, TRL, Unsloth), not for the "
            f"serving engine {request.engine!r}; leave the engine out (or use transformers)"
        )


def _params(model: ResolvedModel) -> int:
    return model.params_override or model.arch.total_params()


def _evaluate(
    model: ResolvedModel, spec: FinetuneSpec, candidate: Candidate, lang: Language
) -> tuple[CardOption, TrainingMemory]:
    gpus = candidate.members[0].gpus
    usable = min(hw.usable_bytes_per_gpu for hw in candidate.members)
    memory = training_memory(model.arch, _params(model), spec, gpus)
    fits = memory.total <= usable
    option = CardOption(
        card_class=candidate.card_class,
        card=candidate.card,
        label=candidate.label,
        gpus=gpus,
        usable_gb=round(usable * gpus / GB, 2),
        fits=fits,
        headroom_gb=round((usable - memory.total) * gpus / GB, 2),
        max_concurrent_sequences=max_batch(model.arch, _params(model), spec, gpus, usable),
        decode_tokens_per_s=None,
        serves="",
        catch="",
        total_gb=round(memory.total * gpus / GB, 2),
    )
    return option, memory


def _master_weights(
    model: ResolvedModel, spec: FinetuneSpec, reference: CardOption, memory: TrainingMemory, lang: Language
) -> dict[str, str]:
    """Full fine-tuning's stated assumption and what fp32 master weights would add, on the reference."""
    params, gpus = _params(model), reference.gpus
    plain = full_bytes_per_param(spec.optimizer)
    mixed = full_bytes_per_param(spec.optimizer, master_weights=True)
    more = math.ceil(params * (mixed - plain) / gpus)
    total = memory.total + more
    usable = reference.usable_gb * GB / gpus
    return {
        "optimizer": spec.optimizer,
        "plain": str(plain),
        "states": str(plain - 4),
        "fp32_states": str(mixed - 8),
        "mixed": str(mixed),
        "params": f"{number(params / 1e9, lang)} B",
        "extra": str(mixed - plain),
        "shard": text("train_sharded", lang, gpus=gpus) if gpus > 1 else "",
        "more": gb(more, lang),
        "total": gb(total, lang),
        "verdict": text("train_fits" if total <= usable else "train_short", lang),
        "label": reference.label,
    }


def _lines(
    model: ResolvedModel,
    spec: FinetuneSpec,
    memory: TrainingMemory,
    gpus: int,
    options: list[tuple[CardOption, TrainingMemory]],
    lang: Language,
    assumes: dict[str, str] | None = None,
) -> list[str]:
    arch, params = model.arch, _params(model)
    lines = [model.info.reference_note] if model.info.reference_note else []
    shard = text("train_sharded", lang, gpus=gpus) if gpus > 1 else ""
    if spec.method == "full":
        lines.append(
            text(
                "train_line_full",
                lang,
                params=f"{number(params / 1e9, lang)} B",
                weights=gb(memory.weights, lang),
                grads=gb(memory.gradients, lang),
                optimizer=spec.optimizer,
                states=gb(memory.optimizer, lang),
                shard=shard,
            )
        )
        if assumes:
            lines.append(text("train_line_assumes", lang, **assumes))
    else:
        lines.append(
            text(
                "train_line_base",
                lang,
                params=f"{number(params / 1e9, lang)} B",
                format="NF4 (QLoRA)" if spec.method == "qlora" else "bf16",
                weights=gb(memory.weights, lang),
                shard=shard,
            )
        )
        lines.append(
            text(
                "train_line_adapters",
                lang,
                rank=spec.lora_rank,
                trainable=integer(memory.trainable_params, lang),
                adapters=gb(memory.adapters, lang),
                grads=gb(memory.gradients, lang),
                optimizer=spec.optimizer,
                states=gb(memory.optimizer, lang),
            )
        )
    tokens = spec.batch * spec.seq
    key = "train_line_activations_ckpt" if spec.gradient_checkpointing else "train_line_activations"
    lines.append(
        text(
            key,
            lang,
            batch=spec.batch,
            seq=integer(spec.seq, lang),
            tokens=integer(tokens, lang),
            layers=arch.num_layers,
            gb=gb(memory.activations, lang),
        )
    )
    lines.append(
        text(
            "train_line_logits",
            lang,
            tokens=integer(tokens, lang),
            vocab=integer(arch.vocab_size, lang),
            gb=gb(memory.logits, lang),
        )
    )
    parts = (
        memory.weights,
        memory.gradients,
        memory.optimizer,
        memory.adapters,
        memory.activations,
        memory.logits,
        memory.overhead,
    )
    lines.append(
        text(
            "train_line_total",
            lang,
            parts=" + ".join(gb(part, lang) for part in parts),
            total=gb(memory.total, lang),
        )
    )
    for option, option_memory in options:
        lines.append(
            text(
                "train_line_option",
                lang,
                label=option.label,
                usable=number(option.usable_gb / option.gpus, lang),
                need=gb(option_memory.total, lang),
                verdict=text("train_fits" if option.fits else "train_short", lang),
                batch=option.max_concurrent_sequences,
            )
        )
    lines.append(text("line_units", lang))
    return lines


def _suggestions(model: ResolvedModel, spec: FinetuneSpec, target: Candidate, lang: Language) -> list[str]:
    """Cheaper setups, each computed on the target option."""
    out = []
    trials: list[tuple[str, FinetuneSpec]] = []
    if spec.method == "full":
        trials.append(("train_sug_lora", spec.model_copy(update={"method": "lora"})))
    if spec.method != "qlora":
        trials.append(("train_sug_qlora", spec.model_copy(update={"method": "qlora"})))
    if spec.optimizer == "adamw":
        trials.append(("train_sug_8bit", spec.model_copy(update={"optimizer": "adamw8bit"})))
    if not spec.gradient_checkpointing:
        trials.append(("train_sug_ckpt", spec.model_copy(update={"gradient_checkpointing": True})))
    if spec.batch > 1:
        trials.append(("train_sug_batch", spec.model_copy(update={"batch": 1})))
    for key, trial in trials:
        option, memory = _evaluate(model, trial, target, lang)
        out.append(
            text(
                key,
                lang,
                gb=gb(memory.total, lang),
                label=option.label,
                verdict=text("train_fits" if option.fits else "train_short", lang),
            )
        )
    return out


def size_finetune(request: SizingRequest, hub: HubLookup | None = None) -> SizingResult:
    """Training memory of the request's model on every card class (or the requested card)."""
    assert request.finetune is not None
    spec = check_spec(request.finetune)
    _check_engine(request)
    lang = request.lang
    model = resolve_request_model(request, hub)
    compared = candidates(request.gpu, lang)
    evaluated = [(_evaluate(model, spec, c, lang), c) for c in compared]
    fitting = [(pair, c) for pair, c in evaluated if pair[0].fits]
    (reference, memory), target = fitting[0] if fitting else evaluated[-1]
    gpus = reference.gpus
    options = [pair for pair, _ in evaluated]
    detail = breakdown(memory, spec, gpus)
    common = {
        "model": model.info.name,
        "method": text(f"train_method_{spec.method}", lang),
        "batch": spec.batch,
        "seq": integer(spec.seq, lang),
    }
    if fitting:
        recommendation = text(
            "train_rec_fits",
            lang,
            label=reference.label,
            headroom=number(reference.headroom_gb, lang),
            max_batch=reference.max_concurrent_sequences,
            **common,
        )
    else:
        recommendation = text(
            "train_rec_none",
            lang,
            labels=", ".join(o.label for o, _ in options),
            need=gb(memory.total, lang),
            **common,
        )
    assumes = _master_weights(model, spec, reference, memory, lang) if spec.method == "full" else None
    if assumes:
        recommendation += text("train_rec_assumes", lang, **assumes)
    weights_bytes = memory.weights * gpus
    total = memory.total * gpus
    return SizingResult(
        model=model.info,
        precision="nf4" if spec.method == "qlora" else "bf16",
        engine="transformers",
        context=spec.seq,
        users=spec.batch,
        kv_dtype="bf16",
        weights_gb=round(weights_bytes / GB, 2),
        kv_bytes_per_token=0,
        kv_cache_gb=0.0,
        overhead_gb=round((total - weights_bytes) / GB, 2),
        total_gb=round(total / GB, 2),
        options=[o for o, _ in options],
        recommended=(reference.card_class or reference.card) if fitting else None,
        recommendation=recommendation,
        arithmetic=_lines(model, spec, memory, gpus, options, lang, assumes),
        caveat=text("train_caveat_qlora", lang) if spec.method == "qlora" else None,
        suggestions=[] if fitting else _suggestions(model, spec, target, lang),
        below_16_bit=spec.method == "qlora",
        finetune=detail,
        lang=lang,
    )


__all__ = ["size_finetune"]
