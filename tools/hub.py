"""A model named by its Hugging Face Hub id, from the files a Hub client fetched.

The engine never talks to the network: a `HubLookup` (assistant/hub_client.py adapts
huggingface_hub) is passed in and returns `HubFiles` — config.json, the element counts per
dtype from the safetensors headers, and the checkpoint's quantization_config. This module turns
them into the architecture, the exact parameter count and the precision the files are in.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Protocol

from tools.catalog import ResolvedModel, model_from_config, reference_model, resolve
from tools.errors import SizingError, UnknownModelError
from tools.i18n import Language
from tools.texts import text

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+")

# Bytes per element of each safetensors dtype.
DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "BF16": 2,
    "F16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


class HubLookupError(SizingError):
    """The Hub could not say: not found, gated, unreachable and not cached."""

    def __init__(self, repo_id: str, reason: str) -> None:
        self.repo_id = repo_id
        self.reason = reason
        super().__init__(f"Hugging Face repo {repo_id!r}: {reason}")


class HubFiles(NamedTuple):
    repo_id: str
    config: dict[str, Any]
    dtype_counts: dict[str, int]  # safetensors element counts per dtype; {} when not published
    quantization: dict[str, Any] | None  # config.json's quantization_config


class HubLookup(Protocol):
    def model_files(self, repo_id: str) -> HubFiles: ...


def looks_like_hub_id(name: str) -> bool:
    return bool(_HUB_ID.fullmatch((name or "").strip()))


def checkpoint_bytes(files: HubFiles) -> int:
    """Bytes of the safetensors tensors (what a loader reads), from the headers."""
    return sum(count * DTYPE_BYTES.get(dtype, 2) for dtype, count in files.dtype_counts.items())


def quantized(files: HubFiles) -> bool:
    return bool(files.quantization)


def checkpoint_precision(files: HubFiles) -> str:
    """The precision the checkpoint is stored in: its quantization method, else torch_dtype."""
    qc = files.quantization or {}
    method = str(qc.get("quant_method") or "").lower()
    bits = int(qc.get("bits") or qc.get("w_bit") or 4)
    if method == "awq":
        return "awq"
    if method == "gptq":
        return "gptq" if bits <= 4 else "int8"
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8"
    if method == "mxfp4":
        return "mxfp4"
    if method == "bitsandbytes":
        return "nf4" if qc.get("load_in_4bit") or qc.get("_load_in_4bit") else "int8"
    if method == "compressed-tensors":
        text = str(qc).lower()
        if "float" in text and "8" in text:
            return "fp8"
        return "int4" if "'num_bits': 4" in text else "int8"
    dtype = str(files.config.get("torch_dtype") or files.config.get("dtype") or "bfloat16").lower()
    return {"float16": "fp16", "float32": "fp32"}.get(dtype, "bf16")


def exact_params(files: HubFiles) -> int | None:
    """Element count of an unquantized checkpoint (packed quantized tensors do not count weights)."""
    if quantized(files) or not files.dtype_counts:
        return None
    return sum(files.dtype_counts.values())


_SIZE_IN_NAME = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")


def resolve_hub_model(name: str, hub: HubLookup | None, lang: Language) -> ResolvedModel:
    """A Hub id through the client; when the Hub cannot say, the catalog entry or the size in the
    name, with one line naming the repo and why. Raises UnknownModelError when neither exists."""
    repo = name.strip()
    reason = text("hub_off", lang)
    if hub is not None:
        try:
            files = hub.model_files(repo)
        except HubLookupError as exc:
            reason = exc.reason
        else:
            params = exact_params(files)
            model = model_from_config(files.config, repo, params / 1e9 if params else None)
            precision = checkpoint_precision(files)
            size = checkpoint_bytes(files)
            return model._replace(checkpoint=(precision, size or None))
    note = text("hub_fallback", lang, repo=repo, reason=reason)
    try:
        found = resolve(repo, lang)
    except UnknownModelError:
        in_name = _SIZE_IN_NAME.search(repo.rsplit("/", 1)[-1])
        if not in_name:
            raise UnknownModelError(
                f"{repo} ({reason})", ["a catalog id such as llama-3.1-70b", "a bare size such as 70b"]
            ) from None
        found = reference_model(float(in_name.group(1)), lang)
    info = found.info
    merged = f"{note} {info.reference_note}" if info.reference_note else note
    return found._replace(info=info.model_copy(update={"reference_note": merged}))


__all__ = [
    "DTYPE_BYTES",
    "HubFiles",
    "HubLookup",
    "HubLookupError",
    "checkpoint_bytes",
    "checkpoint_precision",
    "exact_params",
    "looks_like_hub_id",
    "resolve_hub_model",
]
