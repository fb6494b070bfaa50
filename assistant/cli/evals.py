"""`sizing compare` and `sizing loadtest`: measure what quantization costs, on your own tasks.

    sizing compare --a-url http://gpu-1:8000/v1 --a-model llama-70b-bf16 \\
                   --b-url http://gpu-2:8000/v1 --b-model llama-70b-awq --tasks examples/sizing-desk-tasks.jsonl
    sizing loadtest --url http://gpu-2:8000/v1 --model llama-70b-awq --users 8 --requests 64 --target-p95-ms 8000

Run `sizing compare --help` / `sizing loadtest --help` for every option.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.cli.options import add_command, add_json_flag

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.evals.client import Endpoint
    from assistant.evals.compare import ComparePlan, CompareReport, TaskResult
    from assistant.settings import Settings

# loadtest: the run worked but the endpoint missed --target-p95-ms (run_loadtest's docstring names it).
EXIT_TARGET_MISSED = 3


def register(subparsers: Subparsers) -> None:
    _register_compare(subparsers)
    _register_loadtest(subparsers)


# ---------------------------------------------------------------------------- compare


def _register_compare(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "compare", run_compare)
    parser.add_argument("--a-url", required=True, help="base URL of endpoint A (e.g. http://host:8000/v1)")
    parser.add_argument("--a-model", required=True, help="model name to send to endpoint A")
    parser.add_argument("--b-url", required=True, help="base URL of endpoint B")
    parser.add_argument("--b-model", required=True, help="model name to send to endpoint B")
    parser.add_argument("--tasks", required=True, type=Path, help="JSONL task file (see examples/)")
    parser.add_argument("--judge-url", help="base URL of a third model that grades tasks with scorer 'judge'")
    parser.add_argument("--judge-model", help="model name of the judge")
    parser.add_argument("--concurrency", type=int, default=4, help="tasks in flight at once (default 4)")
    parser.add_argument(
        "--max-tokens", type=int, default=512, help="answer length cap per task (default 512)"
    )
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    _add_key_options(parser, ("a", "b", "judge"))
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("compare-report.html"),
        help="HTML report (default compare-report.html)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="JSONL results file, appended per task (default: next to --out, .results.jsonl)",
    )
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument(
        "--resume",
        action="store_true",
        help="keep the results file's successful tasks; run the missing and the failed ones again",
    )
    resume.add_argument("--overwrite", action="store_true", help="start the results file over")
    parser.add_argument(
        "--blind", action="store_true", help="also write a blind review sheet (shuffled labels) and its key"
    )
    parser.add_argument("--seed", type=int, help="seed of the blind shuffle (default: random)")
    add_json_flag(parser, "print the summary as JSON instead of Markdown")


def _add_key_options(parser: argparse.ArgumentParser, sides: tuple[str, ...]) -> None:
    parser.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the API key for the endpoints (none is sent by default)",
    )
    for side in sides:
        parser.add_argument(
            f"--{side}-api-key-env", metavar="VAR", help=f"environment variable with the key for {side} only"
        )


def _api_key(args: argparse.Namespace, side: str | None) -> str | None:
    # Keys come from the environment, never from the command line (which `ps` shows to everyone).
    from assistant.evals.errors import EvalOptionError

    variable = (getattr(args, f"{side}_api_key_env", None) if side else None) or args.api_key_env
    if not variable:
        return None
    value = os.environ.get(variable, "")
    if not value:
        raise EvalOptionError(f"environment variable {variable} (named for the API key) is not set")
    return value


def _endpoint(args: argparse.Namespace, side: str | None) -> Endpoint:
    """The endpoint that --SIDE-url, --SIDE-model (--url, --model without a side) and the key options name."""
    from assistant.evals.client import Endpoint

    prefix = f"{side}_" if side else ""
    return Endpoint(
        url=getattr(args, f"{prefix}url"),
        model=getattr(args, f"{prefix}model"),
        api_key=_api_key(args, side),
        timeout_s=args.timeout,
    )


def _compare_plan(args: argparse.Namespace) -> ComparePlan:
    from assistant.evals.compare import ComparePlan
    from assistant.evals.errors import EvalOptionError
    from assistant.evals.tasks import load_tasks

    if bool(args.judge_url) != bool(args.judge_model):
        raise EvalOptionError("--judge-url and --judge-model go together")
    plan = ComparePlan(
        a=_endpoint(args, "a"),
        b=_endpoint(args, "b"),
        judge=_endpoint(args, "judge") if args.judge_url else None,
        tasks=load_tasks(args.tasks),
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        concurrency=args.concurrency,
    )
    plan.check()
    return plan


def _sibling(out: Path, suffix: str) -> Path:
    return out.with_name(out.stem + suffix)


def _quiet_http_logs(settings: Settings) -> None:
    # One INFO line per request from the HTTP client would bury the progress bar and the figures.
    if settings.log_level.upper() != "DEBUG":
        for name in ("httpx", "httpx2", "openai"):
            logging.getLogger(name).setLevel(logging.WARNING)


def run_compare(args: argparse.Namespace, settings: Settings) -> int:
    """run a task file against two endpoints and compare the answers side by side

    Send every task of a JSONL file to two OpenAI-compatible endpoints (say, one model at 16 bits and
    at 4 bits), score both, and write a side-by-side HTML report, a Markdown summary and a JSONL file of
    results appended as each task finishes."""
    from tqdm import tqdm

    _quiet_http_logs(settings)
    from assistant.evals.compare import ResultsLog, iter_compare
    from assistant.evals.stats import counted

    plan = _compare_plan(args)
    out: Path = args.out
    results_path: Path = args.results or _sibling(out, ".results.jsonl")
    # The latest result of each task: an earlier failure is replaced when its task runs again.
    latest: dict[str, TaskResult] = {}
    with ResultsLog.open(results_path, plan, resume=args.resume, overwrite=args.overwrite) as log:
        latest.update((result.key, result) for result in log.previous)
        progress = tqdm(
            total=len(plan.tasks),
            initial=log.finished,
            desc="compare",
            unit="task",
            file=sys.stderr,
            disable=None,
        )
        try:
            for result in iter_compare(plan, previous=log.previous):
                log.append(result)
                latest[result.key] = result
                progress.update(1)
        except KeyboardInterrupt:
            progress.close()
            files = _write_reports(args, plan, list(latest.values()), results_path)
            print(
                f"sizing compare: interrupted with {len(latest)} of {counted(len(plan.tasks), 'task')} "
                f"done; partial report {files['html']}; rerun with --resume to finish",
                file=sys.stderr,
            )
            raise
        progress.close()
    results = list(latest.values())
    files = _write_reports(args, plan, results, results_path)
    report = _summary(plan, results)
    if args.json:
        print(json.dumps({**report.json_summary(), "files": files}, ensure_ascii=False, indent=2))
    else:
        from assistant.evals.report import render_markdown

        print(render_markdown(report), end="")
        print("\nFiles: " + ", ".join(f"{name} {path}" for name, path in files.items()))
    return 0


def _summary(plan: ComparePlan, results: list[TaskResult]) -> CompareReport:
    from assistant.evals.compare import summarize

    return summarize(plan, results)


def _write_reports(
    args: argparse.Namespace, plan: ComparePlan, results: list[TaskResult], results_path: Path
) -> dict[str, str]:
    from assistant.evals.errors import EvalError
    from assistant.evals.report import render_blind, render_html, render_markdown

    report = _summary(plan, results)
    out: Path = args.out
    files = {"html": out, "markdown": _sibling(out, ".md")}
    contents = {"html": render_html(report), "markdown": render_markdown(report)}
    if args.blind:
        blind_html, key = render_blind(report, seed=args.seed)
        files["blind_html"] = _sibling(out, ".blind.html")
        files["blind_key"] = _sibling(out, ".blind-key.json")
        contents["blind_html"] = blind_html
        contents["blind_key"] = json.dumps(key, indent=2, ensure_ascii=False) + "\n"
    for name, path in files.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".tmp")
            partial.write_text(contents[name], encoding="utf-8")
            partial.replace(path)  # a reader never sees a half-written report
        except OSError as exc:
            raise EvalError(f"cannot write {path}: {exc.strerror or exc}") from None
    written = {name: str(path) for name, path in files.items()}
    written["results"] = str(results_path)
    return written


# ---------------------------------------------------------------------------- loadtest


def _register_loadtest(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "loadtest", run_loadtest)
    parser.add_argument("--url", required=True, help="base URL of the endpoint (e.g. http://host:8000/v1)")
    parser.add_argument("--model", required=True, help="model name to send")
    parser.add_argument("--users", type=int, required=True, help="concurrent users")
    parser.add_argument("--requests", type=int, required=True, help="requests in all, shared by the users")
    parser.add_argument(
        "--prompt-tokens", type=int, default=256, help="approximate prompt length (default 256)"
    )
    parser.add_argument("--max-tokens", type=int, default=128, help="output tokens per request (default 128)")
    parser.add_argument("--target-p95-ms", type=float, help="end-to-end p95 latency the endpoint must meet")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    parser.add_argument(
        "--ignore-eos",
        action="store_true",
        help="ask the server to always write --max-tokens (vLLM extension)",
    )
    _add_key_options(parser, ())
    add_json_flag(parser, "print the figures as JSON")


def run_loadtest(args: argparse.Namespace, settings: Settings) -> int:
    """stream concurrent requests to an endpoint and report TTFT, latency and tokens/s

    N users, each sending streaming requests one after another, R requests in all. Reports time to first
    token, end-to-end latency, output tokens/s per user and in total, errors, and a verdict against
    --target-p95-ms (exit code 3 when the target is missed)."""
    from tqdm import tqdm

    _quiet_http_logs(settings)
    from assistant.evals.loadtest import LoadPlan, render_load_text
    from assistant.evals.loadtest import run_loadtest as run_load

    # Every field of the plan but the endpoint is the option of the same name.
    options = {
        field.name: getattr(args, field.name) for field in fields(LoadPlan) if field.name != "endpoint"
    }
    plan = LoadPlan(endpoint=_endpoint(args, None), **options)
    plan.check()
    with tqdm(total=plan.requests, desc="loadtest", unit="req", file=sys.stderr, disable=None) as progress:
        result = run_load(plan, on_request=lambda _answer: progress.update(1))
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print(render_load_text(result), end="")
    return EXIT_TARGET_MISSED if result.verdict == "fail" else 0
