"""The model catalog (tools/data/models.json): ids, aliases, architectures, bare sizes.

A name resolves, in order, to: a catalog id or alias (case, spaces, dots and dashes ignored),
or a bare size such as "70b" / "13B" / "1.5b", which is sized on the nearest reference dense
architecture of the catalog, scaled to the asked parameter count, and says so.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from tools.architecture import Architecture, architecture_from_config
from tools.errors import InvalidInputError, UnknownModelError
from tools.i18n import Language
from tools.schemas import ModelInfo
from tools.serving_extras import vision_tower_params
from tools.texts import text

_BARE_SIZE = re.compile(r"\s*(\d+(?:[.,]\d+)?)\s*([bm])\s*", flags=re.IGNORECASE)
_SUFFIXES = ("instruct", "chat", "it", "hf", "base")
_MAX_PARAMS_B = 10_000.0


class ResolvedModel(NamedTuple):
    info: ModelInfo
    arch: Architecture
    params_override: int | None  # set when a reference architecture is scaled to a bare size
    # A Hub checkpoint's own precision, and the bytes of its safetensors tensors when the
    # headers were published (exact).
    checkpoint: tuple[str, int | None] | None = None
    # A multimodal model's vision tower (config.json vision_config), kept at 16 bits.
    vision_params: int = 0


class _Entry(NamedTuple):
    raw: dict[str, Any]
    arch: Architecture


def _normalise(name: str) -> str:
    words = re.split(r"[\s_\-]+", name.strip().lower())
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words.pop()
    return re.sub(r"[^a-z0-9:]", "", "".join(words)).replace(":", "")


@cache
def _catalog() -> tuple[dict[str, _Entry], dict[str, str], tuple[str, ...]]:
    doc = json.loads(resources.files("tools").joinpath("data", "models.json").read_text(encoding="utf-8"))
    entries: dict[str, _Entry] = {}
    index: dict[str, str] = {}
    for raw in doc["models"]:
        entries[raw["id"]] = _Entry(raw, architecture_from_config(raw["config"]))
        released = [name for names in raw.get("released_as", {}).values() for name in names]
        for name in (raw["id"], raw["name"], *raw.get("aliases", []), *released):
            index.setdefault(_normalise(name), raw["id"])
            if "/" in name:
                index.setdefault(_normalise(name.rsplit("/", 1)[1]), raw["id"])
    references = tuple(doc["reference_architectures"]["ids"])
    return entries, index, references


def _info(entry: _Entry, aliases: bool = True) -> ModelInfo:
    raw, arch = entry.raw, entry.arch
    params = int(raw.get("params") or arch.total_params())
    return _model_info(
        raw["id"],
        raw["name"],
        arch,
        params,
        int(raw.get("active_params") or arch.active_params()),
        raw["architecture"],
    ).model_copy(update={"aliases": list(raw.get("aliases", [])) if aliases else []})


def _model_info(
    model_id: str, name: str, arch: Architecture, params: int, active: int, kind: str, note: str | None = None
) -> ModelInfo:
    return ModelInfo(
        id=model_id,
        name=name,
        params=params,
        active_params=active,
        layers=arch.num_layers,
        kv_heads=1 if arch.is_mla else arch.num_kv_heads,
        head_dim=arch.kv_lora_rank + arch.qk_rope_head_dim if arch.is_mla else arch.head_dim,
        architecture=kind,
        reference_note=note,
    )


def release_precisions() -> dict[str, str]:
    """Catalog id -> the weight format the model is published in (models.json release_precision)."""
    entries, _, _ = _catalog()
    return {
        model_id: entry.raw["release_precision"]["precision"]
        for model_id, entry in entries.items()
        if "release_precision" in entry.raw
    }


def released_as() -> dict[str, tuple[str, str]]:
    """Each spelling of a model published with a catalog entry's architecture and weight format
    (models.json `released_as`) -> (that entry's id, the published model's name)."""
    entries, _, _ = _catalog()
    return {
        spelling: (model_id, name)
        for model_id, entry in entries.items()
        for name, spellings in entry.raw.get("released_as", {}).items()
        for spelling in (name, *spellings)
    }


def released_name(model: str) -> str | None:
    """The published name ("DeepSeek R1") when `model` spells a model released with a catalog
    entry's architecture and weight format, which is sized as that entry; else None."""
    key = _normalise(model)
    return next((name for spelling, (_, name) in released_as().items() if _normalise(spelling) == key), None)


def list_models() -> list[ModelInfo]:
    """Every catalog model, with its aliases."""
    entries, _, _ = _catalog()
    return [_info(e) for e in entries.values()]


def model_ids() -> list[str]:
    return list(_catalog()[0])


def catalog_architecture(model_id: str) -> Architecture:
    return _catalog()[0][model_id].arch


def _bare_size_params(name: str) -> float | None:
    match = _BARE_SIZE.fullmatch(name)
    if not match:
        return None
    value = float(match.group(1).replace(",", "."))
    return value / 1000 if match.group(2).lower() == "m" else value


def _reference_note(params_b: float, ref: _Entry, lang: Language) -> str:
    arch = ref.arch
    return text(
        "ref_note",
        lang,
        size=f"{params_b:g}B",
        ref=ref.raw["name"],
        layers=arch.num_layers,
        heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
    )


def reference_model(params_b: float, lang: Language = "en", name: str | None = None) -> ResolvedModel:
    """A bare parameter count sized on the nearest reference dense architecture (log scale)."""
    if not math.isfinite(params_b) or params_b <= 0 or params_b > _MAX_PARAMS_B:
        raise InvalidInputError(
            f"parameter count {params_b:g}B must be above 0 and at most {_MAX_PARAMS_B:g}B"
        )
    entries, _, references = _catalog()
    ref = min(
        (entries[i] for i in references),
        key=lambda e: abs(math.log(e.arch.total_params() / (params_b * 1e9))),
    )
    params = round(params_b * 1e9)
    note = _reference_note(params_b, ref, lang)
    label = name or f"{params_b:g}B"
    model_id = f"{params_b:g}b"
    display = text("ref_name", lang, size=label, ref=ref.raw["name"])
    info = _model_info(model_id, display, ref.arch, params, params, "dense", note)
    return ResolvedModel(info, ref.arch, params)


def resolve(name: str, lang: Language = "en") -> ResolvedModel:
    """Catalog id, alias or bare size -> the model and the architecture the arithmetic uses."""
    entries, index, _ = _catalog()
    wanted = (name or "").strip()
    model_id = index.get(_normalise(wanted)) if wanted else None
    if model_id is not None:
        entry = entries[model_id]
        info = _info(entry)
        vision = vision_tower_params({**entry.raw["config"], "vision_config": entry.raw.get("vision_config")})
        return ResolvedModel(
            info,
            entry.arch,
            info.params if info.params != entry.arch.total_params() else None,
            vision_params=vision,
        )
    size = _bare_size_params(wanted)
    if size is not None:
        return reference_model(size, lang)
    hint = f"{wanted}b" if _bare_size_params(f"{wanted}b") is not None else None
    raise UnknownModelError(wanted, [*entries, "or a bare size such as 8b, 70b"], hint=hint)


def resolve_model(name: str) -> ModelInfo:
    """The catalog entry (or reference architecture for a bare size) behind a name."""
    return resolve(name).info


def model_from_config(config: dict[str, Any], name: str = "", params_b: float | None = None) -> ResolvedModel:
    """A model described by a Hugging Face config.json (name is only for display)."""
    arch = architecture_from_config(config)
    derived = arch.total_params()
    params = round(params_b * 1e9) if params_b else derived
    display = name.strip() or str(config.get("_name_or_path") or config.get("model_type") or "config.json")
    kind = "moe_mla" if arch.is_mla else "moe" if arch.is_moe else "dense"
    active = round(arch.active_params() * params / derived)
    info = _model_info(display.lower().replace(" ", "-"), display, arch, params, active, kind)
    return ResolvedModel(
        info, arch, params if params != derived else None, vision_params=vision_tower_params(config)
    )
