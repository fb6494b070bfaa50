"""The sales desk's sentences (assistant/data/sales.yaml): `sales_text(key, lang, **values)`."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import yaml

Lang = Literal["en", "es"]


@cache
def _catalogue() -> dict[str, dict[str, str]]:
    raw = resources.files("assistant").joinpath("data", "sales.yaml").read_text(encoding="utf-8")
    catalogue = yaml.safe_load(raw)
    for key, entry in catalogue.items():
        if set(entry) != {"en", "es"}:
            raise ValueError(f"sales.yaml: {key!r} must have exactly 'en' and 'es'")
    return catalogue


def sales_text(key: str, lang: Lang, **values: object) -> str:
    template = _catalogue()[key][lang]
    return template.format(**values) if values else template


def sales_keys() -> list[str]:
    return list(_catalogue())
