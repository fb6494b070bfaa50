"""Argument-parser builders the `sizing` subcommands share: the command itself and the options
several commands take with the same meaning and help."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

    # What `ArgumentParser.add_subparsers` returns; generic only to the type checker.
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

Handler = Callable[..., Any]


def add_command(
    subparsers: Subparsers, name: str, handler: Handler | None = None, *, doc: str | None = None
) -> argparse.ArgumentParser:
    """`sizing NAME`, run by `handler` and documented by its docstring (or by `doc`).

    The text's first paragraph is the command's line in the parent's --help; the rest, if any, is the
    description at the top of `sizing NAME --help` (argparse folds its line breaks). What a command
    does is so written once, on the code that does it.
    """
    text = doc if doc is not None else inspect.getdoc(handler)
    if not text:
        raise ValueError(f"command {name!r} has no summary: give its handler a docstring")
    summary, _, description = text.partition("\n\n")
    parser = subparsers.add_parser(name, help=" ".join(summary.split()), description=description or None)
    if handler is not None:
        parser.set_defaults(handler=handler)
    return parser


def add_json_flag(parser: argparse.ArgumentParser, prints: str) -> None:
    """`--json`: the command prints `prints` instead of text for a person."""
    parser.add_argument("--json", action="store_true", help=prints)


# ---------------------------------------------------------------- the calculator's options
# `sizing quote` and `sizing calibrate add` take these with the meaning and help `sizing calc` gives them.


def add_context_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--context", default="8192", help="tokens per sequence, e.g. 8192 or 32k (default 8192)"
    )


def add_kv_dtype_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kv-dtype", default=None, help="KV cache: bf16 fp16 fp8 q8_0 q4_0 (default 16-bit)")


def add_engine_option(parser: argparse.ArgumentParser, default: str | None = "vllm") -> None:
    """`--engine`; `sizing calc` leaves it unset (None) so a GGUF file can choose llama.cpp."""
    parser.add_argument(
        "--engine", default=default, help="vllm | llamacpp | ollama | transformers (default vllm)"
    )


def add_memory_share_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpu-memory-utilization", default="0.9", help="vLLM's share of card memory (default 0.9)"
    )


def add_language_option(parser: argparse.ArgumentParser, of_what: str) -> None:
    """`--lang`: the language of `of_what` ("texts", "table"), checked by the command."""
    parser.add_argument("--lang", default="en", help=f"language of the {of_what}: en | es (default en)")
