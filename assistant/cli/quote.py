"""`sizing quote`: the priced server configurations that hold one sizing request.

    SIZING_PRICES_FILE=assistant/data/prices.example.yaml sizing quote llama-3.1-70b --precision awq --users 20
    sizing quote 70b --precision fp8 --context 32k --prices ./prices.yaml --utilization 0.3 --json

Takes the calculator's flags. Prints 2–3 configurations ranked (cheapest that fits, most headroom,
fewest GPUs) with monthly, three-year and per-million-output-token costs. Without a price list it
exits 2 saying so: prices are never made up.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from assistant.cli.options import (
    add_command,
    add_context_option,
    add_engine_option,
    add_json_flag,
    add_kv_dtype_option,
    add_language_option,
    add_memory_share_option,
)
from tools.errors import InvalidInputError
from tools.i18n import Language, as_language

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.quote import Quote
    from assistant.settings import Settings


def register(subparsers: Subparsers) -> None:
    parser = add_command(subparsers, "quote", run)
    parser.add_argument("model", help='catalog id, alias ("Llama 3.1 70B") or bare size ("70b")')
    parser.add_argument(
        "--precision", default="bf16", help="weights precision, as in sizing calc (default bf16)"
    )
    add_context_option(parser)
    parser.add_argument("--users", default="1", help="concurrent sequences (default 1)")
    add_kv_dtype_option(parser)
    add_engine_option(parser)
    add_memory_share_option(parser)
    parser.add_argument("--prices", metavar="PATH", help="price list YAML (default SIZING_PRICES_FILE)")
    parser.add_argument(
        "--utilization",
        help="share of the month the server generates, for the cost per million tokens (default SIZING_QUOTE_UTILIZATION)",
    )
    add_language_option(parser, "table")
    add_json_flag(parser, "print the quote as one JSON object")


def run(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    """priced server configurations that hold a sizing request

    Quote the server configurations of the price list (SIZING_PRICES_FILE) that hold the request."""
    from assistant.cli.calc import parse_count, parse_fraction
    from assistant.quote import NoPriceListError, build_quote, price_list_from_settings
    from tools import SizingRequest

    lang = as_language(args.lang or "en")
    if lang is None:
        raise InvalidInputError(f"--lang {args.lang!r} is not a language; valid choices: en, es")
    price_list = price_list_from_settings(settings, Path(args.prices) if args.prices else None)
    if price_list is None:
        raise NoPriceListError(
            "no price list: set SIZING_PRICES_FILE or pass --prices PATH "
            "(format: assistant/data/prices.example.yaml)"
        )
    utilization = settings.quote_utilization
    if args.utilization is not None:
        try:
            utilization = float(args.utilization)
        except ValueError:
            raise InvalidInputError(
                f"--utilization {args.utilization!r} must be a number above 0 and at most 1"
            ) from None
    request = SizingRequest(
        model=args.model,
        precision=args.precision,
        context=parse_count("context", args.context),
        users=parse_count("users", args.users),
        kv_dtype=args.kv_dtype,
        engine=args.engine,
        gpu_memory_utilization=parse_fraction("gpu-memory-utilization", args.gpu_memory_utilization),
        lang=lang,
    )
    quote = build_quote(request, price_list, utilization)
    stream = out or sys.stdout
    if args.json:
        stream.write(json.dumps(quote.public_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        stream.write(render(quote, lang) + "\n")
    return 0


def render(quote: Quote, lang: Language) -> str:
    from assistant.sales import quote_markdown

    return "\n".join(quote_markdown(quote, lang)).strip()
