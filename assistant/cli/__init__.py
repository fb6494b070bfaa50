"""The `sizing` command line.

Run `sizing --help`. Each subcommand lives in its own small module that registers
its parser with the builders of `options.py` (a command's help is its handler's docstring);
heavy libraries are imported inside the handlers, never at import time.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import NoReturn

from tools.errors import SizingError

# Subcommand modules, in the order `--help` lists them. Each exposes register(subparsers).
COMMAND_MODULES = (
    "assistant.cli.calc",
    "assistant.cli.knowledge",
    "assistant.cli.ask",
    "assistant.cli.serve",
    "assistant.cli.evals",
    "assistant.cli.draft",
    "assistant.cli.quote",
    "assistant.cli.leads",
    "assistant.cli.report",
    "assistant.cli.calibrate",
)

EXIT_USAGE = 2
EXIT_INTERNAL = 1


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line naming the bad value, not the two-line usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="sizing",
        description="GPU sizing assistant: VRAM arithmetic, card classes, grounded answers.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from assistant.settings import Settings

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        print(f"sizing {args.command or ''}".rstrip() + f": {_unexpected(args, extra)}", file=sys.stderr)
        return EXIT_USAGE
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        settings = Settings()
    except Exception as exc:  # pydantic ValidationError: bad SIZING_* value
        print(f"sizing: invalid setting: {_first_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(
        level=getattr(logging, settings.log_level.upper(), logging.WARNING),
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # HTTP clients log every request at INFO; that is noise on a terminal.
    for noisy in ("httpx", "httpcore", "urllib3", "chromadb.telemetry", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return int(args.handler(args, settings) or 0)
    except SizingError as exc:
        print(f"sizing {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("sizing: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # last line of defence: no traceback reaches a user
        logging.getLogger("sizing").debug("internal error", exc_info=True)
        print(
            f"sizing {args.command}: internal error: {_first_line(exc)} (set SIZING_LOG_LEVEL=DEBUG for details)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _unexpected(args: argparse.Namespace, extra: list[str]) -> str:
    """What to write instead of arguments the command does not take (`-70b`, `70 b`)."""
    shown = " ".join(extra)
    model = getattr(args, "model", None)
    if extra[0].startswith("-") and extra[0][1:2].isdigit():
        return f"{extra[0]!r} is not an option; write the model without a dash, e.g. {extra[0][1:]!r}"
    if extra[0].startswith("-"):
        return f"unknown option {extra[0]!r} (see sizing {args.command or ''} --help)".replace("  ", " ")
    if isinstance(model, str) and model and args.command == "calc":
        joined = model + "".join(extra)
        return f"unexpected {shown!r} after the model {model!r}; the model is one word, e.g. {joined!r}"
    return f"unexpected argument(s) {shown!r} (see sizing {args.command or ''} --help)".replace("  ", " ")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
