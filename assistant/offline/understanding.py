"""Deterministic, bilingual understanding of one visitor message.

`understand(message)` reads the five sizing slots (model, precision, tasks, context, users),
a named card or card class, the engine and KV-cache precision, the general questions of the FAQ
and the conversation moves (greeting, reset, prompt-injection attempts) out of one Spanish or
English message. Words live in `data/lexicon.yaml` and `data/faq.yaml`; model and card names come
from the catalog in `tools`, so a model added to the catalog is understood with no code change.

Parsing consumes each recognised span (blanks it) so one phrase never fills two slots:
"2x80GB" is a card, not a context; "8-bit KV cache" is the KV precision, not the weights'.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from assistant.offline.notes import ReadingNote, note
from assistant.offline.workload import WorkloadPatterns, compile_patterns, find_workload
from assistant.schemas import Language

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Understanding:
    """What one message says. `None` / empty means the message did not say it."""

    language: Language
    language_confident: bool = False
    model: str | None = None  # what SizingRequest.model gets: a catalog id or a bare size ("70b")
    model_label: str | None = None  # how the visitor wrote it, for the answer
    other_models: tuple[str, ...] = ()  # further models named in the same message
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
    question: str | None = None  # what is asked when it is not "does it fit" (lexicon `questions`)
    budget: str | None = None  # a money figure as written ("30k USD"): acknowledged, never a context
    unknown_hardware: str | None = None  # hardware named that the catalog does not know, as written
    hardware_kind: str | None = None  # "apple" (unified memory) or "cpu" (no GPU)
    utilization: float | None = None  # vLLM --gpu-memory-utilization
    # The serving workload (assistant/offline/workload.py): service class, requests/s, targets.
    service: str | None = None
    rate: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    input_len: int | None = None  # prompt tokens per request ("1000 tokens in")
    output_len: int | None = None  # answer tokens per request ("200 out")
    max_loras: int | None = None  # LoRA adapter slots served at once (--max-loras), not fine-tuning
    max_lora_rank: int | None = None
    draft_model: str | None = None  # speculative decoding's draft model: not a second model to compare
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

    @property
    def names_a_slot(self) -> bool:
        """True when the message gives at least one sizing fact (slot, card, engine)."""
        return any(
            (
                self.model,
                self.precisions,
                self.kv_dtype,
                self.engine,
                self.context,
                self.users,
                self.tasks,
                self.gpu,
                self.card_class,
                self.head_count,
                self.utilization,
                self.service,
                self.rate,
                self.ttft_ms,
                self.tpot_ms,
                self.input_len,
                self.output_len,
                self.max_loras,
                self.draft_model,
                self.notes,
            )
        )


# --------------------------------------------------------------------------- text helpers


def fold(text: str) -> str:
    """Lowercase with accents removed, so patterns are written once without accents."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return folded.replace("’", "'").replace("×", "x")


def name_key(text: str) -> str:
    """A model name reduced so that "Llama-3.1-70B", "llama3.1:70b" and "Llama 3.1 70B" compare equal."""
    key = re.sub(r"[-_:/()\[\],]+", " ", fold(text))
    key = re.sub(r"([a-z])(\d)", r"\1 \2", key)
    return re.sub(r"\s+", " ", key).strip()


def card_key(text: str) -> str:
    """A card name reduced for matching: "RTX-4090" and "rtx 4090" compare equal; "L40S" stays whole."""
    key = re.sub(r"[-_:/()\[\],]+", " ", fold(text))
    return re.sub(r"\s+", " ", key).strip()


def parse_number(raw: str) -> float | None:
    """'8000', '8.000', '8,000', '1.5', '1,5' -> a number (thousands separators either way)."""
    raw = raw.strip(".,")
    if not raw:
        return None
    if re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", raw):
        return float(re.sub(r"[.,]", "", raw))
    try:
        return float(raw.replace(",", "."))
    except ValueError:
        return None


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


# --------------------------------------------------------------------------- data files


@dataclass(frozen=True)
class Lexicon:
    language_markers: dict[str, frozenset[str]]
    precision: tuple[tuple[re.Pattern[str], str], ...]
    quantized_unspecified: re.Pattern[str]
    quantized_default: str
    kv_cache: re.Pattern[str]
    kv_ids: dict[str, str]
    engine: tuple[tuple[re.Pattern[str], str], ...]
    users: tuple[re.Pattern[str], ...]
    users_single: re.Pattern[str]
    number_words: dict[str, int]
    number_word_context: str
    number_word_after: tuple[str, ...]
    head_count: tuple[re.Pattern[str], ...]
    context: tuple[re.Pattern[str], ...]
    context_k: int
    model_size: tuple[re.Pattern[str], ...]
    model_size_millions: re.Pattern[str]
    card_memory: re.Pattern[str]
    card_memory_words: re.Pattern[str]
    card_count: re.Pattern[str]
    tensor_parallel: re.Pattern[str]
    utilization: re.Pattern[str]
    unknown_hardware: re.Pattern[str]
    apple: re.Pattern[str]
    cpu: re.Pattern[str]
    budget: re.Pattern[str]
    ruled_out: re.Pattern[str]
    comparison: re.Pattern[str]
    questions: tuple[tuple[re.Pattern[str], str], ...]
    tasks: tuple[tuple[re.Pattern[str], str], ...]
    sizing_words: re.Pattern[str]
    greeting: re.Pattern[str]
    thanks: re.Pattern[str]
    reset: re.Pattern[str]
    reveal_prompt: re.Pattern[str]
    injection: re.Pattern[str]
    faq_triggers: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
    workload: WorkloadPatterns
    lora_slots: re.Pattern[str]
    lora_enable: re.Pattern[str]
    lora_rank: re.Pattern[str]
    lora_default_slots: int
    draft: re.Pattern[str]
    input_len: re.Pattern[str]
    output_len: re.Pattern[str]
    quantized_repo: re.Pattern[str]


def load_yaml(name: str) -> Any:
    import yaml  # only the offline path needs it

    # libyaml's loader when the wheel has it: several times faster on a cold start.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with (DATA_DIR / name).open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The compiled lexicon (read once per process)."""
    raw = load_yaml("lexicon.yaml")
    faq = load_yaml("faq.yaml")["faq"]

    def pairs(entries: list[dict[str, str]]) -> tuple[tuple[re.Pattern[str], str], ...]:
        return tuple((re.compile(entry["pattern"]), entry["id"]) for entry in entries)

    return Lexicon(
        language_markers={lang: frozenset(words) for lang, words in raw["language_markers"].items()},
        precision=pairs(raw["precision"]),
        quantized_unspecified=re.compile(raw["quantized_unspecified"]),
        quantized_default=raw["quantized_default"],
        kv_cache=re.compile(raw["kv_cache"]["pattern"]),
        kv_ids=dict(raw["kv_cache"]["ids"]),
        engine=pairs(raw["engine"]),
        users=tuple(re.compile(pattern) for pattern in raw["users"]),
        users_single=re.compile(raw["users_single"]),
        number_words=dict(raw["number_words"]),
        number_word_context=raw["number_word_context"],
        number_word_after=tuple(raw["number_word_after"]),
        head_count=tuple(re.compile(pattern) for pattern in raw["head_count"]),
        context=tuple(re.compile(pattern) for pattern in raw["context"]),
        context_k=int(raw["context_k"]),
        model_size=tuple(re.compile(pattern) for pattern in raw["model_size"]),
        model_size_millions=re.compile(raw["model_size_millions"]),
        card_memory=re.compile(raw["card_memory"]),
        card_memory_words=re.compile(raw["card_memory_words"]),
        card_count=re.compile(raw["card_count"]),
        tensor_parallel=re.compile(raw["tensor_parallel"]),
        utilization=re.compile(raw["utilization"]),
        unknown_hardware=re.compile(raw["unknown_hardware"]),
        apple=re.compile(raw["apple"]),
        cpu=re.compile(raw["cpu"]),
        budget=re.compile(raw["budget"]),
        ruled_out=re.compile(raw["ruled_out"]),
        comparison=re.compile(raw["comparison"]),
        questions=pairs(raw["questions"]),
        tasks=pairs(raw["tasks"]),
        sizing_words=re.compile(raw["sizing_words"]),
        greeting=re.compile(raw["greeting"]),
        thanks=re.compile(raw["thanks"]),
        reset=re.compile(raw["reset"]),
        reveal_prompt=re.compile(raw["reveal_prompt"]),
        injection=re.compile(raw["injection"]),
        faq_triggers=tuple(
            (entry["id"], tuple(re.compile(pattern) for pattern in entry["triggers"])) for entry in faq
        ),
        workload=compile_patterns(raw["workload"]),
        lora_slots=re.compile(raw["lora_slots"]),
        lora_enable=re.compile(raw["lora_enable"]),
        lora_rank=re.compile(raw["lora_rank"]),
        lora_default_slots=int(raw["lora_default_slots"]),
        draft=re.compile(raw["draft"]),
        input_len=re.compile(raw["input_len"]),
        output_len=re.compile(raw["output_len"]),
        quantized_repo=re.compile(raw["quantized_repo"]),
    )


# --------------------------------------------------------------------------- catalog


@dataclass(frozen=True)
class ModelName:
    model_id: str
    label: str
    family: str  # first word of the name key ("llama", "qwen")
    params_b: float


@dataclass(frozen=True)
class CardName:
    card_id: str
    label: str
    memory_gb: float  # decimal GB of the physical memory


@dataclass(frozen=True)
class Catalog:
    """Model and card names from `tools`, as match keys (longest first)."""

    model_keys: tuple[tuple[str, ModelName], ...]
    models: tuple[ModelName, ...]
    families: frozenset[str]
    card_keys: tuple[tuple[str, tuple[CardName, ...]], ...]
    spelled_card_keys: frozenset[str]  # keys that are a catalog card's own name, id or alias
    cards: tuple[CardName, ...]
    class_ids: frozenset[str]
    kinds: dict[str, str]  # card id -> "gpu", "apple" or "cpu"


# Words that say how a card is packaged rather than which card it is ("H100 SXM" is still an H100).
_CARD_NOISE = re.compile(r"\b(?:nvidia|amd|instinct|geforce|rtx|pcie|sxm\d?|nvl|ada|\d+\s?gb)\b")
MIB = 1024 * 1024


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """Match keys for every catalog model and card (built once per process)."""
    import tools

    models: list[ModelName] = []
    keyed_models: dict[str, ModelName] = {}
    for info in tools.list_models():
        entry = ModelName(
            model_id=info.id,
            label=info.name,
            family=name_key(info.name).split(" ")[0],
            params_b=info.params / 1e9,
        )
        models.append(entry)
        for spelling in (info.id, info.name, *info.aliases):
            key = name_key(spelling)
            if key and key not in keyed_models:
                keyed_models[key] = entry

    cards: list[CardName] = []
    keyed_cards: dict[str, list[CardName]] = {}
    derived: list[tuple[str, CardName]] = []
    for card in tools.list_cards():
        # The marketing figure ("48 GB GDDR6") is what visitors write; nvidia-smi MiB is the fallback.
        marketed = re.search(r"(\d+)\s?GB", card.marketing or "")
        memory_gb = float(marketed.group(1)) if marketed else round(card.memory_mib * MIB / 1e9, 1)
        entry_card = CardName(card_id=card.id, label=card.name, memory_gb=memory_gb)
        cards.append(entry_card)
        for key in {card_key(card.name), card_key(card.id), *(card_key(alias) for alias in card.aliases)}:
            keyed_cards.setdefault(key, []).append(entry_card)
        short = re.sub(r"\s+", " ", _CARD_NOISE.sub(" ", card_key(card.name))).strip()
        derived.append((short, entry_card))
    spelled = frozenset(keyed_cards)
    # Names the catalog spells out come first under a key, short names derived here after them:
    # "H100" is the catalog's alias of the SXM card, though "H100 NVL" also shortens to "h100".
    # A memory figure in the text still picks a derived one ("A100 de 40GB"), see _pick_card.
    for key, entry_card in derived:
        if len(key) >= 2 and entry_card not in keyed_cards.setdefault(key, []):
            keyed_cards[key].append(entry_card)

    def longest_first(keys: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple(sorted(keys.items(), key=lambda item: -len(item[0])))

    return Catalog(
        model_keys=longest_first(keyed_models),
        models=tuple(models),
        families=frozenset(model.family for model in models),
        card_keys=tuple((key, tuple(found)) for key, found in longest_first(keyed_cards)),
        spelled_card_keys=spelled,
        cards=tuple(cards),
        class_ids=frozenset(card_class.id for card_class in tools.card_classes()),
        kinds={card.id: card.kind for card in tools.list_cards()},
    )


# --------------------------------------------------------------------------- the parser


def detect_language(message: str, default: Language = "en") -> tuple[Language, bool]:
    """('es' or 'en', confident?) from marker words; a tie keeps `default`."""
    words = re.findall(r"[a-z]+", fold(message))
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
    found: dict[str, Any] = {
        "greeting": bool(lex.greeting.search(text)),
        "thanks": bool(lex.thanks.search(text)),
        "reset": bool(lex.reset.search(text)),
        "reveal_prompt": bool(lex.reveal_prompt.search(text)),
        "injection": bool(lex.injection.search(text)),
        "sizing_words": bool(lex.sizing_words.search(text)),
        "comparison": bool(lex.comparison.search(text)),
    }
    found["question"] = next((kind for pattern, kind in lex.questions if pattern.search(text)), None)
    text, budget = _find_budget(text, lex)
    found["budget"] = message_span(message, budget) if budget else None
    text, found["utilization"] = _find_utilization(text, lex)
    text, tensor_parallel = _find_tensor_parallel(text, lex)
    notes: list[ReadingNote] = []
    text, load = find_workload(text, lex.workload)
    found.update(service=load.service, rate=load.rate, ttft_ms=load.ttft_ms, tpot_ms=load.tpot_ms)
    text, found["input_len"], found["output_len"] = _find_lengths(text, lex)
    text, task_text, found["max_loras"], found["max_lora_rank"] = _find_lora(text, folded, lex)
    found["repo_release"] = _names_release_repo(text, lex)
    text = _fix_family_typos(text)
    text, found["draft_model"] = _find_draft(text, lex)
    if found["draft_model"]:
        found["comparison"] = False

    text, models = _find_models(text, notes)
    kept = [model for model in models if not model.ruled_out]
    if kept:
        found["model"], found["model_label"] = kept[0].model_id, kept[0].label
        found["other_models"] = tuple(model.model_id for model in kept[1:])
    text, cards = _find_cards(text, tensor_parallel, notes)
    said_kind = "apple" if lex.apple.search(text) else "cpu" if lex.cpu.search(text) else None
    cards, found["hardware_kind"] = _host_cards(cards, said_kind, folded)
    if cards:
        found["gpu"], found["card_class"] = cards[0]
        found["cards"] = tuple(gpu or card_class or "" for gpu, card_class in cards)
    unknown = lex.unknown_hardware.search(text)  # catalog cards are blanked by now
    if unknown:
        found["unknown_hardware"] = message_span(message, unknown.group(0))
    text, found["kv_dtype"] = _find_kv_dtype(text, lex)
    text, hits = _find_precisions(text, lex)
    precisions = _unique_in_order(precision for _, precision in hits)
    if not precisions and lex.quantized_unspecified.search(text) and not faq:
        precisions, found["precision_assumed"] = (lex.quantized_default,), True
    found["precisions"] = precisions
    found["model_precisions"] = _precision_per_model(kept, hits)
    found["engine"] = next((engine for pattern, engine in lex.engine if pattern.search(text)), None)
    text = _digits_for_number_words(text, lex)
    text, found["head_count"] = _find_head_count(text, lex)
    text, found["users"] = _find_users(text, lex, notes)
    text, found["context"] = _find_context(text, lex, notes)
    # The workload is read from the whole message: "QLoRA" names a precision and a task at once.
    found["tasks"] = next((task for pattern, task in lex.tasks if pattern.search(task_text)), None)
    if found["tasks"] == "finetuning" and found["question"] is None:
        found["question"] = "finetuning"
    return Understanding(
        language=language, language_confident=confident, faq=faq, notes=tuple(notes), **found
    )


def message_span(message: str, folded: str) -> str:
    """The visitor's own spelling of a folded span when it can be found, else the folded span."""
    match = re.search(re.escape(folded), message, flags=re.IGNORECASE)
    return match.group(0) if match else folded


def _unique_in_order(items: Iterable[str]) -> tuple[str, ...]:
    ordered: list[str] = []
    for item in items:
        if item not in ordered:
            ordered.append(item)
    return tuple(ordered)


def _first_number(match: re.Match[str]) -> tuple[str, str | None] | None:
    """The first (number, suffix) group pair a multi-branch pattern filled."""
    groups = match.groups()
    for index in range(0, len(groups) - 1, 2):
        if groups[index]:
            return groups[index], groups[index + 1]
    return None


def _find_lengths(text: str, lex: Lexicon) -> tuple[str, int | None, int | None]:
    """ "1000 tokens in and 200 out", "prompts of 4k tokens": per-request lengths, never a context."""
    lengths: list[int | None] = []
    for pattern in (lex.input_len, lex.output_len):
        match = pattern.search(text)
        read = _first_number(match) if match else None
        value = _scaled(read[0], read[1], 1000) if read else None
        if match and value:
            text = _blank(text, match.start(), match.end())
        lengths.append(value)
    return text, lengths[0], lengths[1]


def _find_lora(text: str, folded: str, lex: Lexicon) -> tuple[str, str, int | None, int | None]:
    """LoRA adapters served at once (vLLM --enable-lora/--max-loras): slots, the rank, and the
    message with those spans blanked for the task reading (serving adapters is not fine-tuning)."""
    slots_match = lex.lora_slots.search(text)
    enabled = lex.lora_enable.search(text)
    if not slots_match and not enabled:
        return text, folded, None, None
    slots = int(next(group for group in slots_match.groups() if group)) if slots_match else None
    rank_match = lex.lora_rank.search(text)
    rank = int(next(group for group in rank_match.groups() if group)) if rank_match else None
    task_text = folded
    for match in (slots_match, enabled, rank_match):
        if match:
            text = _blank(text, match.start(), match.end())
            task_text = _blank(task_text, match.start(), match.end())
    return text, task_text, max(1, slots or lex.lora_default_slots), rank


_REPO_ID = re.compile(r"(?<![\w/])[a-z][\w.-]+/([\w.-]*\d[\w.-]*)")


def _names_release_repo(text: str, lex: Lexicon) -> bool:
    """A Hub repo id ("Qwen/Qwen2.5-32B-Instruct") whose name marks no quantized upload: the
    16-bit checkpoint the model is released as."""
    repos = [match.group(1) for match in _REPO_ID.finditer(text)]
    return bool(repos) and not any(lex.quantized_repo.search(repo) for repo in repos)


def _edit_distance_one(word: str, target: str) -> bool:
    """One insertion, deletion, substitution or swap of neighbours apart."""
    if word == target or abs(len(word) - len(target)) > 1:
        return False
    if len(word) == len(target):
        diffs = [index for index, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
        if len(diffs) == 1:
            return True
        first, second = [*diffs, 0, 0][:2]
        return (
            len(diffs) == 2
            and second == first + 1
            and word[first] == target[second]
            and word[second] == target[first]
        )
    short, long_ = sorted((word, target), key=len)
    return any(long_[:index] + long_[index + 1 :] == short for index in range(len(long_)))


def _fix_family_typos(text: str) -> str:
    """ "lama 3 70b", "quen 2.5 7b": a word one typo away from a catalog family, followed by a
    version or size, is that family."""
    families = [family for family in catalog().families if len(family) >= 4 and family.isalpha()]

    def fixed(match: re.Match[str]) -> str:
        word = match.group(1)
        if word in families:
            return word
        near = [family for family in families if _edit_distance_one(word, family)]
        return near[0] if len(near) == 1 else word

    return re.sub(r"\b([a-z]{4,})(?=[\s-]*\d)", fixed, text)


def _find_draft(text: str, lex: Lexicon) -> tuple[str, str | None]:
    """Speculative decoding's draft model ("--draft llama-3.2-1b", "speculative decoding with
    Llama 3.2 1B"), with its name blanked so it is not a second model to compare."""
    match = lex.draft.search(text)
    if not match:
        return text, None
    group = next(index for index in range(1, (match.lastindex or 0) + 1) if match.group(index))
    span = match.group(group)
    blanked, models = _find_models(span, [])
    if not models:
        return text, None
    start = match.start(group)
    text = _blank(text, match.start(), start)
    last = max(index for index, (a, b) in enumerate(zip(span, blanked, strict=True)) if a != b)
    return _blank(text, start, start + last + 1), models[0].model_id


def _find_budget(text: str, lex: Lexicon) -> tuple[str, str | None]:
    match = lex.budget.search(text)
    if not match:
        return text, None
    written = next(group for group in match.groups() if group)
    return _blank(text, match.start(), match.end()), written.strip()


def _find_utilization(text: str, lex: Lexicon) -> tuple[str, float | None]:
    match = lex.utilization.search(text)
    if not match:
        return text, None
    value = parse_number(match.group(1))
    if value is None or not 0.05 <= value <= 1.0:
        return text, None
    return _blank(text, match.start(), match.end()), value


def _find_tensor_parallel(text: str, lex: Lexicon) -> tuple[str, int | None]:
    match = lex.tensor_parallel.search(text)
    if not match:
        return text, None
    return _blank(text, match.start(), match.end()), max(1, int(match.group(1)))


def _precision_per_model(models: list[FoundModel], hits: list[tuple[int, str]]) -> tuple[str | None, ...]:
    """For each model, the first precision written after it and before the next model."""
    if not models:
        return ()
    ordered = sorted(models, key=lambda model: model.position)
    bounds = [model.position for model in ordered[1:]] + [10**9]
    per_model: dict[int, str | None] = {}
    for model, bound in zip(ordered, bounds, strict=True):
        after = [precision for position, precision in sorted(hits) if model.position <= position < bound]
        per_model[model.position] = after[0] if after else None
    return tuple(per_model[model.position] for model in models)


@dataclass(frozen=True)
class FoundModel:
    position: int  # in the folded message
    model_id: str
    label: str
    ruled_out: bool  # "not the 7B"


def _ruled_out(text: str, position: int) -> bool:
    return bool(lexicon().ruled_out.search(text[max(0, position - 24) : position]))


def _find_models(text: str, notes: list[ReadingNote]) -> tuple[str, list[FoundModel]]:
    """Catalog aliases first, then "<family> <size>", then a bare size ("70B", "70.000 millones")."""
    cat = catalog()
    lex = lexicon()
    original = text
    # Aliases are matched on the name-key form of the message; the raw span is then blanked (and
    # its position taken) by a pattern that tolerates the separators the visitor wrote.
    keyed = name_key(text)
    # Spans an alias has claimed: "mistral small" is not also "mistral". `keyed` keeps sizeless
    # family names, which the sizes after them need ("llama 3.1 ... 70b").
    claimed = keyed
    found: list[FoundModel] = []
    sizeless: list[tuple[int, ModelName]] = []
    for key, model in cat.model_keys:
        if key not in claimed:
            continue
        match = re.search(rf"(?<![a-z0-9.]){re.escape(key)}(?![a-z0-9])", claimed)
        if match:
            claimed = _blank(claimed, match.start(), match.end())
            if not re.search(r"\d[bm]\b", key):  # "llama3.1", "mixtral": a family, unless no size follows
                sizeless.append((_name_position(text, key), model))
                continue
            keyed = _blank(keyed, match.start(), match.end())
            text, position = _blank_name_in_text(text, key)
            found.append(FoundModel(position, model.model_id, model.label, _ruled_out(original, position)))
    sizes: list[tuple[int, float]] = []
    for pattern in lex.model_size:
        for match in pattern.finditer(text):
            value = parse_number(match.group(1))
            if value:
                sizes.append((match.start(), value))
                text = _blank(text, match.start(), match.end())
    for match in lex.model_size_millions.finditer(text):
        value = parse_number(match.group(1))
        if value:
            sizes.append((match.start(), value / 1000))
            text = _blank(text, match.start(), match.end())
    for position, size_b in sorted(sizes):
        family_model = _family_model(keyed, size_b)
        ruled_out = _ruled_out(original, position)
        if family_model and all(model.model_id != family_model.model_id for model in found):
            found.append(FoundModel(position, family_model.model_id, family_model.label, ruled_out))
            written = _other_version(keyed, family_model, size_b)
            if written and not ruled_out:
                notes.append(note("model_substituted", written=written, label=family_model.label))
        elif not family_model:
            found.append(FoundModel(position, f"{size_b:g}b", f"{size_b:g}B", ruled_out))
    if not sizes:  # a family alias with no size ("mixtral", "llama3.1") names the catalog's default
        for position, model in sizeless:
            if all(found_model.model_id != model.model_id for found_model in found):
                found.append(
                    FoundModel(position, model.model_id, model.label, _ruled_out(original, position))
                )
    # "un 3b, llama 3.2 3b": a bare size repeating a catalog model named alongside is that model.
    named = [model for model in found if not _BARE.fullmatch(model.model_id)]
    found = [
        model
        for model in found
        if not _BARE.fullmatch(model.model_id)
        or not any(_same_size(model.model_id, other.model_id) for other in named)
    ]
    found.sort(key=lambda model: model.position)
    return text, found


_BARE = re.compile(r"\d+(?:\.\d+)?b")


def _same_size(bare: str, model_id: str) -> bool:
    size = float(bare[:-1])
    model = next((entry for entry in catalog().models if entry.model_id == model_id), None)
    return model is not None and abs(model.params_b - size) <= 0.1 * size


def _name_position(text: str, key: str) -> int:
    match = re.search(_name_pattern(key), text)
    return match.start() if match else 0


def _name_pattern(key: str) -> str:
    parts = [re.escape(part) for part in re.split(r"\s+", key)]
    # Between parts the raw text may have separators, or nothing where name_key inserted a space.
    return r"[\s\-_:/()\[\],]*".join(parts)


def _blank_name_in_text(text: str, key: str) -> tuple[str, int]:
    """Blank the raw spelling of a matched model name, whatever separators it used; and where it was."""
    match = re.search(_name_pattern(key), text)
    return (_blank(text, match.start(), match.end()), match.start()) if match else (text, 0)


def _other_version(keyed_text: str, model: ModelName, size_b: float) -> str | None:
    """ "Llama 2 70B" when the text names a version of the family that the matched catalog model
    is not (the catalog's Llama 3.1 70B stands in for it); None when the versions agree."""
    family = re.escape(model.family)
    written = re.search(rf"\b{family} (\d+(?:\.\d+)?) (?:[a-z]+ )?{size_b:g} ?b\b", keyed_text)
    own = re.search(rf"\b{family} (\d+(?:\.\d+)?)\b", name_key(model.label))
    if not written or not own:
        return None
    version, own_version = written.group(1), own.group(1)
    if own_version == version or own_version.startswith(version + "."):
        return None
    return f"{model.family.capitalize()} {version} {size_b:g}B"


def _family_model(keyed_text: str, size_b: float) -> ModelName | None:
    """The first catalog model of a family named in the text whose size is within 10% of size_b."""
    cat = catalog()
    words = set(keyed_text.split())
    for model in cat.models:
        if model.family in words and abs(model.params_b - size_b) <= 0.1 * size_b:
            return model
    return None


def _count(word: str | None) -> int:
    if not word:
        return 1
    if word.isdigit():
        return max(1, int(word))
    return int(lexicon().number_words.get(word, 1))


def _find_cards(
    text: str, tensor_parallel: int | None, notes: list[ReadingNote]
) -> tuple[str, list[tuple[str | None, str | None]]]:
    """Every card named ("2x H100", "RTX 4090 de 24GB", "a 12 GB card") or card class written as
    memory ("2x80GB"), in the order written, without those a correction rules out.

    Each is (card spec, None) or (None, class id). A memory figure that is not a class is a generic
    card of that memory ("24gb"), never the nearest catalog card.
    """
    cat = catalog()
    lex = lexicon()
    original = text
    found: list[tuple[int, str | None, str | None]] = []
    for key, cards in cat.card_keys:
        if key not in text:
            continue
        # A bare number names a card only when it is not a quantity ("4090", not "6000 tokens").
        quantity = r"(?!\s*(?:tokens?|k\b|users?|usuari|gb))" if key.isdigit() else ""
        # "2x4090": the count's "x" may touch the name.
        pattern = rf"(?:(?<![a-z0-9])|(?<=\dx)){re.escape(key)}s?(?![a-z0-9]){quantity}"
        for match in list(re.finditer(pattern, text)):
            card = _pick_card(cards, text, key in cat.spelled_card_keys)
            before = text[max(0, match.start() - 12) : match.start()]
            count_match = lex.card_count.search(before)
            count = _count(count_match.group(1) if count_match else None)
            fraction = _FRACTION_COUNT.search(before)
            if fraction and not count_match:
                notes.append(note("gpu_count_fraction", value=fraction.group(1), used=count))
                start = max(0, match.start() - 12) + fraction.start()
                text = _blank(text, start, match.start())
            if count == 1 and tensor_parallel:
                count = tensor_parallel
            text = _blank(text, match.start(), match.end())
            memory = lex.card_memory.search(text[match.end() : match.end() + 16])
            if memory:  # "RTX 4090 de 24GB": the memory repeats the card, it is not a second card
                start = match.end() + memory.start()
                text = _blank(text, start, match.end() + memory.end())
            if count_match:
                start = max(0, match.start() - 12) + count_match.start()
                text = _blank(text, start, match.start())
            spec = card.card_id + (f":{count}" if count > 1 else "")
            found.append((match.start(), spec, None))
    for memory in list(lex.card_memory.finditer(text)):
        gigabytes = int(memory.group(2))
        if gigabytes < 10 and not lex.card_memory_words.search(text):
            continue  # "8 GB of weights" is not a card; "an 8 GB card" is
        count = _count(memory.group(1))
        if count == 1 and tensor_parallel:
            count = tensor_parallel
        text = _blank(text, memory.start(), memory.end())
        class_id = f"{gigabytes}gb" if count == 1 else f"{count}x{gigabytes}gb"
        if class_id in cat.class_ids:
            found.append((memory.start(), None, class_id))
        else:
            found.append((memory.start(), f"{gigabytes}gb" + (f":{count}" if count > 1 else ""), None))
    kept = [
        (gpu, card_class) for position, gpu, card_class in sorted(found) if not _ruled_out(original, position)
    ]
    unique: list[tuple[str | None, str | None]] = []
    for item in kept:
        if item not in unique:
            unique.append(item)
    return text, unique


_FRACTION_COUNT = re.compile(r"(?<![\w.,])(\d+[.,]\d+)\s*(?:x|\*)?\s*$")


def _host_cards(
    cards: list[tuple[str | None, str | None]], said_kind: str | None, folded: str
) -> tuple[list[tuple[str | None, str | None]], str | None]:
    """Apple and CPU-only hosts as the catalog's apple-* / cpu-* entries, and the host kind.

    A catalog Apple or CPU entry named is that host; a memory figure said with "Mac" or "no GPU"
    ("128 GB de RAM sin GPU") is the host entry of that memory (and chip or DDR generation, where said).
    """
    cat = catalog()
    if cards and cards[0][0]:
        kind = cat.kinds.get(cards[0][0].split(":")[0])
        if kind in ("apple", "cpu"):
            return cards, kind
    if said_kind is None:
        if cards or not re.search(r"\bddr[345]\b", folded):
            return cards, None
        said_kind = "cpu"
    memory = None
    if cards and not (cards[0][0] and cards[0][0].split(":")[0] in cat.kinds):
        written = re.match(r"(?:\d+x)?(\d+)gb", cards[0][1] or cards[0][0] or "")
        memory = float(written.group(1)) if written else None
    elif cards:
        return cards, said_kind  # a GPU named beside "no GPU" words: keep what was named
    host = _host_card(said_kind, memory, folded)
    if host is None:
        return cards, said_kind
    return [(host, None), *cards[1:]], said_kind


_HOST_WORDS = re.compile(r"\b(m[1-5]|pro|max|ultra|mini|studio|ddr[45]|xeon|epyc)\b")


def _host_card(kind: str, memory_gb: float | None, folded: str) -> str | None:
    """The catalog entry of that kind with the memory said, preferring the chip or memory
    generation written ("m4 pro", "ddr4"); None when the catalog has no host of that memory
    (the memory figure then stands as written)."""
    cat = catalog()
    entries = [card for card in cat.cards if cat.kinds.get(card.card_id) == kind]
    said = set(_HOST_WORDS.findall(folded))
    if memory_gb is not None:
        entries = [card for card in entries if card.memory_gb == memory_gb]
    elif kind == "cpu":  # no memory said: the DDR generation written, else the catalog's "cpu only"
        entries = [card for card in entries if said & set(_HOST_WORDS.findall(card_key(card.label)))] or [
            card for card in entries if "cpu only" in (card_key(alias) for alias in _aliases(card.card_id))
        ]
    else:
        return None
    if not entries:
        return None
    return max(entries, key=lambda card: len(said & set(_HOST_WORDS.findall(card_key(card.label))))).card_id


def _aliases(card_id: str) -> list[str]:
    import tools

    return next((card.aliases for card in tools.list_cards() if card.id == card_id), [])


def _pick_card(cards: tuple[CardName, ...], text: str, spelled: bool = False) -> CardName:
    """Among cards sharing a short name ("A100" 40/80GB), the one whose memory is written, else the
    card the catalog spells that way (listed first), else the largest."""
    compact = re.sub(r"\s*(?:de\s+)?(\d+)\s*gb", r" \1gb", text)
    for card in cards:
        if re.search(rf"(?<![\d.]){card.memory_gb:g}gb", compact):
            return card
    return cards[0] if spelled else max(cards, key=lambda card: card.memory_gb)


def _find_kv_dtype(text: str, lex: Lexicon) -> tuple[str, str | None]:
    match = lex.kv_cache.search(text)
    if not match:
        return text, None
    written = re.sub(r"[\s_-]", "", next(group for group in match.groups() if group))
    return _blank(text, match.start(), match.end()), lex.kv_ids.get(written)


def _find_precisions(text: str, lex: Lexicon) -> tuple[str, list[tuple[int, str]]]:
    """Every weights precision written, with its position, in the order written."""
    hits: list[tuple[int, str]] = []
    for pattern, precision in lex.precision:
        for match in pattern.finditer(text):
            hits.append((match.start(), precision))
            text = _blank(text, match.start(), match.end())
    return text, sorted(hits)


def _scaled(raw: str, suffix: str | None, k: int) -> int | None:
    value = parse_number(raw)
    if value is None:
        return None
    if suffix == "k":
        value *= k
    elif suffix and suffix.startswith("mill"):  # "10 millones", "2 million": decimal millions
        value *= 1_000_000
    elif suffix == "m":
        value *= k * k
    return int(value) if value >= 1 else None


def _digits_for_number_words(text: str, lex: Lexicon) -> str:
    """ "twenty users", "eramos cuatro", "a dozen people at once" -> digits, same length kept."""
    after = "|".join(rf"(?<=\b{word} )" for word in lex.number_word_after)
    for word, number in lex.number_words.items():
        pattern = rf"(?:{after}){word}\b|\b(?:an? |una )?{word}\b{lex.number_word_context}"
        text = re.sub(pattern, _as_digits(number), text)
    return text


def _as_digits(number: int) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return str(number).ljust(len(match.group(0)))

    return replace


def _find_head_count(text: str, lex: Lexicon) -> tuple[str, int | None]:
    for pattern in lex.head_count:
        match = pattern.search(text)
        if match:
            value = parse_number(match.group(1))
            if value and value >= 1:
                return _blank(text, match.start(), match.end()), int(value)
    return text, None


def _negative(text: str, start: int) -> bool:
    """A minus sign written right before a number ("-3 usuarios"), not a hyphen inside a name."""
    return bool(re.search(r"(?:^|[\s(=:])-\s?$", text[:start]))


def _find_users(text: str, lex: Lexicon, notes: list[ReadingNote]) -> tuple[str, int | None]:
    from tools.scenario import MAX_USERS

    for pattern in lex.users:
        match = pattern.search(text)
        if match:
            value = parse_number(match.group(1))
            if value is not None and (value < 1 or value > MAX_USERS or _negative(text, match.start(1))):
                shown = -value if _negative(text, match.start(1)) else value
                notes.append(note("users_out_of_range", value=shown, limit=MAX_USERS))
                return _blank(text, match.start(), match.end()), None
            users = _scaled(match.group(1), match.group(2), 1000)
            if users and users > MAX_USERS:
                notes.append(note("users_out_of_range", value=users, limit=MAX_USERS))
                return _blank(text, match.start(), match.end()), None
            if users:
                return _blank(text, match.start(), match.end()), users
    if lex.users_single.search(text):
        return text, 1
    return text, None


def _find_context(text: str, lex: Lexicon, notes: list[ReadingNote]) -> tuple[str, int | None]:
    from tools.scenario import MAX_CONTEXT

    for pattern in lex.context:
        match = pattern.search(text)
        if match:
            suffix = match.group(2) if match.lastindex and match.lastindex >= 2 else None
            context = _scaled(match.group(1), suffix, lex.context_k)
            if context and context > MAX_CONTEXT:
                notes.append(note("context_out_of_range", value=context, limit=MAX_CONTEXT))
                return _blank(text, match.start(), match.end()), None
            if context and context >= 128:
                return _blank(text, match.start(), match.end()), context
    return text, None


__all__ = ["Understanding", "catalog", "detect_language", "fold", "lexicon", "understand"]
