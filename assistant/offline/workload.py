"""The serving workload a message asks about: the kind of application (a service class of
tools/data/service_classes.json), an offered request rate, and latency targets, read in everyday
words ("voice agent", "30 peticiones por minuto", "first token under 300 ms", "menos de 50 ms por
token"). The patterns are the `workload` section of data/lexicon.yaml; every span read is blanked so
its numbers are never read again as users or a context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assistant.offline.numbers import parse_number

SECONDS = {"s": 1.0, "sec": 1.0, "second": 1.0, "segundo": 1.0, "seg": 1.0}
PER_UNIT = {"s": 1.0, "sec": 1.0, "second": 1.0, "segundo": 1.0, "seg": 1.0, "min": 60.0, "minute": 60.0}
PER_UNIT |= {"minuto": 60.0, "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "hora": 3600.0}
PER_UNIT |= {"day": 86_400.0, "dia": 86_400.0, "week": 604_800.0, "semana": 604_800.0}
PER_UNIT |= {"month": 2_592_000.0, "mes": 2_592_000.0, "mese": 2_592_000.0}  # 30 days
SHORT_RATES = {"rps": 1.0, "qps": 1.0, "rpm": 60.0}
# The periods a rate is an average over rather than a load (a day or longer), by their length.
LONG_PERIODS = {86_400.0: "day", 604_800.0: "week", 2_592_000.0: "month"}


@dataclass(frozen=True)
class WorkloadReading:
    """What the message says about the load and the latency it needs; None = not said."""

    service: str | None = None
    rate: float | None = None  # requests per second
    # The period the rate was said over when a day or longer ("day", "week", "month"): the rate is
    # that period's average, and traffic comes in peaks.
    rate_period: str | None = None
    users_max: bool | None = None  # "maximum throughput", "fill the memory": the saturated load
    ttft_ms: float | None = None
    tpot_ms: float | None = None


@dataclass(frozen=True)
class WorkloadPatterns:
    services: tuple[tuple[re.Pattern[str], str], ...]
    rate: re.Pattern[str]
    ttft: re.Pattern[str]
    tpot: re.Pattern[str]
    min_speed: re.Pattern[str]
    users_max: re.Pattern[str]


def compile_patterns(raw: dict[str, Any], input_words: str) -> WorkloadPatterns:
    """The lexicon's `workload` section, compiled; `input_words` are the words of what a request
    carries (length_words.input: "documents", "correos"...), which a rate may count."""
    return WorkloadPatterns(
        services=tuple((re.compile(entry["pattern"]), entry["id"]) for entry in raw["services"]),
        rate=re.compile(raw["rate"].replace("{input}", input_words)),
        ttft=re.compile(raw["ttft"]),
        tpot=re.compile(raw["tpot"]),
        min_speed=re.compile(raw["min_speed"]),
        users_max=re.compile(raw["users_max"]),
    )


def _number(raw: str, suffix: str | None = None) -> float | None:
    """'3,600', '3.600', '1,5', '50' with 'k', 'mil' or 'million' after it -> a positive number."""
    value = parse_number(raw)
    if value is None or value <= 0:
        return None
    if suffix in ("k", "mil"):
        return value * 1e3
    if suffix:  # "m", "million(s)", "millones", "millon"
        return value * 1e6
    return value


def _unit(raw: str) -> str:
    """'minutes' -> 'minute', 'segs' -> 'seg': the singular the tables above use."""
    return raw[:-1] if raw.endswith("s") and len(raw) > 1 and raw[:-1] in PER_UNIT else raw


def _blanked(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]


def find_workload(text: str, patterns: WorkloadPatterns) -> tuple[str, WorkloadReading]:
    """The folded message with the workload spans blanked, and what they said."""
    service = next((name for pattern, name in patterns.services if pattern.search(text)), None)
    rate = ttft = tpot = period = None
    match = patterns.rate.search(text)
    if match:
        if match.group("n"):
            value = _number(match.group("n"), match.group("k"))
            per = PER_UNIT["day"] if match.group("daily") else PER_UNIT.get(_unit(match.group("unit")))
        else:
            value, per = _number(match.group("sn")), SHORT_RATES[match.group("short")]
        if value is not None and per is not None:
            rate, text = value / per, _blanked(text, match)
            period = LONG_PERIODS.get(per)
    match = patterns.ttft.search(text)
    if match:
        value = _number(match.group(1))
        if value is not None:
            ttft = value * (1000.0 if _unit(match.group(2)) in SECONDS else 1.0)
            text = _blanked(text, match)
    match = patterns.tpot.search(text)
    if match:
        value = _number(match.group(1) or match.group(2))
        if value is not None:
            tpot, text = value, _blanked(text, match)
    match = patterns.min_speed.search(text)
    if match and tpot is None:
        value = _number(next(group for group in match.groups() if group))
        if value is not None:
            tpot, text = 1000.0 / value, _blanked(text, match)
    users_max = None
    match = patterns.users_max.search(text)
    if match and rate is None:
        users_max, text = True, _blanked(text, match)
    return text, WorkloadReading(service, rate, period, users_max, ttft, tpot)
