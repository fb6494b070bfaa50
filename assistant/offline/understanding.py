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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

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
    context: tuple[re.Pattern[str], ...]
    context_k: int
    model_size: tuple[re.Pattern[str], ...]
    model_size_millions: re.Pattern[str]
    card_memory: re.Pattern[str]
    card_count: re.Pattern[str]
    tasks: tuple[tuple[re.Pattern[str], str], ...]
    sizing_words: re.Pattern[str]
    greeting: re.Pattern[str]
    thanks: re.Pattern[str]
    reset: re.Pattern[str]
    reveal_prompt: re.Pattern[str]
    injection: re.Pattern[str]
    faq_triggers: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]


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
        context=tuple(re.compile(pattern) for pattern in raw["context"]),
        context_k=int(raw["context_k"]),
        model_size=tuple(re.compile(pattern) for pattern in raw["model_size"]),
        model_size_millions=re.compile(raw["model_size_millions"]),
        card_memory=re.compile(raw["card_memory"]),
        card_count=re.compile(raw["card_count"]),
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
    cards: tuple[CardName, ...]
    class_ids: frozenset[str]


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
    # Names the catalog spells out win over short names derived here: "H100" is the catalog's
    # alias of the SXM card, even though "H100 80GB (PCIe)" also shortens to "h100".
    spelled = set(keyed_cards)
    for key, entry_card in derived:
        if len(key) >= 2 and key not in spelled and entry_card not in keyed_cards.setdefault(key, []):
            keyed_cards[key].append(entry_card)

    def longest_first(keys: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple(sorted(keys.items(), key=lambda item: -len(item[0])))

    return Catalog(
        model_keys=longest_first(keyed_models),
        models=tuple(models),
        families=frozenset(model.family for model in models),
        card_keys=tuple((key, tuple(found)) for key, found in longest_first(keyed_cards)),
        cards=tuple(cards),
        class_ids=frozenset(card_class.id for card_class in tools.card_classes()),
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
    text = fold(message)

    faq = tuple(entry_id for entry_id, triggers in lex.faq_triggers if any(t.search(text) for t in triggers))
    found: dict[str, Any] = {
        "greeting": bool(lex.greeting.search(text)),
        "thanks": bool(lex.thanks.search(text)),
        "reset": bool(lex.reset.search(text)),
        "reveal_prompt": bool(lex.reveal_prompt.search(text)),
        "injection": bool(lex.injection.search(text)),
        "sizing_words": bool(lex.sizing_words.search(text)),
    }

    text, models = _find_models(text)
    if models:
        found["model"], found["model_label"] = models[0]
        found["other_models"] = tuple(model for model, _ in models[1:])
    text, found["gpu"], found["card_class"] = _find_card(text)
    text, found["kv_dtype"] = _find_kv_dtype(text, lex)
    text, precisions = _find_precisions(text, lex)
    if not precisions and lex.quantized_unspecified.search(text) and not faq:
        precisions, found["precision_assumed"] = (lex.quantized_default,), True
    found["precisions"] = precisions
    found["engine"] = next((engine for pattern, engine in lex.engine if pattern.search(text)), None)
    text, found["users"] = _find_users(text, lex)
    text, found["context"] = _find_context(text, lex)
    found["tasks"] = next((task for pattern, task in lex.tasks if pattern.search(text)), None)
    return Understanding(language=language, language_confident=confident, faq=faq, **found)


def _find_models(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Catalog aliases first, then "<family> <size>", then a bare size ("70B", "70.000 millones")."""
    cat = catalog()
    lex = lexicon()
    # Match on the name-key form of the message, mapping positions back is unnecessary because the
    # blanked text is only used for the later, independent patterns: blank the raw spans by regex.
    keyed = name_key(text)
    found: list[tuple[int, str, str]] = []
    sizeless: list[tuple[int, ModelName]] = []
    for key, model in cat.model_keys:
        if key not in keyed:
            continue
        match = re.search(rf"(?<![a-z0-9.]){re.escape(key)}(?![a-z0-9])", keyed)
        if match:
            if not re.search(r"\d[bm]\b", key):  # "llama3.1", "mixtral": a family, unless no size follows
                sizeless.append((match.start(), model))
                continue
            found.append((match.start(), model.model_id, model.label))
            keyed = _blank(keyed, match.start(), match.end())
            text = _blank_name_in_text(text, key)
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
        if family_model and all(model_id != family_model.model_id for _, model_id, _ in found):
            found.append((position, family_model.model_id, family_model.label))
        elif not family_model:
            bare = f"{size_b:g}b"
            found.append((position, bare, f"{size_b:g}B"))
    if not sizes:  # a family alias with no size ("mixtral", "llama3.1") names the catalog's default
        for position, model in sizeless:
            if all(model_id != model.model_id for _, model_id, _ in found):
                found.append((position, model.model_id, model.label))
    found.sort(key=lambda item: item[0])
    return text, [(model_id, label) for _, model_id, label in found]


def _blank_name_in_text(text: str, key: str) -> str:
    """Blank the raw spelling of a matched model name, whatever separators it used."""
    parts = [re.escape(part) for part in re.split(r"\s+", key)]
    # Between parts the raw text may have separators, or nothing where name_key inserted a space.
    pattern = r"[\s\-_:/()\[\],]*".join(parts)
    match = re.search(pattern, text)
    return _blank(text, match.start(), match.end()) if match else text


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


def _find_card(text: str) -> tuple[str, str | None, str | None]:
    """A named card ("2x H100", "RTX 4090 de 24GB") or a card class written as memory ("2x80GB")."""
    cat = catalog()
    lex = lexicon()
    for key, cards in cat.card_keys:
        if key not in text:
            continue
        # A bare number names a card only when it is not a quantity ("4090", not "6000 tokens").
        quantity = r"(?!\s*(?:tokens?|k\b|users?|usuari|gb))" if key.isdigit() else ""
        match = re.search(rf"(?<![a-z0-9]){re.escape(key)}s?(?![a-z0-9]){quantity}", text)
        if not match:
            continue
        card = _pick_card(cards, text)
        count_match = lex.card_count.search(text[max(0, match.start() - 12) : match.start()])
        count = _count(count_match.group(1) if count_match else None)
        text = _blank(text, match.start(), match.end())
        memory = lex.card_memory.search(text[match.end() : match.end() + 16])
        if memory:  # "RTX 4090 de 24GB": the memory repeats the card, it is not a second card
            start = match.end() + memory.start()
            text = _blank(text, start, match.end() + memory.end())
        if count_match:
            start = max(0, match.start() - 12) + count_match.start()
            text = _blank(text, start, match.start())
        return text, card.card_id + (f":{count}" if count > 1 else ""), None
    memory = lex.card_memory.search(text)
    if not memory:
        return text, None, None
    count = _count(memory.group(1))
    gigabytes = int(memory.group(2))
    text = _blank(text, memory.start(), memory.end())
    class_id = f"{gigabytes}gb" if count == 1 else f"{count}x{gigabytes}gb"
    if class_id in cat.class_ids:
        return text, None, class_id
    sized = _card_with_memory(gigabytes)
    if sized is None:
        return text, None, None
    return text, sized.card_id + (f":{count}" if count > 1 else ""), None


def _pick_card(cards: tuple[CardName, ...], text: str) -> CardName:
    """Among cards sharing a short name ("A100" 40/80GB), the one whose memory is written, else the largest."""
    compact = text.replace(" gb", "gb")
    for card in cards:
        if f"{card.memory_gb:g}gb" in compact:
            return card
    return max(cards, key=lambda card: card.memory_gb)


def _card_with_memory(gigabytes: int) -> CardName | None:
    """The first catalog card whose memory is within 8% of the figure the visitor wrote."""
    for card in catalog().cards:
        if abs(card.memory_gb - gigabytes) <= 0.08 * gigabytes:
            return card
    return None


def _find_kv_dtype(text: str, lex: Lexicon) -> tuple[str, str | None]:
    match = lex.kv_cache.search(text)
    if not match:
        return text, None
    written = re.sub(r"[\s_-]", "", match.group(1) or match.group(2))
    return _blank(text, match.start(), match.end()), lex.kv_ids.get(written)


def _find_precisions(text: str, lex: Lexicon) -> tuple[str, tuple[str, ...]]:
    hits: list[tuple[int, str]] = []
    for pattern, precision in lex.precision:
        for match in pattern.finditer(text):
            hits.append((match.start(), precision))
            text = _blank(text, match.start(), match.end())
    ordered: list[str] = []
    for _, precision in sorted(hits):
        if precision not in ordered:
            ordered.append(precision)
    return text, tuple(ordered)


def _scaled(raw: str, suffix: str | None, k: int) -> int | None:
    value = parse_number(raw)
    if value is None:
        return None
    if suffix == "k":
        value *= k
    elif suffix == "m":
        value *= k * k
    return int(value) if value >= 1 else None


def _find_users(text: str, lex: Lexicon) -> tuple[str, int | None]:
    for word, number in lex.number_words.items():
        text = re.sub(
            rf"\b{word}\b(?=\s+(?:concurrent|usuari|users?|personas|people|simult))", str(number), text
        )
    for pattern in lex.users:
        match = pattern.search(text)
        if match:
            users = _scaled(match.group(1), match.group(2), 1000)
            if users:
                return _blank(text, match.start(), match.end()), users
    if lex.users_single.search(text):
        return text, 1
    return text, None


def _find_context(text: str, lex: Lexicon) -> tuple[str, int | None]:
    for pattern in lex.context:
        match = pattern.search(text)
        if match:
            suffix = match.group(2) if match.lastindex and match.lastindex >= 2 else None
            context = _scaled(match.group(1), suffix, lex.context_k)
            if context and context >= 128:
                return _blank(text, match.start(), match.end()), context
    return text, None


__all__ = ["Understanding", "catalog", "detect_language", "fold", "lexicon", "understand"]
