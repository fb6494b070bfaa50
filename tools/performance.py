"""Serving performance of one sizing option under one workload, with a calibrated range.

    from tools.performance import estimate_performance, workload_from_request
    workload = workload_from_request(request, context=scenario.context)
    estimate = estimate_performance(scenario, "h100-80gb", 1, workload, max_sequences=64)
    estimate.ttft_ms.best, estimate.output_tok_s_per_user.low, estimate.basis

`estimate_performance` returns a PerformanceEstimate (tools/schemas.py): time to first token,
time per output token, output tokens/s per user and in total, requests/s, each {low, best, high},
and its `basis`: "measured" (the vendor's own measurement of this exact setup and load),
"scaled" (the model, scaled to a measurement of this setup at another load) or "model" (the
roofline of tools/performance_physics.py with the efficiency factors fitted on published
measurements, tools/data/perf_factors.json). An offered request rate becomes a number of
concurrent users by Little's law (users = rate × request latency), solved as a fixed point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from tools.engines import ENGINE_LABELS
from tools.errors import InvalidInputError, UnknownChoiceError
from tools.performance_anchor import product_anchor
from tools.performance_facts import hardware, load_data, model_facts
from tools.performance_measured import load_measurements
from tools.performance_physics import Factors, anchored
from tools.performance_serving import (
    Operating,
    Served,
    offline_batch,
    prefill_chunk,
    steady_state,
    users_at_rate,
)
from tools.schemas import (
    Band,
    Measurement,
    PerformanceEstimate,
    PerformanceTarget,
    PublishedRuns,
    SizingResult,
)
from tools.texts import text

if TYPE_CHECKING:
    from tools.scenario import Scenario
    from tools.schemas import Language, SizingRequest

# The factors the calibration set has for each engine the calculator knows. Ollama runs llama.cpp.
# transformers has no published serving measurement here: it takes the vLLM factors (its basis says
# so) and, having no continuous batching, serves its users as one static batch (prompts, then answers).
ENGINE_FACTORS = {"vllm": "vllm", "llamacpp": "llamacpp", "ollama": "llamacpp", "transformers": "vllm"}
# Published runs whose median source is this far from the estimate's speed (either way) earn a
# sentence next to the figures: the goal's tolerance for tokens/s (docs/performance.md).
PUBLISHED_MISMATCH = 0.25
# The product's engines' names, and those of the engines only the calibration's sources ran.
ENGINE_NAMES = {**ENGINE_LABELS, "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
MAX_RATE = 1_000_000.0
# With no memory count to stop at, a capacity search stops here (vLLM's --max-num-seqs is 1,024).
MAX_CAPACITY_USERS = 4096
MAX_TOKENS = 10_000_000


class Workload(NamedTuple):
    """What the option must serve: request shape, and users or an offered rate."""

    input_len: int
    output_len: int
    users: int  # concurrent users when no rate is given
    rate: float | None  # offered requests per second
    saturate: bool  # as many users as the memory holds
    target: PerformanceTarget | None
    # The request's lengths were given: each sequence holds input_len + output_len tokens, not the
    # whole context, so a paged KV cache holds more of them (`performance_sizing.held_sequences`).
    lengths_given: bool = False
    # As many users as the option serves within the target (`users 'target'`): its capacity.
    fill_target: bool = False


@cache
def service_classes() -> dict[str, Any]:
    return dict(load_data("service_classes.json"))


def check_service(name: str) -> str:
    classes = service_classes()["classes"]
    key = (name or "").strip().lower().replace("-", "_").replace(" ", "_")
    if key not in classes:
        raise UnknownChoiceError("service class", name, list(classes))
    return key


def service_name(service: str | None, lang: Language) -> str:
    if not service:
        return perf_text("perf_custom_service", lang)
    return str(service_classes()["classes"][service]["names"][lang])


def _positive_int(name: str, value: object, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise InvalidInputError(f"{name} must be a whole number of tokens from 1 to {limit:,}, got {value!r}")
    return value


def _positive(name: str, value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise InvalidInputError(f"{name} must be a positive number ({what}), got {value!r}")
    return float(value)


def request_tokens(service: str | None, input_len: int | None, output_len: int | None) -> int | None:
    """Tokens one request holds when its prompt's length was said: the prompt plus the answer
    given, else the service class's answer (the default class when none or an unknown one is
    named). None when no prompt length was said: the class's prompt then fits any context."""
    if input_len is None or input_len <= 0:
        return None
    classes = service_classes()
    cls = classes["classes"].get(service or "", classes["classes"][classes["default"]])
    return input_len + (output_len if output_len and output_len > 0 else int(cls["output_len"]))


def workload_from_request(request: SizingRequest, context: int | None = None) -> Workload:
    """The request's workload: its own lengths, users or rate and targets, else the service class's
    (the default class when none is named). Bad values raise InvalidInputError naming them."""
    context = context or request.context
    service = check_service(request.service) if request.service else None
    cls = service_classes()["classes"][service or service_classes()["default"]]
    output_len = (
        _positive_int("output_len", request.output_len, MAX_TOKENS)
        if request.output_len is not None
        else None
    )
    input_len = (
        _positive_int("input_len", request.input_len, MAX_TOKENS) if request.input_len is not None else None
    )
    if output_len is None:
        output_len = min(int(cls["output_len"]), max(1, context // 4))
    if input_len is None:
        input_len = max(1, min(int(cls["input_len"]), context - output_len))
    explicit = request.input_len is not None or request.output_len is not None
    if explicit and input_len + output_len > context:
        raise InvalidInputError(
            f"input_len + output_len = {input_len + output_len:,} tokens exceeds the context of {context:,}; "
            "raise the context or shorten the request"
        )
    rate = (
        _positive("rate", request.rate, "requests per second, e.g. 2 or 30/min")
        if request.rate is not None
        else None
    )
    if rate is not None and rate > MAX_RATE:
        raise InvalidInputError(f"rate must be at most {MAX_RATE:,.0f} requests per second, got {rate:g}")
    if rate is not None and request.users_max:
        raise InvalidInputError(
            "users 'max' and a rate both set how many users run at once: give one of them"
        )
    if request.users_target and (rate is not None or request.users_max):
        raise InvalidInputError(
            "users 'target' and a rate or users 'max' both set how many users run at once: give one of them"
        )
    ttft = _positive("ttft_ms", request.ttft_ms, "milliseconds") if request.ttft_ms is not None else None
    tpot = _positive("tpot_ms", request.tpot_ms, "milliseconds") if request.tpot_ms is not None else None
    target = None
    if service or ttft is not None or tpot is not None:
        target = PerformanceTarget(
            service=service,
            ttft_ms=ttft if ttft is not None else (cls["ttft_ms"] if service else None),
            tpot_ms=tpot if tpot is not None else (cls["tpot_ms"] if service else None),
        )
    if request.users_target and target is None:  # a capacity needs a target: the default class's (cls)
        target = PerformanceTarget(
            service=service_classes()["default"], ttft_ms=cls["ttft_ms"], tpot_ms=cls["tpot_ms"]
        )
    # A class with no latency target (batch) serves as many users as the memory holds.
    fill = bool(
        request.users_target and target and (target.ttft_ms is not None or target.tpot_ms is not None)
    )
    saturate = bool(
        request.users_max
        or (request.users_target and not fill)
        or (service and cls.get("saturate") and rate is None and request.users == 1)
    )
    return Workload(input_len, output_len, request.users, rate, saturate, target, explicit, fill)


@cache
def fitted() -> dict[str, Any]:
    return dict(load_data("perf_factors.json"))


def factors_for(engine: str, generation: str) -> tuple[Factors, str]:
    """The fitted factors for an engine on a GPU generation, and a short account of them."""
    doc = fitted()
    key = ENGINE_FACTORS[engine]
    row = doc["engines"][key]
    own = row["generations"].get(generation)
    factors = Factors(**(own or row["factors"]))
    scope = f"{key} on {generation}" if own else f"{key} (no {generation} measurement; all generations)"
    detail = f"roofline model, {scope} factors fitted on {row['points']} published figures ({', '.join(row['sources'])})"
    if engine == "transformers":
        detail += "; transformers has no published serving measurement here, vLLM's factors are used"
    return factors, detail


def perf_text(key: str, lang: Language, **fields: object) -> str:
    """A sentence of tools/data/perf_texts.json in the visitor's language (read by tools/texts.py)."""
    return text(key, lang, **fields)


def bands_for(engine: str) -> dict[str, dict[str, float]]:
    """The calibrated error bands for an engine: its own where it has enough fitted sources."""
    doc = fitted()
    own = doc.get("engine_bands", {}).get(ENGINE_FACTORS[engine], {})
    return {group: own.get(group, pooled) for group, pooled in doc["bands"].items()}


@dataclass(frozen=True)
class Setup(Served):
    """The roofline's view of one option (model at its precision, hardware, engine, factors) and
    a short account of the factors."""

    detail: str = ""
    anchored_to: tuple[str, ...] = ()  # the published runs its decode is scaled to (`product_anchor`)


def setup_for(scenario: Scenario, card_id: str, gpus: int) -> Setup | None:
    """None when the card's memory bandwidth is unknown (nothing to estimate from)."""
    hw = hardware(card_id, gpus)
    if hw is None:
        return None
    arch = scenario.model.arch
    scale = scenario.model.params_override / arch.total_params() if scenario.model.params_override else 1.0
    model = model_facts(
        arch,
        scenario.weights.bytes,
        scenario.embedding_bytes,
        scenario.precision,
        scenario.kv_dtype,
        scenario.engine,
        gpus,
        scale,
    )
    factors, detail = factors_for(scenario.engine, hw.generation)
    runs = product_anchor(scenario.model.info.id, card_id, scenario.precision, scenario.engine)
    if runs is not None:
        factors = anchored(factors, runs.ratio)
        detail += (
            f"; decode anchored to the published runs of this model on this card at {scenario.precision} "
            f"({', '.join(runs.sources)}): x{runs.ratio:.2f} the roofline's time per step"
        )
    from tools.cards import card_facts

    chunk = prefill_chunk(scenario.engine, card_facts(card_id).usable_bytes)
    return Setup(
        model,
        hw,
        scenario.engine,
        factors,
        chunk,
        detail=detail,
        anchored_to=runs.sources if runs is not None else (),
    )


def operating_point(setup: Setup, workload: Workload, users: float) -> Operating:
    if setup.engine == "transformers":
        batch = offline_batch(setup, workload.input_len, workload.output_len, max(1, math.ceil(users)))
        rate = users / batch.e2e_s
        return batch._replace(
            concurrency=users, requests_per_s=rate, output_tok_s_total=rate * workload.output_len
        )
    return steady_state(setup, workload.input_len, workload.output_len, users)


def users_for_rate(setup: Setup, workload: Workload, rate: float, max_users: float) -> tuple[float, bool]:
    """Little's law as a fixed point: the users N with N = rate × latency(N). Returns (N, saturated):
    saturated when even `max_users` sequences cannot absorb the rate."""
    return users_at_rate(lambda users: operating_point(setup, workload, users).e2e_s, rate, max_users)


def _band(best: float, band: dict[str, float], rate: bool = False) -> Band:
    """best with its calibrated range; bands are in log(measured time / estimated time)."""
    low_time, high_time = math.exp(band["low"]), math.exp(band["high"])
    if rate:  # a rate is one over a time: a slower (longer) time is a lower rate
        low, high = best / high_time, best / low_time
    else:
        low, high = best * low_time, best * high_time
    return Band(low=round(min(low, best), 4), best=round(best, 4), high=round(max(high, best), 4))


def _exact(value: float) -> Band:
    return Band(low=round(value, 4), best=round(value, 4), high=round(value, 4))


def meets(estimate: PerformanceEstimate, target: PerformanceTarget | None) -> bool | None:
    """p50 targets against the best (median) estimate."""
    if target is None or (target.ttft_ms is None and target.tpot_ms is None):
        return None
    return _meets_at(estimate, target, "best")


def _meets_at(estimate: PerformanceEstimate, target: PerformanceTarget, edge: str) -> bool:
    """The target against one edge of the estimate's times: "best", "low" (the fast edge) or
    "high" (the slow edge)."""
    ok = True
    if target.ttft_ms is not None:
        ok = ok and getattr(estimate.ttft_ms, edge) <= target.ttft_ms
    if target.tpot_ms is not None:
        ok = ok and getattr(estimate.tpot_ms, edge) <= target.tpot_ms
    return ok


def _nearest(measured: list[Measurement], workload: Workload, users: float) -> Measurement:
    def distance(m: Measurement) -> float:
        return (
            abs(math.log(m.concurrency / max(users, 1e-9)))
            + abs(math.log(m.input_len / workload.input_len))
            + abs(math.log(m.output_len / workload.output_len))
        )

    return min(measured, key=distance)


def estimate_performance(
    scenario: Scenario,
    card_id: str,
    gpus: int,
    workload: Workload,
    max_sequences: int | None = None,
    measurements: Sequence[Measurement] | None = None,
) -> PerformanceEstimate | None:
    """TTFT, TPOT, tokens/s per user and in total, requests/s of `gpus` × `card_id` serving the
    scenario's model under `workload`; None when the card's bandwidth is unknown.

    max_sequences: how many sequences the option's memory holds (caps the users; with a rate,
    a rate that needs more is reported as saturated). measurements: the vendor's own load tests
    (default: tools/data/perf_measured.json)."""
    if workload.fill_target:
        return _at_capacity(scenario, card_id, gpus, workload, max_sequences, measurements)
    setup = setup_for(scenario, card_id, gpus)
    if setup is None:
        return None
    held = float(max(max_sequences, 1)) if max_sequences is not None else math.inf
    saturated = False
    if workload.saturate:
        users = held if math.isfinite(held) else float(workload.users)
    elif workload.rate is not None:
        users, saturated = users_for_rate(
            setup, workload, workload.rate, held if math.isfinite(held) else 1e6
        )
    else:
        users = float(workload.users)
        if users > held:  # more users than the memory holds: the rest wait in the queue
            users, saturated = held, True
    op = operating_point(setup, workload, users)
    bands = bands_for(scenario.engine)
    basis, detail = "model", setup.detail
    ttft, tpot, total = op.ttft_s * 1000, op.tpot_s * 1000, op.output_tok_s_total
    pool = list(measurements) if measurements is not None else load_measurements()
    mine = [
        m
        for m in pool
        if m.same_setup(scenario.model.info.id, scenario.precision, scenario.engine, card_id, gpus)
    ]
    estimate_bands = {
        "ttft": _band(ttft, bands["prefill"]),
        "tpot": _band(tpot, bands["decode"]),
        "total": _band(total, bands["throughput"], rate=True),
    }
    if mine:
        m = _nearest(mine, workload, users)
        exact = (m.input_len, m.output_len, m.concurrency) == (
            workload.input_len,
            workload.output_len,
            round(users),
        )
        if exact:
            basis, detail = "measured", f"measured: {m.source or 'sizing calibrate add'} ({m.recorded})"
            tpot = m.tpot_ms
            ttft = m.ttft_ms if m.ttft_ms is not None else ttft  # a log gives no TTFT: the model's stays
            total = m.output_tok_s_total or users * workload.output_len / (
                (ttft + (workload.output_len - 1) * tpot) / 1000
            )
            estimate_bands = {
                "ttft": _exact(ttft) if m.ttft_ms is not None else _band(ttft, bands["prefill"]),
                "tpot": _exact(tpot),
                "total": _exact(total),
            }
        else:
            at = operating_point(
                setup, workload._replace(input_len=m.input_len, output_len=m.output_len), m.concurrency
            )
            ttft_ratio = m.ttft_ms / (at.ttft_s * 1000) if m.ttft_ms is not None else 1.0
            tpot_ratio = m.tpot_ms / (at.tpot_s * 1000)
            ttft, tpot = ttft * ttft_ratio, tpot * tpot_ratio
            total = users * workload.output_len / ((ttft + (workload.output_len - 1) * tpot) / 1000)
            basis = "scaled"
            detail = (
                f"model scaled to the measurement at {m.concurrency} users, {m.input_len}+{m.output_len} tokens "
                f"({m.source or 'sizing calibrate add'}, {m.recorded}): TTFT x{ttft_ratio:.2f}, TPOT x{tpot_ratio:.2f}"
            )
            estimate_bands = {
                "ttft": _band(ttft, bands["prefill"]),
                "tpot": _band(tpot, bands["decode"]),
                "total": _band(total, bands["throughput"], rate=True),
            }
    tpot_band, total_band = estimate_bands["tpot"], estimate_bands["total"]
    per_user = Band(
        low=round(1000 / tpot_band.high, 4),
        best=round(1000 / tpot_band.best, 4),
        high=round(1000 / tpot_band.low, 4),
    )
    requests = Band(
        low=round(total_band.low / workload.output_len, 6),
        best=round(total_band.best / workload.output_len, 6),
        high=round(total_band.high / workload.output_len, 6),
    )
    concurrency = _exact(users) if workload.rate is None or saturated else _band(users, bands["throughput"])
    estimate = PerformanceEstimate(
        input_len=workload.input_len,
        output_len=workload.output_len,
        concurrency=concurrency,
        ttft_ms=estimate_bands["ttft"],
        tpot_ms=tpot_band,
        output_tok_s_per_user=per_user,
        output_tok_s_total=total_band,
        requests_per_s=requests,
        basis=basis,  # type: ignore[arg-type]
        basis_detail=detail,
        anchored_to=list(setup.anchored_to) if basis == "model" else [],
        saturated=saturated,
        target=workload.target,
    )
    if basis == "model":
        runs = published_runs(scenario.model.info.id, card_id, ENGINE_FACTORS[scenario.engine] == "llamacpp")
        estimate = estimate.model_copy(update={"published": runs})
    verdict = meets(estimate, workload.target)
    if saturated and verdict is not None:
        verdict = False
    return estimate.model_copy(update={"meets_target": verdict})


def _at_capacity(
    scenario: Scenario,
    card_id: str,
    gpus: int,
    workload: Workload,
    max_sequences: int | None,
    measurements: Sequence[Measurement] | None,
) -> PerformanceEstimate | None:
    """The estimate at the most users the option serves within the workload's target, up to what
    its memory holds: its capacity. `capacity` is that count with its range: `low` the users the
    slow edge of the calibrated band still serves within the target, `high` those its fast edge
    does; the figures are those at that count. Every time grows with the users (more users never
    make anything faster), so each count is found by bisection. A count of 0: even one user alone
    misses the target (the estimate is then that user's)."""
    target = workload.target
    assert target is not None
    plain = workload._replace(fill_target=False)
    held = max(max_sequences, 1) if max_sequences is not None else MAX_CAPACITY_USERS
    pool = list(measurements) if measurements is not None else load_measurements()
    found: dict[int, PerformanceEstimate | None] = {}

    def at(users: int) -> PerformanceEstimate | None:
        if users not in found:
            found[users] = estimate_performance(
                scenario, card_id, gpus, plain._replace(users=users), held, pool
            )
        return found[users]

    alone = at(1)
    if alone is None:
        return None

    def most(edge: str) -> int:
        def serves(users: int) -> bool:
            estimate = at(users)
            return estimate is not None and _meets_at(estimate, target, edge)

        if not serves(1):
            return 0
        if serves(held):
            return held
        low, high = 1, held  # serves(low), not serves(high)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if serves(middle) else (low, middle)
        return low

    best = most("best")
    chosen = at(max(best, 1))
    assert chosen is not None
    return chosen.model_copy(
        update={
            "capacity": Band(low=most("high"), best=best, high=most("low")),
            "meets_target": best >= 1,
            "held_sequences": held if max_sequences is not None else None,
        }
    )


@cache
def published_runs(model_id: str, card_id: str, llamacpp: bool) -> PublishedRuns | None:
    """How the published runs of `model_id` on `card_id` compare with the roofline's estimate of
    each run's own setup and load: llama.cpp's runs for llama.cpp (and Ollama), the served GPU
    engines' (vLLM, SGLang, TensorRT-LLM) for the others; any card count and precision; fit and
    held-out sources alike (evidence for a reader, not a score). None where the calibration has no
    such run. An estimate at a precision some of them ran is scaled to them (`product_anchor`)."""
    from tools.performance_calibration import as_time, calibration_points, metric_group, predict
    from tools.performance_fit import factors_for as fitted_factors

    engines = fitted()["engines"]
    by_source: dict[str, list[float]] = {}
    engines_seen: set[str] = set()
    for p in calibration_points():
        if p.model_id != model_id or p.card != card_id or metric_group(p.metric) == "prefill":
            continue
        if (p.engine == "llamacpp") != llamacpp:
            continue
        estimate = predict(p, fitted_factors(engines, p.engine, p.hw.generation))
        # Estimated time per token over measured: the measured speed as a share of the estimate's.
        ratio = as_time(p.metric, estimate) / as_time(p.metric, p.value)
        by_source.setdefault(p.source, []).append(math.log(ratio))
        engines_seen.add(p.engine)
    if not by_source:
        return None
    medians = sorted(math.exp(sorted(v)[len(v) // 2]) for v in by_source.values())
    return PublishedRuns(
        sources=sorted(by_source, key=lambda s: int(s[1:])),
        engines=sorted(engines_seen),
        figures=sum(len(v) for v in by_source.values()),
        speed_ratio=Band(
            low=round(medians[0], 3), best=round(medians[len(medians) // 2], 3), high=round(medians[-1], 3)
        ),
    )


def performance_curve(
    scenario: Scenario, card_id: str, gpus: int, workload: Workload, max_sequences: int
) -> list[PerformanceEstimate]:
    """The estimate at 1, 2, 4, ... users up to what the memory holds (the chart's points)."""
    top = max(1, max_sequences)
    users = sorted({*(2**i for i in range(0, 20) if 2**i < top), top})
    out = []
    for n in users:
        point = estimate_performance(
            scenario,
            card_id,
            gpus,
            workload._replace(users=n, rate=None, saturate=False),
            top,
            measurements=[],
        )
        if point is None:
            return []
        out.append(point)
    return out


def basis_text(estimate: PerformanceEstimate, lang: Language) -> str:
    """What the figures rest on, in the visitor's language: a measurement of this setup, the
    model scaled to one, or the calibrated model (with how many published figures it was fitted on)."""
    if estimate.basis == "measured":
        return perf_text("perf_basis_measured", lang, source=estimate.basis_detail.split(": ", 1)[-1])
    if estimate.basis == "scaled":
        return perf_text("perf_basis_scaled", lang, source=estimate.basis_detail)
    # An engine that borrows another's factors (SGLang) fits one of its own, none the product uses.
    points = sum(row["points"] for row in fitted()["engines"].values() if "borrowed_from" not in row)
    if estimate.anchored_to:
        return perf_text("perf_basis_anchored", lang, points=points, sources=", ".join(estimate.anchored_to))
    return perf_text("perf_basis_model", lang, points=points)


def performance_line(estimate: PerformanceEstimate, label: str, lang: Language) -> str:
    """One sentence a visitor reads: the figures with their ranges and what they rest on."""
    from tools.texts import integer, number

    def whole(value: float) -> str:
        return integer(round(value), lang)

    basis = basis_text(estimate, lang)
    line = perf_text(
        "perf_line",
        lang,
        label=label,
        ttft=whole(estimate.ttft_ms.best),
        ttft_low=whole(estimate.ttft_ms.low),
        ttft_high=whole(estimate.ttft_ms.high),
        tps=number(estimate.output_tok_s_per_user.best, lang, 0),
        tps_low=number(estimate.output_tok_s_per_user.low, lang, 0),
        tps_high=number(estimate.output_tok_s_per_user.high, lang, 0),
        total=whole(estimate.output_tok_s_total.best),
        users=number(estimate.concurrency.best, lang, 0 if estimate.concurrency.best >= 10 else 1),
        prompt=integer(estimate.input_len, lang),
        answer=integer(estimate.output_len, lang),
        basis=basis,
    )
    return (
        line + (perf_text("perf_queue", lang) if estimate.saturated else "") + published_text(estimate, lang)
    )


def capacity_range(capacity: Band, lang: Language) -> str:
    """ " (low–high over the estimate's range)" where the band moves the count; empty where every
    edge gives the same count (the memory caps them all)."""
    from tools.texts import integer

    if capacity.low == capacity.high:
        return ""
    low, high = integer(round(capacity.low), lang), integer(round(capacity.high), lang)
    return perf_text("perf_capacity_range", lang, low=low, high=high)


def memory_limits(estimate: PerformanceEstimate) -> bool:
    """Whether the memory, not the speed, sets a capacity: the count is all the memory holds."""
    held = estimate.held_sequences
    return estimate.capacity is not None and held is not None and estimate.capacity.best >= held


def capacity_text(estimate: PerformanceEstimate, label: str, lang: Language) -> str:
    """With users 'target': how many users the option serves within the target, with the range its
    band gives, and whether the memory or the speed sets the limit; empty for any other estimate."""
    from tools.texts import integer

    users = estimate.capacity
    if users is None or estimate.held_sequences is None or estimate.target is None:
        return ""
    return perf_text(
        "perf_capacity" if users.best >= 1 else "perf_capacity_none",
        lang,
        label=label,
        users=integer(round(users.best), lang),
        target=target_text(estimate.target, lang),
        range=capacity_range(users, lang),
        held=integer(estimate.held_sequences, lang),
        limit=perf_text("perf_limit_memory" if memory_limits(estimate) else "perf_limit_speed", lang),
    )


def recommended_label(result: SizingResult) -> str:
    """The label of the option `result.performance` is for: the recommended one."""
    option = result.recommended_option()
    return option.label if option is not None else ""


def speed_summary(result: SizingResult) -> str:
    """The recommended option's speed in the result's language: the figures with their ranges and
    what they rest on, the verdict against the target where one was set, and the capacity where
    it was asked; empty without an estimate. What a model is handed to quote (`compact_result`)."""
    estimate = result.performance
    if estimate is None:
        return ""
    label, lang = recommended_label(result), result.lang
    parts = [performance_line(estimate, label, lang)]
    capacity = capacity_text(estimate, label, lang)
    if capacity:
        parts.append(capacity)
    elif estimate.meets_target is not None and estimate.target is not None:
        key = "perf_verdict_meets" if estimate.meets_target else "perf_verdict_misses"
        parts.append(perf_text(key, lang, target=target_text(estimate.target, lang)))
    return " ".join(parts)


def published_text(estimate: PerformanceEstimate, lang: Language) -> str:
    """A sentence when published runs of this model on this card were much slower or faster than
    the roofline's estimate and the estimate is not anchored to them (no run at its precision);
    empty otherwise."""
    from tools.texts import number

    runs = estimate.published
    if runs is None or estimate.anchored_to or abs(runs.speed_ratio.best - 1.0) <= PUBLISHED_MISMATCH:
        return ""  # an estimate anchored to the runs already says so in its basis (`basis_text`)
    low, high = number(runs.speed_ratio.low, lang, 1), number(runs.speed_ratio.high, lang, 1)
    return perf_text(
        "perf_published_slower" if runs.speed_ratio.best < 1 else "perf_published_faster",
        lang,
        sources=", ".join(runs.sources),
        engines=", ".join(ENGINE_NAMES.get(e, e) for e in runs.engines),
        ratio=number(runs.speed_ratio.best, lang, 1),
        spread=f" ({low}–{high}×)" if low != high else "",
    )


def target_text(target: PerformanceTarget, lang: Language) -> str:
    from tools.texts import integer, number

    service = service_name(target.service, lang)
    if target.ttft_ms is not None and target.tpot_ms is not None:
        return perf_text(
            "perf_target",
            lang,
            service=service,
            ttft=integer(round(target.ttft_ms), lang),
            tps=number(1000 / target.tpot_ms, lang, 0),
        )
    if target.ttft_ms is not None:
        return perf_text(
            "perf_target_ttft_only", lang, service=service, ttft=integer(round(target.ttft_ms), lang)
        )
    return perf_text(
        "perf_target_tps_only", lang, service=service, tps=number(1000 / (target.tpot_ms or 1), lang, 0)
    )
