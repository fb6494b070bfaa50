"""Words the web app shows, in English and Spanish, and the visitor's language.

The sentences the server writes into outputs live in `data/outputs.yaml`, read by
assistant/texts.py: `text(key, lang)` is that catalogue's view. Static labels are
`data/labels.yaml` (assistant/ui/labels.py). `TASK_PROBLEMS_ES` words the problems of a
compare task file in Spanish, by problem code.
"""

from __future__ import annotations

from assistant.texts import OUTPUTS
from tools.i18n import LANGUAGES, Language

Lang = Language

text = OUTPUTS.text

# A compare task file's problems in Spanish, by the problem code of its TaskFileError (the
# English words, which the CLI prints, are assistant/evals/errors.py: TASK_PROBLEMS). For
# "invalid_field", "invalid_field.<check>" words pydantic's own check when it is listed here.
# `detail` is a library's English message (json, re, jsonschema, pydantic): shown only where
# it says something the Spanish cannot (where in a pattern or a schema the problem is).
TASK_PROBLEMS_ES: dict[str, str] = {
    "not_json": "no es JSON válido (error en la columna {column})",
    "not_an_object": "cada tarea debe ser un objeto JSON",
    "unknown_field": "campo desconocido '{field}' (campos: {fields})",
    "invalid_field": "campo '{field}': valor no válido ({detail})",
    "invalid_field.missing": "falta el campo '{field}'",
    "invalid_field.literal_error": "campo '{field}': debe ser {choices}",
    "invalid_field.greater_than": "campo '{field}': debe ser mayor que {limit}",
    "invalid_field.string_type": "campo '{field}': debe ser un texto",
    "invalid_field.int_type": "campo '{field}': debe ser un número entero",
    "invalid_field.int_parsing": "campo '{field}': debe ser un número entero",
    "invalid_field.int_from_float": "campo '{field}': debe ser un número entero",
    "invalid_field.list_type": "campo '{field}': debe ser una lista",
    "invalid_field.dict_type": "campo '{field}': debe ser un objeto JSON",
    "invalid_field.model_type": "campo '{field}': debe ser un objeto JSON",
    "invalid_task": "tarea no válida ({detail})",
    "prompt_or_messages": "indique exactamente uno de los campos 'prompt' o 'messages'",
    "empty_prompt": "'prompt' está vacío",
    "no_user_message": "'messages' necesita al menos un mensaje con el rol 'user'",
    "needs_expected": "el evaluador '{scorer}' necesita 'expected'",
    "needs_expected_texts": "el evaluador 'contains' necesita 'expected' como texto o lista de textos",
    "needs_expected_text": "el evaluador '{scorer}' necesita 'expected' como texto",
    "bad_regex": "'expected' no es una expresión regular válida ({detail})",
    "schema_without_json": "'schema' solo se aplica al evaluador 'json'",
    "bad_schema": "'schema' no es un esquema JSON válido ({detail})",
    "repeated_id": "la tarea '{key}' repite la línea {first_line} (los id deben ser únicos)",
    "no_tasks": "no hay tareas (se espera un objeto JSON por línea)",
    "no_such_file": "el archivo no existe",
    "not_utf8": "no es texto UTF-8",
    "unreadable": "no se puede leer ({detail})",
    "too_large": "ocupa más de {limit} (divídalo en archivos de tareas más pequeños)",
}


def language_from_header(accept_language: str | None) -> Lang:
    """The visitor's language from an Accept-Language header: Spanish or (by default) English.

    Takes the first of en/es the browser lists, honouring q-values; anything else reads English.
    """
    if not accept_language:
        return "en"
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(accept_language.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                quality = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES:
            ranked.append((-quality, position, primary))
    if not ranked:
        return "en"
    return "es" if min(ranked)[2] == "es" else "en"


__all__ = ["LANGUAGES", "TASK_PROBLEMS_ES", "Lang", "language_from_header", "text"]
