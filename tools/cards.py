"""Cards and card classes, read from tools/data/cards.json and tools/data/card_classes.json.

Usable memory is what the CUDA allocator can see: the nvidia-smi total (MiB) minus the driver's
reservation, in GB of 10^9 bytes. The marketing figure ("80 GB") is never used in arithmetic.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from tools.errors import InvalidInputError, UnknownCardError, check_range
from tools.i18n import GB
from tools.schemas import Card, CardClass
from tools.texts import bilingual

MIB = 2**20
_MAX_GPUS = 64
# A card named only by its memory ("a 24 GB card", "24gb"): GPU makers' "GB" is binary, as
# nvidia-smi shows (RTX 4090 "24 GB" = 24564 MiB, RTX 3090 24576 MiB), so N GB = N x 1024 MiB,
# less the default driver reservation. Bounded to what one accelerator or host could hold.
_GENERIC_CARD = re.compile(r"(\d{1,4})\s?gb")
# A CPU-only host known only by its RAM ("a laptop with 16 GB of RAM", "cpu-16gb"): DIMM "GB" is
# binary too, less what the OS keeps (cards.json cpu_memory); no bandwidth, so no speed.
_GENERIC_HOST = re.compile(r"cpu-(\d{1,4})gb")
_GENERIC_MAX_GB = 4096
# The bilingual fields of a card class in card_classes.json.
CLASS_TEXTS = ("label", "per_card", "serves", "catch")


def _load(name: str) -> Any:
    return json.loads(resources.files("tools").joinpath("data", name).read_text(encoding="utf-8"))


class CardFacts(NamedTuple):
    card: Card
    usable_bytes: int


@cache
def _card_facts() -> dict[str, CardFacts]:
    doc = _load("cards.json")
    default_reserved = int(doc["default_driver_reserved_mib"])
    facts: dict[str, CardFacts] = {}
    for raw in doc["cards"]:
        usable = _usable_mib(doc, raw, default_reserved) * MIB
        card = Card(
            id=raw["id"],
            name=raw["name"],
            aliases=list(raw.get("aliases", [])),
            memory_mib=int(raw["memory_mib"]),
            usable_gb=round(usable / GB, 2),
            bandwidth_gbps=raw.get("bandwidth_gbps"),
            bf16_dense_tflops=raw.get("bf16_dense_tflops"),
            fp8=raw.get("fp8"),
            vendor=raw.get("vendor", "nvidia"),
            marketing=raw.get("marketing", ""),
            kind=raw.get("kind", "datacenter"),
            suggested=bool(raw.get("suggested", True)),
        )
        facts[card.id] = CardFacts(card, usable)
    return facts


def _usable_mib(doc: dict[str, Any], raw: dict[str, Any], default_reserved: int) -> int:
    """What the engine may allocate: a GPU's total less the driver's reservation; on Apple
    silicon the share of unified memory the GPU may wire by default; on a CPU the RAM less
    what the OS keeps."""
    total = int(raw["memory_mib"])
    kind = raw.get("kind", "datacenter")
    if kind == "apple":
        if "default_gpu_wired_mib" in raw:
            return int(raw["default_gpu_wired_mib"])
        return int(total * apple_gpu_share(total))
    if kind == "cpu":
        return total - int(doc["cpu_memory"]["os_reserved_mib"])
    return total - int(raw.get("driver_reserved_mib", default_reserved))


@cache
def _apple_rules() -> dict[str, Any]:
    return dict(_load("cards.json")["apple_gpu_share"])


def apple_gpu_share(memory_mib: int) -> float:
    """Share of unified memory macOS lets the GPU wire by default (2/3 up to 36 GiB, else 3/4)."""
    rules = _apple_rules()
    small = memory_mib <= int(rules["small_share_up_to_gib"]) * 1024
    return float(rules["small_share"] if small else rules["large_share"])


def apple_raised_limit_mib(memory_mib: int) -> int:
    """A wired limit that leaves macOS its floor (`sudo sysctl iogpu.wired_limit_mb=N`)."""
    return memory_mib - int(_apple_rules()["macos_keep_gib"]) * 1024


def list_cards() -> list[Card]:
    """Every card the calculator knows, in the order of the data file."""
    return [f.card for f in _card_facts().values()]


def card_facts(card_id: str) -> CardFacts:
    facts = _card_facts().get(card_id)
    host = _GENERIC_HOST.fullmatch(card_id)
    if facts is None and host:
        return generic_host(int(host.group(1)))
    if facts is None and is_generic(card_id):
        return generic_card(int(card_id[:-2]))
    if facts is None:
        raise UnknownCardError(card_id, [c.id for c in list_cards()])
    return facts


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@cache
def _card_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for facts in _card_facts().values():
        for name in (facts.card.id, facts.card.name, *facts.card.aliases):
            index.setdefault(_normalise(name), facts.card.id)
    return index


def resolve_card(name: str) -> Card:
    """A catalog card by id, name or alias, or a generic card written as its memory ("24gb")."""
    card_id = _card_index().get(_normalise(name))
    if card_id is not None:
        return card_facts(card_id).card
    host = _GENERIC_HOST.fullmatch(name.strip().lower())
    if host:
        return generic_host(int(host.group(1))).card
    generic = _GENERIC_CARD.fullmatch(name.strip().lower())
    if generic:
        return generic_card(int(generic.group(1))).card
    raise UnknownCardError(
        name,
        [*(c.id for c in list_cards()), "or a memory size such as 24gb (cpu-64gb: a CPU-only host's RAM)"],
    )


def is_generic(card_id: str) -> bool:
    """True for a card or CPU host known only by its memory ("24gb", "cpu-16gb"), not from the catalog."""
    return card_id not in _card_facts() and generic_memory_gb(card_id) is not None


def generic_memory_gb(card_id: str) -> int | None:
    """The memory of a card or CPU host known only by it ("24gb" -> 24, "cpu-16gb" -> 16)."""
    match = _GENERIC_HOST.fullmatch(card_id) or _GENERIC_CARD.fullmatch(card_id)
    return int(match.group(1)) if match else None


@cache
def generic_card(gigabytes: int) -> CardFacts:
    """A card with `gigabytes` GB of memory and nothing else known (no bandwidth, so no speed)."""
    message = f"card memory {gigabytes} GB must be from 1 to {_GENERIC_MAX_GB} GB"
    check_range(gigabytes, 1, _GENERIC_MAX_GB, "card_memory_gb", message)
    reserved_mib = int(_load("cards.json")["default_driver_reserved_mib"])
    return _memory_only(
        f"{gigabytes}gb", f"{gigabytes} GB GPU", gigabytes, reserved_mib, "generic", "datacenter"
    )


@cache
def generic_host(gigabytes: int) -> CardFacts:
    """A CPU-only host with `gigabytes` GB of RAM, less what the OS keeps, and nothing else known."""
    reserved_mib = int(_load("cards.json")["cpu_memory"]["os_reserved_mib"])
    least = reserved_mib // 1024 + 1
    message = f"host memory {gigabytes} GB must be from {least} to {_GENERIC_MAX_GB} GB"
    check_range(gigabytes, least, _GENERIC_MAX_GB, "host_memory_gb", message)
    name = f"CPU only, {gigabytes} GB RAM"
    return _memory_only(f"cpu-{gigabytes}gb", name, gigabytes, reserved_mib, "cpu", "cpu")


def _memory_only(
    card_id: str, name: str, gigabytes: int, reserved_mib: int, vendor: str, kind: str
) -> CardFacts:
    """A card or host known only by its memory: N GB = N x 1024 MiB, less `reserved_mib`."""
    memory_mib = gigabytes * 1024
    usable = (memory_mib - reserved_mib) * MIB
    card = Card(
        id=card_id,
        name=name,
        aliases=[],
        memory_mib=memory_mib,
        usable_gb=round(usable / GB, 2),
        bandwidth_gbps=None,
        vendor=vendor,
        marketing=f"{gigabytes} GB" + (" RAM" if kind == "cpu" else ""),
        kind=kind,
        suggested=kind != "cpu",
    )
    return CardFacts(card, usable)


def parse_gpu_spec(spec: str) -> tuple[Card, int]:
    """'h100-80gb:2' -> (the H100 card, 2). Also accepts '2x h100-80gb'."""
    text = spec.strip()
    count_text = "1"
    prefixed = re.fullmatch(r"(-?\d+)\s*[x×]\s*(.+)", text, flags=re.IGNORECASE)
    if prefixed:
        count_text, text = prefixed.group(1), prefixed.group(2)
    elif ":" in text:
        text, _, count_text = text.rpartition(":")
    try:
        count = int(count_text)
    except ValueError:
        raise InvalidInputError(
            f"GPU count {count_text!r} in {spec!r} must be a whole number from 1 to {_MAX_GPUS}"
        ) from None
    check_range(count, 1, _MAX_GPUS, "gpus", f"GPU count {count} in {spec!r} must be from 1 to {_MAX_GPUS}")
    return resolve_card(text), count


@cache
def _card_classes() -> tuple[CardClass, ...]:
    doc = _load("card_classes.json")
    classes = []
    for raw in doc["classes"]:
        members = [card_facts(c) for c in raw["cards"]]
        usable = min(m.usable_bytes for m in members)
        # The visitor-facing texts stay beside the claims that back their figures.
        texts = {
            name: dict(bilingual(raw[name], f"card_classes.json: {raw['id']} {name}")) for name in CLASS_TEXTS
        }
        classes.append(
            CardClass(
                id=raw["id"],
                label=texts["label"]["en"],
                labels=texts["label"],
                per_card=texts["per_card"],
                cards=list(raw["cards"]),
                gpus=int(raw["gpus"]),
                usable_gb=round(usable * int(raw["gpus"]) / GB, 2),
                serves=texts["serves"],
                catch=texts["catch"],
            )
        )
    return tuple(classes)


def card_classes() -> list[CardClass]:
    """The card-class table (48gb, 80gb, 2x80gb) with its honest texts in en and es."""
    return list(_card_classes())


def card_class_claims() -> list[dict[str, Any]]:
    """The machine-checkable claims behind each class's text (a test holds them to the calculator)."""
    doc = _load("card_classes.json")
    return [dict(claim, card_class=raw["id"]) for raw in doc["classes"] for claim in raw.get("claims", [])]
