"""Words the web app shows, in English and Spanish.

Two kinds: `LABELS_ES` translates the static labels (Gradio's `gr.I18n` picks them by the
browser's locale; the English text is the key, so any other locale reads English), and
`TEXTS` holds the sentences the server writes into outputs, looked up with `text(key, lang)`.
`TASK_PROBLEMS_ES` words the problems of a compare task file in Spanish, by problem code.
"""

from __future__ import annotations

from typing import Literal

Lang = Literal["en", "es"]

LANGUAGES: tuple[Lang, ...] = ("en", "es")

# Static labels: English key -> Spanish. Keys must not contain "}" (Gradio's i18n marker parser).
LABELS_ES: dict[str, str] = {
    "Sizing Assistant": "Asistente de dimensionamiento",
    "GPU sizing with the arithmetic shown: which card fits your model, why, and what quantization costs.": (
        "Dimensionamiento de GPU con la aritmética a la vista: qué tarjeta cabe su modelo, por qué "
        "y qué cuesta la cuantización."
    ),
    "Chat": "Chat",
    "Calculator": "Calculadora",
    "Compare": "Comparar",
    "Conversation": "Conversación",
    "Your question": "Su pregunta",
    "Ask about a model, a card, a context or a number of users…": (
        "Pregunte por un modelo, una tarjeta, un contexto o un número de usuarios…"
    ),
    "Send": "Enviar",
    "New conversation": "Nueva conversación",
    "Sales draft": "Borrador comercial",
    "Turn the conversation's last recommendation into a reply for the customer, in the customer's language.": (
        "Convierta la última recomendación de la conversación en una respuesta para el cliente, "
        "en el idioma del cliente."
    ),
    "Customer name (optional)": "Nombre del cliente (opcional)",
    "Draft the customer reply": "Redactar la respuesta al cliente",
    "Reply (Markdown, ready to copy)": "Respuesta (Markdown, lista para copiar)",
    "Download .md": "Descargar .md",
    "Markdown source": "Texto Markdown",
    "0 uses the model above; any other number sizes a model of that size.": (
        "0 usa el modelo de arriba; cualquier otro número dimensiona un modelo de ese tamaño."
    ),
    "Number of cards": "Número de tarjetas",
    "Model from": "Modelo a partir de",
    "Catalog": "Catálogo",
    "Parameter count": "Número de parámetros",
    "config.json": "config.json",
    "Model": "Modelo",
    "Parameters (billions)": "Parámetros (miles de millones)",
    "Hugging Face config.json": "config.json de Hugging Face",
    "Precision": "Precisión",
    "KV cache precision": "Precisión de la caché KV",
    "Context (tokens per sequence)": "Contexto (tokens por secuencia)",
    "Concurrent users": "Usuarios concurrentes",
    "Engine": "Motor",
    "Card": "Tarjeta",
    "Memory chart": "Gráfico de memoria",
    "Verdict": "Veredicto",
    "The arithmetic": "La aritmética",
    "The Compare tab is not available in this build.": "La pestaña Comparar no está disponible en esta versión.",
    # The Compare tab (assistant/evals/ui.py: LABELS)
    (
        "Run a few tasks against two OpenAI-compatible endpoints (say, one model at 16 bits and at 4 bits) "
        "and read the answers side by side. Up to 25 tasks; the requests are sent by this "
        "server. For full reports, blind review and resumable runs use `sizing compare`."
    ): (
        "Ejecute unas pocas tareas contra dos endpoints compatibles con OpenAI (por ejemplo, un modelo a 16 "
        "bits y a 4 bits) y lea las respuestas lado a lado. Hasta 25 tareas; las peticiones las envía este "
        "servidor. Para informes completos, revisión a ciegas y ejecuciones reanudables use `sizing compare`."
    ),
    "A: endpoint URL": "A: URL del endpoint",
    "A: model": "A: modelo",
    "B: endpoint URL": "B: URL del endpoint",
    "B: model": "B: modelo",
    "API key and judge (optional)": "Clave de API y juez (opcional)",
    "API key sent to the endpoints": "Clave de API enviada a los endpoints",
    "Judge endpoint URL (for scorer 'judge')": "URL del endpoint juez (para el evaluador 'judge')",
    "Judge model": "Modelo juez",
    "Tasks (JSONL, one per line)": "Tareas (JSONL, una por línea)",
    "…or upload a task file": "…o suba un archivo de tareas",
    "Run comparison": "Ejecutar la comparación",
    "Side by side": "Lado a lado",
}

TEXTS: dict[str, dict[Lang, str]] = {
    "chart_title": {
        "en": "Memory needed against each card's usable memory",
        "es": "Memoria necesaria frente a la memoria utilizable de cada tarjeta",
    },
    "chart_needed": {
        "en": "The model in memory (weights + KV cache + overhead)",
        "es": "El modelo en memoria (pesos + caché KV + sobrecarga)",
    },
    "weights": {"en": "Weights", "es": "Pesos"},
    "kv_cache": {"en": "KV cache", "es": "Caché KV"},
    "overhead": {"en": "Overhead", "es": "Sobrecarga"},
    "usable": {"en": "usable", "es": "utilizables"},
    "fits": {"en": "fits", "es": "cabe"},
    "fits_spare": {"en": "fits, {gb} GB spare", "es": "cabe, sobran {gb} GB"},
    "short_by": {"en": "does not fit, {gb} GB short", "es": "no cabe, faltan {gb} GB"},
    "need_line": {
        "en": "what each option must hold, with the engine's reserve",
        "es": "lo que cada opción debe alojar, con la reserva del motor",
    },
    "needs_here": {
        "en": "needs {gb} GB usable with the engine's reserve",
        "es": "necesita {gb} GB utilizables con la reserva del motor",
    },
    "verdict_fits": {"en": "Recommended: {label}", "es": "Recomendada: {label}"},
    "verdict_none": {
        "en": "None of these cards fits this configuration",
        "es": "Ninguna de estas tarjetas cabe esta configuración",
    },
    "col_card": {"en": "Card", "es": "Tarjeta"},
    "col_usable": {"en": "Usable", "es": "Utilizable"},
    "col_fits": {"en": "Fits (headroom)", "es": "Cabe (margen)"},
    "col_sequences": {"en": "Max sequences", "es": "Secuencias máx."},
    "col_decode": {"en": "Tokens/s per user (range)", "es": "Tokens/s por usuario (rango)"},
    "serves": {"en": "Serves", "es": "Sirve para"},
    "catch": {"en": "The catch", "es": "La pega"},
    "caveat": {"en": "Quantization caveat", "es": "Advertencia sobre la cuantización"},
    "suggestions": {"en": "Suggestions", "es": "Sugerencias"},
    "arithmetic": {"en": "The arithmetic", "es": "La aritmética"},
    "reference_note": {"en": "Note", "es": "Nota"},
    "bad_input": {"en": "Cannot calculate: {message}", "es": "No se puede calcular: {message}"},
    "pick_model": {
        "en": "Choose a model, enter a parameter count or upload a config.json.",
        "es": "Elija un modelo, escriba un número de parámetros o suba un config.json.",
    },
    "bad_config": {
        "en": "The uploaded file is not a readable JSON config: {message}",
        "es": "El archivo subido no es un config JSON legible: {message}",
    },
    "rate_limited": {
        "en": (
            "You are sending messages faster than I can answer everyone fairly "
            "({limit} a minute). Please wait about {seconds} s and ask again — your conversation is kept."
        ),
        "es": (
            "Está enviando mensajes más rápido de lo que puedo atender a todos con justicia "
            "({limit} por minuto). Espere unos {seconds} s y vuelva a preguntar: la conversación se conserva."
        ),
    },
    "internal_error": {
        "en": "Something went wrong on our side while answering. Please try again in a moment.",
        "es": "Algo falló de nuestro lado al responder. Vuelva a intentarlo en un momento.",
    },
    "cannot_answer": {"en": "I cannot answer that: {message}", "es": "No puedo responder a eso: {message}"},
    "sources": {"en": "Sources", "es": "Fuentes"},
    "empty_message": {
        "en": "Ask a question about a model, a card, a context length or a number of users.",
        "es": "Haga una pregunta sobre un modelo, una tarjeta, una longitud de contexto o un número de usuarios.",
    },
    "truncated": {
        "en": "Your message was longer than {limit} characters; I read the first {limit}.",
        "es": "Su mensaje tenía más de {limit} caracteres; he leído los primeros {limit}.",
    },
    "no_recommendation": {
        "en": "There is no recommendation to draft from yet: ask a sizing question in the chat first.",
        "es": "Aún no hay ninguna recomendación para redactar: haga primero una pregunta de dimensionamiento.",
    },
    # The Compare tab's runtime texts (assistant/evals/ui.py)
    "compare_tasks_one": {"en": "1 task", "es": "1 tarea"},
    "compare_tasks_many": {"en": "{count} tasks", "es": "{count} tareas"},
    "compare_running": {
        "en": "Running {tasks} against both endpoints…",
        "es": "Ejecutando {tasks} contra los dos endpoints…",
    },
    "compare_progress": {"en": "{done} of {tasks} done…", "es": "Progreso: {done} de {tasks}…"},
    "compare_col_task": {"en": "task", "es": "tarea"},
    "compare_col_scorer": {"en": "scorer", "es": "evaluador"},
    "compare_col_a_answer": {"en": "A answer", "es": "respuesta A"},
    "compare_col_a_score": {"en": "A score", "es": "puntuación A"},
    "compare_col_b_answer": {"en": "B answer", "es": "respuesta B"},
    "compare_col_b_score": {"en": "B score", "es": "puntuación B"},
    "compare_no_scorer": {"en": "none", "es": "ninguno"},
    "compare_failed_answer": {"en": "[failed: {error}]", "es": "[falló: {error}]"},
    "compare_empty_field": {"en": "{field} is empty", "es": "falta {field}"},
    "compare_field_a_url": {"en": "A URL", "es": "la URL de A"},
    "compare_field_a_model": {"en": "A model", "es": "el modelo de A"},
    "compare_field_b_url": {"en": "B URL", "es": "la URL de B"},
    "compare_field_b_model": {"en": "B model", "es": "el modelo de B"},
    "compare_judge_pair": {
        "en": "give both the judge URL and the judge model, or neither",
        "es": "indique a la vez la URL y el modelo del juez, o ninguno de los dos",
    },
    "compare_no_tasks": {
        "en": "paste JSONL tasks or upload a task file",
        "es": "pegue tareas en JSONL o suba un archivo de tareas",
    },
    "compare_too_many": {
        "en": "{tasks}; this tab runs at most {limit} (use `sizing compare` for more)",
        "es": "{tasks}; esta pestaña ejecuta como máximo {limit} (use `sizing compare` para más)",
    },
    "compare_pasted_tasks": {"en": "tasks", "es": "tareas"},
    "compare_task_at_line": {"en": "{source}:{line}: {problem}", "es": "{source}, línea {line}: {problem}"},
    "compare_task_in_file": {"en": "{source}: {problem}", "es": "{source}: {problem}"},
    "compare_or": {"en": "or", "es": "o"},
    "compare_cannot_run": {
        "en": "Cannot run the comparison: {message}",
        "es": "No se puede ejecutar la comparación: {message}",
    },
    "compare_title": {"en": "Compare: A = {a} vs B = {b}", "es": "Comparación: A = {a} frente a B = {b}"},
    "compare_judge": {"en": "Judge: `{judge}`", "es": "Juez: `{judge}`"},
    "compare_partial": {
        "en": "**Partial:** {done} of {tasks} finished.",
        "es": "**Parcial:** {done} de {tasks}; la ejecución se interrumpió.",
    },
    "compare_row_score": {
        "en": "score (mean over scored tasks)",
        "es": "puntuación (media de las tareas puntuadas)",
    },
    "compare_row_scored": {"en": "scored tasks", "es": "tareas puntuadas"},
    "compare_row_failed": {"en": "failed calls", "es": "llamadas fallidas"},
    "compare_row_p50": {"en": "latency p50", "es": "latencia p50"},
    "compare_row_p95": {"en": "latency p95", "es": "latencia p95"},
    "compare_row_tokens": {"en": "output tokens", "es": "tokens de salida"},
    "compare_full_report": {
        "en": "Per-scorer totals, the largest differences and a blind review sheet: `sizing compare`.",
        "es": "Totales por evaluador, las mayores diferencias y una hoja de revisión a ciegas: `sizing compare`.",
    },
}

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


def text(key: str, lang: Lang, **values: object) -> str:
    """The sentence `key` in `lang`, with `{placeholders}` filled in."""
    template = TEXTS[key][lang]
    return template.format(**values) if values else template


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
