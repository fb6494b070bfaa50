"""`sizing calc`: the VRAM calculator from a terminal.

    sizing calc llama-3.1-70b --precision awq --context 8192 --users 4
    sizing calc 70b --precision q4_k_m --engine llamacpp --gpu l40s
    sizing calc "Qwen2.5 32B" --gpu h100-80gb:2 --kv-dtype fp8 --json
    sizing calc my-model --config ./config.json --lang es
    sizing calc meta-llama/Llama-3.3-70B-Instruct          (SIZING_HF_LOOKUPS=true)
    sizing calc --gguf ./model-Q4_K_M.gguf --gpu rtx-4090
    sizing calc llama-3.1-8b --finetune qlora --seq 4k --gpu rtx-3090
    sizing calc 70b --precision fp8 --users 50 --service interactive_chat
    sizing calc llama-3.1-8b --gpu l40s --users target --service voice_agent   (how many users it serves)
    sizing calc llama-3.1-8b --gpu h100-80gb --rate 30/min --input-len 2000 --output-len 300

Prints a table of card options (memory, and the serving estimate: time to first token, tokens/s
per user and in total, with calibrated ranges) and the arithmetic lines a person can check by
hand; `--json` prints the SizingResult object. Bad input exits 2 with one line naming the bad value and the
valid choices.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from assistant.cli.options import (
    add_command,
    add_context_option,
    add_engine_option,
    add_json_flag,
    add_kv_dtype_option,
    add_language_option,
    add_memory_share_option,
)
from tools.catalog import released_name
from tools.errors import InvalidInputError
from tools.performance import capacity_text, performance_line, recommended_label
from tools.texts import integer, number

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.settings import Settings
    from tools import SizingResult
    from tools.finetune import FinetuneSpec
    from tools.schemas import Band, Language, PerformanceEstimate

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*")


def register(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "calc", run)
    parser.add_argument(
        "model",
        nargs="?",
        default="",
        help='catalog id, Hub id (owner/name), alias ("Llama 3.1 70B") or bare size ("70b")',
    )
    parser.add_argument(
        "--precision",
        default=None,
        help="weights: fp32 bf16 fp16 fp8 int8 int4 awq gptq nf4 mxfp4 "
        "q8_0 q6_k q5_k_m q4_k_m q4_0 q3_k_m q2_k (default bf16, or a Hub checkpoint's own)",
    )
    add_context_option(parser)
    parser.add_argument(
        "--users",
        default="1",
        help="concurrent sequences, 'max' for as many as the memory holds, or 'target' for as many as "
        "meet the latency target (--service, --ttft-ms, --tpot-ms; else interactive chat's) (default 1)",
    )
    parser.add_argument(
        "--input-len", default=None, help="prompt tokens per request (default: the service's)"
    )
    parser.add_argument(
        "--output-len", default=None, help="answer tokens per request (default: the service's)"
    )
    parser.add_argument(
        "--rate",
        default=None,
        help="offered requests per second, or per minute/hour/day: 2, 30/min, 500/h, 50k/day",
    )
    parser.add_argument("--ttft-ms", default=None, help="target median time to first token, ms")
    parser.add_argument("--tpot-ms", default=None, help="target median time per output token, ms")
    parser.add_argument(
        "--service",
        default=None,
        help="latency class: interactive_chat code_completion voice_agent document_qa batch_offline",
    )
    parser.add_argument(
        "--measurements",
        default=None,
        metavar="PATH",
        help="your load tests (sizing calibrate add); default tools/data/perf_measured.json",
    )
    add_kv_dtype_option(parser)
    add_engine_option(parser, default=None)
    parser.add_argument(
        "--gpu", default=None, metavar="ID[:N]", help="one card, optionally N of them (h100-80gb:2)"
    )
    add_memory_share_option(parser)
    parser.add_argument(
        "--config", default=None, metavar="PATH", help="a Hugging Face config.json to size instead"
    )
    parser.add_argument(
        "--gguf", default=None, metavar="FILE", help="a local GGUF file: sized from its header, exactly"
    )
    add_language_option(parser, "texts")
    extras = parser.add_argument_group("serving extras")
    extras.add_argument(
        "--max-loras", default="0", help="vLLM LoRA adapter slots kept on the GPUs (default 0)"
    )
    extras.add_argument("--max-lora-rank", default="16", help="rank of those slots (default 16)")
    extras.add_argument(
        "--draft", default=None, metavar="MODEL", help="speculative decoding with this draft model"
    )
    extras.add_argument("--mtp", action="store_true", help="speculative decoding with the model's MTP heads")
    training = parser.add_argument_group("fine-tuning (sizes training instead of serving)")
    training.add_argument("--finetune", default=None, metavar="METHOD", help="full | lora | qlora")
    training.add_argument("--lora-rank", default="16", help="LoRA rank (default 16)")
    training.add_argument("--batch", default="1", help="micro-batch per GPU (default 1)")
    training.add_argument(
        "--seq", default="2048", help="tokens per training sequence, e.g. 4096 or 8k (default 2048)"
    )
    training.add_argument("--optimizer", default="adamw", help="adamw | adamw8bit | sgd (default adamw)")
    training.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="recompute activations in the backward pass (default on)",
    )
    add_json_flag(parser, "print the result as one JSON object")


def parse_count(name: str, value: str) -> int:
    """'8192', '32k', '1m' -> tokens; anything else is one clear error."""
    match = _SIZE.fullmatch(value or "")
    if not match:
        raise InvalidInputError(f"--{name} {value!r} must be a whole number such as 8192 or 32k")
    number = float(match.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]
    if number != int(number):
        raise InvalidInputError(f"--{name} {value!r} must be a whole number")
    return int(number)


def parse_users(value: str) -> int:
    """--users: a count, or 'max' for the most the machine holds."""
    try:
        return parse_count("users", value)
    except InvalidInputError:
        raise InvalidInputError(
            f"--users {value!r} must be a whole number such as 8 or 1k, max (the most the card holds) "
            "or target (the most that meet the latency target)"
        ) from None


def measurements_file(path: str) -> str:
    """A --measurements file that was named must exist: silently sizing without it would mislead."""
    if not Path(path).is_file():
        raise InvalidInputError(
            f"--measurements {path!r}: no such file; give the JSON that sizing calibrate add writes"
        )
    return path


def parse_whole(name: str, value: str) -> int:
    """A count that may be zero ('0', '4')."""
    if not (value or "").strip().isdigit():
        raise InvalidInputError(f"--{name} {value!r} must be a whole number such as 0 or 4")
    return int(value)


_RATE = re.compile(
    r"\s*(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(k)?\s*(?:/\s*(s|sec|second|m|min|minute|h|hr|hour|d|day))?\s*",
    re.I,
)
_PER = {
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "m": 60.0,
    "min": 60.0,
    "minute": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hour": 3600.0,
    "d": 86_400.0,  # a day's volume spread evenly: its average, not its busiest hour
    "day": 86_400.0,
}


def parse_rate(value: str) -> float:
    """'2' or '2/s' -> 2.0 requests/s; '30/min' -> 0.5; '500/h' -> 0.139; '50k/day' -> 0.579 (the
    day's average). Zero or less is refused."""
    match = _RATE.fullmatch(value or "")
    if not match:
        raise InvalidInputError(
            f"--rate {value!r} must be requests per second, minute, hour or day, e.g. 2, 30/min, 500/h, 50k/day"
        )
    scale = 1000.0 if match.group(2) else 1.0
    rate = float(match.group(1)) * scale / _PER[(match.group(3) or "s").lower()]
    if rate <= 0:
        raise InvalidInputError(f"--rate {value!r} must be more than 0 requests per second")
    return rate


def parse_ms(name: str, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        ms = float(value)
    except ValueError:
        raise InvalidInputError(f"--{name} {value!r} must be a number of milliseconds, e.g. 500") from None
    if not 0 < ms < float("inf"):
        raise InvalidInputError(f"--{name} {value!r} must be a positive number of milliseconds")
    return ms


def parse_fraction(name: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise InvalidInputError(f"--{name} {value!r} must be a number between 0.05 and 1.0") from None


def finetune_spec(args: argparse.Namespace) -> FinetuneSpec:
    """--finetune and its knobs; a serving engine next to it is one clear error."""
    from tools.finetune import FinetuneSpec

    if args.engine is not None and args.engine.strip().lower() != "transformers":
        raise InvalidInputError(
            f"--finetune sizes training, not serving: --engine {args.engine} does not apply; drop --engine"
        )
    return FinetuneSpec(
        method=args.finetune,
        lora_rank=parse_count("lora-rank", args.lora_rank),
        batch=parse_count("batch", args.batch),
        seq=parse_count("seq", args.seq),
        optimizer=args.optimizer,
        gradient_checkpointing=args.gradient_checkpointing,
    )


def read_config(path: str) -> dict[str, Any]:
    """The --config file, read no further than tools.config_file.MAX_CONFIG_BYTES."""
    from tools.config_file import read_config_file

    return read_config_file(path)


def run(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    """VRAM arithmetic for a model, precision, context and concurrency

    Size a model on every card class (48gb, 80gb, 2x80gb) or on one card.
    GB = 10^9 bytes; card memory is what nvidia-smi reports."""
    from tools import SizingRequest, calculate_vram
    from tools.performance_measured import load_measurements

    lang = (args.lang or "en").strip().lower()
    if lang not in ("en", "es"):
        raise InvalidInputError(f"--lang {args.lang!r} is not a language of the texts; valid choices: en, es")
    if not args.model.strip() and not args.config and not args.gguf:
        raise InvalidInputError(
            "give a MODEL (catalog id, Hub id, alias or bare size such as 70b), --config PATH or --gguf FILE"
        )
    users_max = (args.users or "").strip().lower() == "max"
    users_target = (args.users or "").strip().lower() == "target"
    fields: dict[str, Any] = {
        "model": args.model,
        "context": parse_count("context", args.context),
        "users": 1 if users_max or users_target else parse_users(args.users),
        "users_max": users_max,
        "users_target": users_target,
        "input_len": parse_count("input-len", args.input_len) if args.input_len is not None else None,
        "output_len": parse_count("output-len", args.output_len) if args.output_len is not None else None,
        "rate": parse_rate(args.rate) if args.rate is not None else None,
        "ttft_ms": parse_ms("ttft-ms", args.ttft_ms),
        "tpot_ms": parse_ms("tpot-ms", args.tpot_ms),
        "service": args.service,
        "measured": load_measurements(measurements_file(args.measurements)) if args.measurements else None,
        "kv_dtype": args.kv_dtype,
        "gpu": args.gpu,
        "gpu_memory_utilization": parse_fraction("gpu-memory-utilization", args.gpu_memory_utilization),
        "config": read_config(args.config) if args.config else None,
        "lang": lang,
    }
    if args.engine is not None:
        fields["engine"] = args.engine
    fields["max_loras"] = parse_whole("max-loras", args.max_loras)
    fields["max_lora_rank"] = parse_count("max-lora-rank", args.max_lora_rank)
    if args.draft:
        fields["draft_model"] = args.draft
    if args.mtp:
        fields["mtp"] = True
    if args.precision is not None:  # unset: the calculator's default, or a Hub checkpoint's own
        fields["precision"] = args.precision
    if args.gguf:
        from assistant.gguf_file import read_gguf

        header = read_gguf(args.gguf)
        fields.update(
            model=args.model.strip() or header.name,
            config=header.config,
            params_b=header.params / 1e9,
            file_weights=header.weights,
            precision=args.precision or header.precision,
            engine=args.engine or "llamacpp",
        )
    if args.finetune is not None:
        fields["finetune"] = finetune_spec(args)
    request = SizingRequest(**fields)
    from assistant.hub_client import hub_from_settings

    result = calculate_vram(request, hub=hub_from_settings(settings))
    stream = out or sys.stdout
    if args.json:
        stream.write(json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n")
    else:
        stream.write(render_table(result, released_name(args.model)) + "\n")
    return 0


# The report's column headers and section words, in order (assistant/data/cli.yaml).
_HEADERS = (
    "col_option",
    "col_gpus",
    "col_usable",
    "col_fits",
    "col_headroom",
    "col_max_seqs",
    "col_ttft",
    "col_tps_user",
    "col_tps_total",
)
_SECTIONS = (
    "arithmetic",
    "recommendation",
    "caveat",
    "suggestions",
    "fits_yes",
    "fits_no",
    "speed",
    "meets_target",
    "misses_target",
    "why_not",
)


def render_table(result: SizingResult, released: str | None = None) -> str:
    """The human-readable report: header, options table, arithmetic, recommendation, caveat.

    `released`: the published name of a model sized as a catalog entry ("DeepSeek R1"), said
    under the header."""
    from assistant.texts import CLI, READING_NOTES

    lang: Language = result.lang
    words = [CLI.text(key, lang) for key in _SECTIONS]
    arithmetic, recommendation, caveat, suggestions, yes, no, speed, meets, misses, why = words
    model = result.model
    header = (
        f"{model.name} · {result.precision} · {result.engine} · {integer(result.context, lang)} tokens × "
        f"{integer(result.users, lang)} · "
        f"KV {result.kv_dtype}"
    )
    if result.finetune is not None:
        ft = result.finetune
        header = f"{model.name} · {ft.method} · {ft.optimizer} · {ft.batch} × {integer(ft.seq, lang)} tokens"
    rows = [tuple(CLI.text(key, lang) for key in _HEADERS)]
    for o in result.options:
        fits, headroom, sequences = (yes if o.fits else no), o.headroom_gb, o.max_concurrent_sequences
        if not o.fits and o.replicas is not None:
            # The layout asked for is refused; the same GPUs serve it as copies: each copy's room, all their sequences.
            plan = o.replicas
            fits = CLI.text("fits_copies", lang, copies=plan.replicas)
            headroom, sequences = plan.headroom_gb, plan.replicas * plan.max_concurrent_sequences
        rows.append(
            (
                o.label,
                str(o.gpus),
                number(o.usable_gb, lang),
                fits,
                ("+" if headroom >= 0 else "") + number(headroom, lang),
                str(sequences),
                *_speed_cells(o.performance, lang),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    table = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    table.insert(1, "  ".join("-" * w for w in widths))
    parts = [header, "", *table, "", f"{arithmetic}:", *(f"  {line}" for line in result.arithmetic)]
    if released:
        parts[1:1] = [READING_NOTES.text("model_released_as", lang, name=released, label=model.name)]
    perf = result.performance
    if perf is not None:
        label = recommended_label(result)
        verdict = "" if perf.meets_target is None else f" ({meets if perf.meets_target else misses})"
        parts += ["", f"{speed}: {performance_line(perf, label, lang)}{verdict}"]
        capacity = capacity_text(perf, label, lang)
        if capacity:
            parts.append(f"{CLI.text('capacity', lang)}: {capacity}")
    parts += ["", f"{recommendation}: {result.recommendation}"]
    for o in result.options:
        if o.serves:
            parts.append(f"  {o.label}: {o.serves} — {o.catch}")
    # An option served as copies is not a "does not fit": the recommendation says how it is served.
    reasons = [
        f"  {o.label}: {o.reason}" for o in result.options if o.reason and not o.fits and o.replicas is None
    ]
    if reasons:
        parts += ["", f"{why}:", *reasons]
    if result.caveat:
        parts += ["", f"{caveat}: {result.caveat}"]
    if result.suggestions:
        parts += ["", f"{suggestions}:", *(f"  - {s}" for s in result.suggestions)]
    return "\n".join(parts)


def _speed_cells(perf: PerformanceEstimate | None, lang: Language) -> tuple[str, str, str]:
    """TTFT, tokens/s per user and in total: best (low–high)."""
    if perf is None:
        return ("–", "–", "–")

    def cell(band: Band, decimals: int = 0) -> str:
        return f"{number(band.best, lang, decimals)} ({number(band.low, lang, decimals)}–{number(band.high, lang, decimals)})"

    mark = "" if perf.meets_target is None else (" ✓" if perf.meets_target else " ✗")
    queue = " ⧗" if perf.saturated else ""
    return (
        cell(perf.ttft_ms) + mark,
        cell(perf.output_tok_s_per_user),
        cell(perf.output_tok_s_total) + queue,
    )
