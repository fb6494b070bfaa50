"""The hardware people own: consumer/workstation cards, Apple unified memory, CPU-only RAM,
and llama.cpp partial offload with its speed cost."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from tools import SizingRequest, SizingResult, calculate_vram, list_cards
from tools.cards import MIB, apple_gpu_share, card_facts, resolve_card
from tools.errors import InvalidInputError

WANTED = [
    "rtx-3090",
    "rtx-3090-ti",
    "rtx-4080",
    "rtx-5090",
    "rtx-a6000",
    "a40",
    "a30",
    "t4",
    "v100-32gb",
    "l20",
    "h20",
    "h100-nvl",
    "gh200",
    "b100",
    "mi250",
    "mi325x",
    "rtx-3080",
    "rtx-3080-12gb",
    "rtx-3060-12gb",
    "rtx-4060-ti-16gb",
    "rtx-4070-ti-super",
    "rtx-a5000",
    "rtx-a4000",
    "rtx-4000-ada",
    "rtx-5080",
    "apple-m2-ultra-192gb",
    "apple-m3-ultra-512gb",
    "apple-m4-max-128gb",
]


def calc(**kwargs: object) -> SizingResult:
    return calculate_vram(SizingRequest(**kwargs))  # type: ignore[arg-type]


def test_every_card_people_name_is_in_the_catalog_with_sources() -> None:
    raw = json.loads(resources.files("tools").joinpath("data", "cards.json").read_text(encoding="utf-8"))
    by_id = {card["id"]: card for card in raw["cards"]}
    for card_id in WANTED:
        card = by_id[card_id]
        assert card["sources"] and card["memory_mib"] > 0 and card["bandwidth_gbps"] > 0, card_id
    assert {c.kind for c in list_cards()} >= {"datacenter", "workstation", "consumer", "apple", "cpu"}


@pytest.mark.parametrize(
    ("name", "card_id"),
    [
        ("3090", "rtx-3090"),
        ("RTX 3090", "rtx-3090"),
        ("a5000", "rtx-a5000"),
        ("RTX A5000", "rtx-a5000"),
        ("3090 Ti", "rtx-3090-ti"),
        ("4060 Ti", "rtx-4060-ti-16gb"),
        ("h100 nvl", "h100-nvl"),
        ("M3 Ultra", "apple-m3-ultra-512gb"),
        ("cpu only", "cpu-ddr5-64gb"),
    ],
)
def test_aliases_resolve(name: str, card_id: str) -> None:
    assert resolve_card(name).id == card_id


def test_nvidia_smi_mib_less_the_driver_reservation_is_usable() -> None:
    facts = card_facts("rtx-3090")
    assert facts.card.memory_mib == 24576
    assert facts.usable_bytes == (24576 - 547) * MIB


def test_apple_usable_memory_is_the_gpu_wired_share() -> None:
    # Measured: 107.52 GiB of a stock 128 GiB Mac (antirez/ds4#893).
    assert card_facts("apple-m4-max-128gb").usable_bytes == 110100 * MIB
    assert apple_gpu_share(24 * 1024) == pytest.approx(2 / 3, abs=0.01)
    assert apple_gpu_share(192 * 1024) == 0.75
    assert card_facts("apple-m2-ultra-192gb").usable_bytes == int(192 * 1024 * 0.75) * MIB


def test_a_mac_is_sized_as_llama_cpp_and_says_how_to_raise_the_wired_limit() -> None:
    result = calc(model="llama-3.1-70b", precision="q8_0", gpu="apple-m4-max-128gb", context=32768, users=4)
    assert result.engine == "llamacpp"
    assert result.arithmetic[0].startswith("Apple silicon runs llama.cpp")
    # No CUDA context on Metal.
    assert not any("CUDA context" in line for line in result.arithmetic if line.startswith("Engine overhead"))
    option = result.options[0]
    assert option.decode_tokens_per_s and option.decode_tokens_per_s < 10  # 546 GB/s over ~72 GB
    short = calc(model="llama-3.1-70b", precision="q8_0", gpu="apple-m2-max-96gb", context=32768)
    assert not short.options[0].fits
    wired = next(s for s in short.suggestions if "iogpu.wired_limit_mb" in s)
    assert "iogpu.wired_limit_mb=90112" in wired  # 96 GiB less 8 GiB for macOS
    es = calc(model="llama-3.1-70b", precision="q8_0", gpu="apple-m2-max-96gb", context=32768, lang="es")
    assert any("hasta el próximo reinicio" in s for s in es.suggestions)


def test_cpu_only_uses_ram_and_its_bandwidth() -> None:
    result = calc(model="llama-3.1-8b", precision="q4_k_m", gpu="cpu-ddr5-64gb")
    assert result.engine == "llamacpp" and result.options[0].fits
    assert result.arithmetic[0].startswith("CPU only")
    # The input embedding is in the same RAM: nothing is left out of the weights on the "card".
    assert "host RAM" not in " ".join(result.arithmetic)
    rate = result.options[0].decode_tokens_per_s
    # 89.6 GB/s × 62 % (calibration V11's efficiency) over the weights less the embedding
    # lookup table plus the full 8k-token KV cache read per token.
    read_gb = result.weights_gb - 128_256 * 4096 * 4.5 / 8 / 1e9 + result.kv_cache_gb
    assert rate == pytest.approx(0.62 * 89.6 / read_gb, rel=0.05)
    epyc = calc(model="llama-3.1-8b", precision="q4_k_m", gpu="cpu-epyc-12ch-768gb")
    assert epyc.options[0].decode_tokens_per_s and rate and epyc.options[0].decode_tokens_per_s > 4 * rate


def test_vllm_precisions_are_refused_on_a_mac_with_one_line() -> None:
    with pytest.raises(InvalidInputError, match=r"awq.*llama\.cpp"):
        calc(model="llama-3.1-8b", precision="awq", gpu="apple-m4-max-128gb")


def test_moe_partial_offload_names_n_cpu_moe_and_its_speed_cost() -> None:
    result = calc(model="gpt-oss-120b", precision="mxfp4", engine="llamacpp", gpu="rtx-4090")
    line = next(s for s in result.suggestions if "--n-cpu-moe" in s)
    assert "fits on RTX 4090" in line and "tok/s" in line
    n = int(line.split("--n-cpu-moe ")[1].split("`")[0])
    assert 1 <= n <= 36


def test_dense_partial_offload_names_gpu_layers() -> None:
    result = calc(model="llama-3.1-70b", precision="q4_k_m", engine="llamacpp", gpu="rtx-3090")
    line = next(s for s in result.suggestions if "--n-gpu-layers" in s)
    layers = int(line.split("--n-gpu-layers ")[1].split("`")[0])
    assert 30 <= layers < 80
    rate = float(line.split("about ")[1].split(" tok/s")[0])
    assert 1 <= rate <= 5  # ~20 GB read from dual-channel DDR5 per token


def test_no_offload_line_for_vllm() -> None:
    result = calc(model="llama-3.1-70b", precision="awq", gpu="rtx-3090")
    assert not any("--n-gpu-layers" in s or "--n-cpu-moe" in s for s in result.suggestions)
