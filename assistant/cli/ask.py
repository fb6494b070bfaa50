"""`sizing` subcommands: placeholder module, replaced by its owner's issue."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    return None
