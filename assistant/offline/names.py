"""Match keys for every catalog model and card: `catalog()` builds them once from `tools`.

A model or card added to the catalog is understood with no code change: its name, id and
aliases become keys, reduced by `name_key` / `card_key` so spellings compare equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from assistant.offline.spans import fold


def name_key(text: str) -> str:
    """A model name reduced so that "Llama-3.1-70B", "llama3.1:70b" and "Llama 3.1 70B" compare equal."""
    key = re.sub(r"[-_:/()\[\],]+", " ", fold(text))
    key = re.sub(r"([a-z])(\d)", r"\1 \2", key)
    return re.sub(r"\s+", " ", key).strip()


def card_key(text: str) -> str:
    """A card name reduced for matching: "RTX-4090" and "rtx 4090" compare equal; "L40S" stays whole."""
    key = re.sub(r"[-_:/()\[\],]+", " ", fold(text))
    return re.sub(r"\s+", " ", key).strip()


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
    # A family as people name it with no size ("llama", "gpt oss"): the words its models' name
    # keys share before the first figure, and those models (longest phrase first).
    family_phrases: tuple[tuple[str, tuple[ModelName, ...]], ...]
    # Keys of a model published with a catalog entry's architecture and weights ("deepseek r 1")
    # -> that model's name ("DeepSeek R1"), which the answer says was sized as the entry.
    released_names: dict[str, str]
    card_keys: tuple[tuple[str, tuple[CardName, ...]], ...]
    spelled_card_keys: frozenset[str]  # keys that are a catalog card's own name, id or alias
    cards: tuple[CardName, ...]
    class_ids: frozenset[str]
    kinds: dict[str, str]  # card id -> "gpu", "apple" or "cpu"


# Words that say how a card is packaged rather than which card it is ("H100 SXM" is still an H100).
_CARD_NOISE = re.compile(r"\b(?:nvidia|amd|instinct|geforce|rtx|pcie|sxm\d?|nvl|ada|\d+\s?gb)\b")


def _family_phrases(models: list[ModelName]) -> tuple[tuple[str, tuple[ModelName, ...]], ...]:
    by_family: dict[str, list[ModelName]] = {}
    for model in models:
        by_family.setdefault(model.family, []).append(model)
    phrases = []
    for members in by_family.values():
        keys = [name_key(model.label).split(" ") for model in members]
        shared = []
        for words in zip(*keys, strict=False):
            if len(set(words)) > 1 or any(char.isdigit() for char in words[0]):
                break
            shared.append(words[0])
        phrases.append((" ".join(shared), tuple(members)))
    return tuple(sorted(phrases, key=lambda item: -len(item[0])))


MIB = 1024 * 1024
# An Apple chip as people name it: "m4", "m3 max", "m2 ultra".
_APPLE_CHIP = re.compile(r"\bm\d+(?: (?:pro|max|ultra))?\b")


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """Match keys for every catalog model and card (built once per process)."""
    import tools
    import tools.catalog

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
    by_id = {model.model_id: model for model in models}
    released_names: dict[str, str] = {}
    for spelling, (model_id, name) in tools.catalog.released_as().items():
        key = name_key(spelling)
        keyed_models.setdefault(key, by_id[model_id])
        released_names[key] = name

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
        chip = _APPLE_CHIP.search(card_key(card.name)) if card.kind == "apple" else None
        if chip:  # every memory of a chip shares its name: "m2 ultra with 64gb" picks the 64 GB one
            derived.append((chip.group(0), entry_card))
    spelled = frozenset(keyed_cards)
    # Names the catalog spells out come first under a key, short names derived here after them:
    # "H100" is the catalog's alias of the SXM card, though "H100 NVL" also shortens to "h100".
    # A memory figure in the text still picks a derived one ("A100 de 40GB"), see read_cards._pick_card.
    for key, entry_card in derived:
        if len(key) >= 2 and entry_card not in keyed_cards.setdefault(key, []):
            keyed_cards[key].append(entry_card)

    def longest_first(keys: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple(sorted(keys.items(), key=lambda item: -len(item[0])))

    return Catalog(
        model_keys=longest_first(keyed_models),
        models=tuple(models),
        families=frozenset(model.family for model in models),
        family_phrases=_family_phrases(models),
        released_names=released_names,
        card_keys=tuple((key, tuple(found)) for key, found in longest_first(keyed_cards)),
        spelled_card_keys=spelled,
        cards=tuple(cards),
        class_ids=frozenset(card_class.id for card_class in tools.card_classes()),
        kinds={card.id: card.kind for card in tools.list_cards()},
    )
