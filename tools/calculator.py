"""calculate_vram: one SizingRequest in, one SizingResult out, with the arithmetic shown.

The flow: the request's card-independent facts (tools/scenario.py: the model, the weights at the
precision, the serving extras); the verdict on each card option (tools/evaluation.py, with the
KV layout of tools/kv_cache.py and the engine profiles of tools/engines.py); then the
recommendation, the caveat and the suggestions (tools/advice.py) and the printed arithmetic
(tools/arithmetic.py). Fine-tuning requests go to tools/training.py.

The engine's building blocks are re-exported here, where callers have always imported them.
"""

from __future__ import annotations

from tools.advice import alternatives, below_16_bit, caveat, recommendation, suggestions
from tools.arithmetic import arithmetic_lines, extras_note
from tools.engines import ENGINE_LABELS
from tools.evaluation import (
    NODE_GPUS,
    Candidate,
    Evaluation,
    accelerator,
    candidates,
    estimate,
    evaluate,
    required_usable_bytes,
)
from tools.hub import HubLookup
from tools.i18n import GB
from tools.performance_sizing import add_performance
from tools.scenario import (
    MAX_CONTEXT,
    MAX_USERS,
    Scenario,
    build_scenario,
    default_engine,
    model_weights,
    resolve_request_model,
    serving_extras,
)
from tools.schemas import SizingRequest, SizingResult
from tools.training import size_finetune


def calculate_vram(
    request: SizingRequest, hub: HubLookup | None = None, *, speed: bool = True
) -> SizingResult:
    """Size a model on every card class (or the requested card): the arithmetic, the verdicts,
    the recommendation, the quantization caveat and what would make it fit; with `speed`, each
    option's serving-performance estimate too (`add_performance`). Without it the memory verdicts
    alone, which is all a check of "fits on card X" needs and takes about half the time."""
    if request.finetune is not None:
        return size_finetune(request, hub)
    scenario = build_scenario(request, hub)
    evaluations = [evaluate(scenario, c) for c in candidates(request.gpu, request.lang)]
    fitting = [ev for ev in evaluations if ev.option.fits]
    reference = fitting[0] if fitting else evaluations[-1]
    est = reference.estimate
    kv_total = est.kv_bytes_per_sequence * scenario.users
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
        total_gb=reference.option.total_gb,  # the recommended option's own total
        options=[ev.option for ev in evaluations],
        recommended=recommended,
        recommendation=recommendation(
            scenario, evaluations, reference if fitting else None, required_usable_bytes(scenario, est)
        ),
        arithmetic=arithmetic_lines(scenario, evaluations, reference),
        extras_note=extras_note(scenario, reference),
        caveat=caveat(scenario),
        suggestions=suggestions(scenario, evaluations, request.gpu),
        below_16_bit=below_16_bit(scenario),
        alternatives=[] if fitting else [ev.option for ev in alternatives(scenario, evaluations[-1])],
        lang=scenario.lang,
    )
    return add_performance(request, scenario, evaluations, result) if speed else result


__all__ = [
    "ENGINE_LABELS",
    "GB",
    "MAX_CONTEXT",
    "MAX_USERS",
    "NODE_GPUS",
    "Candidate",
    "Evaluation",
    "Scenario",
    "accelerator",
    "below_16_bit",
    "build_scenario",
    "calculate_vram",
    "candidates",
    "caveat",
    "default_engine",
    "estimate",
    "evaluate",
    "model_weights",
    "required_usable_bytes",
    "resolve_request_model",
    "serving_extras",
]
