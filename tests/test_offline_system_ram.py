"""Memory said as RAM is the computer's, not a GPU's: "a laptop with 16gb of ram" is a CPU-only
host of 16 GB (a catalog host of that RAM where there is one, else one known only by its RAM,
`cpu-16gb`, with no speed estimated), and "a 4090 with 64gb ram" or "32gb of ram and an rtx 3060"
are that GPU, with no card of the RAM's size beside it."""

from __future__ import annotations

import pytest

from assistant.offline.understanding import understand
from tests.conversation_scoring import ask_turns
from tools import SizingRequest, calculate_vram
from tools.cards import card_facts, resolve_card
from tools.errors import SizingError


@pytest.mark.parametrize(
    ("text", "gpu"),
    [
        ("laptop con 16gb de ram, puedo correr llama 8b?", "cpu-16gb"),
        ("my laptop has 16gb ram, can it run mistral 7b", "cpu-16gb"),
        ("cpu only 16gb ram llama 3.1 8b", "cpu-16gb"),
        ("servidor sin gpu con 16gb de ram, llama 8b?", "cpu-16gb"),
        ("servidor sin gpu con 128 gb de ram, llama 70b?", "cpu-ddr5-128gb"),  # the catalog's host
        ("llama 8b on a 4090 with 64gb ram", "rtx-4090"),
        ("my pc has 32gb of ram and an rtx 3060, llama 8b?", "rtx-3060-12gb"),
        ("llama 8b on a 24gb card", "24gb"),  # a card's memory stays a card
    ],
)
def test_memory_said_as_ram_is_the_computers(text: str, gpu: str) -> None:
    reading = understand(text)
    assert reading.gpu == gpu and reading.cards == (gpu,)
    assert not reading.notes  # nothing "the catalog has no RTX 4090 with 64 GB"


def test_a_host_known_by_its_ram_is_sized_on_the_cpu_with_no_speed() -> None:
    card = resolve_card("cpu-16gb")
    assert (card.kind, card.bandwidth_gbps, card.memory_mib) == ("cpu", None, 16 * 1024)
    assert card.usable_gb < 16 * 1.074 - 4  # the OS keeps its share
    result = calculate_vram(
        SizingRequest(model="llama-3.1-8b", precision="q4_k_m", engine="llamacpp", gpu="cpu-16gb")
    )
    (option,) = result.options
    assert option.fits and option.decode_tokens_per_s is None
    assert result.overhead_gb < 1  # no CUDA context on a CPU


@pytest.mark.parametrize("spec", ["cpu-2gb", "cpu-5000gb"])
def test_a_host_outside_the_range_is_one_clear_error(spec: str) -> None:
    with pytest.raises(SizingError, match="host memory"):
        card_facts(spec)


def test_the_answer_names_the_ram_and_a_gguf_engine() -> None:
    (reply,) = ask_turns("my laptop has 16gb ram, can it run mistral 7b")
    assert "16 GB of system memory" in reply.answer and "llama.cpp" in reply.answer
    assert reply.calculations and reply.calculations[0].engine == "llamacpp"
    (spanish,) = ask_turns("laptop con 16gb de ram, puedo correr llama 8b?")
    assert "memoria del sistema" in spanish.answer
