"""The offline assistant's words, compiled once: `lexicon()` reads data/lexicon.yaml and data/faq.yaml.

Every field of `Lexicon` is the lexicon.yaml key of the same name, compiled by the kind its type
says (one pattern, a list of patterns, or (pattern, id) pairs); numbers and word lists stay as
written. The parsers in `assistant.offline.understanding` and its `read_*` modules only read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from assistant.offline.workload import WorkloadPatterns, compile_patterns

DATA_DIR = Path(__file__).resolve().parent / "data"

Pairs = tuple[tuple[re.Pattern[str], str], ...]


@dataclass(frozen=True)
class LengthPatterns:
    """Request lengths said through what a request carries (lexicon.yaml `length_words`): each
    pattern has the groups n (the number), k (a thousands suffix) and tok (the word "tokens")."""

    input_after: re.Pattern[str]  # "each contract is about 6000 tokens"
    input_before: re.Pattern[str]  # "8k-token documents", "6k tokens per question"
    output_after: re.Pattern[str]  # "summaries around 400 tokens", "y el resumen 300"
    output_before: re.Pattern[str]  # "a 150 token reply", "600 tokens generated"
    output_into: re.Pattern[str]  # "... into 250 tokens", after a prompt's length only


@dataclass(frozen=True)
class Lexicon:
    # Read apart from the rest (their YAML shape is their own).
    language_markers: dict[str, frozenset[str]]
    kv_cache: re.Pattern[str]
    kv_ids: dict[str, str]
    faq_triggers: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
    workload: WorkloadPatterns
    # Weights precision, KV cache and engine.
    precision: Pairs
    quantized_unspecified: re.Pattern[str]
    quantized_default: str
    engine: Pairs
    tensor_parallel: re.Pattern[str]
    utilization: re.Pattern[str]
    # Concurrent users, head counts, context and request lengths.
    users: tuple[re.Pattern[str], ...]
    users_single: re.Pattern[str]
    number_words: dict[str, int]
    number_word_context: str
    number_word_after: tuple[str, ...]
    head_count: tuple[re.Pattern[str], ...]
    context: tuple[re.Pattern[str], ...]
    context_pages: tuple[re.Pattern[str], ...]
    context_k: int
    input_len: re.Pattern[str]
    output_len: re.Pattern[str]
    length_words: LengthPatterns
    job_count: re.Pattern[str]
    concept_question: re.Pattern[str]
    format_question: re.Pattern[str]
    budget: re.Pattern[str]
    # Models: sizes, a speculative draft, a Hub repo's quantized name.
    model_size: tuple[re.Pattern[str], ...]
    model_size_millions: re.Pattern[str]
    model_variant: re.Pattern[str]
    draft: re.Pattern[str]
    quantized_repo: re.Pattern[str]
    ruled_out: re.Pattern[str]
    # Cards and hosts.
    card_memory: re.Pattern[str]
    card_memory_words: re.Pattern[str]
    card_count: re.Pattern[str]
    card_count_alone: tuple[re.Pattern[str], ...]  # "{n}" in the file: any number, in digits or words
    bare_number: re.Pattern[str]
    bare_answer: re.Pattern[str]
    unknown_hardware: re.Pattern[str]
    apple: re.Pattern[str]
    cpu: re.Pattern[str]
    system_ram: re.Pattern[str]
    gpu_words: re.Pattern[str]
    # LoRA adapters served.
    lora_slots: re.Pattern[str]
    lora_enable: re.Pattern[str]
    lora_rank: re.Pattern[str]
    lora_default_slots: int
    # Fine-tuning: the method named, the LoRA rank and the training knobs.
    finetune_methods: Pairs
    finetune_rank: re.Pattern[str]
    train_batch_word: re.Pattern[str]
    train_batch: tuple[re.Pattern[str], ...]
    train_seq: tuple[re.Pattern[str], ...]
    train_optimizer: Pairs
    checkpointing_off: re.Pattern[str]
    checkpointing_on: re.Pattern[str]
    # What is asked, and the conversation moves.
    questions: Pairs
    tasks: Pairs
    comparison: re.Pattern[str]
    cards_compared: re.Pattern[str]
    sizing_words: re.Pattern[str]
    greeting: re.Pattern[str]
    thanks: re.Pattern[str]
    reset: re.Pattern[str]
    reveal_prompt: re.Pattern[str]
    injection: re.Pattern[str]


def load_yaml(name: str) -> Any:
    """One file of data/, parsed."""
    import yaml  # only the offline path needs it

    # libyaml's loader when the wheel has it: several times faster on a cold start.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with (DATA_DIR / name).open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


@lru_cache(maxsize=1)
def rules() -> dict[str, Any]:
    """data/rules_of_thumb.yaml: tokens and words per page, fine-tuning bytes per parameter."""
    loaded: dict[str, Any] = load_yaml("rules_of_thumb.yaml")
    return loaded


def _compiled(kind: str, written: Any) -> Any:
    """A lexicon.yaml value read as the field type `kind` (the annotation's text) says."""
    if kind == "re.Pattern[str]":
        return re.compile(written)
    if kind == "tuple[re.Pattern[str], ...]":
        return tuple(re.compile(pattern) for pattern in written)
    if kind == "Pairs":
        return tuple((re.compile(entry["pattern"]), entry["id"]) for entry in written)
    if kind.startswith("tuple["):
        return tuple(written)
    return written


def _with_numbers(patterns: list[str], number_words: dict[str, int]) -> tuple[re.Pattern[str], ...]:
    """The patterns with "{n}" read as a number: digits, a number word, or "single"/"sola" (one)."""
    words = sorted((*number_words, "single", "sola"), key=len, reverse=True)  # "par de" before "par"
    number = "|".join([r"\d+", *(re.escape(word) for word in words)])
    return tuple(re.compile(pattern.replace("{n}", number)) for pattern in patterns)


def _length_patterns(raw: dict[str, str]) -> LengthPatterns:
    parts = {name: raw[name] for name in ("input", "output", "tokens", "gap")} | {"n": raw["number"]}

    def compiled(name: str) -> re.Pattern[str]:
        pattern = raw[name]
        for part, written in parts.items():
            pattern = pattern.replace("{" + part + "}", written)
        return re.compile(pattern)

    return LengthPatterns(**{spec.name: compiled(spec.name) for spec in fields(LengthPatterns)})


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The compiled lexicon (read once per process)."""
    raw = load_yaml("lexicon.yaml")
    faq = load_yaml("faq.yaml")["faq"]
    apart: dict[str, Any] = {
        "language_markers": {lang: frozenset(words) for lang, words in raw["language_markers"].items()},
        "kv_cache": re.compile(raw["kv_cache"]["pattern"]),
        "kv_ids": dict(raw["kv_cache"]["ids"]),
        "faq_triggers": tuple(
            (entry["id"], tuple(re.compile(pattern) for pattern in entry["triggers"])) for entry in faq
        ),
        "workload": compile_patterns(raw["workload"], raw["length_words"]["input"]),
        "card_count_alone": _with_numbers(raw["card_count_alone"], raw["number_words"]),
        "bare_number": _with_numbers([raw["bare_number"]], raw["number_words"])[0],
        "bare_answer": _with_numbers([raw["bare_answer"]], raw["number_words"])[0],
        "length_words": _length_patterns(raw["length_words"]),
        "job_count": re.compile(raw["job_count"].replace("{input}", raw["length_words"]["input"])),
    }
    read = {
        spec.name: _compiled(str(spec.type), raw[spec.name])
        for spec in fields(Lexicon)
        if spec.name not in apart
    }
    return Lexicon(**apart, **read)


__all__ = ["DATA_DIR", "Lexicon", "lexicon", "load_yaml"]
