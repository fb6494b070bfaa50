"""The deterministic check every LLM answer passes before a visitor sees it.

`check(draft, calculations, lang, quoted=..., message=..., earlier=...)` returns a
`GuardrailReport` whose `answer` is the Markdown to show. A sentence (a list item or table
row as a whole) is removed when it

1. quotes the system prompt;
2. repeats a line of the calculator block appended to an earlier answer (`earlier`): those
   figures belong to another question;
3. carries a figure with a unit -- GB, GiB, MB, MiB, TB, GB/s, tokens, users, tok/s, ms --
   that no tool produced within the rounding the writer shows (`assistant.guardrail_figures`:
   the calculations, the card catalogue in a sentence about a card, the article sections the
   model read, the visitor's own message);
4. makes a verdict the calculator contradicts: fits / does not fit, serves / cannot serve N
   users, needs N GPUs (`assistant.guardrail_claims`, which sizes the named card again);
5. states a fact the articles contradict ("a GB is 1024 MB", the wrong bits of a precision,
   the misconceptions in `data/contradicted_claims.yaml`).

Chat-template markup and raw tool output a model echoes (`<tool_response>`, `<|im_end|>`,
`{"model": ...}`) are stripped, a sentence
the draft already said is not said again (small models loop), and a last sentence cut off by
the token budget goes. A paragraph with no sizing vocabulary at all is off topic and removed whole; when nothing on
topic is left, `off_topic` is set and the service shows its steering answer instead. When the
answer is not in the visitor's language, `wrong_language` is set and the service shows the
offline answer with a notice.

Each calculation's key numbers -- weights, total, the verdict of the recommended option --
must be in what is left; otherwise a "Calculator check" block with them and the arithmetic
lines is appended, in the answer's language. Below 16 bits the calculator's caveat must be
there too, or it is appended; so must, in an answer that gives a speed (tok/s or ms), the
warning that published runs of the model on the card were much slower or faster than the
estimate (`tools.performance.published_text`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from assistant.guardrail_claims import contradicted_fact, unit_relation, wrong_verdict
from assistant.guardrail_figures import (
    AllowedFigures,
    Figure,
    card_patterns,
    figures,
    matches,
    numeric_fields,
)
from assistant.llm_texts import every_language, llm_text
from assistant.offline.understanding import detect_language, fold, lexicon
from assistant.prompts import SYSTEM_PROMPT
from tools import PRECISIONS, PerformanceEstimate, SizingResult
from tools.i18n import as_language, integer, number
from tools.performance import published_text

# A sentence sharing this many consecutive words with the system prompt is a leak.
LEAK_WORDS = 8
# A paragraph this long with no sizing word, unit, card or figure is off topic ("Sure!" is not).
OFF_TOPIC_WORDS = 12
# Fewer words than this say too little to tell the language.
LANGUAGE_WORDS = 6
# A line shorter than this is too generic to call a repeat of an earlier block.
STALE_MIN_CHARS = 20
# A last sentence this long with no closing punctuation was cut off, not a sign-off ("Cheers").
UNFINISHED_WORDS = 4
# Role and tool tags of the common chat templates (ChatML, Hermes tool calls, Llama 3).
_MARKUP = re.compile(r"</?(?:tool_response|tool_call|tools)>?|<\|[a-z_]+\|>", re.IGNORECASE)
# A line of raw tool output the model echoed ({"model": ..., "total_gb": ...}): not prose for a visitor.
_TOOL_ECHO = re.compile(r'^\s*\[?\{\s*"\w+"\s*:')

# Words of the trade the understanding's lexicon need not know (it reads questions, not answers).
_SIZING_TERMS = re.compile(
    r"\b(bytes?|parameters?|parametros?|quantiz\w*|cuantiz\w*|gib|mib|throughput|latency|latencia|"
    r"headroom|margen|concurren\w*|batch\w*|" + "|".join(re.escape(p) for p in PRECISIONS) + r")\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s])")
_LIST_OR_TABLE = re.compile(r"^\s*(?:[-*+|>]|\d+[.)])\s*")


@dataclass
class GuardrailReport:
    """What `check` did to a draft: the answer to show and why it differs from the draft."""

    answer: str
    removed: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # one per removed entry: prompt, stale, figure...
    appended_figures: bool = False
    appended_caveat: bool = False
    appended_published: bool = False  # the published runs' warning next to a speed the draft gave
    off_topic: bool = False
    wrong_language: bool = False


class DraftContext(TypedDict, total=False):
    """What besides the calculations a draft may rightly repeat or must not repeat (see `check`)."""

    quoted: Iterable[str]
    message: str
    earlier: Sequence[str]


def enforce(
    draft_text: str, calculations: Sequence[SizingResult], lang: str, **context: Unpack[DraftContext]
) -> str:
    """The answer to show: the draft with unverified figures and claims removed and the key numbers ensured."""
    return check(draft_text, calculations, lang, **context).answer


def check(
    draft_text: str,
    calculations: Sequence[SizingResult],
    lang: str,
    *,
    quoted: Iterable[str] = (),
    message: str = "",
    earlier: Sequence[str] = (),
) -> GuardrailReport:
    """`enforce`, also saying what was removed and appended, and whether the draft is usable at all."""
    allowed = AllowedFigures.of(calculations, quoted, message)
    stale = _stale_lines(earlier, calculations)
    report = GuardrailReport(answer="")

    def drop(text: str, reason: str) -> None:
        report.removed.append(text.strip())
        report.reasons.append(reason)

    def keep(sentence: str) -> bool:
        reason = _reason_to_remove(sentence, calculations, allowed, stale)
        if reason is not None:
            drop(sentence, reason)
        return reason is None

    said: set[str] = set()

    def keep_once(sentence: str) -> bool:
        normal = _normal(sentence)
        if len(normal) >= STALE_MIN_CHARS and normal in said:
            drop(sentence, "repeat")
            return False
        said.add(normal)
        return keep(sentence)

    draft_text = _without_markup(draft_text, drop)
    draft_text = _without_unfinished_end(draft_text, drop)
    kept_paragraphs: list[str] = []
    for paragraph in re.split(r"\n\s*\n", draft_text.strip()):
        if _off_topic(paragraph):
            drop(paragraph, "off_topic")
            continue
        kept_lines: list[str] = []
        for line in paragraph.splitlines():
            if _LIST_OR_TABLE.match(line) or line.lstrip().startswith(("#", "```")):
                # A list item, table row or heading stands or falls as a whole.
                if keep_once(line):
                    kept_lines.append(line)
                continue
            kept = [sentence for sentence in _SENTENCE_END.split(line) if keep_once(sentence)]
            if kept:
                kept_lines.append(" ".join(kept))
        kept_paragraph = "\n".join(kept_lines)
        if kept_paragraph and _off_topic(kept_paragraph):
            # What is left once the sentences about sizing went wrong and were removed.
            drop(kept_paragraph, "off_topic")
        elif kept_paragraph:
            kept_paragraphs.append(kept_paragraph)
    answer = _tidy("\n\n".join(kept_paragraphs))
    on_topic = any(_about_sizing(paragraph) for paragraph in kept_paragraphs)
    report.off_topic = bool(draft_text.strip()) and not on_topic and not calculations
    report.wrong_language = _other_language(answer, lang)

    missing = [result for result in calculations if not _states_key_numbers(answer, result)]
    blocks: list[str] = []
    if missing:
        blocks.append(_calculator_block(missing, lang))
        report.appended_figures = True
    caveats = [result.caveat for result in calculations if result.below_16_bit and result.caveat]
    missing_caveats = [c for c in dict.fromkeys(caveats) if _normal(c) not in _normal(answer)]
    if missing_caveats:
        blocks.append("\n".join(f"> {caveat}" for caveat in missing_caveats))
        report.appended_caveat = True
    warnings = _missing_published_warnings(answer, calculations, lang)
    if warnings:
        blocks.append("\n".join(f"> {warning}" for warning in warnings))
        report.appended_published = True
    report.answer = "\n\n".join(part for part in (answer, *blocks) if part)
    return report


def _reason_to_remove(
    sentence: str, calculations: Sequence[SizingResult], allowed: AllowedFigures, stale: set[str]
) -> str | None:
    if not sentence.strip():
        return None
    if _quotes_prompt(sentence):
        return "prompt"
    if _is_stale(sentence, stale):
        return "stale"
    if contradicted_fact(sentence):
        return "fact"
    if not unit_relation(sentence) and any(
        not allowed.permits(figure, sentence) for figure in figures(sentence)
    ):
        return "figure"
    if wrong_verdict(sentence, calculations):
        return "verdict"
    return None


# ---------------------------------------------------------------------------- the calculator block


def strip_calculator_block(text: str) -> str:
    """An earlier answer without the calculator block the guardrail appended to it."""
    cut = min(
        (text.find(f"**{heading}**") for heading in _headings() if f"**{heading}**" in text), default=-1
    )
    return text[:cut].rstrip() if cut >= 0 else text


@functools.cache
def _headings() -> tuple[str, ...]:
    return tuple(every_language("calculator_check"))


def _stale_lines(earlier: Sequence[str], calculations: Sequence[SizingResult]) -> set[str]:
    """Lines of earlier answers' calculator blocks that this turn's calculations do not produce."""
    if not earlier:
        return set()
    current = {_normal(text) for result in calculations for text in _texts_of(result)}
    # The heading itself: a model that writes it is copying an earlier turn's block.
    lines: set[str] = {_normal(heading) for heading in _headings()}
    for text in earlier:
        block = text[len(strip_calculator_block(text)) :]
        for line in block.splitlines():
            normal = _normal(re.sub(r"^\s*[-*>]\s*", "", line))
            if len(normal) >= STALE_MIN_CHARS and normal not in current:
                lines.add(normal)
    return lines


def _is_stale(sentence: str, stale: set[str]) -> bool:
    normal = _normal(sentence)
    return any(line and line in normal for line in stale)


def _missing_published_warnings(answer: str, calculations: Sequence[SizingResult], lang: str) -> list[str]:
    """The published runs' warnings an answer leaves out when it states a speed of the estimate they
    qualify (a tokens/s or ms figure of that calculation's `performance`): none for an answer about
    memory alone, nor for one that quotes only another option's speed."""
    speeds = [figure for figure in figures(answer) if figure.unit in ("tok/s", "ms")]
    if not speeds:
        return []
    written = as_language(lang) or "en"
    warnings = [
        published_text(result.performance, written).strip()
        for result in calculations
        if result.performance is not None and _states_speed_of(speeds, result.performance)
    ]
    return [w for w in dict.fromkeys(warnings) if w and _normal(w) not in _normal(answer)]


def _states_speed_of(speeds: Sequence[Figure], estimate: PerformanceEstimate) -> bool:
    produced = [
        (unit, value)
        for unit, value in numeric_fields(estimate.model_dump(mode="json"))
        if unit in ("tok/s", "ms")
    ]
    return any(
        figure.unit == unit and matches(figure, value) for figure in speeds for unit, value in produced
    )


def _texts_of(result: SizingResult) -> list[str]:
    return [result.recommendation, *result.arithmetic, result.caveat or ""]


def _calculator_block(results: Sequence[SizingResult], lang: str) -> str:
    lines = [f"**{llm_text('calculator_check', lang)}**", ""]
    shown: set[str] = set()  # a card's calculation and the class comparison share most lines
    for result in results:
        written = as_language(lang) or "en"  # the reader's separators: 32.768 and 16,06 in Spanish
        if result.finetune is not None:  # a training: its recommendation says the micro-batch
            heading = (
                f"**{result.model.name} · {llm_text('training_' + result.finetune.method, lang)}** — "
                f"{llm_text('weights', lang)} {number(result.weights_gb, written)} GB, "
                f"{llm_text('total', lang)} {number(result.finetune.total_gb, written)} GB "
                f"{llm_text('per_gpu', lang)}. {result.recommendation}"
            )
        else:
            heading = (
                f"**{result.model.name} · {result.precision} · {integer(result.context, written)} "
                f"{llm_text('tokens', lang)} × {result.users} {llm_text('concurrent', lang)}** — "
                f"{llm_text('weights', lang)} {number(result.weights_gb, written)} GB, "
                f"{llm_text('total', lang)} {number(result.total_gb, written)} GB. {result.recommendation}"
            )
        lines.append(f"- {heading}")
        lines += [f"  - {line}" for line in result.arithmetic if line not in shown]
        shown.update(result.arithmetic)
    return "\n".join(lines)


def _states_key_numbers(answer: str, result: SizingResult) -> bool:
    """The answer gives this calculation's weights, total and the recommended option's verdict."""
    written = [
        figure for figure in figures(answer) if figure.unit == "GB" and "gib" not in figure.text.lower()
    ]
    for target in (result.weights_gb, result.total_gb):
        if not any(matches(figure, target) for figure in written):
            return False
    return _states_verdict(answer, result)


def _states_verdict(answer: str, result: SizingResult) -> bool:
    squashed = _squash(answer)
    if result.recommended is None:
        return bool(re.search(r"\b(not|no|never|cannot|nunca)\b|n't", answer.lower()))
    # "l40s:2" recommends the option whose card is "l40s"; failing a match, the first that fits.
    wanted = {result.recommended, result.recommended.split(":")[0]}
    option = next((o for o in result.options if {o.card_class, o.card} & wanted), None) or next(
        (o for o in result.options if o.fits), None
    )
    names = {result.recommended}
    if option is not None:
        names.add(option.label.split("(")[0])
        names.update(name for name in re.findall(r"[A-Za-z]+\s?\d+[A-Za-z]*", option.label))
    return any(len(_squash(name)) >= 3 and _squash(name) in squashed for name in names)


def _without_markup(text: str, drop: Callable[[str, str], None]) -> str:
    """The draft without chat-template tags and raw tool output the model echoed."""
    lines = []
    for line in _MARKUP.sub("", text).splitlines():
        if _TOOL_ECHO.match(line):
            drop(line[:200], "tool_echo")
        else:
            lines.append(line)
    return "\n".join(lines)


def _without_unfinished_end(text: str, drop: Callable[[str, str], None]) -> str:
    """The draft without a last prose sentence that stops mid-way (the token budget ran out)."""
    lines = text.rstrip().splitlines()
    if not lines or _LIST_OR_TABLE.match(lines[-1]) or lines[-1].lstrip().startswith(("#", "```", "|")):
        return text
    sentences = _SENTENCE_END.split(lines[-1])
    last = sentences[-1].rstrip()
    if len(_words(last)) < UNFINISHED_WORDS or re.search(r"[.!?:;)\]»\"'`*…]$", last):
        return text
    drop(last, "unfinished")
    lines[-1] = " ".join(sentences[:-1])
    return "\n".join(lines)


# ---------------------------------------------------------------------------- topic and language


def _about_sizing(text: str) -> bool:
    """Sizing vocabulary, a checked figure or a card name: the text is about what the assistant does."""
    folded = fold(text)
    if figures(text) or lexicon().sizing_words.search(folded) or _SIZING_TERMS.search(folded):
        return True
    return any(pattern.search(text) for pattern, _ in card_patterns())


def _off_topic(paragraph: str) -> bool:
    return len(_words(paragraph)) >= OFF_TOPIC_WORDS and not _about_sizing(paragraph)


def _other_language(answer: str, lang: str) -> bool:
    """The answer is confidently in a language other than the visitor's."""
    prose = "\n".join(line for line in answer.splitlines() if not _LIST_OR_TABLE.match(line))
    if len(_words(prose)) < LANGUAGE_WORDS:
        return False
    detected, confident = detect_language(prose, lang)  # type: ignore[arg-type]
    return confident and detected != lang


# ---------------------------------------------------------------------------- leaks and text


@functools.cache
def _prompt_shingles() -> frozenset[tuple[str, ...]]:
    words = _words(SYSTEM_PROMPT)
    return frozenset(tuple(words[i : i + LEAK_WORDS]) for i in range(len(words) - LEAK_WORDS + 1))


def _quotes_prompt(sentence: str) -> bool:
    words = _words(sentence)
    shingles = _prompt_shingles()
    return any(tuple(words[i : i + LEAK_WORDS]) in shingles for i in range(len(words) - LEAK_WORDS + 1))


def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


def _normal(text: str) -> str:
    """Lower case, Markdown emphasis and spacing removed: for "is this text in that one"."""
    return " ".join(re.sub(r"[*_`>]", " ", text).lower().split())


def _squash(text: str) -> str:
    return re.sub(r"[\s*_`×x-]", "", text.lower())


def _tidy(text: str) -> str:
    """Collapse the blank lines that removed sentences leave behind."""
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
