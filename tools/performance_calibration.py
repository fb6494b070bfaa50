"""The published serving measurements of tools/data/performance_calibration.json, ready to predict.

Each point is one measured figure with its setup. `predict` runs the serving model on the point's
setup with given efficiency factors; `conditional_time` does the same for one metric while taking
the other measured figures of the same run as given, which is what the fit needs to stay fast.
"""

from __future__ import annotations

import math
from datetime import date
from functools import cache
from typing import Any, NamedTuple

from tools.cards import card_facts
from tools.catalog import resolve
from tools.kv_cache import KV_BLOCKS
from tools.performance_facts import (
    extra_hardware,
    hardware,
    is_quantized,
    load_data,
    model_facts,
    plain_model_facts,
)
from tools.performance_physics import Factors, Hardware, ModelFacts
from tools.performance_serving import (
    Served,
    next_times,
    offline_batch,
    open_loop,
    prefill_chunk,
    steady_state,
    wave,
)
from tools.precision import FORMATS, PRECISIONS, token_embedding_bytes, weights

GIB = 2**30
# Metric groups: which part of the model a figure tests. Times are compared as times, rates as the
# time per token they imply, so one error scale serves every metric of a group.
DECODE = ("tpot_ms", "decode_tok_s", "output_tok_s_per_user")
PREFILL = ("ttft_ms", "prefill_tok_s")
THROUGHPUT = ("output_tok_s_total", "e2e_latency_ms")
MAX_RATE_USERS = 4096.0  # an offered rate that needs more users than this is past any card's capacity
RATES = ("decode_tok_s", "output_tok_s_per_user", "prefill_tok_s", "output_tok_s_total")


def metric_group(metric: str) -> str:
    if metric in DECODE:
        return "decode"
    if metric in PREFILL:
        return "prefill"
    return "throughput"


class CalibrationPoint(NamedTuple):
    source: str
    url: str
    quote: str
    held_out: bool
    engine: str
    card: str
    gpus: int
    model_id: str
    precision: str
    model: ModelFacts
    hw: Hardware
    chunk: float
    metric: str
    value: float
    prompt: int
    answer: int
    concurrency: int  # concurrent requests (0 for a run at an offered rate)
    siblings: dict[str, float]  # the other figures measured in the same run
    together: bool = False  # the benchmark sends its concurrent requests at once, in waves
    rate: float | None = None  # offered requests per second (open loop), instead of a concurrency
    engine_side: bool = False  # timed in-process (no server in front): no per-request overhead
    chat: bool = False  # the client read a chat endpoint's stream (the default is raw completions)
    # Months from the first release of the model's architecture to the engine's build (`age_months`);
    # None where the source dates neither its build nor its figures.
    age_months: float | None = None

    @property
    def label(self) -> str:
        gpus = f"{self.gpus}× " if self.gpus > 1 else ""
        return f"{self.model_id} {self.precision} {self.engine} {gpus}{self.card}"

    @property
    def load(self) -> str:
        shape = f"{self.prompt}/{self.answer}"
        return f"{shape}@{self.rate:g}/s" if self.rate is not None else f"{shape}×{self.concurrency}"


def _weight_bytes(src: dict[str, Any], spec: dict[str, Any] | None) -> tuple[float, Any]:
    w = src["weights"]
    if "gib" in w:
        return float(w["gib"]) * GIB, None
    if "bpw" in w:
        params = spec["params"] if spec else resolve(src["model"]).info.params
        return params * float(w["bpw"]) / 8, None
    if spec:
        return spec["params"] * FORMATS[w["precision"]].bits / 8, None
    resolved = resolve(src["model"])
    return float(weights(resolved.arch, w["precision"]).bytes), resolved


def _setup(src: dict[str, Any], doc: dict[str, Any]) -> tuple[ModelFacts, Hardware, float]:
    engine, gpus = src["engine"], int(src["gpus"])
    extra_model = doc["extra_models"].get(src["model"])
    weight_bytes, resolved = _weight_bytes(src, extra_model)
    kv_dtype = src.get("kv_dtype") or ("fp16" if engine == "llamacpp" else "bf16")
    precision = src["precision"]
    if extra_model is not None:
        model = plain_model_facts(extra_model, weight_bytes, precision, KV_BLOCKS[kv_dtype][1])
    else:
        resolved = resolved or resolve(src["model"])
        compute_precision = precision if precision in PRECISIONS else "bf16"
        embedding = token_embedding_bytes(resolved.arch, compute_precision)
        model = model_facts(resolved.arch, weight_bytes, embedding, compute_precision, kv_dtype, engine, gpus)
        model = model._replace(fp8_compute=precision == "fp8", quantized=is_quantized(precision))
    card = src["gpu"]
    if card in doc["extra_gpus"]:
        hw = extra_hardware(card, doc["extra_gpus"][card], gpus)
        memory = 24 * GIB
    else:
        found = hardware(card, gpus, src.get("interconnect"))
        if found is None:
            raise ValueError(f"calibration card {card} has no bandwidth in cards.json")
        hw = found
        memory = card_facts(card).usable_bytes
    return model, hw, prefill_chunk(engine, memory)


DAYS_PER_MONTH = 365.25 / 12


def model_type(src: dict[str, Any], doc: dict[str, Any]) -> str:
    extra = doc["extra_models"].get(src["model"])
    return str(extra["model_type"]) if extra is not None else resolve(src["model"]).arch.model_type


def age_months(src: dict[str, Any], doc: dict[str, Any]) -> float | None:
    """Months from the first release of the source model's architecture (its config's model_type,
    `architecture_released`) to the engine's build: the release of the version it names
    (`engine_date`), else the day its figures were published (`published`, a build no later than
    that). None where the file has neither date or no release for the architecture."""
    built = src.get("engine_date") or src.get("published")
    if not built:
        return None
    released = doc["architecture_released"].get(model_type(src, doc))
    if not released:
        return None
    days = (_day(built) - _day(released["date"])).days
    return days / DAYS_PER_MONTH


def _day(written: str) -> date:
    """'2025-02-17', or '2021-06' for a month known to the month (its first day)."""
    return date.fromisoformat(written if len(written) > 7 else f"{written}-01")


# The seventh blind batch (S85 on) is held out whole: the rule was written before it was collected.
FIRST_HELD_OUT_WHOLE = 85


def held_out(source_id: str) -> bool:
    """The rule stated in the calibration file: sources S02, S05, S08, ... are never fitted on, nor
    any source of the seventh blind batch on."""
    number = int(source_id[1:])
    return number % 3 == 2 or number >= FIRST_HELD_OUT_WHOLE


def _run(point: dict[str, Any]) -> tuple[int, int, float]:
    """The run a figure belongs to: its lengths and its load (concurrency, or offered rate)."""
    load = point["concurrency"] if "concurrency" in point else -float(point["request_rate"])
    return int(point["input_len"]), int(point["output_len"]), load


@cache
def calibration_points() -> tuple[CalibrationPoint, ...]:
    return points_of(load_data("performance_calibration.json"))


def points_of(doc: dict[str, Any]) -> tuple[CalibrationPoint, ...]:
    """The scored points of a document shaped like the calibration file."""
    points = []
    for src in doc["sources"]:
        kept = [p for p in src["points"] if "excluded" not in p]
        if not kept:  # a setup kept for the record only: every point excluded, each with its reason
            continue
        model, hw, chunk = _setup(src, doc)
        age = age_months(src, doc)
        runs: dict[tuple[int, int, float], dict[str, float]] = {}
        for p in kept:
            runs.setdefault(_run(p), {})[p["metric"]] = p["value"]
        for p in kept:
            points.append(
                CalibrationPoint(
                    source=src["id"],
                    url=src["url"],
                    quote=src["quote"],
                    held_out=held_out(src["id"]),
                    engine=src["engine"],
                    card=src["gpu"],
                    gpus=int(src["gpus"]),
                    model_id=src["model"],
                    precision=src["precision"],
                    model=model,
                    hw=hw,
                    chunk=chunk,
                    metric=p["metric"],
                    value=float(p["value"]),
                    prompt=int(p["input_len"]),
                    answer=int(p["output_len"]),
                    concurrency=int(p.get("concurrency", 0)),
                    siblings={m: v for m, v in runs[_run(p)].items() if m != p["metric"]},
                    together=src.get("arrivals") == "together",
                    rate=float(p["request_rate"]) if "request_rate" in p else None,
                    engine_side=src.get("harness") == "engine",
                    chat=src.get("endpoint") == "chat",
                    age_months=age,
                )
            )
    return tuple(points)


def as_time(metric: str, value: float, answer: int = 1) -> float:
    """Seconds per unit the figure implies (per token for rates, per request for latencies)."""
    if metric in RATES:
        return 1.0 / value
    return value / 1000.0


def in_process(factors: Factors) -> Factors:
    """The factors of an engine timed in-process (llama-bench, benchmark_latency.py, TensorRT-LLM's
    session benchmark): no front end, so no fixed wait for a first token."""
    return factors._replace(request_overhead_s=0.0, first_token_steps=0.0)


def served(point: CalibrationPoint, factors: Factors) -> Served:
    return Served(point.model, point.hw, point.engine, factors, point.chunk, chat=point.chat)


def predict(point: CalibrationPoint, factors: Factors) -> float:
    """The model's value of the point's metric, in the point's own unit, from the setup alone."""
    bare = in_process(factors)
    if point.engine_side:
        factors = bare
    if point.metric == "prefill_tok_s":
        op = offline_batch(served(point, bare), point.prompt, 1, 1)
        return point.prompt / op.ttft_s
    if point.metric == "decode_tok_s":
        return 1.0 / offline_batch(served(point, factors), 0, point.answer, 1).tpot_s
    if point.metric == "e2e_latency_ms" and (point.together or point.engine_side):
        # A static batch timed in-process (benchmark_latency.py): prefill all, then decode all.
        return offline_batch(served(point, bare), point.prompt, point.answer, point.concurrency).e2e_s * 1000
    setup = served(point, factors)
    if point.rate is not None:
        op, _ = open_loop(setup, point.prompt, point.answer, point.rate, MAX_RATE_USERS)
    else:
        op = (wave if point.together else steady_state)(setup, point.prompt, point.answer, point.concurrency)
    return {
        "e2e_latency_ms": op.e2e_s * 1000,
        "ttft_ms": op.ttft_s * 1000,
        "tpot_ms": op.tpot_s * 1000,
        "output_tok_s_per_user": op.output_tok_s_per_user,
        "output_tok_s_total": op.output_tok_s_total,
    }[point.metric]


def conditional_time(point: CalibrationPoint, factors: Factors) -> float:
    """Like `predict` (as a time, see `as_time`), but the load around a concurrent run is taken
    from the run's own measured figures where they exist: one engine step instead of a fixed
    point, which keeps the fit's grid search fast."""
    if point.together or point.metric not in ("tpot_ms", "ttft_ms", "output_tok_s_per_user"):
        return as_time(point.metric, predict(point, factors))
    s = point.siblings
    tpot = s.get("tpot_ms", point.value if point.metric == "tpot_ms" else math.nan) / 1000
    ttft = s.get("ttft_ms", point.value if point.metric == "ttft_ms" else math.nan) / 1000
    if math.isnan(tpot) or math.isnan(ttft) or (point.rate is None and point.concurrency <= 1):
        return as_time(point.metric, predict(point, factors))
    # At an offered rate the users at once are Little's law on the measured latency.
    users = point.concurrency if point.rate is None else point.rate * (ttft + max(point.answer - 1, 0) * tpot)
    ttft_next, tpot_next = next_times(served(point, factors), point.prompt, point.answer, users, ttft, tpot)
    return ttft_next if point.metric == "ttft_ms" else tpot_next
