"""Every sentence the sizing engine writes, in English and Spanish.

Templates use str.format fields; numbers are formatted by the caller. GB = 10^9 bytes.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from tools.schemas import Language

TEXTS: dict[str, dict[Language, str]] = {
    "fmt_fp32": {"en": "4 bytes per weight", "es": "4 bytes por peso"},
    "fmt_bf16": {"en": "2 bytes per weight", "es": "2 bytes por peso"},
    "fmt_fp16": {"en": "2 bytes per weight", "es": "2 bytes por peso"},
    "fmt_fp8": {
        "en": "1 byte per weight, per-channel scales; embeddings and LM head stay 16-bit",
        "es": "1 byte por peso, escalas por canal; embeddings y cabeza LM siguen a 16 bits",
    },
    "fmt_int8": {
        "en": "1 byte per weight, per-channel scales; embeddings and LM head stay 16-bit",
        "es": "1 byte por peso, escalas por canal; embeddings y cabeza LM siguen a 16 bits",
    },
    "fmt_int4": {
        "en": "4 bits + a 16-bit scale per group of 128 = 4.125 bits; embeddings and LM head stay 16-bit",
        "es": "4 bits + una escala de 16 bits por grupo de 128 = 4,125 bits; embeddings y cabeza LM siguen a 16 bits",
    },
    "fmt_awq": {
        "en": "4 bits + a 16-bit scale and a 4-bit zero per group of 128 = 4.156 bits; embeddings and LM head stay 16-bit",
        "es": "4 bits + escala de 16 bits y cero de 4 bits por grupo de 128 = 4,156 bits; embeddings y cabeza LM siguen a 16 bits",
    },
    "fmt_gptq": {
        "en": "4 bits + a 16-bit scale and a 4-bit zero per group of 128 = 4.156 bits; embeddings and LM head stay 16-bit",
        "es": "4 bits + escala de 16 bits y cero de 4 bits por grupo de 128 = 4,156 bits; embeddings y cabeza LM siguen a 16 bits",
    },
    "fmt_nf4": {
        "en": "4 bits + an 8-bit absmax per 64 (double-quantized) = 4.127 bits; embeddings and LM head stay 16-bit",
        "es": "4 bits + un absmax de 8 bits por 64 (doble cuantización) = 4,127 bits; embeddings y cabeza LM siguen a 16 bits",
    },
    "fmt_mxfp4": {
        "en": "MoE experts at 4 bits + one 8-bit scale per 32 = 4.25 bits; attention, router and embeddings stay 16-bit",
        "es": "expertos MoE a 4 bits + una escala de 8 bits por 32 = 4,25 bits; atención, router y embeddings siguen a 16 bits",
    },
    "fmt_gguf": {
        "en": "GGUF mix per tensor as llama.cpp's quantizer assigns it, incl. the output head at Q6_K",
        "es": "mezcla GGUF por tensor tal como la asigna el cuantizador de llama.cpp, con la cabeza de salida en Q6_K",
    },
    "caveat": {
        "en": (
            "Quantization cost is real, workload-dependent and measurable: a model with {what} (below 16 bits) "
            "may answer differently on your tasks. Nobody can give you a universal percentage. Run your own evals on your "
            "own tasks against both versions side by side (`sizing compare`) before you decide."
        ),
        "es": (
            "El coste de la cuantización es real, depende de la carga de trabajo y es medible: un modelo con {what} "
            "(por debajo de 16 bits) puede responder distinto en sus tareas. Nadie puede darle un porcentaje universal. Ejecute "
            "sus propias evaluaciones sobre sus propias tareas con las dos versiones lado a lado (`sizing compare`) "
            "antes de decidir."
        ),
    },
    "caveat_weights": {"en": "weights at {precision}", "es": "pesos en {precision}"},
    "caveat_kv": {"en": "a KV cache at {kv}", "es": "caché KV en {kv}"},
    "ref_name": {"en": "{size} (reference: {ref})", "es": "{size} (referencia: {ref})"},
    "caveat_and": {"en": " and ", "es": " y "},
    "line_weights": {
        "en": "Weights: {params} parameters at {precision} ({note}) = {gb} GB ({bpw} bits per weight on average)",
        "es": "Pesos: {params} parámetros en {precision} ({note}) = {gb} GB ({bpw} bits por peso de media)",
    },
    "line_kv_gqa": {
        "en": (
            "KV cache per token: {layers} full-attention layers × 2 (K and V) × {heads} KV heads × {head_dim} "
            "head_dim × {elem} bytes ({kv}) = {bytes} bytes"
        ),
        "es": (
            "Caché KV por token: {layers} capas de atención completa × 2 (K y V) × {heads} cabezas KV × "
            "{head_dim} head_dim × {elem} bytes ({kv}) = {bytes} bytes"
        ),
    },
    "line_kv_mla": {
        "en": (
            "KV cache per token (MLA latent, shared by all heads): {layers} layers × ({latent} latent + {rope} "
            "rotary) × {elem} bytes ({kv}) = {bytes} bytes"
        ),
        "es": (
            "Caché KV por token (latente MLA, compartido por todas las cabezas): {layers} capas × ({latent} "
            "latente + {rope} rotatorio) × {elem} bytes ({kv}) = {bytes} bytes"
        ),
    },
    "line_kv_sliding": {
        "en": "plus {layers} sliding-window layers at {per_layer} bytes per token, capped at {cells} tokens per sequence",
        "es": "más {layers} capas de ventana deslizante a {per_layer} bytes por token, con tope de {cells} tokens por secuencia",
    },
    "line_kv_total": {
        "en": "KV cache: {per_seq} GB per sequence of {context} tokens × {users} at once = {gb} GB",
        "es": "Caché KV: {per_seq} GB por secuencia de {context} tokens × {users} a la vez = {gb} GB",
    },
    "line_overhead": {
        "en": "Engine overhead ({engine}): {parts} = {gb} GB",
        "es": "Sobrecarga del motor ({engine}): {parts} = {gb} GB",
    },
    "line_total": {
        "en": "Total: {weights} GB weights + {kv} GB KV + {overhead} GB overhead = {total} GB (on {label})",
        "es": "Total: {weights} GB de pesos + {kv} GB de KV + {overhead} GB de sobrecarga = {total} GB (en {label})",
    },
    "line_option_vllm": {
        "en": (
            "{label}: {usable} GB usable; vLLM takes {util}% = {budget} GB; minus weights {weights} GB and "
            "overhead {overhead} GB leaves {room} GB of KV = {tokens} tokens → {seqs} of {context} tokens"
        ),
        "es": (
            "{label}: {usable} GB utilizables; vLLM toma el {util}% = {budget} GB; menos pesos {weights} GB y "
            "sobrecarga {overhead} GB quedan {room} GB de KV = {tokens} tokens → {seqs} de {context} tokens"
        ),
    },
    "line_option": {
        "en": (
            "{label}: {usable} GB usable; minus weights {weights} GB and overhead {overhead} GB leaves {room} GB "
            "of KV → {seqs} of {context} tokens"
        ),
        "es": (
            "{label}: {usable} GB utilizables; menos pesos {weights} GB y sobrecarga {overhead} GB quedan {room} GB "
            "de KV → {seqs} de {context} tokens"
        ),
    },
    "line_option_host_embedding": {
        "en": (
            "{label}: {usable} GB usable; minus weights {weights} GB on the GPU (the {all_weights} GB less the "
            "{host} GB input embedding, which stays in host RAM) and overhead {overhead} GB leaves {room} GB "
            "of KV → {seqs} of {context} tokens"
        ),
        "es": (
            "{label}: {usable} GB utilizables; menos pesos {weights} GB en la GPU (los {all_weights} GB sin los "
            "{host} GB del embedding de entrada, que se queda en la RAM del host) y sobrecarga {overhead} GB "
            "quedan {room} GB de KV → {seqs} de {context} tokens"
        ),
    },
    "line_units": {
        "en": "GB = 10^9 bytes (1 GiB = 1.074 GB); card memory is what nvidia-smi reports, less the driver's reservation.",
        "es": "GB = 10^9 bytes (1 GiB = 1,074 GB); la memoria de la tarjeta es la que informa nvidia-smi, menos la reserva del controlador.",
    },
    "line_slack": {
        "en": "{label}: the {slack} GB vLLM leaves free cannot hold the CUDA context and graphs ({need} GB): lower --gpu-memory-utilization",
        "es": "{label}: los {slack} GB que vLLM deja libres no caben el contexto CUDA y los grafos ({need} GB): baje --gpu-memory-utilization",
    },
    "part_activation": {"en": "activation peak {gb}", "es": "pico de activaciones {gb}"},
    "part_non_torch": {"en": "non-torch {gb}", "es": "memoria fuera de torch {gb}"},
    "part_cuda_context": {"en": "CUDA context {gb}", "es": "contexto CUDA {gb}"},
    "part_cuda_graphs": {"en": "CUDA graphs {gb}", "es": "grafos CUDA {gb}"},
    "part_compute_buffer": {"en": "compute buffer {gb}", "es": "búfer de cómputo {gb}"},
    "part_prefill_activation": {"en": "prefill activations {gb}", "es": "activaciones del prefill {gb}"},
    "per_gpu": {"en": " per GPU", "es": " por GPU"},
    "ref_note": {
        "en": (
            '"{size}" is not a catalog model: sized on the reference dense architecture of {ref} ({layers} layers, '
            "{heads} KV heads × {head_dim}) scaled to {size} parameters; the real KV cache depends on the actual model."
        ),
        "es": (
            "«{size}» no es un modelo del catálogo: se usa la arquitectura densa de referencia de {ref} ({layers} "
            "capas, {heads} cabezas KV × {head_dim}) escalada a {size} parámetros; la caché KV real depende del modelo concreto."
        ),
    },
    "rec_fits": {
        "en": "{model} at {precision}, {context} tokens per sequence, {users} at once, on {engine}: {label} ({headroom} GB to spare, up to {seqs}).",
        "es": "{model} en {precision}, {context} tokens por secuencia, {users} a la vez, en {engine}: {label} ({headroom} GB de margen, hasta {seqs}).",
    },
    "rec_none": {
        "en": "{model} at {precision}, {context} tokens per sequence, {users} at once, on {engine} does not fit {labels}: it needs about {total} GB of usable card memory. See the suggestions.",
        "es": "{model} en {precision}, {context} tokens por secuencia, {users} a la vez, en {engine}, no cabe en {labels}: necesita unos {total} GB de memoria utilizable. Vea las sugerencias.",
    },
    "sug_context": {
        "en": "Shorter context: at {context} tokens per sequence, {label} holds {users} at once.",
        "es": "Contexto más corto: con {context} tokens por secuencia, {label} admite {users} a la vez.",
    },
    "sug_kv": {
        "en": "{kv} KV cache halves the cache ({kv_gb} GB instead of {old_gb} GB): {verdict} on {label}.",
        "es": "Caché KV en {kv} la reduce a la mitad ({kv_gb} GB en vez de {old_gb} GB): {verdict} en {label}.",
    },
    "sug_quant": {
        "en": "Smaller quantization: {precision} weights take {gb} GB: {verdict} on {label}.",
        "es": "Cuantización menor: pesos en {precision} ocupan {gb} GB: {verdict} en {label}.",
    },
    "sug_tp": {
        "en": "Tensor parallel on {label}: {usable} GB usable: {verdict}.",
        "es": "Paralelismo tensorial en {label}: {usable} GB utilizables: {verdict}.",
    },
    "sug_larger_card": {
        "en": "Larger cards: {label} gives {usable} GB usable: {verdict}.",
        "es": "Tarjetas más grandes: {label} da {usable} GB utilizables: {verdict}.",
    },
    "multi_card": {"en": "{gpus}× {per_card}", "es": "{gpus} {per_card}"},
    "sug_smaller_model": {
        "en": "A smaller model at higher precision: {model} at {precision} ({gb} GB of weights) fits on {label} with up to {seqs} — often the better trade than a heavily compressed large model; compare both on your tasks.",
        "es": "Un modelo más pequeño a mayor precisión: {model} en {precision} ({gb} GB de pesos) cabe en {label} con hasta {seqs}; a menudo es mejor negocio que un modelo grande muy comprimido: compare ambos en sus tareas.",
    },
    "sug_max_num_seqs": {
        "en": "vLLM reserves {gb} GB for sampling --max-num-seqs {seqs} sequences (its default here); if {users} at once is all you serve, --max-num-seqs {users} gives that memory to the KV cache.",
        "es": "vLLM reserva {gb} GB para muestrear --max-num-seqs {seqs} secuencias (su valor por defecto aquí); si solo sirve {users} a la vez, --max-num-seqs {users} cede esa memoria a la caché KV.",
    },
    "sug_context_limit": {
        "en": "{context} tokens exceed the model's configured maximum of {limit} tokens.",
        "es": "{context} tokens superan el máximo configurado del modelo, {limit} tokens.",
    },
    "verdict_fits": {
        "en": "fits ({seqs})",
        "es": "cabe ({seqs})",
    },
    "verdict_no": {"en": "still does not fit", "es": "sigue sin caber"},
}


# Counted nouns, (one, many) per language: templates take "{seqs}" already counted, so that
# one reads "1 sequence" / "1 secuencia" and every other count the plural.
COUNTED_NOUNS: dict[str, dict[Language, tuple[str, str]]] = {
    "sequence": {"en": ("sequence", "sequences"), "es": ("secuencia", "secuencias")},
    "concurrent_sequence": {
        "en": ("concurrent sequence", "concurrent sequences"),
        "es": ("secuencia concurrente", "secuencias concurrentes"),
    },
}


def counted(value: int, noun: str, lang: Language) -> str:
    """A count with its noun in the right number: "1 sequence", "1.024 secuencias"."""
    one, many = COUNTED_NOUNS[noun][lang]
    return f"{integer(value, lang)} {one if value == 1 else many}"


@cache
def _catalogue() -> dict[str, dict[str, str]]:
    """tools/data/engine_texts.json: the engine's sentences kept in a data file."""
    raw = resources.files("tools").joinpath("data", "engine_texts.json").read_text(encoding="utf-8")
    return {k: v for k, v in json.loads(raw).items() if isinstance(v, dict)}


def text(key: str, lang: Language, **fields: object) -> str:
    entry = TEXTS.get(key) or _catalogue()[key]
    template = entry[lang]
    return template.format(**fields) if fields else template


def number(value: float, lang: Language, decimals: int = 2) -> str:
    """12,345.67 in English, 12.345,67 in Spanish."""
    formatted = f"{value:,.{decimals}f}"
    if lang == "es":
        formatted = formatted.replace(",", "\u00a0").replace(".", ",").replace("\u00a0", ".")
    return formatted


def integer(value: int, lang: Language) -> str:
    return number(value, lang, 0)
