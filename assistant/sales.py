"""The sales draft: a customer-ready reply built from one SizingResult.

`draft_reply(result, lang="es", customer_name="Ana")` returns Markdown in the customer's
language: a greeting, the recommendation, the arithmetic as a small table, the caveat, and
the smaller-machine alternative (the next card class down at a lower precision, priced in
quality, or a plain statement that the recommendation already is the smallest fit). Every
number comes from the calculator; nothing here estimates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tools.errors import SizingError

if TYPE_CHECKING:
    from tools import CardOption, SizingResult

Lang = Literal["en", "es"]

# Spanish swaps the English thousands and decimal separators (8.192,5), as the engine's own texts do.
SPANISH_SEPARATORS = str.maketrans(",.", ".,")

ENGINE_NAMES = {"vllm": "vLLM", "llamacpp": "llama.cpp", "ollama": "Ollama", "transformers": "Transformers"}

# Lower precisions tried, best quality first, for the smaller-machine alternative. Each engine
# only loads some formats: vLLM and Transformers serve FP8 and AWQ checkpoints; llama.cpp and
# Ollama load GGUF quantizations (Q8_0, Q4_K_M is the common default in Ollama's library).
DOWNGRADE_LADDER = {
    "vllm": ("fp8", "awq"),
    "transformers": ("fp8", "awq"),
    "llamacpp": ("q8_0", "q4_k_m"),
    "ollama": ("q8_0", "q4_k_m"),
}

_WORDS: dict[str, dict[Lang, str]] = {
    "hello": {"en": "Hello {name},", "es": "Hola, {name}:"},
    "hello_anonymous": {"en": "Hello,", "es": "Hola:"},
    "thanks": {
        "en": (
            "Thank you for your question about serving **{model}** at **{precision}** with "
            "{context} tokens of context for {users} {users_word} on {engine}. "
            "Here is the sizing, with the arithmetic so you can check it."
        ),
        "es": (
            "Gracias por su consulta sobre servir **{model}** en **{precision}** con "
            "{context} tokens de contexto para {users} {users_word} con {engine}. "
            "Este es el dimensionamiento, con la aritmética para que pueda comprobarla."
        ),
    },
    "user": {"en": "concurrent user", "es": "usuario concurrente"},
    "users": {"en": "concurrent users", "es": "usuarios concurrentes"},
    "recommend": {
        "en": (
            "**Our recommendation: {label}.** The configuration needs about {need} GB and this "
            "machine offers {usable} GB usable, which leaves {headroom} GB of headroom."
        ),
        "es": (
            "**Nuestra recomendación: {label}.** La configuración necesita unos {need} GB y esta "
            "máquina ofrece {usable} GB utilizables, con un margen de {headroom} GB."
        ),
    },
    "recommend_none": {
        "en": (
            "**None of the machines we compared fits this configuration as asked:** it needs about "
            "{need} GB and the largest offers {usable} GB usable."
        ),
        "es": (
            "**Ninguna de las máquinas comparadas cabe esta configuración tal como se pide:** necesita "
            "unos {need} GB y la mayor ofrece {usable} GB utilizables."
        ),
    },
    "fits_beyond": {
        "en": "Without changing the model or the precision, it does fit on {options}.",
        "es": "Sin cambiar el modelo ni la precisión, sí cabe en {options}.",
    },
    "beyond_option": {
        "en": "**{label}** ({usable} GB usable, {headroom} GB of headroom)",
        "es": "**{label}** ({usable} GB utilizables, con un margen de {headroom} GB)",
    },
    "or_on": {"en": " or on ", "es": " o en "},
    "table_title": {"en": "The arithmetic", "es": "La aritmética"},
    "part": {"en": "Part", "es": "Concepto"},
    "how": {"en": "How it is counted", "es": "Cómo se calcula"},
    "weights": {"en": "Weights", "es": "Pesos"},
    "weights_how": {
        "en": "{params} B parameters × {bytes} bytes each ({precision})",
        "es": "{params} mil millones de parámetros × {bytes} bytes cada uno ({precision})",
    },
    "kv": {"en": "KV cache", "es": "Caché KV"},
    "kv_how": {
        "en": "{per_token} bytes per token × {context} tokens × {users} {users_word} ({kv_dtype})",
        "es": "{per_token} bytes por token × {context} tokens × {users} {users_word} ({kv_dtype})",
    },
    "overhead": {"en": "Serving overhead", "es": "Sobrecarga del servicio"},
    "overhead_how": {
        "en": "runtime, activations and buffers of {engine}",
        "es": "entorno de ejecución, activaciones y búferes de {engine}",
    },
    "total": {"en": "Total needed", "es": "Total necesario"},
    "usable": {"en": "Usable on {label}", "es": "Utilizable en {label}"},
    "usable_how": {
        "en": "what the engine can allocate on the card(s)",
        "es": "lo que el motor puede reservar en la(s) tarjeta(s)",
    },
    "caveat_title": {"en": "About quantization", "es": "Sobre la cuantización"},
    "full_precision": {
        "en": (
            "At {precision} the model runs at full 16-bit quality, so there is no quantization "
            "trade-off to weigh in this recommendation."
        ),
        "es": (
            "En {precision} el modelo funciona con la calidad completa de 16 bits, así que esta "
            "recomendación no tiene ningún compromiso de cuantización que sopesar."
        ),
    },
    "alternative_title": {"en": "A smaller machine", "es": "Una máquina más pequeña"},
    "what_fits_title": {"en": "What would fit", "es": "Lo que sí cabría"},
    "alternative": {
        "en": (
            "If budget matters more than the last bit of quality, **{label}** also works at "
            "**{precision}**: the weights drop to {weights} GB and the total to {need} GB of "
            "{usable} GB usable. The price is quality: measure it on your own tasks before deciding, "
            "and we will gladly help you run that comparison."
        ),
        "es": (
            "Si el presupuesto pesa más que el último punto de calidad, **{label}** también sirve en "
            "**{precision}**: los pesos bajan a {weights} GB y el total a {need} GB de {usable} GB "
            "utilizables. El precio es la calidad: mídala en sus propias tareas antes de decidir; con "
            "gusto le ayudamos a hacer esa comparación."
        ),
    },
    "alternative_when_none": {
        "en": (
            "**{label}** does fit at **{precision}**: the weights drop to {weights} GB and the total to "
            "{need} GB of {usable} GB usable. The price is quality: measure it on your own tasks before "
            "deciding, and we will gladly help you run that comparison."
        ),
        "es": (
            "**{label}** sí cabe en **{precision}**: los pesos bajan a {weights} GB y el total a {need} GB "
            "de {usable} GB utilizables. El precio es la calidad: mídala en sus propias tareas antes de "
            "decidir; con gusto le ayudamos a hacer esa comparación."
        ),
    },
    "none_even_quantized": {
        "en": (
            "Even the largest machine we compared, {label}, cannot hold this workload with 4-bit weights; "
            "it needs more cards or a smaller model, and we can size either for you."
        ),
        "es": (
            "Ni siquiera la mayor máquina comparada, {label}, admite esta carga con pesos de 4 bits; "
            "hacen falta más tarjetas o un modelo más pequeño, y podemos dimensionar cualquiera de las dos."
        ),
    },
    "already_smallest": {
        "en": (
            "{label} is already the smallest machine we compared that fits, so there is no cheaper "
            "option to offer without changing the model or the workload."
        ),
        "es": (
            "{label} ya es la máquina más pequeña de las comparadas que cabe, así que no hay una opción "
            "más barata sin cambiar el modelo o la carga de trabajo."
        ),
    },
    "no_smaller_fit": {
        "en": (
            "The next machine down, {label}, does not fit this workload even with 4-bit weights; "
            "fewer concurrent users or a shorter context would be the way to use it."
        ),
        "es": (
            "La siguiente máquina más pequeña, {label}, no cabe esta carga ni siquiera con pesos de 4 bits; "
            "con menos usuarios concurrentes o un contexto más corto sí podría usarse."
        ),
    },
    "closing": {
        "en": "Happy to go through the numbers with you or adjust them to your workload.\n\nBest regards,",
        "es": "Quedamos a su disposición para repasar las cifras o ajustarlas a su carga de trabajo.\n\nUn saludo,",
    },
}


def _w(key: str, lang: Lang, **values: object) -> str:
    template = _WORDS[key][lang]
    return template.format(**values) if values else template


def format_number(value: float, lang: Lang, decimals: int = 0, sign: bool = False) -> str:
    """A number as each language writes it: 8,192.5 in English, 8.192,5 in Spanish (as tools does)."""
    written = f"{value:{'+' if sign else ''},.{decimals}f}"
    return written.translate(SPANISH_SEPARATORS) if lang == "es" else written


def _option_id(option: CardOption) -> str | None:
    return option.card_class or option.card


def _recommended_option(result: SizingResult) -> CardOption | None:
    if result.recommended is None:
        return None
    return next((o for o in result.options if _option_id(o) == result.recommended), None)


def _cell(value: str) -> str:
    return value.replace("|", "\\|")


def _arithmetic_table(result: SizingResult, lang: Lang, recommended: CardOption | None) -> list[str]:
    engine = ENGINE_NAMES.get(result.engine, result.engine)
    params_b = result.model.params / 1e9
    bytes_per_param = result.weights_gb / params_b if params_b else 0.0
    users_word = _w("user" if result.users == 1 else "users", lang)
    rows = [
        (
            _w("weights", lang),
            _w(
                "weights_how",
                lang,
                params=format_number(params_b, lang, 1),
                bytes=format_number(bytes_per_param, lang, 2),
                precision=result.precision,
            ),
            format_number(result.weights_gb, lang, 1),
        ),
        (
            _w("kv", lang),
            _w(
                "kv_how",
                lang,
                per_token=format_number(result.kv_bytes_per_token, lang),
                context=format_number(result.context, lang),
                users=format_number(result.users, lang),
                users_word=users_word,
                kv_dtype=result.kv_dtype,
            ),
            format_number(result.kv_cache_gb, lang, 1),
        ),
        (
            _w("overhead", lang),
            _w("overhead_how", lang, engine=engine),
            format_number(result.overhead_gb, lang, 1),
        ),
        (f"**{_w('total', lang)}**", "", f"**{format_number(result.total_gb, lang, 1)}**"),
    ]
    if recommended is not None:
        rows.append(
            (
                _w("usable", lang, label=recommended.label),
                _w("usable_how", lang),
                format_number(recommended.usable_gb, lang, 1),
            )
        )
    table = [f"| {_w('part', lang)} | {_w('how', lang)} | GB |", "|---|---|---:|"]
    table += [f"| {_cell(part)} | {_cell(how)} | {gb} |" for part, how, gb in rows]
    return table


def smaller_machine_alternative(result: SizingResult, lang: Lang) -> str:
    """The honest smaller option: the next card class down at a lower precision, if one fits.

    Recomputes with the calculator at each lower precision the engine loads; says plainly when
    the recommendation already is the smallest fit or when nothing smaller works.
    """
    from tools import SizingRequest, calculate_vram

    recommended = _recommended_option(result)
    ceiling = recommended.usable_gb if recommended is not None else float("inf")
    smaller = sorted(
        (o for o in result.options if not o.fits and o.usable_gb < ceiling),
        key=lambda option: option.usable_gb,
        reverse=True,
    )
    if not smaller:
        return _w("already_smallest", lang, label=recommended.label) if recommended else ""
    target = smaller[0]
    for precision in DOWNGRADE_LADDER.get(result.engine, ("fp8", "awq")):
        if precision == result.precision:
            continue
        try:
            cheaper = calculate_vram(
                SizingRequest(
                    model=result.model.id,
                    precision=precision,
                    context=result.context,
                    users=result.users,
                    engine=result.engine,
                    gpu=None if target.card_class else _card_request(target),
                    lang=lang,
                )
            )
        except SizingError:
            continue  # a model outside the catalog (config.json) cannot be re-sized by id
        if cheaper.weights_gb >= result.weights_gb:
            continue
        match = next(
            (o for o in cheaper.options if _option_id(o) == _option_id(target) and o.fits),
            None,
        )
        if match is not None:
            return _w(
                "alternative" if recommended is not None else "alternative_when_none",
                lang,
                label=match.label,
                precision=precision,
                weights=format_number(cheaper.weights_gb, lang, 1),
                need=format_number(cheaper.total_gb, lang, 1),
                usable=format_number(match.usable_gb, lang, 1),
            )
    return _w(
        "no_smaller_fit" if recommended is not None else "none_even_quantized", lang, label=target.label
    )


def _hardware_beyond_options(result: SizingResult, lang: Lang) -> str:
    """The first one or two computed alternatives (e.g. 4× 80GB cards, 2× H200) that hold the
    request unchanged, so the customer hears about more hardware before hearing about quantization."""
    shown = [
        _w(
            "beyond_option",
            lang,
            label=option.label,
            usable=format_number(option.usable_gb, lang, 1),
            headroom=format_number(option.headroom_gb, lang, 1),
        )
        for option in result.alternatives[:2]
        if option.fits
    ]
    return _w("fits_beyond", lang, options=_w("or_on", lang).join(shown)) if shown else ""


def _card_request(option: CardOption) -> str | None:
    if option.card is None:
        return None
    # The engine names a multi-card option "card:N" already; a bare id means one card per count.
    if ":" in option.card or option.gpus == 1:
        return option.card
    return f"{option.card}:{option.gpus}"


def draft_reply(result: SizingResult, lang: Lang, customer_name: str | None = None) -> str:
    """A customer-ready Markdown reply for one calculation, in `lang` (the customer's language).

    The result's own texts (caveat) are used as they are, so pass the language the result was
    calculated in.
    """
    recommended = _recommended_option(result)
    engine = ENGINE_NAMES.get(result.engine, result.engine)
    users_word = _w("user" if result.users == 1 else "users", lang)
    lines = [
        _w("hello", lang, name=customer_name) if customer_name else _w("hello_anonymous", lang),
        "",
        _w(
            "thanks",
            lang,
            model=result.model.name,
            precision=result.precision,
            context=format_number(result.context, lang),
            users=format_number(result.users, lang),
            users_word=users_word,
            engine=engine,
        ),
        "",
    ]
    if recommended is not None:
        lines.append(
            _w(
                "recommend",
                lang,
                label=recommended.label,
                need=format_number(result.total_gb, lang, 1),
                usable=format_number(recommended.usable_gb, lang, 1),
                headroom=format_number(recommended.headroom_gb, lang, 1),
            )
        )
    else:
        largest = max((o.usable_gb for o in result.options), default=0.0)
        recommend_none = _w(
            "recommend_none",
            lang,
            need=format_number(result.total_gb, lang, 1),
            usable=format_number(largest, lang, 1),
        )
        beyond = _hardware_beyond_options(result, lang)
        lines.append(f"{recommend_none} {beyond}" if beyond else recommend_none)
    lines += ["", f"**{_w('table_title', lang)}**", "", *_arithmetic_table(result, lang, recommended), ""]
    caveat = result.caveat if result.caveat else _w("full_precision", lang, precision=result.precision)
    lines += [f"**{_w('caveat_title', lang)}:** {caveat}", ""]
    alternative = smaller_machine_alternative(result, lang)
    if alternative:
        title = _w("alternative_title" if recommended is not None else "what_fits_title", lang)
        lines += [f"**{title}:** {alternative}", ""]
    lines.append(_w("closing", lang))
    return "\n".join(lines) + "\n"
