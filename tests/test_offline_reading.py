"""How the offline assistant reads hosts, engine flags, workloads and values it cannot use.

Phrasings here are beyond the QA report's examples: each group covers a kind of message.
"""

from __future__ import annotations

import pytest

from assistant.offline.sizing import merge_slots, plan_sizing
from assistant.offline.understanding import understand
from assistant.schemas import ConversationState


def _plan(*messages: str):
    state = ConversationState()
    reading = None
    for message in messages:
        reading = understand(message)
        state = merge_slots(state, reading)
    return state, plan_sizing(state, reading.language, reading)


@pytest.mark.parametrize(
    ("message", "card"),
    [
        ("would a mac mini m4 with 16gb handle mistral 7b", "apple-m4-16gb"),
        ("mi mac studio m2 ultra aguanta qwen 2.5 72b?", "apple-m2-ultra-192gb"),
        ("macbook pro m4 max 64gb for llama 3.1 8b", "apple-m4-max-64gb"),
        ("can my m3 max run gemma 3 27b", "apple-m3-max-128gb"),
        ("servidor con 128 gb de ram y sin gpu para llama 3.1 8b", "cpu-ddr5-128gb"),
        ("no gpu, just 32gb ddr4 ram, can it run phi-4?", "cpu-ddr4-32gb"),
        ("un pc sin tarjeta grafica con 64 gb, qwen 2.5 7b", "cpu-ddr5-64gb"),
        ("cpu only box for mistral 7b", "cpu-ddr5-64gb"),
        # The memory said picks that configuration of the chip, wherever it is written.
        ("¿me cabe llama 3.1 8b en un mac m2 max de 32 gb?", "apple-m2-max-32gb"),
        ("qwen2.5 32b on my macbook pro m3 max 36gb?", "apple-m3-max-36gb"),
        ("will llama 3.3 70b q4 run on an M2 Ultra with 64GB?", "apple-m2-ultra-64gb"),
        ("macbook air m4 24gb, can it run mistral 7b?", "apple-m4-24gb"),
        ("m1 pro 16gb llama 3.1 8b q4?", "apple-m1-pro-16gb"),
        ("tengo un macbook m4 pro de 48 gb, ¿qué tal gemma 3 27b?", "apple-m4-pro-48gb"),
    ],
)
def test_apple_and_cpu_hosts_are_catalog_entries_sized_with_llamacpp_q4(message: str, card: str) -> None:
    state, plan = _plan(message)
    assert state.gpu == card and plan is not None
    assert plan.engine == "llamacpp"
    assert plan.precisions == ("q4_k_m",) and not plan.side_by_side


@pytest.mark.parametrize(
    ("message", "precision"),
    [("mac mini m4 pro llama 3.1 8b at 8 bits", "q8_0"), ("m4 max 128gb llama 70b a 4 bits", "q4_k_m")],
)
def test_a_bit_width_on_a_llamacpp_host_is_its_gguf_file(message: str, precision: str) -> None:
    _, plan = _plan(message)
    assert plan is not None and plan.precisions == (precision,)


@pytest.mark.parametrize(
    ("message", "loras", "rank"),
    [
        ("vllm serve llama 3.1 8b --enable-lora --max-loras 4 --max-lora-rank 64", 4, 64),
        ("qwen 2.5 7b with --enable-lora --max-loras=16", 16, None),
        ("serving 6 lora adapters on llama 3.1 8b", 6, None),
        ("how many h100s for llama 3.1 70b with 8 lora adapters of rank 64?", 8, 64),
        ("serve 4 rank-32 lora adapters on qwen 2.5 7b", 4, 32),
        ("quiero servir 6 adaptadores LoRA de rango 128 con llama 3.1 8b", 6, 128),
    ],
)
def test_lora_serving_flags_are_adapter_slots_not_finetuning(
    message: str, loras: int, rank: int | None
) -> None:
    reading = understand(message)
    assert reading.max_loras == loras and reading.max_lora_rank == rank
    assert reading.tasks != "finetuning" and reading.question != "finetuning"
    _, plan = _plan(message)
    assert plan is not None and all(request.max_loras == loras for request in plan.requests())


@pytest.mark.parametrize(
    ("message", "model", "draft"),
    [
        ("llama 3.1 70b --draft-model llama-3.2-1b on 2 h100", "llama-3.1-70b", "llama-3.2-1b"),
        ("speculative decoding with llama 3.2 1b for llama 3.3 70b", "llama-3.3-70b", "llama-3.2-1b"),
        (
            "llama 3.1 70b con decodificacion especulativa usando llama 3.2 3b",
            "llama-3.1-70b",
            "llama-3.2-3b",
        ),
    ],
)
def test_a_draft_model_is_speculative_decoding_not_a_comparison(message: str, model: str, draft: str) -> None:
    reading = understand(message)
    assert reading.model == model and reading.draft_model == draft
    assert reading.other_models == () and not reading.comparison
    _, plan = _plan(message)
    assert plan is not None and plan.requests()[0].draft_model == draft


@pytest.mark.parametrize(
    "message", ["Qwen/Qwen2.5-7B-Instruct on an L40S", "does meta-llama/Llama-3.1-8B fit a 4090"]
)
def test_a_hub_repo_id_of_a_bf16_checkpoint_is_sized_at_bf16(message: str) -> None:
    _, plan = _plan(message)
    assert plan is not None and plan.precisions == ("bf16",) and not plan.side_by_side
    assert "release" in plan.assumed


@pytest.mark.parametrize(
    ("message", "rate", "input_len", "output_len"),
    [
        ("llama 3.1 8b, 5 requests per second, 2000 tokens in and 300 out", 5.0, 2000, 300),
        (
            "qwen 2.5 7b a 20 peticiones por segundo con 1500 tokens de entrada y 250 de salida",
            20.0,
            1500,
            250,
        ),
        ("mistral 7b: 2 rps, prompts of 4k tokens, answers of 500 tokens", 2.0, 4000, 500),
    ],
)
def test_rate_and_lengths_are_a_workload_not_a_context(
    message: str, rate: float, input_len: int, output_len: int
) -> None:
    reading = understand(message)
    assert (reading.rate, reading.input_len, reading.output_len) == (rate, input_len, output_len)
    assert reading.context is None and reading.users is None
    _, plan = _plan(message)
    request = plan.requests()[0]
    assert (request.input_len, request.output_len, request.rate) == (input_len, output_len, rate)


@pytest.mark.parametrize(
    ("message", "ttft"),
    [
        ("time to first token below 0.5 s, llama 8b", 500.0),
        ("primer token en menos de 200 ms con qwen 2.5 7b", 200.0),
    ],
)
def test_ttft_targets(message: str, ttft: float) -> None:
    assert understand(message).ttft_ms == ttft


@pytest.mark.parametrize(
    ("message", "slot", "key"),
    [
        ("llama 70b con 0 usuarios", "users", "users_out_of_range"),
        ("70b for -5 users", "users", "users_out_of_range"),
        ("y con 50000000 usuarios", "users", "users_out_of_range"),
        ("llama 8b with a context of 20 million tokens", "context", "context_out_of_range"),
    ],
)
def test_values_out_of_range_are_said_and_not_kept(message: str, slot: str, key: str) -> None:
    reading = understand(message)
    assert getattr(reading, slot) is None
    assert key in [note.key for note in reading.notes]
    note = next(note for note in reading.notes if note.key == key)
    assert note.text("en") and note.text("es") and note.text("en") != note.text("es")


def test_a_fractional_gpu_count_is_said() -> None:
    reading = understand("llama 70b en 2.5 h100")
    assert "gpu_count_fraction" in [note.key for note in reading.notes]
    assert "2.5" in next(note for note in reading.notes if note.key == "gpu_count_fraction").text("es")


def test_a_context_beyond_the_model_limit_is_said() -> None:
    _, plan = _plan("llama 3.1 8b with a 2 million token context")
    assert plan is not None and plan.context == 2_000_000
    assert "context_over_model" in [note.key for note in plan.notes]


@pytest.mark.parametrize("message", ["TheBloke/Llama-2-70B-GPTQ", "llama 2 70b en una h100"])
def test_a_model_matched_to_a_near_catalog_one_is_said(message: str) -> None:
    reading = understand(message)
    note = next(note for note in reading.notes if note.key == "model_substituted")
    assert reading.model_label and reading.model_label in note.text("en")


def test_gptq_in_a_repo_id_is_the_precision() -> None:
    assert understand("TheBloke/Llama-2-70B-GPTQ").precisions == ("gptq",)


def test_one_bad_number_does_not_lock_the_conversation() -> None:
    state = ConversationState()
    for message in ("70b en int4", "y con 1000000000 usuarios", "en una h100?"):
        state = merge_slots(state, understand(message))
    assert state.users is None and state.gpu == "h100-80gb"


@pytest.mark.parametrize(
    ("message", "model"),
    [("lama 3 70b", "llama-3.1-70b"), ("quen 2.5 7b en una 4090", "qwen2.5-7b"), ("mistal 7b", "mistral-7b")],
)
def test_typos_of_model_families(message: str, model: str) -> None:
    assert understand(message).model == model


def test_a_refused_value_still_gets_a_sized_answer_on_the_earlier_facts() -> None:
    from assistant.offline.responder import OfflineResponder

    responder = OfflineResponder(None)
    state = responder.respond("llama 3.1 8b en int4", ConversationState(), "es").state
    reply = responder.respond("y con 0 usuarios", state, "es")
    assert reply.calculations and reply.calculations[0].users == 1
    assert reply.state.users is None


@pytest.mark.parametrize(
    "message", ["macbook air m4 16gb qwen 2.5 7b at 8 bits", "servidor sin gpu 64 gb ddr5, llama 3.1 8b int8"]
)
def test_never_an_int8_request_on_a_llamacpp_host(message: str) -> None:
    _, plan = _plan(message)
    assert plan is not None and plan.engine == "llamacpp"
    assert all(precision in ("q8_0", "q4_k_m") for precision in plan.precisions)


@pytest.mark.parametrize("message", ["q modelo me entra en una 4090", "k modelo puedo usar con 24gb"])
def test_the_texting_abbreviation_of_que_still_asks_for_the_largest_model(message: str) -> None:
    assert understand(message).question == "largest_model"


@pytest.mark.parametrize(
    ("message", "lang", "words"),
    [
        ("is an m2 max 48gb enough for qwen2.5 14b?", "en", ("M2 Max with 48 GB", "a 48 GB GPU")),
        ("mi rtx 4090 de 48gb aguanta llama 3.1 70b q4?", "es", ("RTX 4090 con 48 GB", "una GPU de 48 GB")),
    ],
)
def test_a_memory_the_card_does_not_come_in_is_said(message: str, lang: str, words: tuple[str, str]) -> None:
    reading = understand(message)
    said = [n for n in reading.notes if n.key == "card_memory_unknown"]
    assert len(said) == 1 and all(w in said[0].text(lang) for w in words), said


@pytest.mark.parametrize(
    "message", ["rtx 4090 24gb for llama 3.1 8b", "a100 de 40gb para qwen2.5 7b", "h200 141gb llama 70b"]
)
def test_the_memory_a_card_comes_in_needs_no_note(message: str) -> None:
    assert "card_memory_unknown" not in [n.key for n in understand(message).notes]


@pytest.mark.parametrize(
    ("message", "gpu"),
    [("can i run llama 3 8b on my laptop with a 3060 6gb", "6gb"), ("rtx 3060 8gb for mistral 7b", "8gb")],
)
def test_a_memory_the_card_does_not_come_in_is_sized_when_no_class_has_it(message: str, gpu: str) -> None:
    # The memory said decides what fits; a card class of that memory keeps the catalog card (above).
    reading = understand(message)
    assert reading.gpu == gpu
    assert [n.key for n in reading.notes] == ["card_memory_generic"]


@pytest.mark.parametrize(
    ("message", "pages"),
    [
        ("we want to summarize our contracts (some are 50 pages long) with llama 3.3 70b", 50),
        ("qwen2.5 14b para resumir documentos de 30 páginas", 30),
        ("a 100-page pdf with llama 3.1 8b", 100),
        ("contracts of up to 80 pages on an h100 with qwen2.5 32b", 80),
    ],
)
def test_a_document_in_pages_is_the_context_it_needs(message: str, pages: int) -> None:
    from assistant.offline.asked import rules

    per_page = rules()["tokens_per_page"]
    reading = understand(message)
    assert reading.context is not None and reading.context % 1024 == 0
    assert pages * per_page < reading.context <= pages * per_page + 2048  # instructions and answer
    assert [n.key for n in reading.notes] == ["context_from_pages"]


@pytest.mark.parametrize(
    "message",
    [
        "we process 500 pages per hour with qwen2.5 7b",
        "20,000 pages a night with qwen2.5 7b",
        "how many pages an hour on an l4 with llama 3.1 8b",
        "llama 3.1 8b with 16k context for contracts of 50 pages",  # the context said wins, no note
    ],
)
def test_pages_as_a_rate_or_beside_a_context_said_are_no_page_context(message: str) -> None:
    reading = understand(message)
    assert reading.context in (None, 16384)
    assert "context_from_pages" not in [n.key for n in reading.notes]


def test_a_context_said_shorter_than_the_document_says_so() -> None:
    short = understand("llama 3.1 8b with 16k context for contracts of 50 pages")
    assert short.context == 16384 and [n.key for n in short.notes] == ["context_short_of_pages"]
    roomy = understand("llama 3.1 8b with 64k context for contracts of 50 pages")
    assert roomy.context == 65536 and not roomy.notes
