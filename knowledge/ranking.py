"""Hybrid ranking of the candidates Chroma returns: dense similarity, a lexical score, translation pairs.

Pure functions over plain data so the benchmark and the tests can exercise them without Chroma.
Weights were chosen with `benchmarks/retrieval.py` on the golden questions (see the README).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

# Lexical evidence counts, but the multilingual embedding stays the main signal: BM25 alone cannot
# match a Spanish question to an English section. 0.05 measured best on the golden questions and on
# a held-out set (benchmarks/retrieval.py --variants); 0 and 0.1 both did worse.
LEXICAL_WEIGHT = 0.05
# Within a translation pair the question is scored against both wordings of the same section and the
# two scores are averaged: two views of one text are a steadier signal than either, and it lets a
# Spanish question find the English section (and back) at within-language accuracy.
POOL_TRANSLATIONS = True
# Added to sections of glossary articles (front matter `kind: glossary`) when the question asks what
# something is or means. Measured with `benchmarks/retrieval.py --variants`: "What is a KV cache?"
# otherwise goes to the article about quantizing the KV cache, whose every section says "KV cache".
DEFINITION_BOOST = 0.04
_DEFINITION_QUESTION = re.compile(
    r"^\W*(?:(?:hola|hi|hello|hey|buenas)\W+)?"  # an optional greeting, then the question itself
    r"(what\s+(is|are)\b|what'?s\b|what\s+does\b.{1,60}\bmean\b|define\b|meaning\s+of\b"
    r"|definition\s+of\b|qu[eé]\s+(es|son|significa|significan|quiere\s+decir)\b|q\s+es\b"
    r"|definici[oó]n\s+de\b)",
    re.IGNORECASE,
)
# Breaks the tie inside a pooled pair in favour of the wording closer to the question (its language).
OWN_SCORE_TIEBREAK = 0.001
# Okapi BM25 constants, the textbook defaults (Robertson & Zaragoza, 2009).
BM25_K1 = 1.2
BM25_B = 0.75

_STOPWORD_TEXT = """a al algo como con cual cuál cuando de del el ella en entre es esa ese eso esta este esto la las lo los
    me mi mis muy no o para pero por que qué se si sin sobre su sus te tu un una uno unos y ya yo le les
    hay ser son está están estar tiene tienen tengo puedo puede pueden hace hacer cuanto cuánto cuanta cuánta
    cuantos cuántos cuantas cuántas necesito necesita mas más
    an and are as at be by can could do does for from how i if in into is it its my of on or our so than
    that the their them then there these this to was we what when where which who why will with would
    you your need needs much many"""
_WORD = re.compile(r"\w+")
# Business-editable: one concept per line in English and Spanish, so lexical evidence reaches the
# other language's wording of a section too (see the file's header).
BILINGUAL_TERMS = Path(__file__).resolve().parent / "bilingual_terms.txt"


def _fold(text: str) -> str:
    """Lower case without accents, so "caché" and "cache" are one word."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_STOPWORDS = frozenset(_fold(word) for word in _STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Candidate:
    id: str
    text: str  # title, heading and body: what the lexical score reads
    lang: str
    pair_key: str
    similarity: float  # cosine similarity of the query and section embeddings
    definitions: bool = False  # a glossary section: short definitions of terms


@dataclass(frozen=True)
class Ranked:
    id: str
    score: float


@dataclass(frozen=True)
class RankingOptions:
    """How search ranks sections. The defaults are what ships; `benchmarks/retrieval.py --variants`
    scores other values against them."""

    lexical_weight: float = LEXICAL_WEIGHT
    pool_translations: bool = POOL_TRANSLATIONS
    bilingual_terms: bool = True
    definition_boost: float = DEFINITION_BOOST
    # Read by the store, not by `rank`: False scores a section by its full-text record only, ignoring
    # its title + heading record (knowledge.store.HEADING_SUFFIX).
    heading_records: bool = True


SHIPPED_RANKING = RankingOptions()


def is_definition_question(query: str) -> bool:
    """ "What is X?", "¿Qué significa X?" and the like: questions a glossary entry answers best."""
    return bool(_DEFINITION_QUESTION.search(query))


def terms(text: str, bilingual: bool = True) -> list[str]:
    """Normalised words without stopwords, each mapped to its bilingual concept ("tarjetas" -> "card")."""
    concepts = _concepts() if bilingual else {}
    return [concepts.get(word, word) for word in _words(text)]


def _words(text: str) -> list[str]:
    """Lower-cased, accent-free, lightly de-pluralised words without stopwords ("tarjetas" -> "tarjeta")."""
    words = []
    for word in _WORD.findall(_fold(text)):
        if word in _STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("es") and not word.endswith("ies"):
            word = word[:-2]
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


@cache
def _concepts(path: Path = BILINGUAL_TERMS) -> dict[str, str]:
    """Normalised word -> the normalised first word of its line in the bilingual terms file.

    Read on first use, not at import. A missing file means no mapping (plain BM25), never an error.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    concepts: dict[str, str] = {}
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        words = [normalised for word in line.split() for normalised in _words(word)]
        for word in words[1:]:
            concepts.setdefault(word, words[0])
    return concepts


@lru_cache(maxsize=4096)
def _term_counts(document: str, bilingual: bool) -> Counter[str]:
    """Term counts of a section; cached because the same sections come back query after query."""
    return Counter(terms(document, bilingual))


def bm25_scores(query: str, documents: Sequence[str], bilingual: bool = True) -> list[float]:
    """Okapi BM25 of the query against each document, with statistics taken over these documents."""
    query_terms = set(terms(query, bilingual))
    if not query_terms or not documents:
        return [0.0] * len(documents)
    doc_terms = [_term_counts(doc, bilingual) for doc in documents]
    lengths = [sum(counts.values()) for counts in doc_terms]
    average_length = (sum(lengths) / len(lengths)) or 1.0
    n = len(documents)
    idf = {}
    for term in query_terms:
        df = sum(1 for counts in doc_terms if term in counts)
        idf[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    scores = []
    for counts, length in zip(doc_terms, lengths, strict=True):
        score = 0.0
        for term in query_terms:
            tf = counts.get(term, 0)
            if tf:
                score += (
                    idf[term]
                    * tf
                    * (BM25_K1 + 1)
                    / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average_length))
                )
        scores.append(score)
    return scores


def rank(
    query: str,
    candidates: Sequence[Candidate],
    k: int,
    lang: str | None = None,
    lexical_weight: float = LEXICAL_WEIGHT,
    pool_translations: bool = POOL_TRANSLATIONS,
    bilingual_terms: bool = True,
    definition_boost: float = DEFINITION_BOOST,
) -> list[Ranked]:
    """Best `k` candidates. With `lang`, only that language; without, one section per translation pair."""
    if not candidates or k <= 0:
        return []
    lexical = bm25_scores(query, [c.text for c in candidates], bilingual_terms)
    top_lexical = max(lexical) or 1.0
    boost = definition_boost if is_definition_question(query) else 0.0
    own = [
        c.similarity + lexical_weight * (lex / top_lexical) + (boost if c.definitions else 0.0)
        for c, lex in zip(candidates, lexical, strict=True)
    ]
    pair_scores: dict[str, list[float]] = {}
    for candidate, score in zip(candidates, own, strict=True):
        pair_scores.setdefault(candidate.pair_key, []).append(score)
    scored = []
    for candidate, score in zip(candidates, own, strict=True):
        if pool_translations:
            members = pair_scores[candidate.pair_key]
            score = sum(members) / len(members) + OWN_SCORE_TIEBREAK * score
        scored.append((score, candidate))
    scored.sort(key=lambda item: item[0], reverse=True)
    ranked: list[Ranked] = []
    seen_pairs: set[str] = set()
    for score, candidate in scored:
        if lang is not None and candidate.lang != lang:
            continue
        if lang is None and candidate.pair_key in seen_pairs:
            continue
        seen_pairs.add(candidate.pair_key)
        ranked.append(Ranked(candidate.id, round(score, 4)))
        if len(ranked) == k:
            break
    return ranked
