"""The kind of question decides how the offline answer is written: fine-tuning from the
calculator's training mode, a card with no model from the reverse search, concept questions from
the FAQ, a yes or no first for "does it fit", the unit asked for. Phrasings beyond the QA set."""

from __future__ import annotations

import re

import pytest

from assistant.offline.responder import OfflineResponder
from assistant.schemas import ConversationState
from tools import SizingRequest, calculate_vram
from tools.finetune import FinetuneSpec


def answer(message: str, lang: str = "en") -> str:
    return OfflineResponder(None).respond(message, ConversationState(), lang).answer  # type: ignore[arg-type]


def lead(text: str) -> str:
    return text.split("\n\n", 1)[0]


def figure(value: float, lang: str = "en") -> str:
    text = f"{value:,.2f}"
    return text.translate(str.maketrans(",.", ".,")) if lang == "es" else text


@pytest.mark.parametrize(
    ("message", "lang", "model", "method", "gpu"),
    [
        ("how much vram to fully fine-tune llama 3.1 8b?", "en", "llama-3.1-8b", "full", None),
        ("cuanta memoria para hacer qlora a qwen2.5 32b", "es", "qwen2.5-32b", "qlora", None),
        ("can i lora mistral 7b on a 3090", "en", "mistral-7b", "full", "rtx-3090"),
    ],
)
def test_fine_tuning_uses_the_training_mode(
    message: str, lang: str, model: str, method: str, gpu: str | None
) -> None:
    text = answer(message, lang)
    expected = calculate_vram(
        SizingRequest(model=model, engine="transformers", finetune=FinetuneSpec(method=method), gpu=gpu)
    )
    assert f"{figure(expected.total_gb, lang)} GB" in text
    assert "16 bytes per parameter with Adam" not in text
    assert re.search(r"AdamW", text)  # the assumptions are stated
    assert re.search(r"no fp32 master|sin copia maestra", text)
    # No serving-quantization caveat: the only quality point is QLoRA's own.
    assert "What quantization costs" not in text and "Lo que cuesta la cuantización" not in text
    assert re.search(r"\b(?:fits|cabe en|does not fit|no cabe en)\b", lead(text))


@pytest.mark.parametrize(
    ("message", "lang", "gpu"),
    [
        ("which models can my rtx 4090 handle?", "en", "RTX 4090"),
        ("tengo dos a100 de 80, que modelos puedo correr", "es", "A100 80GB"),
        ("what can i run on an l40s", "en", "L40S"),
    ],
)
def test_a_card_with_no_model_gets_the_reverse_search(message: str, lang: str, gpu: str) -> None:
    text = answer(message, lang)
    assert "Which model do you want" not in text and "Qué modelo quiere" not in text
    assert gpu in lead(text)
    # What fits at 16, 8 and 4 bits, one row each, each naming a catalog model.
    rows = [line for line in text.splitlines() if re.match(r"\| (?:16|8|4)[ -]bit", line)]
    assert len(rows) == 3, text
    assert all(re.search(r"\d+(?:[.,]\d+)? GB", row) for row in rows)


@pytest.mark.parametrize(
    ("message", "lang", "first"),
    [
        ("what is gpu-memory-utilization for in vllm?", "en", r"share of each GPU's memory"),
        ("que hace --gpu-memory-utilization 0.95", "es", r"parte de la memoria de cada GPU"),
        ("how come the kv cache scales with the number of tokens?", "en", r"KV cache is the memory"),
        ("por que la cache kv aumenta con los usuarios", "es", r"caché KV es la memoria"),
        ("awq or gguf for my server?", "en", r"file formats for compressed weights"),
    ],
)
def test_concept_questions_get_a_direct_first_sentence(message: str, lang: str, first: str) -> None:
    text = answer(message, lang)
    assert re.search(first, lead(text)), lead(text)
    assert "| Card class |" not in text and "| Clase de tarjeta |" not in text


@pytest.mark.parametrize(
    ("message", "lang", "first"),
    [
        ("would qwen2.5 14b run on a 4090?", "en", r"^\*\*Yes, at .+; at 16-bit \(BF16\) it does not"),
        ("mistral 7b entra en una a10g?", "es", r"^\*\*Sí: .+ incluso a 16 bits"),
        ("can llama 3.1 405b fit on one l40s", "en", r"^\*\*No: "),
    ],
)
def test_will_it_fit_says_yes_or_no_first(message: str, lang: str, first: str) -> None:
    assert re.search(first, lead(answer(message, lang))), lead(answer(message, lang))


@pytest.mark.parametrize(
    ("message", "lang", "model", "precision"),
    [
        ("weights only, in GiB: qwen2.5 32b at int4", "en", "qwen2.5-32b", "int4"),
        ("cuantos GiB son los pesos de llama 3.1 8b en bf16", "es", "llama-3.1-8b", "bf16"),
    ],
)
def test_a_unit_asked_for_is_the_unit_answered(message: str, lang: str, model: str, precision: str) -> None:
    expected = calculate_vram(SizingRequest(model=model, precision=precision))
    first = lead(answer(message, lang))
    assert f"{figure(expected.weights_gb * 1e9 / 2**30, lang)} GiB" in first
    assert f"{figure(expected.weights_gb, lang)} GB" in first


@pytest.mark.parametrize(
    ("message", "lang", "extra"),
    [
        (
            "how many h100s do i need for llama 3.1 70b in fp8 with 8 lora adapters of rank 64?",
            "en",
            "8 LoRA slots at rank 64",
        ),
        ("longest context for llama 3.1 8b on one rtx 4090 with llama 3.2 1b as draft", "en", "draft model"),
    ],
)
def test_a_reverse_search_holds_the_lora_slots_and_the_draft(message: str, lang: str, extra: str) -> None:
    text = answer(message, lang)
    assert extra in text
    # The same search without them finds more room: their memory was in the search, not only the text.
    plain = answer(message.split(" with ")[0], lang)
    assert extra not in plain and lead(plain) != lead(text)


@pytest.mark.parametrize(
    ("message", "lang", "title"),
    [
        (
            "will 50 users get a responsive chat with llama 3.1 70b on 2 h100?",
            "en",
            "figures for 4-bit (INT4)",
        ),
        ("¿llama 3.1 70b para 50 usuarios en 2 h100?", "es", "cifras para 4 bits (INT4)"),
    ],
)
def test_side_by_side_alternatives_say_which_version_their_figures_are_for(
    message: str, lang: str, title: str
) -> None:
    text = answer(message, lang)
    heading = next(line for line in text.splitlines() if "honest" in line or "honesta" in line)
    assert title in heading
    # The figures listed are the 4-bit version's suggestions, not the arithmetic's 16-bit ones.
    int4 = calculate_vram(
        SizingRequest(model="llama-3.1-70b", precision="int4", users=50, gpu="h100-80gb:2", lang=lang)  # type: ignore[arg-type]
    )
    block = text.split(heading, 1)[1]
    assert any(suggestion in block for suggestion in int4.suggestions)
