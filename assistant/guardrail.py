"""The deterministic check every LLM answer passes before a visitor sees it.

`enforce(draft, calculations, lang)` returns the Markdown to show:

1. Sentences that quote the system prompt are removed.
2. Every GB/GiB figure in the draft must be one the tools produced (a calculation's
   fields and texts, the card catalogue, the article sections in `quoted`), within
   rounding. A sentence carrying any other figure is removed: an invented number is never
   shown as the answer.
3. A sentence that says something fits where the calculator says it cannot (a card or
   capacity smaller than every total, or "it fits" when nothing fits) is removed.
4. Each calculation's key numbers -- weights, total, the verdict of the recommended
   option -- must be in what is left; otherwise a "calculator check" block with them
   and the arithmetic lines is appended, in the answer's language. Below 16 bits the
   calculator's caveat must be there too, or it is appended.

Works the same when the model never called the calculator: the service computes the
calculations itself and passes them here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from assistant.prompts import SYSTEM_PROMPT
from tools import Card, SizingResult, card_classes, list_cards

GIB_IN_GB = 2**30 / 1e9
# Card counts a multi-GPU answer may quote a total capacity for ("2× 80 GB = 160 GB").
CARD_COUNTS = (1, 2, 4, 8)
# How far a whole-number figure may sit from the tool's ("about 140 GB" for 141.12 GB).
ROUND_FIGURE_SLACK = 0.015
# A sentence sharing this many consecutive words with the system prompt is a leak.
LEAK_WORDS = 8

# A number followed by a gigabyte unit: "35.3 GB", "48GB", "1,342 GB", "79,6 GiB". Not GB/s.
_FIGURE = re.compile(
    r"(?<![\d.,])(\d{1,3}(?:[.,]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)\s*(GiB|GB|gigabytes?|gigas?)\b(?!\s*/\s*s|ps)",
    re.IGNORECASE,
)
# Claims that something fits / runs, in either language (the model may answer in the other one).
_FIT_CLAIM = re.compile(
    r"\b(fits?|fitting|runs? (?:on|in)|will run|works? on|is enough|are enough|sufficient|"
    r"cabe|caben|entra|entran|corre (?:en|sobre)|funciona en|basta|bastan|alcanza|suficiente)\b",
    re.IGNORECASE,
)
# A negation within a few words before the claim: "does not fit", "won't run on", "no cabe", "not enough".
_NEGATED_BEFORE = re.compile(
    r"(\b(not|no|never|cannot|nor|nunca|tampoco|ni|jamás)\b|n't)(\W+\w+){0,3}\W*$", re.IGNORECASE
)
# "2×", "2 x", "two", "dos", "multi-GPU": the sentence is about several cards.
_SEVERAL_CARDS = re.compile(
    r"\b\d+\s*[x×]|\b(two|three|four|eight|dos|tres|cuatro|ocho|multi-?gpu|multi-?tarjeta)\b", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s])")
_LIST_OR_TABLE = re.compile(r"^\s*(?:[-*+|>]|\d+[.)])\s*")

_TEXTS = {
    "en": {
        "check": "Calculator check",
        "weights": "weights",
        "total": "total",
        "tokens": "tokens",
        "users": "concurrent",
        "arithmetic": "Arithmetic",
    },
    "es": {
        "check": "Comprobación de la calculadora",
        "weights": "pesos",
        "total": "total",
        "tokens": "tokens",
        "users": "concurrentes",
        "arithmetic": "Aritmética",
    },
}


@dataclass(frozen=True)
class Figure:
    """A GB/GiB figure as written, with the values it can mean (a "1.342" may be 1.342 or 1342)."""

    text: str
    values: tuple[tuple[float, int], ...]  # (value, decimals shown)
    gib: bool


@dataclass
class GuardrailReport:
    """What `check` did to a draft: the answer to show and why it differs from the draft."""

    answer: str
    removed: list[str] = field(default_factory=list)
    appended_figures: bool = False
    appended_caveat: bool = False


def enforce(
    draft_text: str, calculations: Sequence[SizingResult], lang: str, *, quoted: Iterable[str] = ()
) -> str:
    """The answer to show: the draft with unverified figures and claims removed and the key numbers ensured."""
    return check(draft_text, calculations, lang, quoted=quoted).answer


def check(
    draft_text: str, calculations: Sequence[SizingResult], lang: str, *, quoted: Iterable[str] = ()
) -> GuardrailReport:
    """`enforce`, also saying what was removed and appended."""
    texts = _TEXTS.get(lang, _TEXTS["en"])
    allowed_gb, allowed_gib = _allowed_figures(calculations, quoted)
    capacities = _catalog_capacities()
    smallest_total = min((result.total_gb for result in calculations), default=None)
    nothing_fits = bool(calculations) and not any(
        option.fits for result in calculations for option in result.options
    )
    removed: list[str] = []

    def keep(sentence: str) -> bool:
        reason = None
        if _quotes_prompt(sentence):
            reason = "prompt"
        elif any(
            not _verified(figure, *_with_named_cards(sentence, allowed_gb, allowed_gib))
            for figure in _figures(sentence)
        ):
            reason = "figure"
        elif calculations and _claims_impossible_fit(sentence, smallest_total, nothing_fits, capacities):
            reason = "verdict"
        if reason is not None:
            removed.append(sentence.strip())
        return reason is None

    kept_lines: list[str] = []
    for line in draft_text.strip().splitlines():
        if _LIST_OR_TABLE.match(line) or line.lstrip().startswith(("#", "```")):
            # A list item, table row or heading stands or falls as a whole.
            if keep(line):
                kept_lines.append(line)
            continue
        sentences = _SENTENCE_END.split(line)
        kept = [sentence for sentence in sentences if keep(sentence)]
        if kept or not line.strip():
            kept_lines.append(" ".join(kept))
    answer = _tidy("\n".join(kept_lines))

    report = GuardrailReport(answer=answer, removed=removed)
    missing = [result for result in calculations if not _states_key_numbers(answer, result)]
    blocks: list[str] = []
    if missing:
        blocks.append(_calculator_block(missing, texts))
        report.appended_figures = True
    caveats = [result.caveat for result in calculations if result.below_16_bit and result.caveat]
    missing_caveats = [c for c in dict.fromkeys(caveats) if _normal(c) not in _normal(answer)]
    if missing_caveats:
        blocks.append("\n".join(f"> {caveat}" for caveat in missing_caveats))
        report.appended_caveat = True
    if blocks:
        report.answer = "\n\n".join(part for part in (answer, *blocks) if part)
    return report


# ---------------------------------------------------------------------------- figures


def _figures(text: str) -> list[Figure]:
    return [
        Figure(match.group(0), _readings(match.group(1)), match.group(2).lower() == "gib")
        for match in _FIGURE.finditer(text)
    ]


def _readings(number: str) -> tuple[tuple[float, int], ...]:
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
    readings = [(float(f"{whole}.{fraction}"), len(fraction))]
    if len(fraction) == 3 and whole != "0":  # "1.342" is 1342 in Spanish, 1.342 in English
        readings.append((float(whole + fraction), 0))
    return tuple(readings)


def _close(value: float, decimals: int, target: float) -> bool:
    """Equal within the rounding the writer used; a whole number may also be a round "about 140 GB"."""
    if decimals:
        return abs(value - target) <= 0.6 * 10**-decimals
    return abs(value - target) <= max(0.6, ROUND_FIGURE_SLACK * abs(target))


def _verified(figure: Figure, allowed_gb: set[float], allowed_gib: set[float]) -> bool:
    for value, decimals in figure.values:
        if figure.gib:
            if any(_close(value, decimals, a) for a in allowed_gib):
                return True
            if any(_close(value * GIB_IN_GB, decimals, a) for a in allowed_gb):
                return True
        # Many people write GB for nvidia-smi's GiB, so a GB figure may match either.
        elif any(_close(value, decimals, a) for a in allowed_gb | allowed_gib):
            return True
    return False


def _allowed_figures(
    calculations: Sequence[SizingResult], quoted: Iterable[str]
) -> tuple[set[float], set[float]]:
    """(GB, GiB) figures the tools produced: calculation fields and texts, card catalogue, articles."""
    catalog_gb, catalog_gib = _catalog_figures()
    allowed_gb, allowed_gib = set(catalog_gb), set(catalog_gib)
    texts: list[str] = list(quoted)
    for result in calculations:
        allowed_gb.update(
            abs(value)
            for value in (result.weights_gb, result.kv_cache_gb, result.overhead_gb, result.total_gb)
        )
        texts += [result.recommendation, *result.arithmetic, *result.suggestions, result.caveat or ""]
        for option in result.options:
            allowed_gb.update((option.usable_gb, abs(option.headroom_gb)))
            texts += [option.label, option.serves, option.catch]
    for text in texts:
        for figure in _figures(text):
            for value, _decimals in figure.values:
                (allowed_gib if figure.gib else allowed_gb).add(value)
    return allowed_gb, allowed_gib


@functools.cache
def _catalog_figures() -> tuple[frozenset[float], frozenset[float]]:
    """Card and card-class memory in GB and GiB, marketing and usable, times the usual card counts."""
    gb: set[float] = set()
    gib: set[float] = set()
    # The lineup the sizing proposes; the cards people own count only where a sentence names them.
    for card in (card for card in list_cards() if card.suggested):
        _add_card_figures(card, gb, gib)
    for card_class in card_classes():
        gb.add(card_class.usable_gb)
        for figure in _figures(card_class.label):
            gb.update(value for value, _ in figure.values)
    return frozenset(gb), frozenset(gib)


def _add_card_figures(card: Card, gb: set[float], gib: set[float]) -> None:
    for count in CARD_COUNTS:
        gb.update(count * value for value in (card.usable_gb, card.memory_mib * 2**20 / 1e9))
        gib.add(count * card.memory_mib / 1024)
        for figure in _figures(f"{card.marketing} {card.name}"):
            gb.update(count * value for value, _ in figure.values)


def _with_named_cards(sentence: str, gb: set[float], gib: set[float]) -> tuple[set[float], set[float]]:
    """The allowed figures plus those of every catalogue card the sentence names."""
    named = [card for card in list_cards() if not card.suggested and _names_card(sentence, card)]
    if not named:
        return gb, gib
    more_gb, more_gib = set(gb), set(gib)
    for card in named:
        _add_card_figures(card, more_gb, more_gib)
    return more_gb, more_gib


def _names_card(sentence: str, card: Card) -> bool:
    return any(
        len(name) >= 3 and re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", sentence, re.IGNORECASE)
        for name in (card.name, *card.aliases)
    )


@functools.cache
def _catalog_capacities() -> tuple[tuple[re.Pattern[str], float], ...]:
    """(a pattern naming one card, its marketing capacity in GB) for every card in the catalogue."""
    capacities = []
    for card in list_cards():
        marketing = [value for figure in _figures(card.marketing) for value, _ in figure.values]
        capacity = marketing[0] if marketing else card.memory_mib * 2**20 / 1e9
        for name in {card.name, *card.aliases}:
            if len(name) >= 3:
                pattern = re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", re.IGNORECASE)
                capacities.append((pattern, capacity))
    return tuple(capacities)


# ---------------------------------------------------------------------------- claims


def _claims_impossible_fit(
    sentence: str,
    smallest_total: float | None,
    nothing_fits: bool,
    capacities: tuple[tuple[re.Pattern[str], float], ...],
) -> bool:
    """A plain "fits" claim the calculator contradicts for every calculation it made."""
    if not any(not negated for negated in _fit_claims(sentence)) or _SEVERAL_CARDS.search(sentence):
        return False
    named = [capacity for pattern, capacity in capacities if pattern.search(sentence)]
    catalog_gb, _ = _catalog_figures()
    named += [
        value
        for figure in _figures(sentence)
        for value, decimals in figure.values
        if any(_close(value, decimals, c) for c in catalog_gb)
    ]
    if named:
        return smallest_total is not None and max(named) < smallest_total
    return nothing_fits


def _fit_claims(text: str) -> list[bool]:
    """One entry per "fits"-like claim in `text`: whether it is negated."""
    return [bool(_NEGATED_BEFORE.search(text[: match.start()])) for match in _FIT_CLAIM.finditer(text)]


def _states_key_numbers(answer: str, result: SizingResult) -> bool:
    """The answer gives this calculation's weights, total and the recommended option's verdict."""
    written = [value for figure in _figures(answer) for value in figure.values if not figure.gib]
    for target in (result.weights_gb, result.total_gb):
        if not any(_close(value, decimals, target) for value, decimals in written):
            return False
    return _states_verdict(answer, result)


def _states_verdict(answer: str, result: SizingResult) -> bool:
    squashed = _squash(answer)
    if result.recommended is None:
        return any(negated for negated in _fit_claims(answer))
    # "l40s:2" recommends the option whose card is "l40s"; failing a match, the first that fits.
    wanted = {result.recommended, result.recommended.split(":")[0]}
    option = next((o for o in result.options if {o.card_class, o.card} & wanted), None) or next(
        (o for o in result.options if o.fits), None
    )
    names = {result.recommended}
    if option is not None:
        names.add(option.label.split("(")[0])
        names.update(name for name in re.findall(r"[A-Za-z]+\s?\d+[A-Za-z]*", option.label))
    return any(len(_squash(name)) >= 3 and _squash(name) in squashed for name in names)


def _calculator_block(results: Sequence[SizingResult], texts: dict[str, str]) -> str:
    lines = [f"**{texts['check']}**", ""]
    for result in results:
        heading = (
            f"**{result.model.name} · {result.precision} · {result.context:,} {texts['tokens']} × "
            f"{result.users} {texts['users']}** — {texts['weights']} {result.weights_gb:g} GB, "
            f"{texts['total']} {result.total_gb:g} GB. {result.recommendation}"
        )
        lines.append(f"- {heading}")
        lines += [f"  - {line}" for line in result.arithmetic]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- leaks and text


@functools.cache
def _prompt_shingles() -> frozenset[tuple[str, ...]]:
    words = _words(SYSTEM_PROMPT)
    return frozenset(tuple(words[i : i + LEAK_WORDS]) for i in range(len(words) - LEAK_WORDS + 1))


def _quotes_prompt(sentence: str) -> bool:
    words = _words(sentence)
    shingles = _prompt_shingles()
    return any(tuple(words[i : i + LEAK_WORDS]) in shingles for i in range(len(words) - LEAK_WORDS + 1))


def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


def _normal(text: str) -> str:
    """Lower case, Markdown emphasis and spacing removed: for "is this text in that one"."""
    return " ".join(re.sub(r"[*_`>]", " ", text).lower().split())


def _squash(text: str) -> str:
    return re.sub(r"[\s*_`×x-]", "", text.lower())


def _tidy(text: str) -> str:
    """Collapse the blank lines that removed sentences leave behind."""
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
