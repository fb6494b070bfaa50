""" "How much extra memory does the draft model take?": a result says what the serving extras the
request asked for add to its total (weights and cache), in the request's language, and the
offline answer puts that sentence in front of the table."""

from __future__ import annotations

import re

import pytest

from assistant.service import Assistant, build_assistant
from assistant.settings import Settings
from tools import SizingRequest, SizingResult, calculate_vram
from tools.calibration import load_cases
from tools.catalog import resolve
from tools.finetune import lora_params
from tools.kv_cache import kv_layout


def calc(**kwargs: object) -> SizingResult:
    return calculate_vram(SizingRequest(**kwargs))  # type: ignore[arg-type]


def figures(sentence: str, lang: str = "en") -> list[float]:
    """The GB figures of a sentence, in order (thousands separators dropped)."""
    found = re.findall(r"(\d[\d.,]*) GB", sentence)
    if lang == "es":
        return [float(f.replace(".", "").replace(",", ".")) for f in found]
    return [float(f.replace(",", "")) for f in found]


@pytest.mark.parametrize("users", [1, 12])
def test_a_draft_models_note_is_its_weights_plus_its_cache_of_the_total(users: int) -> None:
    base = calc(model="llama-3.1-70b", precision="fp8", gpu="h100-80gb:2", users=users)
    spec = calc(
        model="llama-3.1-70b", precision="fp8", gpu="h100-80gb:2", users=users, draft_model="llama-3.2-1b"
    )
    assert spec.extras_note is not None and "Llama 3.2 1B" in spec.extras_note
    weights, cache, extra, total = figures(spec.extras_note)
    assert extra == pytest.approx(weights + cache, abs=0.011)
    assert total == spec.total_gb
    # The cache is the draft's layers at the asked context for every sequence (two GPUs hold a copy each).
    per_token = kv_layout(resolve("llama-3.2-1b").arch, "bf16", 2).full_bytes_per_token * 2
    assert cache == pytest.approx(per_token * 8192 * users / 1e9, abs=0.02)
    assert f"{per_token:,} bytes per token" in spec.extras_note
    # What the draft adds is what the total grew by.
    assert spec.total_gb - base.total_gb == pytest.approx(extra, abs=0.03)


def test_lora_slots_add_weights_and_no_cache() -> None:
    note = calc(model="llama-3.1-8b", gpu="l40s", max_loras=8, max_lora_rank=32).extras_note
    assert note is not None and "8 LoRA slots of rank 32" in note and "KV cache" not in note
    weights, extra, _ = figures(note)
    slots = 8 * lora_params(resolve("llama-3.1-8b").arch, 32) * 2
    assert weights == extra == pytest.approx(slots / 1e9, abs=0.01)


def test_mtp_and_the_spanish_sentence() -> None:
    note = calc(model="deepseek-v3", precision="fp8", gpu="h200:8", mtp=True, lang="es").extras_note
    assert note is not None and note.startswith("**Lo que añaden los extras** (el módulo MTP)")
    weights, cache, extra, _ = figures(note, "es")
    assert 9 < weights < 16 and cache > 0 and extra == pytest.approx(weights + cache, abs=0.011)
    assert "9.216 bytes por token" in note  # one MLA latent layer, a copy on each of the 8 GPUs


def test_no_note_without_an_extra_asked_for() -> None:
    assert calc(model="llama-3.1-8b").extras_note is None
    # A vision tower is the model's own, counted in the arithmetic but not asked for.
    config = load_cases()["configs"]["mistral-small-3.2-24b"]
    vision = calc(model="mistral-small-3.2", config=config, gpu="h100-80gb")
    assert any("vision tower" in line for line in vision.arithmetic) and vision.extras_note is None


@pytest.fixture(scope="module")
def assistant(tmp_path_factory: pytest.TempPathFactory) -> Assistant:
    data = tmp_path_factory.mktemp("data")
    return build_assistant(Settings(data_dir=data, llm_base_url=None, llm_model=None, chroma_url=None))


@pytest.mark.parametrize(
    ("question", "lang", "expected"),
    [
        (
            "llama 3.1 70b with --draft llama-3.2-1b speculative decoding on 2x h100, how much extra memory",
            "en",
            "What the extras add** (the draft model Llama 3.2 1B)",
        ),
        (
            "¿cuánta memoria extra necesita llama 3.1 8b con 8 adaptadores lora de rango 32 en vllm?",
            "es",
            "Lo que añaden los extras** (8 huecos LoRA de rango 32)",
        ),
        ("How much VRAM for Llama 3.1 8B at 16 bits?", "en", None),
    ],
)
def test_the_offline_answer_says_what_the_extras_add_before_the_table(
    assistant: Assistant, question: str, lang: str, expected: str | None
) -> None:
    reply = assistant.answer(question, None)
    answer = reply.answer
    assert reply.language == lang
    before_table = answer.split("\n|", 1)[0]
    if expected is None:
        assert "extras add" not in answer
    else:
        assert expected in before_table
