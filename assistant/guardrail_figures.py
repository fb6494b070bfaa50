"""Figures with a unit, as a model writes them, and the figures the tools produced.

`figures(text)` finds every number with a unit the guardrail checks -- memory (GB, GiB, MB,
MiB, TB), bandwidth (GB/s), tokens, users, tok/s and ms -- in English or Spanish, and reads
it in a canonical unit (memory in GB). `AllowedFigures.of(calculations, quoted)` collects
what the tools produced: every numeric field of each calculation (so fields added to
`SizingResult` later count without a change here), every figure in its texts, the article
sections the model read and the visitor's own message. Card capacities from the catalogue
count only in a sentence that is about a card.

`matches(figure, allowed)` is tight: a figure with decimals must round to a produced value
at the digits shown; a whole number must be the value rounded to a whole (and within 3 % of
it, so "3 GB" is not 2.68 GB), or a round multiple of ten within 2 % ("about 140 GB" for
141.12 GB). Small invented integers find no produced value that close.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools import SizingResult, card_classes, list_cards

GIB_IN_GB = 2**30 / 1e9
MIB_IN_GB = 2**20 / 1e9
# Card counts a multi-GPU answer may quote a total capacity for ("2× 80 GB = 160 GB").
CARD_COUNTS = (1, 2, 4, 8)
# A whole number rounds a produced figure to the unit, and no more than this share of it.
WHOLE_SLACK = 0.03
# A multiple of ten may round a produced figure by this share: "about 140 GB" for 141.12 GB.
ROUND_SLACK = 0.02
# "8k tokens" for 8,192 and "128K" for 131,072 are 2.4 % apart.
K_SLACK = 0.025

# Unit word -> (canonical unit, factor to it). Longest alternatives first in the pattern.
_UNITS: dict[str, tuple[str, float]] = {
    "gib": ("GB", GIB_IN_GB),
    "gb": ("GB", 1.0),
    "gigabyte": ("GB", 1.0),
    "gigabytes": ("GB", 1.0),
    "giga": ("GB", 1.0),
    "gigas": ("GB", 1.0),
    "mib": ("GB", MIB_IN_GB),
    "mb": ("GB", 1e-3),
    "megabyte": ("GB", 1e-3),
    "megabytes": ("GB", 1e-3),
    "megas": ("GB", 1e-3),
    "tib": ("GB", 2**40 / 1e9),
    "tb": ("GB", 1e3),
    "terabytes": ("GB", 1e3),
}
_NUMBER = r"(?<![\w.,])(\d{1,3}(?:[.,]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)(\s*[kK](?![a-zA-Z]))?"
_MEMORY = re.compile(
    _NUMBER + r"\s*(GiB|GB|MiB|MB|TiB|TB|gigabytes?|gigas?|megabytes?|megas|terabytes)\b(\s*/\s*s\b|ps\b)?",
    re.IGNORECASE,
)
_RATE = re.compile(
    _NUMBER + r"\s*(?:tok(?:ens)?\s*/\s*s\b|t/s\b|tokens? (?:per|por) segundo\b|tokens? a second\b)",
    re.IGNORECASE,
)
# "2.5 requests/s", "150 req/min", "9,000 peticiones por hora": a request rate, in requests per second.
_REQUEST_RATE = re.compile(
    _NUMBER + r"\s*(?:requests?|req|peticiones|solicitudes)\s*"
    r"(?:/\s*(s|sec|min|h)\b|(?:per|por|a|an|al|each)\s+(second|segundo|minute|minuto|hour|hora)\b)",
    re.IGNORECASE,
)
_PER_SECOND = {
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "segundo": 1.0,
    "min": 1 / 60,
    "minute": 1 / 60,
    "minuto": 1 / 60,
    "h": 1 / 3600,
    "hour": 1 / 3600,
    "hora": 1 / 3600,
}
_TOKENS = re.compile(_NUMBER + r"\s*(?:tokens?|tok)\b(?!\s*/)(?! (?:per|por) segundo)", re.IGNORECASE)
_USERS = re.compile(
    _NUMBER + r"\s*(?:concurrent |simultaneous |at once |simultáneos |concurrentes )?"
    r"(?:users?|usuarios?|visitors?|visitantes|conversations?|conversaciones|sequences?|secuencias|"
    r"requests?|peticiones|solicitudes|sessions?|sesiones|personas|people)\b",
    re.IGNORECASE,
)
_MS = re.compile(_NUMBER + r"\s*(?:ms|milliseconds?|milisegundos?)\b", re.IGNORECASE)
# A sentence about a card or a card class may quote a catalogue capacity.
_CARD_WORDS = re.compile(r"\b(cards?|gpus?|tarjetas?|gr[aá]ficas?|class|clase|vram)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Figure:
    """A number with a unit as written, with every value it can mean in the canonical unit."""

    text: str
    unit: str  # "GB", "GB/s", "tokens", "users", "tok/s", "req/s", "ms"
    values: tuple[tuple[float, int], ...]  # (value in the canonical unit, decimals shown)
    kilo: bool = False  # written "8k", a round figure
    scale: float = 1.0  # canonical units per written unit ("330 MB" rounds at 0.001 GB)

    def __str__(self) -> str:
        return self.text


def readings(number: str) -> tuple[tuple[float, int], ...]:
    """Every value a written number can stand for, with the decimals it shows."""
    separators = [char for char in number if char in ".,"]
    if not separators:
        return ((float(number), 0),)
    if len(set(separators)) == 2:  # "1,342.5" or "1.342,5": the last separator is the decimal one
        cut = max(number.rfind("."), number.rfind(","))
        whole = number[:cut].replace(".", "").replace(",", "")
        fraction = number[cut + 1 :]
        return ((float(f"{whole}.{fraction}"), len(fraction)),)
    parts = re.split(r"[.,]", number)
    if len(parts) > 2:  # "1.342.000": thousands only
        return ((float("".join(parts)), 0),)
    whole, fraction = parts
    found = [(float(f"{whole}.{fraction}"), len(fraction))]
    if len(fraction) == 3 and whole != "0":  # "1.342" is 1342 in Spanish, 1.342 in English
        found.append((float(whole + fraction), 0))
    return tuple(found)


def figures(text: str) -> list[Figure]:
    """Every checked figure in `text`, left to right, each span read once."""
    return list(_figures(text))


# Every answer is checked against the texts of its calculations, and the same arithmetic lines,
# recommendations and sentences come back answer after answer: each text is read once.
@functools.lru_cache(maxsize=4096)
def _figures(text: str) -> tuple[Figure, ...]:
    found: list[tuple[int, Figure]] = []
    taken: list[tuple[int, int]] = []

    def claim(match: re.Match[str]) -> bool:
        span = match.span()
        if any(span[0] < end and start < span[1] for start, end in taken):
            return False
        taken.append(span)
        return True

    for match in _RATE.finditer(text):
        if claim(match):
            found.append((match.start(), _figure(match, "tok/s", 1.0)))
    for match in _REQUEST_RATE.finditer(text):
        if claim(match):
            per = (match.group(3) or match.group(4)).lower()
            found.append((match.start(), _figure(match, "req/s", _PER_SECOND[per])))
    for match in _MEMORY.finditer(text):
        if not claim(match):
            continue
        unit, factor = _UNITS[match.group(3).lower()]
        if match.group(4):
            found.append((match.start(), _figure(match, "GB/s", 1.0 if unit == "GB" else factor)))
        else:
            found.append((match.start(), _figure(match, unit, factor)))
    for pattern, unit in ((_TOKENS, "tokens"), (_USERS, "users"), (_MS, "ms")):
        for match in pattern.finditer(text):
            if claim(match):
                found.append((match.start(), _figure(match, unit, 1.0)))
    return tuple(figure for _, figure in sorted(found, key=lambda pair: pair[0]))


def _figure(match: re.Match[str], unit: str, factor: float) -> Figure:
    kilo = bool(match.group(2))
    scale = factor * (1000 if kilo else 1)
    values = tuple((value * scale, decimals) for value, decimals in readings(match.group(1)))
    return Figure(match.group(0).strip(), unit, values, kilo, scale)


@dataclass
class AllowedFigures:
    """Values the tools produced, per canonical unit; `catalog` counts only in sentences about cards."""

    by_unit: dict[str, set[float]] = field(default_factory=dict)
    catalog: dict[str, set[float]] = field(default_factory=dict)

    def add(self, unit: str, value: float) -> None:
        self.by_unit.setdefault(unit, set()).add(abs(value))

    def add_text(self, text: str) -> None:
        for figure in figures(text):
            for value, _ in figure.values:
                self.add(figure.unit, value)

    @classmethod
    def of(
        cls, calculations: Sequence[SizingResult], quoted: Iterable[str] = (), message: str = ""
    ) -> AllowedFigures:
        allowed = cls(catalog={unit: set(values) for unit, values in _catalog_figures().items()})
        for result in calculations:
            dumped = result.model_dump(mode="json")
            for unit, value in numeric_fields(dumped):
                allowed.add(unit, value)
            for text in _strings(dumped):
                allowed.add_text(text)
            # Per-token and per-sequence KV figures, as "0.33 MB per token" or "2.68 GB per sequence".
            allowed.add("GB", result.kv_bytes_per_token / 1e9)
            if result.users:
                allowed.add("GB", result.kv_cache_gb / result.users)
        for text in quoted:
            allowed.add_text(text)
        allowed.add_text(message)
        return allowed

    def permits(self, figure: Figure, sentence: str) -> bool:
        if any(matches(figure, value) for value in self.by_unit.get(figure.unit, ())):
            return True  # a calculation's own figure: no need to read which cards the sentence names
        named = _named_cards(sentence)
        if not (_CARD_WORDS.search(sentence) or named):
            return False
        # The lineup's figures, and those of the cards the sentence names: with every owned card
        # in the catalogue allowed everywhere, almost any round figure would pass.
        catalog = set(self.catalog.get(figure.unit, set()))
        for card_id in named:
            catalog |= _card_figures(card_id).get(figure.unit, frozenset())
        pools = [catalog]
        if figure.unit == "GB":
            # Many people write GB for the GiB nvidia-smi shows for a card.
            pools.append({value / GIB_IN_GB for value in catalog})
        return any(matches(figure, value) for pool in pools for value in pool)


def matches(figure: Figure, target: float) -> bool:
    """`figure` is `target` as the writer rounded it."""
    for value, decimals in figure.values:
        if figure.kilo:
            if abs(value - target) <= K_SLACK * abs(target):
                return True
        elif decimals:
            if abs(value - target) <= 0.5 * 10**-decimals * figure.scale + 1e-12:
                return True
        else:
            gap = abs(value - target)
            whole = gap <= 0.5 * figure.scale and gap <= WHOLE_SLACK * abs(target)
            round_figure = value % (10 * figure.scale) < 1e-9 and gap <= ROUND_SLACK * abs(target)
            if whole or round_figure or gap < 1e-9:
                return True
    return False


BAND_FIELDS = ("low", "best", "high")  # tools.schemas.Band


def numeric_fields(data: Any, key: str = "") -> Iterator[tuple[str, float]]:
    """(unit, value) for every numeric field whose name says its unit. A band's low, best and
    high (`performance.ttft_ms.best`) take the unit of the field that holds them."""
    if isinstance(data, dict):
        for name, value in data.items():
            yield from numeric_fields(value, key if name in BAND_FIELDS else str(name))
    elif isinstance(data, list):
        for item in data:
            yield from numeric_fields(item, key)
    elif isinstance(data, int | float) and not isinstance(data, bool):
        unit = _unit_of_field(key)
        if unit:
            yield unit[0], float(data) * unit[1]


def _unit_of_field(name: str) -> tuple[str, float] | None:
    """(canonical unit, factor) a field's name implies: `total_gb`, `ttft_ms`, `max_users`..."""
    name = name.lower()
    if name.endswith("_gb"):
        return "GB", 1.0
    if name.endswith("_mb"):
        return "GB", 1e-3
    if "request" in name and "per_s" in name:
        return "req/s", 1.0
    if "per_s" in name or "tok_s" in name or name.endswith("tps"):
        return "tok/s", 1.0
    if name.endswith("_ms"):
        return "ms", 1.0
    if any(word in name for word in ("users", "sequences", "concurren", "capacity")):
        return "users", 1.0
    if "context" in name or name.endswith("tokens"):
        return "tokens", 1.0
    return None


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item)


@functools.cache
def _catalog_figures() -> dict[str, frozenset[float]]:
    """Card and card-class memory (GB, usable and marketing, times the usual card counts) and bandwidth."""
    memory: set[float] = set()
    bandwidth: set[float] = set()
    for card in list_cards():
        if card.suggested:  # the lineup; other cards count where a sentence names them
            memory |= _card_figures(card.id)["GB"]
            bandwidth |= _card_figures(card.id)["GB/s"]
    for card_class in card_classes():
        memory.add(card_class.usable_gb)
        for label in (card_class.label, *card_class.labels.values()):
            for figure in figures(label):
                memory.update(value for value, _ in figure.values)
    return {"GB": frozenset(memory), "GB/s": frozenset(bandwidth)}


@functools.cache
def card_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    """(a pattern naming one card, its catalogue id) for every card name and alias."""
    patterns = []
    for card in list_cards():
        for name in {card.name, card.name.split(" (")[0], *card.aliases}:
            if len(name) >= 2:
                pattern = re.compile(r"(?<![\w-])" + re.escape(name) + r"s?(?![\w-])", re.IGNORECASE)
                patterns.append((pattern, card.id))
    # Longer names first, so "H100 80GB (PCIe)" wins over "H100".
    return tuple(sorted(patterns, key=lambda item: -len(item[0].pattern)))


@functools.lru_cache(maxsize=256)
def _named_cards(sentence: str) -> frozenset[str]:
    """The catalogue cards a sentence names (each of an answer's figures asks about its sentence)."""
    return frozenset(card_id for pattern, card_id in card_patterns() if pattern.search(sentence))


@functools.cache
def _card_figures(card_id: str) -> dict[str, frozenset[float]]:
    """One card's memory (usable and marketing, times the usual card counts) and bandwidth."""
    card = next(card for card in list_cards() if card.id == card_id)
    memory: set[float] = set()
    for count in CARD_COUNTS:
        memory.update(count * value for value in (card.usable_gb, card.memory_mib * MIB_IN_GB))
        for figure in figures(f"{card.marketing} {card.name}"):
            if figure.unit == "GB":
                memory.update(count * value for value, _ in figure.values)
    bandwidth = {card.bandwidth_gbps} if card.bandwidth_gbps else set()
    return {"GB": frozenset(memory), "GB/s": frozenset(bandwidth)}
