"""The sizing engine's public types: what goes in (SizingRequest) and what comes out.

Pure pydantic. GB means 10^9 bytes in every field named *_gb.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.finetune import FinetuneBreakdown, FinetuneSpec
from tools.i18n import Language


class FileWeights(BaseModel):
    """Weights read from a model file's header (a local GGUF): exact, not derived."""

    model_config = ConfigDict(frozen=True)

    bytes: int = Field(description="Bytes of every tensor in the file.")
    token_embedding_bytes: int = Field(default=0, description="Bytes of token_embd (kept in host RAM).")
    source: str = Field(default="", description="Where the figures come from (the file name).")


class Measurement(BaseModel):
    """One load test of one setup: the model served at a precision by an engine on card × GPUs."""

    model: str = Field(description="Catalog id of the model, as `sizing calc` resolves it.")
    precision: str
    engine: str
    card: str = Field(description="card id from tools/data/cards.json")
    gpus: int = Field(ge=1)
    input_len: int = Field(ge=1)
    output_len: int = Field(ge=1)
    concurrency: int = Field(ge=1)
    ttft_ms: float | None = Field(
        default=None, gt=0, description="median time to first token; None = not measured"
    )
    tpot_ms: float = Field(gt=0, description="median time per output token after the first")
    output_tok_s_total: float | None = Field(default=None, gt=0)
    source: str = Field(default="", description="where the figures come from (a loadtest report, a log)")
    recorded: str = ""

    def same_setup(self, model: str, precision: str, engine: str, card: str, gpus: int) -> bool:
        return (self.model, self.precision, self.engine, self.card, self.gpus) == (
            model,
            precision,
            engine,
            card,
            gpus,
        )


class SizingRequest(BaseModel):
    """One sizing question: a model at a precision, a context, a number of concurrent users."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(default="", description='Catalog id, alias ("Llama 3.1 70B") or bare size ("70b").')
    precision: str = Field(default="bf16", description="Weight format: fp16, bf16, fp8, awq, q4_k_m...")
    context: int = Field(default=8192, description="Tokens per sequence (prompt + answer), > 0.")
    users: int = Field(default=1, description="Concurrent sequences, > 0.")
    kv_dtype: str | None = Field(default=None, description="KV cache element type; None = 16-bit.")
    engine: str = Field(default="vllm", description="Serving engine: vllm, llamacpp, ollama or transformers.")
    gpu: str | None = Field(
        default=None, description='Card id, optionally ":N" for N cards; None = every class.'
    )
    gpu_memory_utilization: float = Field(default=0.9, description="vLLM's share of card memory.")
    config: dict | None = Field(default=None, description="A Hugging Face config.json as a dict.")
    params_b: float | None = Field(default=None, description="Explicit parameter count in billions.")
    lang: Language = Field(default="en", description="Language of every text in the result.")
    max_loras: int = Field(default=0, description="vLLM --max-loras: LoRA adapter slots kept on the GPUs.")
    max_lora_rank: int = Field(default=16, description="vLLM --max-lora-rank of those slots.")
    draft_model: str | None = Field(
        default=None, description="Speculative decoding: the draft model (catalog id, Hub id or size)."
    )
    mtp: bool = Field(default=False, description="Speculative decoding with the model's MTP heads.")
    file_weights: FileWeights | None = Field(
        default=None, description="Exact weights from a model file's header (with config)."
    )
    finetune: FinetuneSpec | None = Field(
        default=None, description="Size training (full, LoRA, QLoRA) instead of serving."
    )
    # Serving workload (tools/performance.py); every field is optional.
    input_len: int | None = Field(
        default=None, description="Prompt tokens per request; None = the service default."
    )
    output_len: int | None = Field(
        default=None, description="Answer tokens per request; None = the service default."
    )
    rate: float | None = Field(
        default=None, description="Offered requests per second (Little's law sets the users)."
    )
    users_max: bool = Field(default=False, description="Performance at as many sequences as memory holds.")
    users_target: bool = Field(
        default=False,
        description="Performance at as many users as meet the latency target (the default class's if none).",
    )
    ttft_ms: float | None = Field(default=None, description="Target median time to first token, ms.")
    tpot_ms: float | None = Field(default=None, description="Target median time per output token, ms.")
    service: str | None = Field(
        default=None, description="Service class id (tools/data/service_classes.json)."
    )
    measured: list[Measurement] | None = Field(
        default=None, description="The vendor's own load tests; None = tools/data/perf_measured.json."
    )


class Band(BaseModel):
    """An estimate with its calibrated range: low and high bound the best value."""

    low: float
    best: float
    high: float


class PerformanceTarget(BaseModel):
    """The latency a service needs (p50): from a service class or the request itself."""

    service: str | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None


class PublishedRuns(BaseModel):
    """Published measurements of the same model on the same card (tools/data/performance_calibration.json)
    against what the model estimates for each of their own setups: evidence next to an estimate."""

    sources: list[str]
    engines: list[str]
    figures: int
    # Measured tokens/s over estimated tokens/s (decode and throughput figures): the slowest
    # source's median, the median source's, the fastest source's.
    speed_ratio: Band


class PerformanceEstimate(BaseModel):
    """Latency and throughput of one option under one workload, with where it comes from."""

    input_len: int
    output_len: int
    concurrency: Band
    ttft_ms: Band
    tpot_ms: Band
    output_tok_s_per_user: Band
    output_tok_s_total: Band
    requests_per_s: Band
    basis: Literal["measured", "scaled", "model"]
    basis_detail: str
    saturated: bool = False  # the offered rate needs more sequences than memory holds
    target: PerformanceTarget | None = None
    meets_target: bool | None = None
    published: PublishedRuns | None = None  # where the calibration has runs of this model on this card
    # The published runs of this model, card and precision its decode is scaled to
    # (tools/performance_anchor.py); empty where the calibration has none.
    anchored_to: list[str] = Field(default_factory=list)
    # With users 'target': the most users served within the target (low: at the band's slow edge,
    # high: at its fast edge; 0 when even one user misses it), and the sequences the memory holds.
    capacity: Band | None = None
    held_sequences: int | None = None


class ModelInfo(BaseModel):
    """The model the arithmetic used, with the architecture facts that drive it."""

    id: str
    name: str
    params: int
    active_params: int
    layers: int
    kv_heads: int
    head_dim: int
    architecture: str
    aliases: list[str] = Field(default_factory=list)
    reference_note: str | None = None


class ReplicaPlan(BaseModel):
    """How a vLLM option that cannot split the heads over all its GPUs serves the request anyway:
    independent copies, each at a tensor-parallel degree that divides the heads, sharing the users."""

    tensor_parallel: int
    replicas: int
    users_per_replica: int
    idle_gpus: int
    heads: int  # the attention heads the degree must divide
    # One copy's room and headroom with its share of the users.
    max_concurrent_sequences: int
    headroom_gb: float


class CardOption(BaseModel):
    """The verdict for one card class (or one requested card) at this request."""

    card_class: str | None
    card: str | None
    label: str
    gpus: int
    usable_gb: float
    fits: bool
    headroom_gb: float
    max_concurrent_sequences: int
    decode_tokens_per_s: float | None
    serves: str
    catch: str
    performance: PerformanceEstimate | None = None
    # Why it does not fit, with the fix where one exists; None when it fits.
    # reason_code: tp_heads, vllm_slack, utilization (raise it), sequences, memory.
    reason: str | None = None
    reason_code: str | None = None
    # reason_code tp_heads: the copies at a valid degree that hold the users, when some do.
    replicas: ReplicaPlan | None = None
    # Card memory this option must offer (its engine's reserve included): the figure verdicts quote.
    required_usable_gb: float | None = None
    # The request's memory on this option (weights, KV for every user, its engine's overhead on its
    # GPU count): a result's total_gb is this figure of the option it recommends.
    total_gb: float


# The request's fields a result repeats as sized (the model and the KV cache type are resolved).
RESULT_ECHOES = ("precision", "engine", "context", "users")


class SizingResult(BaseModel):
    """Everything the calculator found, with the arithmetic lines a person can check by hand."""

    model: ModelInfo
    precision: str
    engine: str
    context: int
    users: int
    kv_dtype: str
    weights_gb: float
    # Full-attention layers, every GPU, copies included: what kv_cache_gb and total_gb use.
    kv_bytes_per_token: int
    kv_cache_gb: float
    overhead_gb: float
    # On the recommended option; when none fits, on the last option compared (the row the
    # arithmetic shows). Each option and alternative carries its own total_gb.
    total_gb: float
    options: list[CardOption]
    recommended: str | None
    recommendation: str
    arithmetic: list[str]
    caveat: str | None
    suggestions: list[str]
    # Of the suggestions, those for the load or latency target (more copies, more GPUs, a faster
    # card): what an answer about speed quotes without the memory ones.
    performance_suggestions: list[str] = Field(default_factory=list)
    below_16_bit: bool
    # When no option fits: hardware beyond the compared options that holds this request unchanged
    # (more GPUs of the largest option, or as many larger cards), each computed like an option.
    alternatives: list[CardOption] = []
    # Fine-tuning requests: the training memory per GPU, part by part (total_gb is its total).
    finetune: FinetuneBreakdown | None = None
    # What the serving extras asked for (a draft model, MTP layers, LoRA slots) add to total_gb, in
    # one sentence: their weights and their KV cache. None when the request asked for none.
    extras_note: str | None = None
    # The recommended option's performance under the request's workload (None without bandwidth data).
    performance: PerformanceEstimate | None = None
    lang: Language = "en"  # the language of every text above, as the request asked

    def recommended_option(self) -> CardOption | None:
        """The option `recommended` names (the one `performance` is for); None when none fits."""
        return next((o for o in self.options if (o.card_class or o.card) == self.recommended), None)

    def request(self, gpu: str | None = None, lang: Language | None = None) -> SizingRequest:
        """The request that sizes this result's model and workload again, to try other hardware or
        precisions: on `gpu` (None: every card class), in `lang` (None: the result's). A 16-bit KV
        cache is the engine's default, so it stays unset. A model from a config.json has no id to
        size again by (SizingError when sized)."""
        kv_dtype = None if self.kv_dtype in ("bf16", "fp16") else self.kv_dtype
        workload = {name: getattr(self, name) for name in RESULT_ECHOES}
        return SizingRequest(
            model=self.model.id, kv_dtype=kv_dtype, gpu=gpu, lang=lang or self.lang, **workload
        )


class Card(BaseModel):
    """One GPU model, with memory as nvidia-smi reports it."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    aliases: list[str] = Field(default_factory=list)
    memory_mib: int
    usable_gb: float
    bandwidth_gbps: float | None
    bf16_dense_tflops: float | None = None
    fp8: bool | None = None
    vendor: str = "nvidia"
    marketing: str = ""
    # datacenter | workstation | consumer | apple (unified memory; usable = the GPU's wired share)
    kind: str = "datacenter"
    suggested: bool = True  # proposed by suggestions/escalation; False: sized only when named


class CardClass(BaseModel):
    """A row of the card-class table: which cards, how many, and the honest texts."""

    model_config = ConfigDict(frozen=True)

    id: str
    label: str  # English; `labels` has every language
    cards: list[str]
    gpus: int
    usable_gb: float
    serves: dict[str, str]
    catch: dict[str, str]
    labels: dict[str, str] = {}
    per_card: dict[
        str, str
    ] = {}  # one card of the class ("80GB cards (A100 80GB / H100 80GB)"), per language
