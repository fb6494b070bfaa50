"""Training memory: full fine-tuning, LoRA and QLoRA, per GPU.

    memory = weights + gradients + optimizer states + adapters + activations + CUDA context

- Full fine-tuning holds the weights in bf16 with their bf16 gradients, as torchtune's
  single-device recipe and a Hugging Face Trainer on a bf16-loaded model do; AdamW keeps two
  states per parameter in the parameter's dtype (2 × 2 bytes), bitsandbytes' AdamW8bit two
  one-byte states, SGD none. (DeepSpeed/Megatron mixed precision adds fp32 master weights
  and fp32 states: 16 bytes per parameter, ZeRO paper §3.1.)
- LoRA freezes the base weights (bf16; NF4 for QLoRA, tools/precision.py) and trains
  rank × (in + out) parameters per targeted linear layer; PEFT keeps adapters in fp32, so each
  adapter parameter costs 4 (weight) + 4 (gradient) + the optimizer's fp32 states.
- Activations are the tensors autograd saves per token and layer in bf16 for a SwiGLU block
  with FlashAttention (no S × S scores): the two norm inputs and outputs, q, k, v and the
  attention output, gate and up outputs, the gated product: 2 × (4h + 2q + 2kv + 3f) bytes.
  Gradient checkpointing keeps only each layer's input (2h bytes) and recomputes one layer
  at a time (its activations and their gradients, twice the per-layer figure).
- The loss upcasts the logits to fp32 and keeps their gradient: 8 bytes per token × vocab.
- With N GPUs the weights, gradients and optimizer states are sharded (FSDP / ZeRO-3); each
  GPU keeps its own micro-batch's activations.

No constant here is fit to the calibration cases (tools/data/calibration_cases.json
"finetune"), which are all held out.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from tools.architecture import Architecture, Tensor
from tools.engines import CUDA_CONTEXT_BYTES
from tools.errors import InvalidInputError, UnknownChoiceError
from tools.precision import weights

Method = Literal["full", "lora", "qlora"]
METHODS: tuple[str, ...] = ("full", "lora", "qlora")
OPTIMIZERS: tuple[str, ...] = ("adamw", "adamw8bit", "sgd")
MAX_RANK = 4096
MAX_BATCH = 4096
MAX_SEQ = 1_048_576

# Optimizer state bytes per trained parameter, for bf16 parameters (full fine-tuning) and for
# fp32 ones (LoRA adapters): AdamW's exp_avg and exp_avg_sq follow the parameter dtype;
# bitsandbytes 8-bit Adam quantizes both to one byte (plus a block-wise fp32 absmax per 2048,
# negligible); plain SGD keeps nothing.
_STATE_BYTES = {
    "adamw": {"bf16": 4, "fp32": 8},
    "adamw8bit": {"bf16": 2, "fp32": 2},
    "sgd": {"bf16": 0, "fp32": 0},
}
_BF16 = 2
_FP32 = 4
_LOGIT_BYTES = 8  # fp32 logits + their gradient, per token and vocabulary entry

# Linear layers LoRA targets: PEFT's "all-linear" / Unsloth's default (attention and MLP).
_ALL_LINEAR = (
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_output",
    "attn_q_a",
    "attn_q_b",
    "attn_kv_a_mqa",
    "attn_kv_b",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
    "ffn_gate_shexp",
    "ffn_up_shexp",
    "ffn_down_shexp",
    "ffn_gate_exps",
    "ffn_up_exps",
    "ffn_down_exps",
)


class FinetuneSpec(BaseModel):
    """What is being trained and how."""

    model_config = ConfigDict(frozen=True)

    method: str = Field(default="lora", description="full | lora | qlora")
    lora_rank: int = Field(default=16, description="LoRA rank r (LoRA and QLoRA).")
    batch: int = Field(default=1, description="Micro-batch per GPU (sequences per step).")
    seq: int = Field(default=2048, description="Tokens per training sequence.")
    optimizer: str = Field(default="adamw", description="adamw | adamw8bit | sgd")
    gradient_checkpointing: bool = Field(default=True, description="Recompute activations in backward.")
    # Which linear layers carry adapters ("all" = every attention and MLP projection; "output"
    # adds the LM head). Used by calibration cases that targeted fewer.
    targets: tuple[str, ...] = ("all",)


class FinetuneBreakdown(BaseModel):
    """Training memory per GPU, part by part (GB = 10^9 bytes)."""

    method: str
    optimizer: str
    lora_rank: int | None
    batch: int
    seq: int
    gradient_checkpointing: bool
    gpus: int
    trainable_params: int
    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    adapters_gb: float
    activations_gb: float
    logits_gb: float
    overhead_gb: float
    total_gb: float


class TrainingMemory(NamedTuple):
    """Bytes per GPU."""

    trainable_params: int
    weights: int
    gradients: int
    optimizer: int
    adapters: int
    activations: int
    logits: int
    overhead: int

    @property
    def total(self) -> int:
        return (
            self.weights
            + self.gradients
            + self.optimizer
            + self.adapters
            + self.activations
            + self.logits
            + self.overhead
        )


def check_spec(spec: FinetuneSpec) -> FinetuneSpec:
    """One clear error for each bad value."""
    method = spec.method.strip().lower()
    if method not in METHODS:
        raise UnknownChoiceError("fine-tuning method", spec.method, METHODS)
    optimizer = spec.optimizer.strip().lower().replace("-", "").replace("_", "")
    optimizer = {"adam": "adamw", "adamw8": "adamw8bit", "pagedadamw8bit": "adamw8bit"}.get(
        optimizer, optimizer
    )
    if optimizer not in OPTIMIZERS:
        raise UnknownChoiceError("optimizer", spec.optimizer, OPTIMIZERS)
    for name, value, limit in (
        ("lora rank", spec.lora_rank, MAX_RANK),
        ("batch", spec.batch, MAX_BATCH),
        ("seq", spec.seq, MAX_SEQ),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise InvalidInputError(f"{name} must be a whole number from 1 to {limit:,}, got {value!r}")
    return spec.model_copy(update={"method": method, "optimizer": optimizer})


def _targeted(arch: Architecture, targets: tuple[str, ...]) -> list[Tensor]:
    wanted = set(_ALL_LINEAR) if "all" in targets else set(targets)
    if "output" in targets:
        wanted.add("output")
    return [t for t in arch.tensors() if t.category in wanted]


def lora_params(arch: Architecture, rank: int, targets: tuple[str, ...] = ("all",)) -> int:
    """Trainable parameters: A (rank × in) and B (out × rank) on each targeted matrix."""
    return sum(rank * (t.ncols + t.nrows) * t.copies for t in _targeted(arch, targets))


def activation_bytes_per_token_layer(arch: Architecture) -> int:
    """bf16 tensors autograd saves per token in one transformer layer (see the module doc)."""
    h = arch.hidden_size
    q = arch.num_heads * (arch.head_dim if not arch.is_mla else arch.qk_nope_head_dim + arch.qk_rope_head_dim)
    kv = arch.num_kv_heads * arch.head_dim if not arch.is_mla else arch.kv_lora_rank + arch.qk_rope_head_dim
    f = arch.ffn_width_per_token
    return _BF16 * (4 * h + 2 * q + 2 * kv + 3 * f)


def training_memory(arch: Architecture, params: int, spec: FinetuneSpec, gpus: int = 1) -> TrainingMemory:
    """Bytes per GPU of one training step at its peak."""
    scale = params / arch.total_params()
    state = _STATE_BYTES[spec.optimizer]
    if spec.method == "full":
        trainable = params
        base = params * _BF16
        grads = params * _BF16
        opt = params * state["bf16"]
        adapters = 0
    else:
        trainable = round(lora_params(arch, spec.lora_rank, spec.targets) * scale)
        precision = "nf4" if spec.method == "qlora" else "bf16"
        base = weights(arch, precision, params if params != arch.total_params() else None).bytes
        grads = trainable * _FP32
        opt = trainable * state["fp32"]
        adapters = trainable * _FP32
    tokens = spec.batch * spec.seq
    per_layer = activation_bytes_per_token_layer(arch)
    if spec.gradient_checkpointing:
        activations = tokens * (arch.num_layers * _BF16 * arch.hidden_size + 2 * per_layer)
    else:
        activations = tokens * arch.num_layers * per_layer
    logits = tokens * arch.vocab_size * _LOGIT_BYTES
    shard = max(1, gpus)
    return TrainingMemory(
        trainable_params=trainable,
        weights=math.ceil(base / shard),
        gradients=math.ceil(grads / shard),
        optimizer=math.ceil(opt / shard),
        adapters=math.ceil(adapters / shard),
        activations=activations,
        logits=logits,
        overhead=CUDA_CONTEXT_BYTES,
    )


def full_bytes_per_param(optimizer: str, master_weights: bool = False) -> int:
    """Weights + gradients + optimizer states per parameter of full fine-tuning: bf16 throughout,
    or mixed precision's bf16 weights and gradients with an fp32 master copy and fp32 states."""
    state = _STATE_BYTES[optimizer]
    if master_weights:
        return _BF16 + _BF16 + _FP32 + state["fp32"]
    return _BF16 + _BF16 + state["bf16"]


def breakdown(memory: TrainingMemory, spec: FinetuneSpec, gpus: int) -> FinetuneBreakdown:
    gb = 1e9
    return FinetuneBreakdown(
        method=spec.method,
        optimizer=spec.optimizer,
        lora_rank=spec.lora_rank if spec.method != "full" else None,
        batch=spec.batch,
        seq=spec.seq,
        gradient_checkpointing=spec.gradient_checkpointing,
        gpus=gpus,
        trainable_params=memory.trainable_params,
        weights_gb=round(memory.weights / gb, 2),
        gradients_gb=round(memory.gradients / gb, 2),
        optimizer_gb=round(memory.optimizer / gb, 2),
        adapters_gb=round(memory.adapters / gb, 2),
        activations_gb=round(memory.activations / gb, 2),
        logits_gb=round(memory.logits / gb, 2),
        overhead_gb=round(memory.overhead / gb, 2),
        total_gb=round(memory.total / gb, 2),
    )


def max_batch(arch: Architecture, params: int, spec: FinetuneSpec, gpus: int, usable_bytes: int) -> int:
    """The largest micro-batch per GPU that fits `usable_bytes` (0 when even 1 does not)."""
    low, high = 0, MAX_BATCH
    while low < high:
        mid = (low + high + 1) // 2
        if training_memory(arch, params, spec.model_copy(update={"batch": mid}), gpus).total <= usable_bytes:
            low = mid
        else:
            high = mid - 1
    return low


__all__ = [
    "METHODS",
    "OPTIMIZERS",
    "FinetuneBreakdown",
    "FinetuneSpec",
    "TrainingMemory",
    "breakdown",
    "check_spec",
    "full_bytes_per_param",
    "lora_params",
    "max_batch",
    "training_memory",
]
