"""Deterministic, bilingual understanding of one visitor message.

`understand(message)` reads the five sizing slots (model, precision, tasks, context, users),
a named card or card class, the engine and KV-cache precision, the general questions of the FAQ
and the conversation moves (greeting, reset, prompt-injection attempts) out of one Spanish or
English message. Words live in `data/lexicon.yaml` and `data/faq.yaml` (compiled by `lexicon`);
model and card names come from the catalog in `tools` (`names`), so a model added to the catalog is
understood with no code change. The readers of each kind of fact are their own modules:
`read_models` (models, precisions), `read_cards` (cards and hosts), `read_quantities` (users,
context, lengths, budget), `workload` (service class, rate, latency targets).

Parsing consumes each recognised span (blanks it) so one phrase never fills two slots:
"2x80GB" is a card, not a context; "8-bit KV cache" is the KV precision, not the weights'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from assistant.offline.lexicon import lexicon, load_yaml
from assistant.offline.notes import ReadingNote, note
from assistant.offline.read_cards import (
    find_card_count,
    find_cards,
    find_tensor_parallel,
    find_utilization,
    host_cards,
)
from assistant.offline.read_models import (
    family_list,
    find_draft,
    find_kv_dtype,
    find_models,
    find_precisions,
    fix_family_typos,
    names_release_repo,
    precision_per_model,
    read_family,
)
from assistant.offline.read_quantities import (
    digits_for_number_words,
    find_budget,
    find_context,
    find_finetune,
    find_head_count,
    find_job_count,
    find_lengths,
    find_lora,
    find_pages,
    find_training,
    find_users,
    is_training,
)
from assistant.offline.spans import fold, message_span
from assistant.offline.workload import find_workload
from assistant.schemas import Language

# The serving workload and the vLLM engine options a message can say, named alike in Understanding,
# ConversationState, SizingPlan and SizingRequest.
WORKLOAD_FIELDS = ("service", "rate", "users_max", "ttft_ms", "tpot_ms", "input_len", "output_len")
ENGINE_OPTION_FIELDS = ("max_loras", "max_lora_rank", "draft_model")
# What a training question says of the training (the method named, the LoRA rank, the knobs of
# tools.finetune.FinetuneSpec it gives).
FINETUNE_FIELDS = (
    "finetune_method",
    "lora_rank",
    "train_batch",
    "train_seq",
    "train_optimizer",
    "gradient_checkpointing",
)
# The knobs a training follow-up may change on its own ("and with batch 8?").
TRAINING_KNOBS = FINETUNE_FIELDS[1:]
# The Understanding fields that are a sizing fact when said (a LoRA rank alone is not).
SLOTS_SAID = ("model", "precisions", "kv_dtype", "engine", "context", "users", "tasks", "gpu", "card_class")
SIZING_FACTS = (
    *SLOTS_SAID,
    "head_count",
    "utilization",
    *WORKLOAD_FIELDS,
    "job_count",
    "max_loras",
    "draft_model",
    "lora_rank",
    "train_batch",
    "train_seq",
    "train_optimizer",
    "notes",
    "family",
    "card_count",
    "cards_added",
)
# The yes/no readings of a message, each the lexicon pattern of the same name.
MOVES = (
    "greeting",
    "thanks",
    "reset",
    "reveal_prompt",
    "injection",
    "sizing_words",
    "comparison",
    "cards_compared",
    "concept_question",
    "format_question",
)


@dataclass(frozen=True)
class Understanding:
    """What one message says. `None` / empty means the message did not say it."""

    language: Language
    language_confident: bool = False
    model: str | None = None  # what SizingRequest.model gets: a catalog id or a bare size ("70b")
    model_label: str | None = None  # how the visitor wrote it, for the answer
    other_models: tuple[str, ...] = ()  # further models named in the same message
    family: str | None = None  # a catalog family named with no size ("llama", "qwen 2.5"), no model
    # A family version the catalog lacks ("Phi 3"): said and asked about, never searched for.
    unknown_model: str | None = None
    unknown_family: str | None = None  # its family phrase ("phi"): a later "the 14b" is that family's
    precisions: tuple[str, ...] = ()  # weights precisions, in the order named
    precision_assumed: bool = False  # "quantized" with no bit width, read as 4-bit
    kv_dtype: str | None = None
    engine: str | None = None
    context: int | None = None
    users: int | None = None
    tasks: str | None = None
    gpu: str | None = None  # card id, with ":N" for several cards
    card_class: str | None = None  # a card-class id ("48gb", "2x80gb")
    cards: tuple[
        str, ...
    ] = ()  # every card or class named and not ruled out, in order (gpu/card_class first)
    head_count: int | None = None  # people in the company or team: not a concurrency
    # A number of cards with no card name ("what about 2 gpus?", "2 of them"): the conversation's
    # card that many times; or the cards added to it ("one more", "y si compro otra?").
    card_count: int | None = None
    cards_added: int | None = None
    # A message that is only a number ("con tres?", "and with 4?"): cards or users, asked back.
    bare_number: int | None = None
    # That number said as an answer ("20", "about 10", "serán unos 12"), not as a what-if ("and
    # with 20?"): after the assistant asked how many users or what context, it answers that.
    bare_answer: bool = False
    question: str | None = None  # what is asked when it is not "does it fit" (lexicon `questions`)
    budget: str | None = None  # a money figure as written ("30k USD"): acknowledged, never a context
    unknown_hardware: str | None = None  # hardware named that the catalog does not know, as written
    hardware_kind: str | None = None  # "apple" (unified memory) or "cpu" (no GPU)
    utilization: float | None = None  # vLLM --gpu-memory-utilization
    # The serving workload (assistant/offline/workload.py): service class, requests/s, targets.
    service: str | None = None
    rate: float | None = None
    rate_period: str | None = None  # "day", "week", "month": the rate is that period's average
    users_max: bool | None = None  # "maximum throughput": as many sequences as the memory holds
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    input_len: int | None = None  # prompt tokens per request ("1000 tokens in")
    output_len: int | None = None  # answer tokens per request ("200 out")
    job_count: int | None = None  # requests in one batch job ("10.000 correos cada noche")
    max_loras: int | None = None  # LoRA adapter slots served at once (--max-loras), not fine-tuning
    max_lora_rank: int | None = None
    draft_model: str | None = None  # speculative decoding's draft model: not a second model to compare
    finetune_method: str | None = None  # full | lora | qlora, named in a training question
    lora_rank: int | None = None  # the LoRA rank a training question gives
    # A training question's micro-batch and sequence length (outside one: a figure said after
    # "batch" or before "-token sequences", for a training follow-up), optimizer and checkpointing.
    train_batch: int | None = None
    train_seq: int | None = None
    train_optimizer: str | None = None
    gradient_checkpointing: bool | None = None
    repo_release: bool = False  # a Hub repo id of the 16-bit release checkpoint ("Qwen/Qwen2.5-7B-Instruct")
    # Values written that could not be used as written, each said in the answer (data/reading_notes.yaml).
    notes: tuple[ReadingNote, ...] = ()
    model_precisions: tuple[
        str | None, ...
    ] = ()  # per model (model, *other_models): the precision next to it
    comparison: bool = False  # "or" / "vs" / "better" between the two models or cards named
    faq: tuple[str, ...] = ()  # FAQ entry ids whose triggers matched, in file order
    greeting: bool = False
    thanks: bool = False
    reset: bool = False
    reveal_prompt: bool = False
    injection: bool = False
    sizing_words: bool = False
    cards_compared: bool = False  # "h100 or h200?", "diferencia entre l40s y a6000": cards weighed
    concept_question: bool = False  # "what is fp8?": not a follow-up of the last question
    format_question: bool = False  # "what is fp8?" and nothing more: the format's definition answers it

    @property
    def names_a_slot(self) -> bool:
        """True when the message gives at least one sizing fact (slot, card, engine)."""
        return any(getattr(self, name) for name in SIZING_FACTS)


def detect_language(message: str, default: Language = "en") -> tuple[Language, bool]:
    """('es' or 'en', confident?) from marker words; a tie keeps `default`."""
    # Whole words only: the "mi" of "MI300X" or the "de" of a model id is no Spanish.
    words = [word for word in re.findall(r"[a-z0-9]+", fold(message)) if word.isalpha()]
    markers = lexicon().language_markers
    spanish = sum(word in markers["es"] for word in words)
    english = sum(word in markers["en"] for word in words)
    if re.search(r"[¿¡ñáéíóú]", message.lower()):
        spanish += 2
    if spanish > english:
        return "es", True
    if english > spanish:
        return "en", True
    return default, False


def understand(message: str, default_language: Language = "en") -> Understanding:
    """Everything the message says about sizing, with no side effects."""
    lex = lexicon()
    language, confident = detect_language(message, default_language)
    text = folded = fold(message)

    faq = tuple(entry_id for entry_id, triggers in lex.faq_triggers if any(t.search(text) for t in triggers))
    found: dict[str, Any] = {name: bool(getattr(lex, name).search(text)) for name in MOVES}
    found["question"] = next((kind for pattern, kind in lex.questions if pattern.search(text)), None)
    text, budget = find_budget(text, lex)
    found["budget"] = message_span(message, budget) if budget else None
    text, found["utilization"] = find_utilization(text, lex)
    text, tensor_parallel = find_tensor_parallel(text, lex)
    notes: list[ReadingNote] = []
    text, load = find_workload(text, lex.workload)
    found.update(service=load.service, rate=load.rate, ttft_ms=load.ttft_ms, tpot_ms=load.tpot_ms)
    found.update(rate_period=load.rate_period, users_max=load.users_max)
    if load.service == "batch_offline":
        text, found["job_count"] = find_job_count(text, lex)
    text, found["input_len"], found["output_len"] = find_lengths(text, lex)
    text, task_text, found["max_loras"], found["max_lora_rank"] = find_lora(text, folded, lex)
    text, found["finetune_method"], found["lora_rank"] = find_finetune(text, task_text, lex)
    training = is_training(task_text, lex)
    text, knobs = find_training(text, training, lex)
    found.update(
        train_batch=knobs.batch,
        train_seq=knobs.seq,
        train_optimizer=knobs.optimizer,
        gradient_checkpointing=knobs.checkpointing,
    )
    found["repo_release"] = names_release_repo(text, lex)
    text = fix_family_typos(text)
    text, found["draft_model"] = find_draft(text, lex)
    if found["draft_model"]:
        found["comparison"] = False

    text, models = find_models(text, notes)
    kept = [model for model in models if not model.ruled_out]
    if kept:
        found["model"], found["model_label"] = kept[0].model_id, kept[0].label
        found["other_models"] = tuple(model.model_id for model in kept[1:])
    elif not models:
        text, family = read_family(text)
        found["family"] = family.family
        if family.model:
            found["model"], found["model_label"] = family.model.model_id, family.model.label
        if family.counted:
            written, number = family.counted
            notes.append(note("family_number_count", written=written, number=number))
        if family.unknown:
            written, phrase = family.unknown
            found["unknown_model"], found["unknown_family"] = written, phrase
            notes.append(note("family_version_unknown", written=written, models=family_list(phrase)))
    text, cards = find_cards(text, tensor_parallel, notes)
    said_kind = "apple" if lex.apple.search(text) else "cpu" if lex.cpu.search(text) else None
    if said_kind is None and len(cards) == 1 and _system_ram_only(folded, lex):
        said_kind = "cpu"  # "a laptop with 16gb of ram": system memory, not a GPU's
    cards, found["hardware_kind"] = host_cards(cards, said_kind, folded)
    if cards:
        found["gpu"], found["card_class"] = cards[0]
        found["cards"] = tuple(gpu or card_class or "" for gpu, card_class in cards)
    unknown = lex.unknown_hardware.search(text)  # catalog cards are blanked by now
    if unknown:
        found["unknown_hardware"] = message_span(message, unknown.group(0))
    text, found["kv_dtype"] = find_kv_dtype(text, lex)
    text, hits = find_precisions(text, lex)
    precisions = _unique_in_order(precision for _, precision in hits)
    if not precisions and lex.quantized_unspecified.search(text) and not faq:
        precisions, found["precision_assumed"] = (lex.quantized_default,), True
    found["precisions"] = precisions
    found["model_precisions"] = precision_per_model(kept, hits)
    found["engine"] = next((engine for pattern, engine in lex.engine if pattern.search(text)), None)
    text = digits_for_number_words(text, lex)
    text, found["head_count"] = find_head_count(text, lex)
    text, found["users"] = find_users(text, lex, notes)
    text, pages = find_pages(text, lex, notes)
    text, found["context"] = find_context(text, lex, notes)
    if pages is not None:  # "contracts of up to 50 pages": the tokens they take, unless a context is said
        length = {"pages": pages.pages, "tokens": pages.tokens}
        if found["context"] is None:
            found["context"] = pages.context
            notes.append(note("context_from_pages", **length, per_page=pages.per_page, context=pages.context))
        elif pages.context > found["context"]:  # "16k context for contracts of 50 pages": short of it
            notes.append(
                note("context_short_of_pages", **length, context=found["context"], needed=pages.context)
            )
    if not cards and not found["hardware_kind"]:
        text, found["card_count"], found["cards_added"] = find_card_count(text, lex)
    # The workload is read from the whole message: "QLoRA" names a precision and a task at once.
    found["tasks"] = next((task for pattern, task in lex.tasks if pattern.search(task_text)), None)
    if found["tasks"] == "finetuning" and found["question"] is None:
        found["question"] = "finetuning"
    if training and found["train_seq"] is None:
        found["train_seq"] = found["context"]  # "fine-tune it with 16k context": its sequences
    answer = lex.bare_answer.search(folded)
    bare = answer or lex.bare_number.search(folded)
    if bare and not notes and not any(found.get(name) for name in SIZING_FACTS):
        said = bare.group("count")
        found["bare_number"] = lex.number_words.get(said) or _digits(said)
        found["bare_answer"] = answer is not None
    return Understanding(
        language=language, language_confident=confident, faq=faq, notes=tuple(notes), **found
    )


def _digits(written: str) -> int:
    return int(written) if written.isdigit() else 1  # "single", "sola"


def _system_ram_only(folded: str, lex: Any) -> bool:
    """A memory figure said as RAM, with no GPU word and no unknown GPU named beside it."""
    return bool(
        lex.system_ram.search(folded)
        and not lex.gpu_words.search(folded)
        and not lex.unknown_hardware.search(folded)
    )


def _unique_in_order(items: Iterable[str]) -> tuple[str, ...]:
    ordered: list[str] = []
    for item in items:
        if item not in ordered:
            ordered.append(item)
    return tuple(ordered)


# The lexicon and folding live in their own modules; the guardrail, the sales desk and the text
# catalogue read them from here.
__all__ = ["Understanding", "detect_language", "fold", "lexicon", "load_yaml", "understand"]
