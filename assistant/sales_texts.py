"""The sales desk's sentences (assistant/data/sales.yaml): `sales_text(key, lang, **values)`."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from tools.i18n import Language


@cache
def _catalogue() -> dict[str, dict[str, str]]:
    raw = resources.files("assistant").joinpath("data", "sales.yaml").read_text(encoding="utf-8")
    catalogue = yaml.safe_load(raw)
    for key, entry in catalogue.items():
        if set(entry) != {"en", "es"}:
            raise ValueError(f"sales.yaml: {key!r} must have exactly 'en' and 'es'")
    return catalogue


def sales_text(key: str, lang: Language, **values: object) -> str:
    template = _catalogue()[key][lang]
    return template.format(**values) if values else template


def sales_keys() -> list[str]:
    return list(_catalogue())
