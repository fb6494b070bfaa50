"""Model architecture read from a Hugging Face config.json, and the weight tensors it implies.

One parser serves the built-in catalog and `sizing calc --config PATH`, so both see the same
facts: head_dim from the config (never assumed to be hidden/heads when the config says otherwise),
which layers use a sliding window, mixture-of-experts shapes under their many key names, and
DeepSeek's multi-head latent attention (MLA).

Every size that drives work (layers, heads, widths, experts, vocabulary, context) is checked
against `LIMITS`, so that a hostile or mistyped config is refused with the limit named instead of
keeping the server busy; the per-layer tensor list is built once per architecture.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property, lru_cache
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from tools.errors import ModelConfigError

LayerKind = Literal["full", "sliding", "linear"]
_FULL: LayerKind = "full"
_SLIDING: LayerKind = "sliding"

# The most each size may be: several times what the largest published models use (in
# tools/data/models.json: Llama 3.1 405B has 126 layers, hidden 16,384, intermediate 53,248 and
# 128 heads; Gemma 2 a head_dim of 256; Gemma 3 a vocabulary of 262,208; DeepSeek-V3 256 routed
# experts and a 512-wide latent). Switch-C (Fedus et al. 2021, arXiv:2101.03961) has 2,048
# experts; Llama 4 Scout a 10M-token context (Meta's model card). Beyond these a config is a
# typo or an attack, and each size multiplies the work of a request.
LIMITS: dict[str, int] = {
    "hidden_size": 65_536,
    "num_hidden_layers": 512,
    "num_attention_heads": 1_024,
    "head_dim": 2_048,
    "intermediate_size": 262_144,
    "vocab_size": 4_194_304,
    "num_experts": 4_096,
    "moe_intermediate_size": 262_144,
    "shared_expert_intermediate_size": 1_048_576,
    "max_position_embeddings": 134_217_728,
    "sliding_window": 134_217_728,
    "sliding_window_pattern": 512,
    "kv_lora_rank": 65_536,
    "q_lora_rank": 65_536,
    "qk_head_dim": 2_048,
}
# Largest parameter count a config may imply (the same ceiling as a bare size, 10,000B).
MAX_TOTAL_PARAMS = 10**13
# Wrapper configs nest the language model's config a level or two deep (llava, Qwen2.5-Omni).
_MAX_NESTED_CONFIGS = 4

# Keys under which multimodal and wrapper configs nest the language model's own config.
_NESTED_TEXT_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")
_LAYER_TYPE_KINDS: dict[str, LayerKind] = {
    "full_attention": "full",
    "global_attention": "full",
    "attention": "full",
    "sliding_attention": "sliding",
    "local_attention": "sliding",
    "chunked_attention": "sliding",
    "linear_attention": "linear",
    "mamba": "linear",
    "conv": "linear",
}


class Tensor(NamedTuple):
    """One weight matrix (or a stack of expert matrices): ncols is the input width, as ggml's ne[0]."""

    category: str
    layer: int | None
    ncols: int
    nrows: int
    copies: int = 1
    routed_expert: bool = False

    @property
    def params(self) -> int:
        return self.ncols * self.nrows * self.copies


class Architecture(BaseModel):
    """The facts the arithmetic needs, whatever the config called them."""

    model_config = ConfigDict(frozen=True)

    model_type: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    dense_layers: tuple[int, ...] = ()
    layer_kinds: tuple[LayerKind, ...] = ()
    sliding_window: int | None = None
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    max_position_embeddings: int | None = None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def ffn_width_per_token(self) -> int:
        """Width of the feed-forward activations one token produces (top-k experts for MoE)."""
        if self.is_moe:
            return self.experts_per_token * self.moe_intermediate_size + self.shared_expert_intermediate_size
        return self.intermediate_size

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Architecture:
        """A copy without the cached derived values: they belong to the fields before the update."""
        copy = super().model_copy(update=update, deep=deep)
        for name, member in vars(Architecture).items():
            if isinstance(member, cached_property):
                copy.__dict__.pop(name, None)
        return copy

    def layers_of_kind(self, kind: LayerKind) -> int:
        return self._kind_counts.get(kind, 0)

    @cached_property
    def _kind_counts(self) -> dict[LayerKind, int]:
        counts: dict[LayerKind, int] = {}
        for kind in self.layer_kinds:
            counts[kind] = counts.get(kind, 0) + 1
        return counts

    def tensors(self) -> tuple[Tensor, ...]:
        """Every weight tensor, with the shapes llama.cpp and the safetensors files use."""
        return _tensors_of(self)

    def build_tensors(self) -> tuple[Tensor, ...]:
        h = self.hidden_size
        out = [Tensor("token_embd", None, h, self.vocab_size)]
        if not self.tie_embeddings:
            out.append(Tensor("output", None, h, self.vocab_size))
        out.append(Tensor("norm", None, h, 1))
        for i in range(self.num_layers):
            out.extend(self._attention_tensors(i))
            out.extend(self._ffn_tensors(i))
            out.append(Tensor("norm", i, h, 1, copies=2))
        return tuple(out)

    def _attention_tensors(self, i: int) -> list[Tensor]:
        h = self.hidden_size
        if self.is_mla:
            qk_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
            q = (
                [
                    Tensor("attn_q_a", i, h, self.q_lora_rank),
                    Tensor("attn_q_b", i, self.q_lora_rank, self.num_heads * qk_dim),
                ]
                if self.q_lora_rank
                else [Tensor("attn_q", i, h, self.num_heads * qk_dim)]
            )
            return [
                *q,
                Tensor("attn_kv_a_mqa", i, h, self.kv_lora_rank + self.qk_rope_head_dim),
                Tensor(
                    "attn_kv_b",
                    i,
                    self.kv_lora_rank,
                    self.num_heads * (self.qk_nope_head_dim + self.v_head_dim),
                ),
                Tensor("attn_output", i, self.num_heads * self.v_head_dim, h),
            ]
        q_width = self.num_heads * self.head_dim
        kv_width = self.num_kv_heads * self.head_dim
        return [
            Tensor("attn_q", i, h, q_width),
            Tensor("attn_k", i, h, kv_width),
            Tensor("attn_v", i, h, kv_width),
            Tensor("attn_output", i, q_width, h),
        ]

    def _ffn_tensors(self, i: int) -> list[Tensor]:
        h = self.hidden_size
        if not self.is_moe or i in self.dense_layers:
            f = self.intermediate_size
            return [Tensor("ffn_gate", i, h, f), Tensor("ffn_up", i, h, f), Tensor("ffn_down", i, f, h)]
        e, f = self.num_experts, self.moe_intermediate_size
        out = [
            Tensor("ffn_gate_inp", i, h, e),
            Tensor("ffn_gate_exps", i, h, f, copies=e, routed_expert=True),
            Tensor("ffn_up_exps", i, h, f, copies=e, routed_expert=True),
            Tensor("ffn_down_exps", i, f, h, copies=e, routed_expert=True),
        ]
        if self.shared_expert_intermediate_size:
            s = self.shared_expert_intermediate_size
            out += [
                Tensor("ffn_gate_shexp", i, h, s),
                Tensor("ffn_up_shexp", i, h, s),
                Tensor("ffn_down_shexp", i, s, h),
            ]
        return out

    def total_params(self) -> int:
        return self._total_params

    @cached_property
    def _total_params(self) -> int:
        return sum(t.params for t in self.tensors())

    def active_params(self) -> int:
        """Parameters one token reads: shared weights plus its top-k experts."""
        return self._active_params

    @cached_property
    def _active_params(self) -> int:
        if not self.is_moe:
            return self.total_params()
        share = self.experts_per_token / self.num_experts
        return sum(round(t.params * share) if t.routed_expert else t.params for t in self.tensors())

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size


# A request walks the same tensors for each precision and suggestion it sizes; the few
# architectures in use keep their list (a 512-layer MoE's is about a megabyte, so only a few).
@lru_cache(maxsize=8)
def _tensors_of(arch: Architecture) -> tuple[Tensor, ...]:
    return arch.build_tensors()


def _first(cfg: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return value
    return None


def _shown(value: object) -> str:
    """A config value in an error line, without echoing a 400-digit number or a long string."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        return f"a {len(str(abs(value)))}-digit number"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "…"


def _int(cfg: dict[str, Any], *keys: str, default: int | None = None, limit: str | None = None) -> int:
    """A whole non-negative size; `limit` names the LIMITS entry it may not exceed."""
    value = _first(cfg, *keys)
    if value is None:
        if default is None:
            raise ModelConfigError(
                f"config.json lacks {keys[0]!r} (also looked for: {', '.join(keys[1:]) or 'nothing else'})"
            )
        return default
    return _size(keys[0], value, limit)


def _size(name: str, value: object, limit: str | None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer()))
        or value < 0
    ):
        raise ModelConfigError(
            f"config.json field {name!r} must be a whole non-negative number, got {_shown(value)}"
        )
    if limit is not None and value > LIMITS[limit]:
        raise ModelConfigError(
            f"config.json field {name!r} is {_shown(int(value))}; at most {LIMITS[limit]:,} "
            "(larger than any published model)"
        )
    return int(value)


def _optional_int(cfg: dict[str, Any], *keys: str, limit: str) -> int | None:
    """A size that may be absent, null, 0 or false (all read as "not set")."""
    value = _first(cfg, *keys)
    if value is None or value is False or value == 0:
        return None
    return _size(keys[0], value, limit)


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    for _ in range(_MAX_NESTED_CONFIGS + 1):
        nested = next(
            (cfg[key] for key in _NESTED_TEXT_KEYS if isinstance(cfg.get(key), dict) and cfg[key]), None
        )
        if nested is None:
            return cfg
        merged = {k: v for k, v in cfg.items() if k not in _NESTED_TEXT_KEYS}
        merged.update(nested)
        # The outer (multimodal) model_type is less specific than the language model's own.
        merged["model_type"] = nested.get("model_type") or cfg.get("model_type", "")
        cfg = merged
    raise ModelConfigError(
        f"config.json nests its language model's config more than {_MAX_NESTED_CONFIGS} levels deep "
        f"(under {', '.join(_NESTED_TEXT_KEYS)})"
    )


def _layer_kinds(
    cfg: dict[str, Any], model_type: str, layers: int, window: int | None, max_pos: int | None
) -> tuple[LayerKind, ...]:
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        if len(layer_types) != layers:
            raise ModelConfigError(
                f"config.json layer_types lists {len(layer_types):,} layers but num_hidden_layers is {layers}"
            )
        kinds: list[LayerKind] = []
        for name in layer_types:
            kind = _LAYER_TYPE_KINDS.get(name) if isinstance(name, str) else None
            if kind is None:
                raise ModelConfigError(
                    f"config.json layer type {_shown(name)} is not one of: {', '.join(sorted(_LAYER_TYPE_KINDS))}"
                )
            kinds.append(kind)
        return tuple(kinds)
    if not window or (max_pos and window >= max_pos):
        return (_FULL,) * layers
    if model_type.startswith("gemma2"):
        # Gemma 2 alternates: even layers attend locally, odd layers globally (transformers Gemma2).
        return tuple(_SLIDING if i % 2 == 0 else _FULL for i in range(layers))
    pattern = _optional_int(
        cfg, "sliding_window_pattern", "sliding_window_period", limit="sliding_window_pattern"
    )
    if pattern and pattern > 1:
        # Gemma 3: every `pattern`-th layer is global, the rest slide (transformers Gemma3).
        return tuple(_FULL if (i + 1) % pattern == 0 else _SLIDING for i in range(layers))
    if cfg.get("use_sliding_window") is False or (
        model_type.startswith("qwen") and not cfg.get("use_sliding_window")
    ):
        return (_FULL,) * layers
    return (_SLIDING,) * layers  # Mistral-7B v0.1 style: every layer slides


def _dense_layers(cfg: dict[str, Any], layers: int) -> tuple[int, ...]:
    """The layers of a MoE model that keep a dense feed-forward block."""
    first_dense = min(_int(cfg, "first_k_dense_replace", default=0, limit="num_hidden_layers"), layers)
    only_dense = cfg.get("mlp_only_layers") or []
    if not isinstance(only_dense, list) or len(only_dense) > layers:
        raise ModelConfigError(
            f"config.json mlp_only_layers must list at most {layers} layer numbers, got {_shown(only_dense)}"
        )
    chosen = set(range(first_dense))
    for index in only_dense:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < layers:
            raise ModelConfigError(
                f"config.json mlp_only_layers entry {_shown(index)} is not a layer number from 0 to {layers - 1}"
            )
        chosen.add(index)
    return tuple(sorted(chosen))


def architecture_from_config(config: dict[str, Any]) -> Architecture:
    """Read the arithmetic's facts from a Hugging Face config.json (raises ModelConfigError)."""
    if not isinstance(config, dict) or not config:
        raise ModelConfigError("config.json must be a JSON object with the model's hyperparameters")
    cfg = _text_config(config)
    model_type = str(cfg.get("model_type") or "")[:100]
    hidden = _int(cfg, "hidden_size", "n_embd", "d_model", "dim", limit="hidden_size")
    layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers", limit="num_hidden_layers")
    heads = _int(cfg, "num_attention_heads", "n_head", "num_heads", "n_heads", limit="num_attention_heads")
    if hidden == 0 or layers == 0 or heads == 0:
        raise ModelConfigError("config.json has zero hidden_size, num_hidden_layers or num_attention_heads")
    kv_heads = _int(
        cfg,
        "num_key_value_heads",
        "num_kv_heads",
        "multi_query_group_num",
        "n_head_kv",
        default=heads,
        limit="num_attention_heads",
    )
    if cfg.get("multi_query") is True and "num_key_value_heads" not in cfg:
        kv_heads = 1
    head_dim = _int(cfg, "head_dim", "kv_channels", default=max(1, hidden // heads), limit="head_dim")
    intermediate = _int(
        cfg,
        "intermediate_size",
        "ffn_dim",
        "n_inner",
        "ffn_hidden_size",
        default=min(4 * hidden, LIMITS["intermediate_size"]),
        limit="intermediate_size",
    )
    vocab = _int(cfg, "vocab_size", "padded_vocab_size", limit="vocab_size")
    max_pos = _optional_int(
        cfg,
        "max_position_embeddings",
        "n_positions",
        "max_seq_len",
        "seq_length",
        limit="max_position_embeddings",
    )
    window = _optional_int(cfg, "sliding_window", limit="sliding_window")
    tie = cfg.get("tie_word_embeddings")
    if tie is None:
        tie = model_type.startswith("gemma")  # Gemma configs omit the key and tie by default

    experts = _int(
        cfg,
        "num_local_experts",
        "num_experts",
        "n_routed_experts",
        "moe_num_experts",
        default=0,
        limit="num_experts",
    )
    top_k = _int(
        cfg,
        "num_experts_per_tok",
        "experts_per_token",
        "moe_topk",
        "num_selected_experts",
        default=0,
        limit="num_experts",
    )
    moe_intermediate = 0
    shared = 0
    dense_layers: tuple[int, ...] = ()
    if experts > 1:
        if top_k == 0:
            raise ModelConfigError("config.json has experts but no num_experts_per_tok")
        if top_k > experts:
            raise ModelConfigError(
                f"config.json num_experts_per_tok is {top_k:,}; at most the {experts:,} experts it has"
            )
        moe_intermediate = _int(
            cfg,
            "moe_intermediate_size",
            "expert_intermediate_size",
            default=intermediate,
            limit="moe_intermediate_size",
        )
        shared = _int(
            cfg, "shared_expert_intermediate_size", default=0, limit="shared_expert_intermediate_size"
        )
        if not shared and cfg.get("n_shared_experts"):
            shared_experts = _int(cfg, "n_shared_experts", default=0, limit="num_experts")
            shared = _size(
                "n_shared_experts × moe_intermediate_size",
                shared_experts * moe_intermediate,
                "shared_expert_intermediate_size",
            )
        dense_layers = _dense_layers(cfg, layers)

    kv_lora = _int(cfg, "kv_lora_rank", default=0, limit="kv_lora_rank")
    arch = Architecture(
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=max(1, kv_heads),
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=vocab,
        tie_embeddings=bool(tie),
        num_experts=experts if experts > 1 else 0,
        experts_per_token=top_k if experts > 1 else 0,
        moe_intermediate_size=moe_intermediate,
        shared_expert_intermediate_size=shared,
        dense_layers=dense_layers,
        layer_kinds=_layer_kinds(cfg, model_type, layers, window, max_pos),
        sliding_window=window,
        kv_lora_rank=kv_lora,
        q_lora_rank=_int(cfg, "q_lora_rank", default=0, limit="q_lora_rank") if kv_lora else 0,
        qk_nope_head_dim=_int(cfg, "qk_nope_head_dim", default=0, limit="qk_head_dim") if kv_lora else 0,
        qk_rope_head_dim=_int(cfg, "qk_rope_head_dim", default=0, limit="qk_head_dim") if kv_lora else 0,
        v_head_dim=_int(cfg, "v_head_dim", default=head_dim, limit="qk_head_dim") if kv_lora else 0,
        max_position_embeddings=max_pos,
    )
    if arch.total_params() > MAX_TOTAL_PARAMS:
        raise ModelConfigError(
            f"config.json describes {arch.total_params() / 1e9:,.0f}B parameters; "
            f"at most {MAX_TOTAL_PARAMS / 1e9:,.0f}B (larger than any published model)"
        )
    return arch
