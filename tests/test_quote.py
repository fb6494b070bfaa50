"""Quotes from the business's price list: what holds the request, ranked, with costs that can be rechecked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assistant.quote import (
    HOURS_PER_MONTH,
    SECONDS_PER_MONTH,
    PriceListError,
    build_quote,
    load_price_list,
    output_tokens_per_second,
)
from tests.sizing_cli import run_sizing
from tools import SizingRequest, calculate_vram
from tools.errors import InvalidInputError, UnknownCardError

EXAMPLE_PRICES = Path(__file__).resolve().parents[1] / "assistant" / "data" / "prices.example.yaml"
REQUEST = SizingRequest(model="llama-3.1-70b", precision="awq", users=20)


def test_every_quoted_configuration_holds_the_request_and_the_ranks_are_true() -> None:
    price_list = load_price_list(EXAMPLE_PRICES)
    quote = build_quote(REQUEST, price_list, utilization=0.5)
    assert 2 <= len(quote.configurations) <= 3 and quote.example_prices
    fitting = []
    for server in price_list.servers:
        gpu = server.card if server.count == 1 else f"{server.card}:{server.count}"
        option = calculate_vram(REQUEST.model_copy(update={"gpu": gpu})).options[0]
        if option.fits:
            fitting.append((server, option))
    quoted = {config.name: config for config in quote.configurations}
    for config in quote.configurations:
        server, option = next(pair for pair in fitting if pair[0].name == config.name)
        assert config.fits and config.headroom_gb == option.headroom_gb and config.count == server.count
    monthly = {s.name: (s.monthly_price if s.monthly_price is not None else None) for s, _ in fitting}
    cheapest = next(c for c in quote.configurations if "cheapest" in c.ranks)
    assert cheapest.monthly_cost == min(c.monthly_cost for c in quote.configurations)
    assert all(
        cheapest.monthly_cost <= (value if value is not None else float("inf")) for value in monthly.values()
    )
    most = next(c for c in quote.configurations if "most_headroom" in c.ranks)
    assert most.headroom_gb == max(option.headroom_gb for _, option in fitting)
    fewest = next(c for c in quote.configurations if "fewest_gpus" in c.ranks)
    assert fewest.count == min(server.count for server, _ in fitting)
    assert len(quoted) == len(quote.configurations)


def test_costs_follow_from_the_price_list_and_the_stated_utilization() -> None:
    quote = build_quote(REQUEST, load_price_list(EXAMPLE_PRICES), utilization=0.25)
    for config in quote.configurations:
        assert config.utilization == 0.25
        if config.cost_basis == "monthly_price":
            assert config.three_year_cost == pytest.approx(config.monthly_cost * 36)
        assert config.output_tokens_per_s and config.output_tokens_per_s_low
        expected = config.monthly_cost / (config.output_tokens_per_s * SECONDS_PER_MONTH * 0.25) * 1e6
        assert config.cost_per_million_output_tokens == pytest.approx(expected, rel=1e-2)


def test_a_bought_server_adds_its_energy_to_the_three_year_cost(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "currency: USD\nsource: test list\nelectricity_per_kwh: 0.2\nservers:\n"
        "  - {name: Box, card: h200, count: 1, list_price: 30000, power_kw: 1.0}\n",
        encoding="utf-8",
    )
    quote = build_quote(SizingRequest(model="llama-3.1-8b"), load_price_list(prices))
    [config] = quote.configurations
    energy = 1.0 * HOURS_PER_MONTH * 0.2 * 36
    assert config.three_year_cost == pytest.approx(30000 + energy)
    assert config.monthly_cost == pytest.approx((30000 + energy) / 36, abs=0.01)
    assert quote.currency == "USD" and not quote.example_prices and config.ranks


def test_throughput_is_the_serving_estimate_and_grows_with_users_less_than_linearly() -> None:
    one = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="h100-80gb", users=1))
    many = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="h100-80gb", users=32))
    single = output_tokens_per_second(one)
    batched = output_tokens_per_second(many)
    assert one.options[0].performance and single == one.options[0].performance.output_tok_s_total
    assert single is not None and batched is not None
    assert single.low < single.best < single.high
    assert single.best < batched.best < 32 * single.best


def test_the_quote_prices_a_million_tokens_at_the_best_and_the_low_throughput(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "currency: EUR\nsource: test list\nservers:\n  - {name: Box, card: h100-80gb, count: 1, monthly_price: 2000}\n",
        encoding="utf-8",
    )
    request = SizingRequest(model="llama-3.1-8b", users=16)
    [config] = build_quote(request, load_price_list(prices), utilization=0.5).configurations
    band = output_tokens_per_second(calculate_vram(request.model_copy(update={"gpu": "h100-80gb"})))
    assert band is not None and config.output_tokens_per_s_low == pytest.approx(band.low, abs=0.1)
    at_best = 2000 / (band.best * SECONDS_PER_MONTH * 0.5) * 1e6
    at_low = 2000 / (band.low * SECONDS_PER_MONTH * 0.5) * 1e6
    assert config.cost_per_million_output_tokens == pytest.approx(at_best, rel=1e-3)
    assert config.cost_per_million_output_tokens_high == pytest.approx(at_low, rel=1e-3)
    assert config.cost_per_million_output_tokens < config.cost_per_million_output_tokens_high
    assert config.performance_basis and "fitted on" in config.performance_basis


@pytest.mark.parametrize(
    ("body", "error", "named"),
    [
        (
            "currency: EUR\nsource: s\nservers:\n  - {name: Nope, card: h200, count: 1}\n",
            PriceListError,
            "Nope",
        ),
        (
            "currency: EUR\nsource: s\nservers:\n  - {name: X, card: tpu9, count: 1, list_price: 1}\n",
            UnknownCardError,
            "tpu9",
        ),
        ("servers: [", PriceListError, "not valid YAML"),
        ("currency: EUR\nservers: []\n", PriceListError, "source"),
    ],
)
def test_a_bad_price_list_is_one_line_naming_what_is_wrong(
    tmp_path: Path, body: str, error: type, named: str
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(body, encoding="utf-8")
    with pytest.raises(error) as caught:
        load_price_list(prices)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_utilization_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="utilization"):
        build_quote(REQUEST, load_price_list(EXAMPLE_PRICES), utilization=1.5)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIZING_")}
    env.update(SIZING_DATA_DIR=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[1]), **extra)
    return env


@pytest.mark.e2e
def test_cli_quote_json_contract(tmp_path: Path) -> None:
    done = run_sizing(
        "quote",
        "llama-3.1-70b",
        "--precision",
        "awq",
        "--users",
        "20",
        "--utilization",
        "0.4",
        "--json",
        env=_env(tmp_path, SIZING_PRICES_FILE=str(EXAMPLE_PRICES)),
    )
    assert done.returncode == 0, done.stderr
    quote = json.loads(done.stdout)
    assert {"configurations", "currency", "price_source"} <= set(quote) and quote["currency"] == "EUR"
    for config in quote["configurations"]:
        keys = {
            "name",
            "cards",
            "monthly_cost",
            "three_year_cost",
            "cost_per_million_output_tokens",
            "utilization",
            "fits",
        }
        assert keys <= set(config) and config["fits"] and config["utilization"] == 0.4


@pytest.mark.e2e
def test_cli_quote_without_prices_says_so_and_exits_2(tmp_path: Path) -> None:
    done = run_sizing("quote", "70b", env=_env(tmp_path))
    assert (
        done.returncode == 2 and "no price list" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    )
    done = run_sizing(
        "quote", "70b", "--prices", str(EXAMPLE_PRICES), "--utilization", "lots", env=_env(tmp_path)
    )
    assert done.returncode == 2 and "--utilization 'lots'" in done.stderr
