"""The assistant's domain types: the conversation state, a reply, and the stream events.

Pure pydantic (no LangChain, Gradio or Chroma), so the web app, the CLI, the LLM agent
and the offline responder all exchange the same serializable objects. Import them from
`assistant.service` (which re-exports them) or from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools import SizingResult
from tools.i18n import Language

Mode = Literal["llm", "offline"]
# The questions a follow-up that only changes a slot asks again ("and with 32 users?").
FollowedQuestion = Literal["throughput", "latency", "capacity", "gpu_count", "cheapest", "max_context"]

# The five sizing questions of the source article, in the order a follow-up asks them.
SLOT_NAMES: tuple[str, ...] = ("model", "precision", "tasks", "context", "users")

# How many turns (visitor and assistant messages together) the state keeps for the LLM.
HISTORY_TURNS = 8


class Source(BaseModel):
    """An article section an answer cites."""

    model_config = ConfigDict(frozen=True)

    title: str
    path: str
    section: str
    # The retrieval score of the passage behind it (the desk's question log reads it); left out of
    # the JSON so `sizing ask --json` and the goldens keep their shape.
    score: float | None = Field(default=None, exclude=True)


class Step(BaseModel):
    """One visible step of answering: a calculation, a search, a model call, a fallback.

    kind: "understand" | "calculate" | "search" | "model" | "tool" | "guardrail" | "fallback"
    (free text so new kinds need no schema change; the UI shows `title` and `detail`).
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    title: str
    detail: str = ""
    status: Literal["running", "done", "error"] = "done"


class Turn(BaseModel):
    """One message of the short history kept in the state."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    text: str


class ConversationState(BaseModel):
    """What the assistant remembers about one visitor's conversation.

    The five slots are the article's five questions. `None` means "not said yet";
    the answer then uses a default and says so. Serializable (model_dump / model_validate)
    so the web app can keep it in `gr.State` and the CLI across `sizing chat` turns.
    """

    model: str | None = Field(default=None, description="Catalog id, alias or bare size ('70b').")
    family: str | None = Field(
        default=None,
        description="A model family named with no size ('llama', 'qwen 2.5'), until a model is chosen.",
    )
    precision: str | None = Field(default=None, description="A tools.PRECISIONS id ('int4', 'bf16'...).")
    tasks: str | None = Field(
        default=None, description="Workload id ('rag', 'chat', 'code', 'reasoning'...)."
    )
    context: int | None = Field(default=None, gt=0, description="Tokens per sequence.")
    users: int | None = Field(default=None, gt=0, description="Concurrent users (sequences).")
    # Not among the five questions, but a named card or engine shapes the verdict.
    gpu: str | None = Field(default=None, description="Card id, optionally ':N', or a card-class id.")
    engine: str | None = Field(default=None, description="A tools.ENGINES id; None = the default engine.")
    kv_dtype: str | None = Field(default=None, description="KV-cache dtype when the visitor named one.")
    head_count: int | None = Field(
        default=None, gt=0, description="People in the company or team (not a concurrency), when said."
    )
    gpu_memory_utilization: float | None = Field(
        default=None, description="vLLM --gpu-memory-utilization, when the visitor's command line set it."
    )
    # The serving workload, when the visitor said it (tools/data/service_classes.json, SizingRequest).
    service: str | None = Field(default=None, description="Service class id ('voice_agent'...), when said.")
    rate: float | None = Field(default=None, gt=0, description="Offered requests per second, when said.")
    rate_period: Literal["day", "week", "month"] | None = Field(
        default=None, description="The period the rate was said over when a day or longer: its average."
    )
    users_max: bool | None = Field(
        default=None, description="As many sequences as the memory holds ('maximum throughput'), when said."
    )
    ttft_ms: float | None = Field(default=None, gt=0, description="Target time to first token, ms.")
    tpot_ms: float | None = Field(default=None, gt=0, description="Target time per output token, ms.")
    input_len: int | None = Field(default=None, gt=0, description="Prompt tokens per request, when said.")
    output_len: int | None = Field(default=None, gt=0, description="Answer tokens per request, when said.")
    job_count: int | None = Field(
        default=None, gt=0, description="Requests in one batch job ('10,000 e-mails overnight'), when said."
    )
    # Engine options the visitor's command line or words set (SizingRequest fields of the same name).
    max_loras: int | None = Field(default=None, gt=0, description="LoRA adapter slots (--max-loras).")
    max_lora_rank: int | None = Field(default=None, gt=0, description="--max-lora-rank of those slots.")
    draft_model: str | None = Field(default=None, description="Speculative-decoding draft model id.")
    # What a fine-tuning question said of the training (tools.finetune.FinetuneSpec fields).
    finetune_method: str | None = Field(default=None, description="full | lora | qlora, when named.")
    lora_rank: int | None = Field(default=None, gt=0, description="The LoRA rank to train, when said.")
    train_batch: int | None = Field(
        default=None, gt=0, description="Training micro-batch per GPU, when said."
    )
    train_seq: int | None = Field(default=None, gt=0, description="Tokens per training sequence, when said.")
    train_optimizer: str | None = Field(default=None, description="adamw | adamw8bit | sgd, when said.")
    gradient_checkpointing: bool | None = Field(default=None, description="Said on or off, when said.")
    last_question: FollowedQuestion | None = Field(
        default=None,
        description="What the last answer was asked (speed, latency, how many users it serves, how many cards, the cheapest card, "
        "the longest context): a follow-up that only changes a slot ('and with 32 users?') asks it again.",
    )
    asked: list[Literal["model", "precision", "tasks", "context", "users"]] = Field(
        default_factory=list,
        description="The slots the last answer asked for: a bare '20' next answers the one it can.",
    )
    pending_count: int | None = Field(
        default=None,
        gt=0,
        description="A bare number the last answer asked the unit of ('32 of what?'): 'users' next is 32 users.",
    )
    compared_cards: list[str] = Field(
        default_factory=list,
        description="Cards the last answer weighed with no model ('h100 or h200?'): a model next is sized on each.",
    )
    language: Language | None = Field(default=None, description="Language of the last answer.")
    history: list[Turn] = Field(default_factory=list, description=f"The last {HISTORY_TURNS} messages.")

    def missing_slots(self) -> list[str]:
        """The five-question slots the visitor has not answered yet, in asking order."""
        return [name for name in SLOT_NAMES if getattr(self, name) is None]

    def with_turn(
        self, role: Literal["user", "assistant"], text: str, max_chars: int = 600
    ) -> ConversationState:
        """A copy with one more history message (clipped), keeping only the last HISTORY_TURNS."""
        clipped = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
        history = [*self.history, Turn(role=role, text=clipped)][-HISTORY_TURNS:]
        return self.model_copy(update={"history": history})


class HandoffOffer(BaseModel):
    """The "Talk to an engineer" form is offered, open, with this answer.

    The assistant never takes the visitor's details itself: name, e-mail and consent are typed
    into the form, so the offer carries only why it was made."""

    why: Literal["asked_for_person", "nothing_fit", "agent"] = Field(
        description="The visitor asked for a person, nothing compared fits, or the LLM agent offered it."
    )
    reason: str = Field(default="", description="The agent's one-line reason (empty for the other two).")


class Reply(BaseModel):
    """One answer to one visitor message."""

    answer: str = Field(description="Markdown shown to the visitor.")
    language: Language
    mode: Mode
    notice: str | None = Field(
        default=None, description="One line: fallback, truncation, sources unavailable."
    )
    calculations: list[SizingResult] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="Slot names still unanswered (SLOT_NAMES).")
    state: ConversationState = Field(default_factory=ConversationState)
    steps: list[Step] = Field(default_factory=list)
    handoff: HandoffOffer | None = Field(
        default=None, description="Set when this answer opens the 'Talk to an engineer' form."
    )

    def public_json(self) -> dict[str, Any]:
        """The `sizing ask --json` object."""
        return {
            "answer": self.answer,
            "language": self.language,
            "mode": self.mode,
            "notice": self.notice,
            "calculations": [result.model_dump(mode="json") for result in self.calculations],
            "sources": [source.model_dump(mode="json") for source in self.sources],
            "missing": list(self.missing),
            "handoff": self.handoff.model_dump(mode="json") if self.handoff else None,
        }


class StepEvent(BaseModel):
    """A step started or finished (stream event)."""

    type: Literal["step"] = "step"
    step: Step


class TextDelta(BaseModel):
    """A piece of the final answer's text (stream event); pieces concatenate to Reply.answer."""

    type: Literal["text"] = "text"
    text: str


class CalculationEvent(BaseModel):
    """A calculator result, sent as soon as the calculator returns (stream event).

    Deterministic, so a client may show its verdict at once, before the answer's text; the
    final reply's answer, which contains the same figures, replaces it.
    """

    type: Literal["calculation"] = "calculation"
    result: SizingResult


class FinalEvent(BaseModel):
    """The last stream event: the complete reply. Its `reply.answer` is authoritative."""

    type: Literal["final"] = "final"
    reply: Reply


StreamEvent = StepEvent | CalculationEvent | TextDelta | FinalEvent

# What `run_agent(..., on_event=...)` calls while the agent works (steps and calculator results;
# text is not forwarded, because a draft is only shown after the guardrail has checked its numbers).
EventCallback = Callable[[StepEvent | CalculationEvent | TextDelta], None]
