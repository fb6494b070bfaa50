"""The calc table says why an option that does not fit is a "no", next to its headroom."""

from __future__ import annotations

from assistant.cli.calc import render_table
from tools import SizingRequest, calculate_vram


def test_table_prints_the_reason_with_the_fix() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="rtx-3060-12gb", precision="int4"))
    table = render_table(result)
    section = table.split("Why it does not fit:\n", 1)[1].split("\n\n", 1)[0]
    assert "RTX 3060" in section and "--gpu-memory-utilization 0.89" in section


def test_spanish_table_names_the_heads() -> None:
    result = calculate_vram(SizingRequest(model="70b", gpu="h100-80gb:3", lang="es"))
    table = render_table(result)
    assert "Por qué no cabe:" in table and "64 cabezas de atención entre 3 GPUs" in table


def test_fitting_options_print_no_reason_section() -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", gpu="h100-80gb"))
    assert "Why it does not fit" not in render_table(result)


def test_an_option_served_as_copies_is_not_a_no() -> None:
    result = calculate_vram(SizingRequest(model="qwen2.5-7b", gpu="h100-80gb:8", users=30))
    option = result.options[0]
    assert not option.fits and option.replicas is not None
    table = render_table(result)
    row = table.splitlines()[4]
    assert "as 8 copies" in row and f"+{option.replicas.headroom_gb:.2f}" in row
    assert f" {8 * option.replicas.max_concurrent_sequences} " in row
    assert "Why it does not fit" not in table and "as copies" in table.split("Recommendation:", 1)[1]
