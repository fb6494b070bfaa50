"""Claims in a model's sentence, checked against the calculator and the articles.

`wrong_verdict(sentence, calculations)` says whether a verdict in the sentence disagrees with
the calculator: "fits" / "does not fit" on a card, a card class or a capacity ("24 GB"),
"serves N users" / "cannot serve N users", "needs N GPUs". The card the sentence names is
sized again with the calculator at the same model, precision, context, users and engine
(`gpu="card:N"`), so a claim about any catalogue card is checked, not only the options the
answer compared. A sentence that names a precision is checked against that calculation only.

`contradicted_fact(sentence)` says whether the sentence states something the articles
contradict: a unit relation with the wrong ratio ("a GB is 1024 MB"), two units of different
size called the same, a precision's bits or bytes per parameter, or one of the
misconceptions in `data/contradicted_claims.yaml`, each with the article that corrects it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from assistant.guardrail_figures import card_patterns, figures, readings
from assistant.offline.sizing import calculate
from assistant.offline.understanding import fold
from tools import PRECISIONS, CardOption, SizingRequest, SizingResult, card_classes, list_cards
from tools.errors import SizingError
from tools.precision import nominal_bits

DATA_FILE = Path(__file__).resolve().parent / "data" / "contradicted_claims.yaml"
# Card counts tried when working out how many cards a claim needs.
CARD_COUNTS = (1, 2, 4, 8)
# Byte sizes of the memory units a relation may name.
_UNIT_BYTES = {
    "b": 1.0,
    "byte": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "kib": 2.0**10,
    "mb": 1e6,
    "megabyte": 1e6,
    "megabytes": 1e6,
    "mib": 2.0**20,
    "gb": 1e9,
    "gigabyte": 1e9,
    "gigabytes": 1e9,
    "gib": 2.0**30,
    "tb": 1e12,
    "tib": 2.0**40,
}
_UNIT = r"(bytes?|kib|kb|mib|mb|megabytes?|gib|gb|gigabytes?|tib|tb)"
_QUANTITY = r"(?:(\d[\d.,]*)\s*|(?:an?|one|un|una|uno)\s+)"
# "a GB is 1024 MB", "1 GiB = 1.0737 GB", "un GB son 1024 MB" (folded text: no accents).
_RELATION = re.compile(
    _QUANTITY + _UNIT + r"\b\s*(?:is|are|equals?|=|has|contains|means|es|son|equivale a|tiene|vale|significa)"
    r"\s+(?:about |around |exactly |unos |aproximadamente |exactamente )?(\d[\d.,]*)\s*" + _UNIT + r"\b"
)
_SAME = re.compile(
    r"\b(the same|same thing|identical|interchangeable|equivalent|lo mismo|iguales|identicos|equivalentes|"
    r"intercambiables)\b"
)
_PER_PARAMETER = re.compile(
    r"(\d[\d.,]*)\s*bytes?\s+(?:per|por|each|cada)\s+(?:parameter|parametro|weight|peso)"
)
_BITS = re.compile(r"(\d+)[- ]?bits?\b")

# Claims that something fits / runs / serves, in either language (the model may answer in the other one).
_FIT_CLAIM = re.compile(
    r"\b(fits?|fitting|will run|works? on|is enough|are enough|sufficient|enough|"
    r"cabe|caben|entra|entran|funciona en|basta|bastan|alcanza|suficiente|suficientes|"
    r"(?:run|runs|running|ejecutar|ejecuta|ejecutarlo|correr|corre|corra)\b[^.;]{0,30}?\b(?:on|in|en|sobre))\b"
)
_SERVE_CLAIM = re.compile(
    r"\b(serves?|serving|handles?|supports?|holds?|can take|up to|sirve|sirven|atiende|atienden|admite|"
    r"admiten|soporta|soportan|aguanta|aguantan|hasta)\b"
)
_NEED_CLAIM = re.compile(
    r"\b(needs?|needed|requires?|required|takes?|must have|necesita|necesitas|necesitan|necesitaria|requiere|"
    r"requieren|hace falta|hacen falta|haran falta)\b"
)
# A negation within a few words before the claim: "does not fit", "won't run on", "no cabe", "not enough".
_NEGATED_BEFORE = re.compile(r"(\b(not|no|never|cannot|nor|nunca|tampoco|ni|jamas)\b|n't)(\W+\w+){0,3}\W*$")
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "eight": 8, "single": 1, "a single": 1,
    "un": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "ocho": 8, "sola": 1, "solo": 1,
}  # fmt: skip
_COUNT_BEFORE = re.compile(
    r"(?:(\d+)\s*[x×]?|\b(one|two|three|four|eight|a single|single|un|una|dos|tres|cuatro|ocho))\s*$"
)
_GPUS = re.compile(
    r"\b(\d+|two|three|four|eight|dos|tres|cuatro|ocho)\s*(?:x\s*)?(gpus?|cards?|tarjetas|graficas)\b"
)
_CAPACITY = re.compile(r"(?<![\d.,])(\d+)\s*gb\b(?!\s*/)")


@dataclass(frozen=True)
class NamedCard:
    card: str  # catalogue id, or a card-class id when `is_class`
    count: int
    is_class: bool = False


def wrong_verdict(sentence: str, calculations: Sequence[SizingResult]) -> bool:
    """A verdict in `sentence` that the calculator contradicts for every calculation it may mean."""
    if not calculations:
        return False
    text = fold(sentence)
    relevant = _relevant(text, calculations)
    fit = _polarity(text, _FIT_CLAIM)
    serve = _polarity(text, _SERVE_CLAIM)
    need = _polarity(text, _NEED_CLAIM)
    if fit is None and serve is None and need is None:
        return False
    cards = _named_cards(text)
    users = [int(value) for f in figures(sentence) if f.unit == "users" for value, d in f.values if not d]
    gpus = _gpu_count(text)
    verdicts: list[bool] = []
    for result in relevant:
        verdict = _judge(result, cards, users, gpus, fit, serve, need)
        if verdict is None:
            return False  # a calculation the claim may be about says nothing against it
        verdicts.append(verdict)
    return bool(verdicts) and all(verdicts)


def _judge(
    result: SizingResult,
    cards: list[NamedCard],
    users: list[int],
    gpus: int | None,
    fit: bool | None,
    serve: bool | None,
    need: bool | None,
) -> bool | None:
    """True when the claim is wrong for this calculation, False when right, None when undecidable."""
    if need is True and cards and (gpus is not None or cards[0].count > 1):
        fewest = _fewest_cards(result, cards[0])
        return None if fewest is None else (gpus or cards[0].count) != fewest
    if cards:
        options = [
            _option_on(result, card if gpus is None else NamedCard(card.card, gpus, card.is_class))
            for card in cards
        ]
        known = [option for option in options if option is not None]
        if not known:
            return None
    else:
        known = _default_options(result)
    claimed_users = [n for n in users if n != result.users] if serve is not None else []
    if claimed_users and serve is not None:
        most = max(_most_users(option) for option in known) if known else None
        if most is None:
            return None
        if serve:  # "serves 20 users" is wrong when no option it may mean holds 20
            return all(n > most for n in claimed_users)
        return all(n <= most for n in claimed_users)  # "cannot serve 4 users" where 4 fit
    claim = fit if fit is not None else serve
    if claim is None:
        return None
    if not cards and not known:
        return None
    if not cards:
        # No card named: "it fits" is wrong only when nothing fits; "it does not fit" only when the
        # visitor's own card (the calculation's single requested card) fits.
        if claim:
            return not any(option.fits for option in result.options)
        requested = [option for option in result.options if option.card]
        return bool(requested) and all(option.fits for option in requested)
    if claim:
        return not any(option.fits for option in known)
    return all(option.fits for option in known)


def _most_users(option: CardOption) -> int:
    """The most users an option holds: its sequences of the whole context, or, where a capacity
    was asked, the shorter requests its paged KV cache holds (`PerformanceEstimate.held_sequences`)."""
    held = option.performance.held_sequences if option.performance is not None else None
    return max(option.max_concurrent_sequences, held or 0)


def _holds(option: CardOption) -> bool:
    return option.performance is not None and option.performance.held_sequences is not None


def _default_options(result: SizingResult) -> list[CardOption]:
    """What an answer means when it names no card: the recommended option, else every option."""
    wanted = {result.recommended, (result.recommended or "").split(":")[0]}
    chosen = [option for option in result.options if {option.card_class, option.card} & wanted]
    return chosen or list(result.options)


def _option_on(result: SizingResult, named: NamedCard) -> CardOption | None:
    """The calculator's verdict for this calculation on the named card (or class) and count."""
    if named.is_class:
        return next((o for o in result.options if o.card_class == named.card), None)
    for option in result.options:
        if option.card and option.card.split(":")[0] == named.card and option.gpus == named.count:
            return option
    try:
        request, speed = _sized_again(
            result, f"{named.card}:{named.count}" if named.count > 1 else named.card
        )
        again = calculate(request, speed=speed)
    except (SizingError, ValueError):
        return None
    return again.options[0] if again.options else None


def _sized_again(result: SizingResult, gpu: str) -> tuple[SizingRequest, bool]:
    """The request that sizes `result` again on `gpu`: for the memory verdict alone, unless a
    capacity was asked; then with the same request lengths and latency target, since the users an
    option serves are the requests its paged KV cache holds (`_most_users`)."""
    request = result.request(gpu=gpu)
    capacity = next((o.performance for o in result.options if _holds(o)), None)
    if capacity is None:
        return request, False
    target = capacity.target
    again = request.model_copy(
        update={
            "users_target": True,
            "input_len": capacity.input_len,
            "output_len": capacity.output_len,
            "ttft_ms": target.ttft_ms if target else None,
            "tpot_ms": target.tpot_ms if target else None,
        }
    )
    return again, True


def _fewest_cards(result: SizingResult, named: NamedCard) -> int | None:
    if named.is_class:
        return None
    for count in CARD_COUNTS:
        option = _option_on(result, NamedCard(named.card, count))
        if option is None:
            return None
        if option.fits:
            return count
    return None


def _polarity(text: str, claim: re.Pattern[str]) -> bool | None:
    """True for a plain claim, False for a negated one, None when the sentence makes none."""
    found = [not _NEGATED_BEFORE.search(text[: match.start()]) for match in claim.finditer(text)]
    if not found:
        return None
    return all(found) if len(set(found)) == 1 else None


def _named_cards(text: str) -> list[NamedCard]:
    """Cards the sentence names, with the count written before them; a card class; a bare capacity."""
    named: list[NamedCard] = []
    taken: list[tuple[int, int]] = []
    for pattern, card_id in card_patterns():
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            taken.append(match.span())
            named.append(NamedCard(card_id, _count_before(text[: match.start()])))
    for card_class in card_classes():
        labels = {
            fold(label.split("(")[0].strip()) for label in (card_class.label, *card_class.labels.values())
        }
        if any(label and label in text for label in labels) or re.search(
            rf"\b{re.escape(card_class.id)}\b", text
        ):
            named.append(NamedCard(card_class.id, card_class.gpus, is_class=True))
    if not named:
        for match in _CAPACITY.finditer(text):
            card = _card_with_capacity(float(match.group(1)))
            if card is not None:
                named.append(NamedCard(card, _count_before(text[: match.start()])))
    return list(dict.fromkeys(named))


def _count_before(prefix: str) -> int:
    match = _COUNT_BEFORE.search(prefix[-16:])
    if match is None:
        return 1
    if match.group(1):
        return max(1, min(int(match.group(1)), 64))
    return _NUMBER_WORDS.get(match.group(2), 1)


def _gpu_count(text: str) -> int | None:
    match = _GPUS.search(text)
    if match is None:
        return None
    word = match.group(1)
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word)


@functools.cache
def _capacities() -> dict[float, str]:
    """Marketing capacity in GB -> the first catalogue card with it ("24 GB" -> L4)."""
    found: dict[float, str] = {}
    for card in list_cards():
        for figure in figures(card.marketing):
            for value, _ in figure.values:
                found.setdefault(round(value), card.id)
    return found


def _card_with_capacity(gb: float) -> str | None:
    return _capacities().get(round(gb))


def _relevant(text: str, calculations: Sequence[SizingResult]) -> list[SizingResult]:
    """The calculations a sentence is about: those at a precision it names, else all. A sentence
    about a precision nobody calculated is about none of them (it is not judged)."""
    named = _precisions_named(text)
    if not named:
        return list(calculations)
    return [r for r in calculations if r.precision in named or _bits(r.precision) in named]


def _precisions_named(text: str) -> set[Any]:
    named: set[Any] = {p for p in PRECISIONS if re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", text)}
    named |= {int(bits) for bits in _BITS.findall(text)}
    return named


def _bits(precision: str) -> int | None:
    try:
        return int(nominal_bits(precision))
    except Exception:  # a precision the table does not know
        return None


# ---------------------------------------------------------------------------- facts


def unit_relation(sentence: str) -> bool:
    """The sentence relates two memory units ("1 GiB = 1.0737 GB"): its figures are checked as a fact."""
    return _RELATION.search(fold(sentence)) is not None


def contradicted_fact(sentence: str) -> str | None:
    """The article that contradicts the sentence, or None."""
    text = fold(sentence)
    for match in _RELATION.finditer(text):
        lefts = [amount * _UNIT_BYTES[match.group(2)] for amount in _amounts(match.group(1))]
        rights = [amount * _UNIT_BYTES[match.group(4)] for amount in _amounts(match.group(3))]
        if not any(abs(left - right) <= 0.005 * max(left, right) for left in lefts for right in rights):
            return "gb-vs-gib"
    units = {_UNIT_BYTES[unit] for unit in re.findall(r"\b" + _UNIT + r"\b", text)}
    same = _SAME.search(text)
    if len(units) >= 2 and same is not None and not _NEGATED_BEFORE.search(text[: same.start()]):
        return "gb-vs-gib"
    precisions = [p for p in _precisions_named(text) if isinstance(p, str)]
    for match in _PER_PARAMETER.finditer(text):
        amounts = _amounts(match.group(1))
        if precisions and all(
            abs(value - (_bits(p) or 0) / 8) > 0.15 for p in precisions for value in amounts
        ):
            return "vram-arithmetic"
    for precision in precisions:
        bits = _bits(precision)
        stated = re.search(
            rf"{re.escape(precision)}\s*(?:is|uses|has|equals|means|stores|es|usa|tiene|equivale a|=|:)\s+"
            r"(?:a |an |un |una |only |solo )?(\d+)[- ]?bits?\b",
            text,
        )
        if bits and stated and int(stated.group(1)) != bits:
            return "vram-arithmetic"
    for source, patterns in _misconceptions():
        if any(pattern.search(text) for pattern in patterns):
            return source
    return None


def _amounts(number: str | None) -> list[float]:
    """Every value a written quantity can mean; "a GB" is one."""
    cleaned = (number or "").strip(".,")
    return [value for value, _ in readings(cleaned)] if cleaned else [1.0]


@functools.cache
def _misconceptions() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
    entries: Iterable[dict[str, Any]] = yaml.safe_load(DATA_FILE.read_text(encoding="utf-8"))["claims"]
    return tuple(
        (str(entry["source"]), tuple(re.compile(pattern) for pattern in entry["patterns"]))
        for entry in entries
    )
