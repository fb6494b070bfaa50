"""Hybrid ranking: translation pooling, language filter, one section per pair, lexical terms."""

from __future__ import annotations

from pathlib import Path

from knowledge.ranking import Candidate, _concepts, bm25_scores, is_definition_question, rank, terms


def candidate(chunk_id: str, lang: str, pair: str, similarity: float, text: str = "") -> Candidate:
    return Candidate(id=chunk_id, text=text or chunk_id, lang=lang, pair_key=pair, similarity=similarity)


def test_terms_fold_accents_drop_stopwords_and_plurals() -> None:
    assert terms("¿Cuánta memoria ocupan las tarjetas?", bilingual=False) == ["memoria", "ocupan", "tarjeta"]
    assert terms("The GPUs and the caché") == ["gpu", "cache"]


def test_bilingual_terms_map_both_languages_to_one_concept() -> None:
    assert terms("¿Cuánta memoria ocupan las tarjetas?") == ["memory", "ocupan", "card"]
    assert terms("memory cards") == ["memory", "card"]
    # So a Spanish question scores lexically against the English wording of a section.
    scores = bm25_scores("tarjetas lentas", ["a slow card", "a fast model", "nothing here"])
    assert scores[0] > scores[1] > scores[2] == 0.0
    assert bm25_scores("tarjetas lentas", ["a slow card"], bilingual=False) == [0.0]


def test_bilingual_terms_file_comments_accents_and_a_missing_file(tmp_path: Path) -> None:
    terms_file = tmp_path / "terms.txt"
    terms_file.write_text("# a comment line: ignored\nquantization cuantización Quantized\n\n", "utf-8")
    assert _concepts(terms_file) == {"cuantizacion": "quantization", "quantized": "quantization"}
    assert _concepts(tmp_path / "absent.txt") == {}


def test_bm25_prefers_the_document_with_the_rare_query_term() -> None:
    scores = bm25_scores("sliding window", ["sliding window attention", "attention heads", "window cleaning"])
    assert scores[0] > scores[2] > scores[1] == 0.0


def test_a_spanish_question_reaches_the_english_twin_of_its_best_spanish_match() -> None:
    candidates = [
        candidate("es/kv", "es", "kv", 0.90),
        candidate("es/formula", "es", "formula", 0.70),
        candidate("en/kv", "en", "kv", 0.74),  # the question is Spanish: English scores run lower
        candidate("en/formula", "en", "formula", 0.76),
    ]
    assert [r.id for r in rank("caché", candidates, k=2, lang="en", lexical_weight=0)] == [
        "en/kv",
        "en/formula",
    ]
    unpooled = rank("caché", candidates, k=2, lang="en", lexical_weight=0, pool_translations=False)
    assert [r.id for r in unpooled] == ["en/formula", "en/kv"]


def test_without_a_language_each_section_appears_once_in_the_closer_wording() -> None:
    candidates = [
        candidate("es/kv", "es", "kv", 0.90),
        candidate("en/kv", "en", "kv", 0.80),
        candidate("en/other", "en", "other", 0.60),
    ]
    ranked = rank("caché", candidates, k=3, lexical_weight=0)
    assert [r.id for r in ranked] == ["es/kv", "en/other"]
    assert ranked[0].score > ranked[1].score


def test_lexical_score_breaks_near_ties_in_favour_of_exact_terms() -> None:
    candidates = [
        candidate("a", "en", "a", 0.800, "vLLM gpu_memory_utilization reserves memory"),
        candidate("b", "en", "b", 0.801, "memory of a card"),
    ]
    assert rank("gpu_memory_utilization", candidates, k=1)[0].id == "a"
    assert rank("gpu_memory_utilization", candidates, k=1, lexical_weight=0)[0].id == "b"


def test_empty_inputs_give_empty_results() -> None:
    assert rank("x", [], k=3) == []
    assert rank("x", [candidate("a", "en", "a", 0.5)], k=0) == []


def test_definition_questions_are_recognised_in_both_languages() -> None:
    for question in (
        "What is a KV cache?",
        "whats vram",
        "Hi! What are tensor parallel GPUs?",
        "what does GQA mean?",
        "¿Qué es la caché KV?",
        "q es la cache kv y por que ocupa tanto",
        "hola, que significa MoE",
        "¿Qué quiere decir el 70B de Llama 70B?",
        "Define memory bandwidth",
    ):
        assert is_definition_question(question), question
    for question in (
        "Which GPU for a 70B?",
        "what does a 70B need to run?",
        "cuánta VRAM necesito",
        "holanda",
    ):
        assert not is_definition_question(question), question


def test_glossary_sections_win_definition_questions_only() -> None:
    glossary = Candidate(
        id="glossary", text="KV cache", lang="en", pair_key="g", similarity=0.80, definitions=True
    )
    article = Candidate(id="article", text="KV cache", lang="en", pair_key="a", similarity=0.82)
    assert [r.id for r in rank("What is a KV cache?", [article, glossary], k=2, lexical_weight=0)] == [
        "glossary",
        "article",
    ]
    assert [
        r.id for r in rank("KV cache size for 32k context", [article, glossary], k=2, lexical_weight=0)
    ] == [
        "article",
        "glossary",
    ]
    assert rank("What is a KV cache?", [article, glossary], k=1, lexical_weight=0, definition_boost=0)[
        0
    ].id == ("article")
