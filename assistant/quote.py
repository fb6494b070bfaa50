"""Quotes: the priced server configurations that hold one sizing request, ranked.

    price_list = load_price_list(Path("prices.yaml"))
    quote = build_quote(SizingRequest(model="llama-3.1-70b", precision="awq", users=20), price_list)

Each server in the business's price list (a YAML file, see assistant/data/prices.example.yaml) is
sized with the calculator on its own cards; the ones that hold the request are ranked three ways
(cheapest that fits, most headroom, fewest GPUs) and 2–3 are kept, each with its monthly cost, its
three-year cost and its cost per million output tokens at a stated utilization (at the serving
estimate's best throughput and at the low end of its calibrated range). No price is ever
made up: with no price list there is no quote.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from assistant.offline.sizing import calculate
from tools import SizingRequest, SizingResult
from tools.cards import resolve_card
from tools.errors import InvalidInputError, SizingError
from tools.schemas import Band

MONTHS_IN_THREE_YEARS = 36
HOURS_PER_MONTH = 730  # 8,760 hours a year / 12
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600
MOST_SHOWN = 3

Rank = Literal["cheapest", "most_headroom", "fewest_gpus"]


class PriceListError(InvalidInputError):
    """The price list file cannot be read or has an entry without what a quote needs."""


class NoPriceListError(SizingError):
    """A quote was asked for with no price list configured."""


class ServerConfiguration(BaseModel):
    """One row of the price list."""

    name: str
    card: str
    count: int = Field(ge=1, le=64)
    list_price: float | None = Field(default=None, ge=0)
    monthly_price: float | None = Field(default=None, ge=0)
    power_kw: float | None = Field(default=None, ge=0)
    lead_time_weeks: float | None = Field(default=None, ge=0)


class PriceList(BaseModel):
    example: bool = False
    currency: str
    source: str
    electricity_per_kwh: float | None = Field(default=None, ge=0)
    servers: list[ServerConfiguration]


class QuotedConfiguration(BaseModel):
    name: str
    cards: str  # "2× H100 80GB (SXM)"
    card: str
    count: int
    fits: bool
    usable_gb: float
    headroom_gb: float
    ranks: list[Rank]
    monthly_cost: float
    three_year_cost: float
    cost_basis: Literal["monthly_price", "list_price"]
    output_tokens_per_s: float | None  # best estimate
    output_tokens_per_s_low: float | None = None  # the calibrated range's low end
    output_tokens_per_s_high: float | None = None
    cost_per_million_output_tokens: float | None  # at the best estimate
    cost_per_million_output_tokens_high: float | None = None  # at the low end of the throughput
    performance_basis: str | None = None  # what the throughput rests on (the estimate's basis_detail)
    utilization: float
    power_kw: float | None
    lead_time_weeks: float | None


class Quote(BaseModel):
    configurations: list[QuotedConfiguration]
    currency: str
    price_source: str
    example_prices: bool
    utilization: float
    throughput_basis: str
    request: dict[str, Any]

    def public_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# How output throughput is estimated for the cost per million tokens.
THROUGHPUT_BASIS = (
    "serving estimate (tools/performance.py): aggregate output tokens/s of the configuration with the "
    "request's users at once and its request shape, a roofline calibrated on published measurements; "
    "the cost per million is given at the best estimate and at the low end of its calibrated range"
)


def output_tokens_per_second(result: SizingResult) -> Band | None:
    """Output tokens per second the server generates with `result.users` sequences at once (as many
    as its memory holds when fewer): the serving estimate's aggregate throughput, {low, best, high}.
    None when the option does not fit or has no estimate (unknown bandwidth)."""
    option = result.options[0] if result.options else None
    if option is None or not option.fits or option.performance is None:
        return None
    return option.performance.output_tok_s_total


def _per_million(monthly: float, tokens_per_s: float, utilization: float) -> float:
    return round(monthly / (tokens_per_s * SECONDS_PER_MONTH * utilization) * 1e6, 4)


@cache
def _read_price_list(path: Path, modified: float) -> PriceList:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceListError(f"cannot read price list {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise PriceListError(f"price list {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    try:
        price_list = PriceList.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise PriceListError(f"price list {path}: {where}: {first.get('msg')}") from None
    for server in price_list.servers:
        if server.list_price is None and server.monthly_price is None:
            raise PriceListError(
                f"price list {path}: {server.name!r} has neither list_price nor monthly_price"
            )
        resolve_card(server.card)  # UnknownCardError names the valid ids
    return price_list


def load_price_list(path: Path) -> PriceList:
    """The price list at `path` (re-read when the file changes)."""
    try:
        modified = path.stat().st_mtime
    except OSError as exc:
        raise PriceListError(f"cannot read price list {path}: {exc.strerror or exc}") from None
    return _read_price_list(path.resolve(), modified)


def price_list_from_settings(settings: Any, override: Path | None = None) -> PriceList | None:
    path = override or settings.prices_file
    return load_price_list(Path(path)) if path else None


def _costs(
    server: ServerConfiguration, price_list: PriceList
) -> tuple[float, float, Literal["monthly_price", "list_price"]]:
    if server.monthly_price is not None:
        monthly = server.monthly_price
        return monthly, monthly * MONTHS_IN_THREE_YEARS, "monthly_price"
    assert server.list_price is not None  # the loader checked one price exists
    energy = 0.0
    if server.power_kw is not None and price_list.electricity_per_kwh is not None:
        energy = server.power_kw * HOURS_PER_MONTH * price_list.electricity_per_kwh * MONTHS_IN_THREE_YEARS
    three_years = server.list_price + energy
    return three_years / MONTHS_IN_THREE_YEARS, three_years, "list_price"


def _sized(request: SizingRequest, server: ServerConfiguration) -> SizingResult:
    gpu = server.card if server.count == 1 else f"{server.card}:{server.count}"
    return calculate(request.model_copy(update={"gpu": gpu}))


def build_quote(request: SizingRequest, price_list: PriceList, utilization: float = 0.5) -> Quote:
    """The 2–3 configurations of the price list that hold the request, ranked."""
    if not 0 < utilization <= 1:
        raise InvalidInputError(
            f"utilization {utilization!r} must be above 0 and at most 1 (0.5 = half the month)"
        )
    candidates: list[QuotedConfiguration] = []
    for server in price_list.servers:
        result = _sized(request, server)
        option = result.options[0]
        if not option.fits:
            continue
        monthly, three_years, basis = _costs(server, price_list)
        throughput = output_tokens_per_second(result)
        usable = throughput is not None and throughput.low > 0
        per_million = _per_million(monthly, throughput.best, utilization) if throughput and usable else None
        worst = _per_million(monthly, throughput.low, utilization) if throughput and usable else None
        candidates.append(
            QuotedConfiguration(
                name=server.name,
                cards=option.label,
                card=server.card,
                count=server.count,
                fits=True,
                usable_gb=option.usable_gb,
                headroom_gb=option.headroom_gb,
                ranks=[],
                monthly_cost=round(monthly, 2),
                three_year_cost=round(three_years, 2),
                cost_basis=basis,
                output_tokens_per_s=round(throughput.best, 1) if throughput else None,
                output_tokens_per_s_low=round(throughput.low, 1) if throughput else None,
                output_tokens_per_s_high=round(throughput.high, 1) if throughput else None,
                cost_per_million_output_tokens=per_million,
                cost_per_million_output_tokens_high=worst,
                performance_basis=option.performance.basis_detail if option.performance else None,
                utilization=utilization,
                power_kw=server.power_kw,
                lead_time_weeks=server.lead_time_weeks,
            )
        )
    return Quote(
        configurations=_ranked(candidates),
        currency=price_list.currency,
        price_source=price_list.source,
        example_prices=price_list.example,
        utilization=utilization,
        throughput_basis=THROUGHPUT_BASIS,
        request=request.model_dump(mode="json", exclude={"config", "lang"}),
    )


def _ranked(candidates: list[QuotedConfiguration]) -> list[QuotedConfiguration]:
    if not candidates:
        return []
    by_cost = sorted(candidates, key=lambda c: (c.monthly_cost, -c.headroom_gb))
    picks: dict[Rank, QuotedConfiguration] = {
        "cheapest": by_cost[0],
        "most_headroom": max(candidates, key=lambda c: (c.headroom_gb, -c.monthly_cost)),
        "fewest_gpus": min(candidates, key=lambda c: (c.count, c.monthly_cost)),
    }
    chosen: list[QuotedConfiguration] = []
    for rank, pick in picks.items():
        existing = next((c for c in chosen if c.name == pick.name), None)
        if existing is None:
            chosen.append(pick.model_copy(update={"ranks": [rank]}))
        else:
            existing.ranks.append(rank)
    # At least two to choose from when the list has them: the next cheapest.
    for candidate in by_cost:
        if len(chosen) >= 2:
            break
        if all(c.name != candidate.name for c in chosen):
            chosen.append(candidate.model_copy(update={"ranks": []}))
    return chosen[:MOST_SHOWN]
