"""Request lengths and speed targets as people write them, and what the answers do with them.

"each contract is about 6000 tokens, summaries around 400" is a prompt and an answer length, not
a context; a request longer than the context is sized at the context it needs; "how many H100s"
with a load says how fast that count serves it and what would keep up; "30 tokens per second
each" is a target. The phrasings are kinds of message, not the examples the reader was built on.
"""

from __future__ import annotations

import re

import pytest

from assistant.offline.understanding import understand
from tests.conversation_scoring import ask_turns
from tools import SizingRequest
from tools.performance import workload_from_request
from tools.reverse import fewest_gpus


@pytest.mark.parametrize(
    ("message", "prompt", "answer"),
    [
        (
            "we process tickets of roughly 800 tokens and the model writes a 150 token reply, llama 8b",
            800,
            150,
        ),
        (
            "gpt-oss 20b on an h100, each request ~4k tokens of context in and ~600 tokens generated",
            4000,
            600,
        ),
        ("cada petición lleva unos 1500 tokens y genera unos 300, qwen3 8b en una 4090", 1500, 300),
        ("extracting fields from invoices (2500 tokens each, output 100 tokens) with qwen2.5 14b", 2500, 100),
        ("resumir artículos de 4000 tokens en 250 tokens con llama 3.1 8b en una l40s", 4000, 250),
        ("RAG chat, retrieved context 6k tokens per question, answers ~300 tokens, llama 70b", 6000, 300),
        ("cada doc tiene 3000 tokens y el resumen 300, qwen2.5 32b en una l40s", 3000, 300),
        ("llama 70b fp8 on 2 h100, 8k-token documents, 1k-token summaries", 8000, 1000),
        ("prompts de 2000 tokens y respuestas de 400 con llama 8b en una l4", 2000, 400),
        ("mistral 7b, prompts average 1200 tokens and responses 250 tokens, 20 users", 1200, 250),
    ],
)
def test_a_length_said_through_what_a_request_carries_is_a_length(
    message: str, prompt: int, answer: int
) -> None:
    reading = understand(message)
    assert (reading.input_len, reading.output_len) == (prompt, answer)
    assert reading.context is None


@pytest.mark.parametrize(
    "message",
    [
        "llama 70b with 32k tokens of context for 20 users",
        "I need 50 tokens per second per user with llama 8b on an l40s",
        "documents per hour with qwen 32b on l40s",
        "the model generates 40 tokens/s on my 3090, is that normal",
        "128k context window for document QA with qwen 7b",
        "respuestas a 100 tokens por segundo con llama 8b",
        # An answer's number without "tokens" is a length only after a prompt's length.
        "summaries for 20 users with llama 8b",
    ],
)
def test_a_context_a_speed_or_a_count_is_no_request_length(message: str) -> None:
    reading = understand(message)
    assert (reading.input_len, reading.output_len) == (None, None)


@pytest.mark.parametrize(
    ("message", "tpot_ms"),
    [
        ("serve llama 3.1 70b fp8 to 100 users at 30 tokens per second each", 1000 / 30),
        ("each user should get 20 tok/s with mistral 7b", 50.0),
        ("cada usuario necesita 25 tokens por segundo con llama 8b", 40.0),
        ("minimum 40 tokens/s for each user, qwen 7b", 25.0),
        ("quiero al menos 20 tokens por segundo por usuario", 50.0),
    ],
)
def test_a_speed_each_user_must_get_is_a_target(message: str, tpot_ms: float) -> None:
    assert understand(message).tpot_ms == pytest.approx(tpot_ms)


@pytest.mark.parametrize(
    "message",
    ["I get 40 tokens/s on my 3090, is that normal?", "how many tokens per second will I get with 50 users"],
)
def test_a_speed_reported_or_asked_is_no_target(message: str) -> None:
    assert understand(message).tpot_ms is None


def test_a_request_longer_than_the_assumed_context_is_sized_at_its_length() -> None:
    (reply,) = ask_turns("llama 3.1 8b on an h100, 100k tokens in and 500 out")
    assert reply.calculations and all(result.context == 100_500 for result in reply.calculations)
    assert "100,500-token context" in reply.answer
    assert "couldn't calculate" not in reply.answer


def test_a_request_longer_than_the_context_said_is_sized_and_the_conflict_said() -> None:
    (reply,) = ask_turns("llama 3.1 8b en una h100, 10k tokens de entrada y 500 de salida, contexto de 8k")
    assert reply.calculations and all(result.context == 10_500 for result in reply.calculations)
    assert "8.192" in reply.answer and "más cortos" in reply.answer


def test_side_by_side_the_speed_is_the_recommended_precisions() -> None:
    (reply,) = ask_turns(
        "cuántos documentos por hora con qwen2.5 32b en una l40s? cada doc tiene 3000 tokens y el resumen 300"
    )
    lead = reply.answer.split("\n\n")[0]
    # BF16 does not fit one L40S; INT8 does and is recommended: the speed is INT8's, on the L40S.
    assert lead.startswith("**L40S en 8 bits (INT8)")
    assert "3.000 tokens de entrada + 300 de salida" in lead
    assert "Recomendado: 8 bits (INT8) en L40S" in reply.answer


def test_how_many_cards_for_a_load_gives_the_speed_of_that_count() -> None:
    (reply,) = ask_turns(
        "we expect 10 requests per second, 1000 tokens in and 200 out, llama 3.1 8b, how many h100s"
    )
    lead = reply.answer.split("\n\n")[0]
    assert "one H100 80GB (SXM) holds it" in lead
    assert re.search(r"tokens/s per user \(\d+–\d+\), first token in [\d,]+ ms", lead)
    assert "1,000 prompt + 200 answer tokens" in lead


def test_how_many_cards_for_a_load_one_card_cannot_absorb_says_what_would() -> None:
    (reply,) = ask_turns(
        "we expect 100 requests per second, 1000 tokens in and 200 out, llama 3.1 8b, how many h100s"
    )
    lead = reply.answer.split("\n\n")[0]
    assert "would queue" in lead
    assert re.search(r"\d+ independent servers of H100 80GB \(SXM\), sharing the load, would keep up", lead)


def test_how_many_cards_with_a_latency_target_is_a_count_question() -> None:
    (reply,) = ask_turns(
        "how many gpus do I need for qwen2.5 72b with 50 concurrent users, first token under 500 ms"
    )
    lead = reply.answer.split("\n\n")[0]
    assert "the fewest GPUs that hold it" in lead
    assert "first token within 500 ms" in lead


def test_a_paged_cache_holds_more_short_requests_than_context_long_ones() -> None:
    """With the lengths given, vLLM's blocks hold each request's 1,200 tokens, not 8,192: the same
    H100 holds about 8192 / 1200 times as many, so 100 requests/s needs fewer servers."""
    given = SizingRequest(model="llama-3.1-8b", precision="bf16", rate=100, input_len=1000, output_len=200)
    found = fewest_gpus(given, "h100-80gb")
    assert found.result is not None
    option = found.result.options[0]
    estimate = option.performance
    assert estimate is not None and estimate.saturated
    assert (
        option.max_concurrent_sequences * 6
        <= estimate.concurrency.best
        <= option.max_concurrent_sequences * 7
    )
    assert workload_from_request(given).lengths_given
    assert not workload_from_request(SizingRequest(model="llama-3.1-8b", rate=100)).lengths_given
    # The load's suggestions are also kept apart from the memory ones.
    assert found.result.performance_suggestions
    assert set(found.result.performance_suggestions) <= set(found.result.suggestions)


def test_llama_cpp_slots_keep_the_whole_context() -> None:
    given = SizingRequest(
        model="llama-3.1-8b",
        precision="q4_k_m",
        engine="llamacpp",
        users_max=True,
        input_len=1000,
        output_len=200,
    )
    found = fewest_gpus(given, "rtx-4090")
    assert found.result is not None
    option = found.result.options[0]
    assert option.performance is not None
    assert option.performance.concurrency.best == option.max_concurrent_sequences


@pytest.mark.parametrize(
    ("message", "job", "prompt", "answer"),
    [
        (
            "necesitamos procesar 10.000 correos cada noche con qwen2.5 7b, unos 800 tokens cada uno y "
            "respuestas de 150. cuantas horas tarda en una l4?",
            10_000,
            800,
            150,
        ),
        (
            "we summarize 50k documents overnight, 3000 tokens each, 300-token summaries, llama 3.1 8b",
            50_000,
            3000,
            300,
        ),
        (
            "how long will it take to process 1 million tickets of 500 tokens with 100-token answers",
            1_000_000,
            500,
            100,
        ),
        ("2000 documents overnight with llama 8b on a 4090", 2000, None, None),
        ("un millón de facturas por lotes con llama 8b", 1_000_000, None, None),
        ("50 mil documentos cada noche, 1000 tokens cada uno", 50_000, 1000, None),
    ],
)
def test_a_batch_job_reads_its_size_and_its_requests_lengths(
    message: str, job: int, prompt: int | None, answer: int | None
) -> None:
    reading = understand(message)
    assert reading.service == "batch_offline"
    assert (reading.job_count, reading.input_len, reading.output_len) == (job, prompt, answer)


def test_a_count_of_documents_outside_a_batch_question_is_no_job() -> None:
    reading = understand("a chatbot over 2000 documents with llama 8b for 20 users")
    assert reading.job_count is None and reading.users == 20


def test_a_batch_job_says_how_long_it_takes_with_the_band() -> None:
    (reply,) = ask_turns(
        "we summarize 50k documents overnight, 3000 tokens each, 300-token summaries, llama 3.1 8b on an h100"
    )
    lead = reply.answer.split("\n\n")[0]
    found = re.search(
        r"documents per hour \(([\d,]+)–([\d,]+)\).*50,000 of them take about ([\d.]+) (hours|minutes)", lead
    )
    assert found, lead
    low, high = (int(value.replace(",", "")) for value in found.group(1, 2))
    hours = float(found.group(3)) / (60 if found.group(4) == "minutes" else 1)
    # The job's time is its size over the documents per hour: within the band's ends.
    assert 50_000 / high <= hours <= 50_000 / low
    (spanish,) = ask_turns(
        "necesitamos procesar 10.000 correos cada noche con qwen2.5 7b, unos 800 tokens cada uno y respuestas "
        "de 150. cuantas horas tarda en una l4?"
    )
    assert re.search(r"10\.000 llevan [\d,]+ (?:minutos|horas) aproximadamente", spanish.answer)
    assert "800 tokens de entrada + 150 de salida" in spanish.answer
