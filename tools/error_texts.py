"""A typed error in the visitor's language: its code and values rendered from tools/data/texts.json.

    localized(exc, "es") -> "el número de usuarios debe estar entre 1 y 1.000.000; se ha recibido 0"

English, and an error without a code (or one the catalogue lacks), keep `str(exc)`: the English
line names the value exactly as the CLI prints it.
"""

from __future__ import annotations

from tools.errors import SizingError
from tools.i18n import Language, integer, number
from tools.texts import catalogue, text


def _shown(value: object, lang: Language) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return integer(value, lang)
    if isinstance(value, float):
        return number(value, lang, 2)
    return value


def localized(exc: BaseException, lang: Language) -> str:
    code = getattr(exc, "code", None) if isinstance(exc, SizingError) and lang != "en" else None
    texts = catalogue()
    if not code or f"error_{code}" not in texts:
        if code and code.startswith("unknown_"):
            code = "unknown_choice"
        else:
            return str(exc)
    values = {key: _shown(value, lang) for key, value in exc.values.items()}  # type: ignore[attr-defined]
    name = str(values.get("name", ""))
    if f"error_field_{name}" in texts:
        values["name"] = text(f"error_field_{name}", lang)
    hint = getattr(exc, "hint", None)
    values["hint"] = text("error_did_you_mean", lang, hint=hint) if hint else ""
    return text(f"error_{code}", lang, **values)


__all__ = ["localized"]
