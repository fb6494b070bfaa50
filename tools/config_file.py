"""Reading a Hugging Face config.json from a file or a text, with bounds on what it may hold.

One reader for `sizing calc --config`, the web calculator's upload and the `calculate` API, so
every way in refuses the same things with the same line: a file over MAX_CONFIG_BYTES (or a
device such as /dev/zero, read only that far), NaN or Infinity, numbers of more than
MAX_NUMBER_DIGITS digits, and nesting deeper than MAX_DEPTH.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.errors import ModelConfigError

# Real config.json files are a few KB (Llama 3.1 405B: under 1 KB; Gemma 3 with its
# vision tower: about 2 KB); the web app accepts uploads of up to 1 MB.
MAX_CONFIG_BYTES = 1_000_000
# A config nests a text or vision config, and that a rope_scaling table: a handful of levels.
MAX_DEPTH = 32
# The largest size a config holds (a 10M-token context) has 8 digits; 30 leaves room for ids.
MAX_NUMBER_DIGITS = 30


def read_capped(path: Path, limit: int) -> bytes | None:
    """The file's bytes, or None when it holds more than `limit` (read no further than that)."""
    with path.open("rb") as stream:
        data = stream.read(limit + 1)
    return None if len(data) > limit else data


def read_config_file(path: str | Path, shown: str | None = None) -> dict[str, Any]:
    """The config.json at `path` as a dict; problems raise ModelConfigError naming `shown`."""
    name = shown or str(path)
    try:
        data = read_capped(Path(path), MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ModelConfigError(f"cannot read config {name!r}: no such file") from None
    except OSError as exc:
        raise ModelConfigError(
            f"cannot read config {name!r}: {exc.strerror or exc.__class__.__name__}"
        ) from None
    if data is None:
        raise ModelConfigError(
            f"config {name!r} is larger than {MAX_CONFIG_BYTES // 1000:,} KB; a config.json is a few KB"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelConfigError(f"config {name!r} is not UTF-8 text") from None
    return parse_config_text(text, name)


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a config may hold")


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a {len(digits.lstrip('-'))}-digit number is not a size a config may hold")
    return int(digits)


def _decimal(written: str) -> float:
    if len(written) > MAX_NUMBER_DIGITS + 10:
        raise ValueError(f"the {len(written)}-character number is not a value a config may hold")
    value = float(written)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{written} is too large for a number a config may hold")
    return value


def parse_config_text(text: str, name: str = "config.json") -> dict[str, Any]:
    """A config.json's text as a dict, or ModelConfigError with the reason."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ModelConfigError(f"config {name!r} is larger than {MAX_CONFIG_BYTES // 1000:,} KB")
    try:
        data = json.loads(text, parse_constant=_constant, parse_int=_integer, parse_float=_decimal)
    except json.JSONDecodeError as exc:
        raise ModelConfigError(f"config {name!r} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise ModelConfigError(f"config {name!r} nests more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise ModelConfigError(f"config {name!r}: {exc}") from None
    if not isinstance(data, dict):
        raise ModelConfigError(f"config {name!r} must hold a JSON object, not {_json_type(data)}")
    check_depth(data, name)
    return data


def check_depth(value: Any, name: str = "config.json") -> None:
    """Raise ModelConfigError when objects or lists nest deeper than MAX_DEPTH (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ModelConfigError(f"config {name!r} nests more than {MAX_DEPTH} levels deep")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def _json_type(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
