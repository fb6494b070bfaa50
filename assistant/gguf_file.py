"""Read a local GGUF file's header (the `gguf` package from llama.cpp), never its weights.

`sizing calc --gguf FILE` sizes the file as it is: the architecture from its metadata keys
(`{arch}.block_count`, `.attention.head_count_kv`, ...), every tensor's type and byte size from
the tensor table, and the precision from `general.file_type`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from tools.errors import ModelConfigError
from tools.schemas import FileWeights

# llama.cpp's LLAMA_FTYPE values (gguf.LlamaFileType) -> this engine's precision names.
_FILE_TYPES = {0: "fp32", 1: "fp16", 2: "q4_0", 7: "q8_0", 10: "q2_k", 12: "q3_k_m", 15: "q4_k_m",
               17: "q5_k_m", 18: "q6_k", 32: "bf16", 38: "mxfp4"}  # fmt: skip


class GgufHeader(NamedTuple):
    config: dict[str, Any]  # the keys of a Hugging Face config.json
    weights: FileWeights
    precision: str
    name: str
    params: int  # elements over every tensor


def _scalar(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        return None
    value = field.contents()
    return value


def read_gguf(path: str) -> GgufHeader:
    """The header's facts; ModelConfigError (one line naming the file) when it cannot be read."""
    from gguf import GGUFReader

    file = Path(path)
    if not file.is_file():
        raise ModelConfigError(f"cannot read GGUF {path!r}: no such file")
    try:
        reader = GGUFReader(str(file), "r")
    except Exception as exc:  # the reader raises ValueError/struct.error/IndexError on damaged files
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise ModelConfigError(f"cannot read GGUF {path!r}: not a valid GGUF file ({reason})") from None
    arch = _scalar(reader, "general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ModelConfigError(f"cannot read GGUF {path!r}: general.architecture is missing")

    def key(name: str) -> Any:
        return _scalar(reader, f"{arch}.{name}")

    tensors = {t.name: t for t in reader.tensors}
    embd = tensors.get("token_embd.weight")
    tokens = _scalar(reader, "tokenizer.ggml.tokens")
    vocab = len(tokens) if isinstance(tokens, list) else (int(embd.shape[-1]) if embd is not None else None)
    config: dict[str, Any] = {
        "model_type": arch,
        "hidden_size": key("embedding_length"),
        "num_hidden_layers": key("block_count"),
        "num_attention_heads": key("attention.head_count"),
        "num_key_value_heads": key("attention.head_count_kv"),
        "head_dim": key("attention.key_length"),
        "intermediate_size": key("feed_forward_length"),
        "vocab_size": vocab,
        "max_position_embeddings": key("context_length"),
        "tie_word_embeddings": "output.weight" not in tensors,
        "num_local_experts": key("expert_count"),
        "num_experts_per_tok": key("expert_used_count"),
        "moe_intermediate_size": key("expert_feed_forward_length"),
        "sliding_window": key("attention.sliding_window"),
        "kv_lora_rank": key("attention.kv_lora_rank"),
    }
    config = {k: (v[0] if isinstance(v, list) and v else v) for k, v in config.items() if v is not None}
    size = sum(int(t.n_bytes) for t in reader.tensors)
    weights = FileWeights(
        bytes=size,
        token_embedding_bytes=int(embd.n_bytes) if embd is not None else 0,
        source=file.name,
    )
    file_type = _scalar(reader, "general.file_type")
    precision = _FILE_TYPES.get(int(file_type), "q8_0") if isinstance(file_type, int) else "bf16"
    name = _scalar(reader, "general.name")
    params = sum(int(t.n_elements) for t in reader.tensors)
    return GgufHeader(config, weights, precision, str(name) if name else file.stem, params)


__all__ = ["GgufHeader", "read_gguf"]
