"""The cards and hosts a message names: catalog cards, memory-sized classes ("2x80GB"), Apple
and CPU-only hosts, and the vLLM flags that set the card count and its memory share."""

from __future__ import annotations

import re
from dataclasses import replace

from assistant.offline.lexicon import Lexicon, lexicon
from assistant.offline.names import CardName, card_key, catalog
from assistant.offline.notes import ReadingNote, note
from assistant.offline.numbers import parse_number
from assistant.offline.spans import blank, is_ruled_out


def find_tensor_parallel(text: str, lex: Lexicon) -> tuple[str, int | None]:
    match = lex.tensor_parallel.search(text)
    if not match:
        return text, None
    return blank(text, match.start(), match.end()), max(1, int(match.group(1)))


def find_utilization(text: str, lex: Lexicon) -> tuple[str, float | None]:
    match = lex.utilization.search(text)
    if not match:
        return text, None
    value = parse_number(match.group(1))
    if value is None or not 0.05 <= value <= 1.0:
        return text, None
    return blank(text, match.start(), match.end()), value


def find_card_count(text: str, lex: Lexicon) -> tuple[str, int | None, int | None]:
    """A number of cards said with no card name: (text, the count, or the cards added).

    "what about 2 gpus?", "y con cuatro tarjetas?", "2 of them", "what if we get two?" give the
    count; "2 more gpus", "one more", "y si compro otra?" the cards added (one where no number is said).
    """
    for pattern in lex.card_count_alone:
        match = pattern.search(text)
        if not match:
            continue
        said = match.groupdict()
        more = said.get("more") or said.get("more2")
        number = _count(said.get("count")) if said.get("count") else None
        text = blank(text, match.start(), match.end())
        if more:
            return text, None, number or 1
        return text, number, None
    return text, None, None


def with_card_count(spec: str, count: int | None, added: int | None) -> str | None:
    """The card spec `spec` (a catalog card, a class or a generic memory card) with `count` cards,
    or `added` more than it has; None for an Apple or CPU host, or no card left."""
    cat = catalog()
    base, _, written = spec.partition(":")
    cards = int(written) if written.isdigit() else 1
    memory = re.fullmatch(r"(?:(\d+)x)?(\d+)gb", base)
    if memory:
        cards, base = int(memory.group(1) or cards), f"{memory.group(2)}gb"
    elif cat.kinds.get(base) in ("apple", "cpu") or base.startswith("cpu-"):
        return None
    wanted = count if count is not None else cards + (added or 0)
    if wanted < 1:
        return None
    if memory:
        class_id = base if wanted == 1 else f"{wanted}x{base}"
        if class_id in cat.class_ids:
            return class_id
    return base + (f":{wanted}" if wanted > 1 else "")


def _count(word: str | None) -> int:
    if not word:
        return 1
    if word.isdigit():
        return max(1, int(word))
    if word in ("single", "sola"):
        return 1
    return int(lexicon().number_words.get(word, 1))


def find_cards(
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
    bases: set[str] = set()  # the first word of each card name found ("h100")
    for key, cards in cat.card_keys:
        if key not in text:
            continue
        # A bare number names a card only when it is not a quantity ("4090", not "6000 tokens").
        quantity = r"(?!\s*(?:tokens?|k\b|users?|usuari|gb))" if key.isdigit() else ""
        # "2x4090": the count's "x" may touch the name.
        pattern = rf"(?:(?<![a-z0-9])|(?<=\dx)){re.escape(key)}s?(?![a-z0-9]){quantity}"
        for match in list(re.finditer(pattern, text)):
            card = _pick_card(cards, text, key in cat.spelled_card_keys)
            before = text[max(0, match.start() - _COUNT_REACH) : match.start()]
            count_match = lex.card_count.search(before)
            count = _count(count_match.group(1) if count_match else None)
            fraction = _FRACTION_COUNT.search(before)
            if fraction and not count_match:
                notes.append(note("gpu_count_fraction", value=fraction.group(1), used=count))
                start = max(0, match.start() - _COUNT_REACH) + fraction.start()
                text = blank(text, start, match.start())
            if count == 1 and tensor_parallel:
                count = tensor_parallel
            text = blank(text, match.start(), match.end())
            memory = lex.card_memory.search(text[match.end() : match.end() + 16])
            if memory:  # "RTX 4090 de 24GB": the memory repeats the card, it is not a second card
                start = match.end() + memory.start()
                said_gb = float(memory.group(2))
                joined = _MEMORY_JOIN.fullmatch(text[match.end() : start])
                kind = cat.kinds.get(card.card_id)
                if joined and kind == "cpu" and said_gb != card.memory_gb:
                    # "cpu only 16gb ram": the host with that RAM, not the catalog's default one
                    card = replace(card, card_id=host_of_memory(said_gb))
                elif kind not in ("apple", "cpu") and _RAM_AFTER.match(text, match.end() + memory.end()):
                    pass  # "a 4090 with 64gb ram": the computer's RAM, not the card's memory
                elif joined and not any(said_gb == other.memory_gb for other in cards):
                    name = re.sub(r"\s*\(\d+ GB\)", "", card.label)
                    generic = f"{memory.group(2)}gb"
                    if kind != "apple" and generic not in cat.class_ids:
                        # "a 3060 6gb" (the laptop one): sized on the memory said, which decides
                        # what fits, as any card with it; without its bandwidth, no speed.
                        card = replace(card, card_id=generic)
                        notes.append(note("card_memory_generic", written=f"{memory.group(2)} GB", card=name))
                    else:
                        notes.append(note("card_memory_unknown", written=f"{memory.group(2)} GB", card=name))
                text = blank(text, start, match.end() + memory.end())
            if count_match:
                start = max(0, match.start() - _COUNT_REACH) + count_match.start()
                text = blank(text, start, match.start())
            spec = card.card_id + (f":{count}" if count > 1 else "")
            found.append((match.start(), spec, None))
            bases.add(key.split()[0])
    # "an H100 PCIe and SXM": a form factor alone, after a card of that name, is its sibling.
    keyed = dict(cat.card_keys)
    for variant in list(_VARIANT.finditer(text)):
        earlier = [position for position, _, _ in found if position < variant.start()]
        if not earlier or not _VARIANT_JOIN.search(original[max(earlier) : variant.start()]):
            continue  # "h100 on pcie" is one card
        for base in sorted(bases):
            siblings = keyed.get(f"{base} {variant.group(1)}")
            if siblings:
                text = blank(text, variant.start(), variant.end())
                found.append((variant.start(), siblings[0].card_id, None))
                break
    for memory in list(lex.card_memory.finditer(text)):
        gigabytes = int(memory.group(2))
        if gigabytes < 10 and not lex.card_memory_words.search(text):
            continue  # "8 GB of weights" is not a card; "an 8 GB card" is
        beside_gpu = found or lex.unknown_hardware.search(text)
        if beside_gpu and _RAM_AFTER.match(text, memory.end()) and not lex.cpu.search(original):
            text = blank(text, memory.start(), memory.end())
            continue  # "32gb of ram and an rtx 3060": the computer's RAM, not a second card
        count = _count(memory.group(1))
        if count == 1 and tensor_parallel:
            count = tensor_parallel
        text = blank(text, memory.start(), memory.end())
        class_id = f"{gigabytes}gb" if count == 1 else f"{count}x{gigabytes}gb"
        if class_id in cat.class_ids:
            found.append((memory.start(), None, class_id))
        else:
            found.append((memory.start(), f"{gigabytes}gb" + (f":{count}" if count > 1 else ""), None))
    kept = [
        (gpu, card_class)
        for position, gpu, card_class in sorted(found)
        if not is_ruled_out(original, position)
    ]
    unique: list[tuple[str | None, str | None]] = []
    for item in kept:
        if item not in unique:
            unique.append(item)
    return text, unique


# A form factor written alone ("and SXM", "o la PCIe"): with a card name found before, its sibling.
_VARIANT = re.compile(r"(?<![a-z0-9])(sxm|pcie|nvl)(?![a-z0-9])")
_VARIANT_JOIN = re.compile(r"\b(?:or|and|vs\.?|versus|y|e|o|u|frente a|compared (?:to|with)|contra)\b")
# What may sit between a card's name and its memory: "4090 48gb", "m2 max de 32 gb", "m2 ultra with 64GB".
_MEMORY_JOIN = re.compile(r"[\s\-(,]*(?:de|with|con|of|w/)?[\s(]*")
# A memory figure said as RAM: "64gb ram", "32 gb of system ram", "16 gigas de ram".
_RAM_AFTER = re.compile(r"\s+(?:(?:de|of)\s+)?(?:(?:system|ddr[345])\s+)?ram\b")
# How far before a card's name its count may start: "sixteen tarjetas de nvidia ".
_COUNT_REACH = 28
_FRACTION_COUNT = re.compile(r"(?<![\w.,])(\d+[.,]\d+)\s*(?:x|\*)?\s*$")


def host_cards(
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
        if cards[0][0].startswith("cpu-"):  # a host known by its RAM ("cpu only 16gb")
            return cards, "cpu"
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
    if host is None and said_kind == "cpu" and memory:
        host = host_of_memory(memory)  # "16 GB of RAM, no GPU": a host the catalog lacks, by its RAM
    if host is None:
        return cards, said_kind
    return [(host, None), *cards[1:]], said_kind


def host_of_memory(memory_gb: float) -> str:
    """The CPU-only host with `memory_gb` of RAM: the catalog's entry of that memory, else a host
    known only by its RAM ("cpu-16gb", no speed estimated)."""
    cat = catalog()
    same = [c for c in cat.cards if cat.kinds.get(c.card_id) == "cpu" and c.memory_gb == memory_gb]
    return same[0].card_id if same else f"cpu-{int(memory_gb)}gb"


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
