"""`sizing calibrate`: record measurements of your own hardware; they override the serving estimate.

    sizing loadtest --url http://gpu-1:8000/v1 --model llama --users 8 --requests 64 --json > run.json
    sizing calibrate add --model llama-3.1-8b --gpu h100-80gb --from-loadtest run.json
    sizing calibrate add --model llama-3.1-8b --gpu h100-80gb:2 --users 16 --input-len 1000 \\
        --output-len 200 --ttft-ms 180 --tpot-ms 14 --source "vLLM log, 2026-11-30"
    sizing calibrate add --model qwen3-32b --gpu h100-80gb:2 --from-vllm-log server.log \\
        --input-len 1500 --output-len 300
    sizing calibrate list

A measurement names the setup (model, precision, engine, card × GPUs) and the load (prompt and
answer tokens, concurrent users) with its median TTFT and TPOT. `sizing calc` then reports that
exact setup and load as measured, and scales its estimate for other loads of the same setup.
The file is tools/data/perf_measured.json unless --file names another (pass the same file to
`sizing calc --measurements`).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.cli.options import add_command, add_engine_option
from tools.errors import InvalidInputError

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.settings import Settings


def register(subparsers: Subparsers) -> None:
    def usage(args: argparse.Namespace, settings: Settings) -> int:
        """record load-test measurements of your own hardware (they override the speed estimate)

        Record or list measurements of your own serving setup; see `sizing calibrate add --help`."""
        parser.print_help()
        return 2

    parser = add_command(subparsers, "calibrate", usage)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    add = add_command(actions, "add", run_add)
    add.add_argument("--model", required=True, help="catalog id or alias of the model served")
    add.add_argument("--precision", default="bf16", help="weight format served (default bf16)")
    add_engine_option(add)
    add.add_argument(
        "--gpu", required=True, metavar="ID[:N]", help="card id, optionally :N cards (h100-80gb:2)"
    )
    add.add_argument("--from-loadtest", metavar="JSON", help="a `sizing loadtest --json` report")
    add.add_argument(
        "--from-vllm-log",
        metavar="LOG",
        help="a vLLM server log: its 'Avg generation throughput ... Running: N reqs' lines give the users, "
        "TPOT and total tokens/s (give --input-len and --output-len; TTFT stays estimated unless --ttft-ms)",
    )
    add.add_argument("--users", type=int, help="concurrent users of the run")
    add.add_argument("--input-len", type=int, help="prompt tokens per request")
    add.add_argument("--output-len", type=int, help="answer tokens per request")
    add.add_argument("--ttft-ms", type=float, help="median time to first token, ms")
    add.add_argument("--tpot-ms", type=float, help="median time per output token after the first, ms")
    add.add_argument("--total-tok-s", type=float, help="output tokens/s of all users together")
    add.add_argument("--source", default="", help="where the figures come from")
    add.add_argument(
        "--file",
        default=None,
        metavar="PATH",
        help="measurements file (default tools/data/perf_measured.json)",
    )
    listing = add_command(actions, "list", run_list)
    listing.add_argument("--file", default=None, metavar="PATH", help="measurements file")


def _option_file(option: str, path: str, refusal: str, decode_errors: str = "strict") -> str:
    """The text of the file an option names; a missing or unreadable one is one line naming both."""
    try:
        return Path(path).read_text(encoding="utf-8", errors=decode_errors)
    except FileNotFoundError:
        raise InvalidInputError(f"{option} {path!r}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{option} {path!r} {refusal} ({exc.__class__.__name__})") from None


def _from_loadtest(path: str) -> dict[str, Any]:
    refusal = "is not a loadtest JSON report"
    text = _option_file("--from-loadtest", path, refusal)
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"--from-loadtest {path!r} {refusal} ({exc.__class__.__name__})") from None
    needed = ("users", "prompt_tokens", "max_tokens", "ttft_ms_p50", "tokens_per_s_per_user")
    missing = [key for key in needed if not isinstance(report, dict) or report.get(key) in (None, 0)]
    if missing:
        raise InvalidInputError(
            f"--from-loadtest {path!r} lacks {', '.join(missing)}: run `sizing loadtest --json`"
        )
    return {
        "concurrency": report["users"],
        "input_len": report["prompt_tokens"],
        "output_len": report["max_tokens"],
        "ttft_ms": report["ttft_ms_p50"],
        "tpot_ms": 1000.0 / report["tokens_per_s_per_user"],
        "output_tok_s_total": report.get("tokens_per_s"),
        "source": f"sizing loadtest {report.get('url', '')} ({report.get('requests', '?')} requests)",
    }


# vLLM's periodic engine stats line (vllm/v1/metrics/loggers.py LoggingStatLogger):
# "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1234.5 tokens/s, Running: 16 reqs, ..."
_VLLM_STATS = re.compile(
    r"Avg generation throughput:\s*([\d.]+)\s*tokens/s,\s*Running:\s*(\d+)\s*reqs", re.IGNORECASE
)


def _from_vllm_log(path: str) -> dict[str, Any]:
    """Median generation throughput and running requests over the log's busy intervals."""
    lines = _option_file("--from-vllm-log", path, "is not readable", decode_errors="replace").splitlines()
    busy = []
    for line in lines:
        match = _VLLM_STATS.search(line)
        if match and float(match.group(1)) > 0 and int(match.group(2)) > 0:
            busy.append((float(match.group(1)), int(match.group(2))))
    if not busy:
        raise InvalidInputError(
            f"--from-vllm-log {path!r} has no 'Avg generation throughput: ... Running: N reqs' line with requests running"
        )
    throughput = statistics.median(t for t, _ in busy)
    running = round(statistics.median(r for _, r in busy))
    return {
        "concurrency": running,
        "tpot_ms": 1000.0 * running / throughput,
        "output_tok_s_total": throughput,
        "source": f"vLLM log {Path(path).name} ({len(busy)} busy intervals)",
    }


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    """record one measurement"""
    from pydantic import ValidationError

    from tools.cards import parse_gpu_spec
    from tools.catalog import resolve
    from tools.engines import ENGINE_LABELS, check_engine
    from tools.performance_measured import add_measurement
    from tools.precision import check_precision
    from tools.schemas import Measurement

    card, gpus = parse_gpu_spec(args.gpu)
    if args.from_loadtest and args.from_vllm_log:
        raise InvalidInputError("give --from-loadtest or --from-vllm-log, not both")
    figures = _from_loadtest(args.from_loadtest) if args.from_loadtest else {}
    if args.from_vllm_log:
        figures = _from_vllm_log(args.from_vllm_log)
    typed = {
        "concurrency": args.users,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "ttft_ms": args.ttft_ms,
        "tpot_ms": args.tpot_ms,
        "output_tok_s_total": args.total_tok_s,
    }
    figures.update({key: value for key, value in typed.items() if value is not None})
    _check_throughput(figures)
    # A vLLM log has no time to first token: the measurement then leaves TTFT to the model.
    needed = (
        ("input_len", "output_len", "tpot_ms")
        if args.from_vllm_log
        else ("input_len", "output_len", "ttft_ms", "tpot_ms")
    )
    missing = [f"--{key.replace('_', '-')}" for key in needed if key not in figures]
    if "concurrency" not in figures:
        missing.insert(0, "--users")
    if missing:
        raise InvalidInputError(
            f"calibrate add needs {', '.join(missing)} (or --from-loadtest REPORT.json / --from-vllm-log LOG)"
        )
    try:
        measurement = Measurement(
            model=resolve(args.model).info.id,
            precision=check_precision(args.precision),
            engine=check_engine(args.engine),
            card=card.id,
            gpus=gpus,
            source=args.source or figures.pop("source", ""),
            **{k: v for k, v in figures.items() if k != "source"},
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = {"concurrency": "users"}.get(str(first["loc"][0]), str(first["loc"][0])).replace("_", "-")
        raise InvalidInputError(f"--{field} {first.get('input')!r}: {first['msg']}") from None
    path = add_measurement(measurement, args.file)
    ttft = f"{measurement.ttft_ms:g} ms" if measurement.ttft_ms is not None else "not measured"
    print(
        f"recorded {measurement.model} {measurement.precision} on {ENGINE_LABELS[measurement.engine]} "
        f"{measurement.gpus}× {measurement.card}: {measurement.concurrency} users, "
        f"{measurement.input_len}+{measurement.output_len} tokens, TTFT {ttft}, "
        f"TPOT {measurement.tpot_ms:.2f} ms -> {path}"
    )
    return 0


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    """print the recorded measurements"""
    from tools.performance_measured import load_measurements

    rows = load_measurements(args.file)
    if not rows:
        print("no measurements recorded")
    for m in rows:
        print(
            f"{m.recorded}  {m.model} {m.precision} {m.engine} {m.gpus}× {m.card}  {m.concurrency} users  "
            f"{m.input_len}+{m.output_len} tokens  TTFT {m.ttft_ms if m.ttft_ms is not None else '-'} ms  "
            f"TPOT {m.tpot_ms:.2f} ms  {m.source}"
        )
    return 0


# Prefill pauses make the measured total lower than users × 1000 / TPOT, never much higher.
_THROUGHPUT_SLACK = 1.25


def _check_throughput(figures: dict[str, Any]) -> None:
    """Refuse a total tokens/s that the TPOT and the number of users cannot produce."""
    total, tpot, users = (figures.get(key) for key in ("output_tok_s_total", "tpot_ms", "concurrency"))
    if not (isinstance(total, int | float) and isinstance(tpot, int | float) and isinstance(users, int)):
        return
    if tpot <= 0 or users <= 0:
        return
    ceiling = users * 1000.0 / tpot
    if total > ceiling * _THROUGHPUT_SLACK:
        raise InvalidInputError(
            f"--total-tok-s {total:,.0f} contradicts --tpot-ms {tpot:g} with --users {users}: "
            f"{users} users at {tpot:g} ms per token produce at most about {ceiling:,.0f} tokens/s"
        )
