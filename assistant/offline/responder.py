"""The offline assistant: a complete answer to one message with no language model.

`OfflineResponder(store).respond(message, state, language)` reads the message
(`understanding`), folds it into the conversation's slots, calls the calculator and the article
search, and composes the Markdown answer from the templates. It is the default mode and the
fallback of LLM mode. Deterministic: the same message and state give the same answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, get_args

from assistant.offline import asked, composer
from assistant.offline.names import catalog
from assistant.offline.notes import note
from assistant.offline.read_models import family_label, family_list
from assistant.offline.sizing import (
    Calculations,
    SizingPlan,
    comparison_sides,
    is_sizing_question,
    merge_slots,
    plan_sizing,
    read_as_answer,
    run_plan,
    training_question,
)
from assistant.offline.texts import FaqEntry, Texts, faq_entries, format_definition, texts
from assistant.offline.understanding import Understanding, understand
from assistant.schemas import ConversationState, FollowedQuestion, Language, Source, Step
from tools import SizingResult
from tools.error_texts import localized
from tools.errors import SizingError

log = logging.getLogger("sizing.offline")

# Article sections cited per answer: enough to ground it, few enough to read.
SOURCES_PER_ANSWER = 3
# Cited sections are looked up again after this long, so a re-ingested index shows up.
SEARCH_CACHE_SECONDS = 600.0
SEARCH_CACHE_SIZE = 256
# Models of this size class also cite the article's 70B worked example (params in billions).
SEVENTY_B_CLASS = (60.0, 80.0)
# The model of a FAQ's worked example is computed at the calculator's defaults.
EXAMPLE_PRECISIONS = ("bf16", "int8", "int4")
# Questions a follow-up that only changes a slot asks again ("and with 32 users?", "¿y a 4 bits?").
FOLLOWED_QUESTIONS = get_args(FollowedQuestion)


class PassageLike(Protocol):
    @property
    def title(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def section(self) -> str: ...


class SearchableStore(Protocol):
    """What the responder needs from knowledge.ArticleStore."""

    def search(self, query: str, k: int = 3, lang: str | None = None) -> Sequence[PassageLike]: ...


@dataclass
class OfflineAnswer:
    answer: str
    language: Language
    state: ConversationState
    calculations: list[SizingResult] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    notice: str | None = None
    intent: str = "sizing"


class OfflineResponder:
    """Answers from the calculator, the articles and the templates."""

    def __init__(self, store: SearchableStore | None) -> None:
        self.store = store
        # (topic query, language) -> (when, passages). Offline answers cite by topic, so a handful
        # of queries cover every answer; embedding a query costs far more than the rest of an answer.
        self._found: dict[tuple[str, str], tuple[float, Sequence[PassageLike]]] = {}

    def respond(
        self,
        message: str,
        state: ConversationState,
        language: Language,
        understanding: Understanding | None = None,
        on_step: Callable[[Step], None] | None = None,
    ) -> OfflineAnswer:
        # The service passes its reading already read as an answer to what was last asked.
        reading = understanding or read_as_answer(message, state, understand(message, language))
        words = texts(language)
        if reading.card_count and not state.gpu and not reading.hardware_kind:
            # "what about 2 gpus?" with no card in the conversation: the count said back, which card asked.
            counted = note("card_count_no_card", count=reading.card_count)
            reading = replace(reading, notes=(*reading.notes, counted))
        merged = merge_slots(state, reading)
        steps: list[Step] = []

        def record(step: Step) -> None:
            steps.append(step)
            if on_step:
                on_step(step)

        record(Step(kind="understand", title=words.step("understand"), detail=slot_summary(merged)))
        compared = compared_cards(reading, merged)  # "h100 or h200?" with no model: the cards' figures
        question = None if compared else reading.question
        if (
            not compared
            and question is None
            and merged.gpu
            and not merged.model
            and not reading.faq
            and not reading.unknown_model  # "can I run gemma 4 on a 4090?": not any model that fits
            and (reading.sizing_words or merged.family)
        ):
            # A card named with no model ("what can I run on my 3060?", "llama on a 4090"): what
            # fits it (of the family named) is the answer.
            question = "largest_model"
        if (
            question is None
            and merged.last_question
            and reading.names_a_slot
            and not (reading.faq or reading.concept_question)
        ):
            question = merged.last_question  # "and with 32 users?" after "how many tokens per second?"
            reading = replace(reading, question=question)
        if question is not None or reading.reset:
            kept = question if question in FOLLOWED_QUESTIONS else None
            merged = merged.model_copy(update={"last_question": kept})
        # A concrete question ("how many KV bytes per token does X use?") is answered with its
        # figures, not with the general FAQ entry its words also match.
        concrete = question == "largest_model" or (
            question is not None and (merged.model is not None or bool(reading.cards))
        )
        faq = None if concrete else _main_faq(reading)
        defined = defined_format(reading)  # "what is fp8?": its definition, not the formats' overview
        if defined is not None or (
            faq is not None
            and faq.only_without_model
            and not reading.format_question  # "what's gguf?" after a model is still asked
            and (reading.model or (merged.model and reading.names_a_slot))
        ):
            faq = None  # a concept answer gives way to the sizing of the model the conversation is about
        # A question about the model already named ("how fast is it?", "any cheaper option?") is
        # answered for it, though the message names no slot.
        wants_sizing = not compared and (
            is_sizing_question(reading, merged)
            or (concrete and (question == "largest_model" or merged.model is not None))
        )
        parts: list[str] = []
        search_query = ""
        # Filled in as the answer is composed; its text and state are set last.
        reply = OfflineAnswer(answer="", language=language, state=merged, steps=steps)

        if reading.reset and not reading.names_a_slot:
            parts.append(words["reset"])
            reply.intent = "reset"
        if reading.reveal_prompt and not reading.names_a_slot:
            parts.append(words["reveal_prompt"])
            parts.append(words["off_topic"])
            reply.intent = "reveal_prompt"
        elif compared:
            reply.intent = "compare_cards"
            parts.append(composer.compose_card_comparison(compared, words))
            search_query = words["search_cards"]
        elif defined is not None:
            reply.intent = f"format:{defined}"
            parts.append(composer.compose_format(defined, words))
            search_query = faq_entries()["formats"].search[language]
        elif faq is not None:
            reply.intent = f"faq:{faq.id}"
            parts.append(composer.compose_faq(faq, words))
            search_query = faq.search[language]
            if faq.card_table:
                parts.append(composer.compose_card_classes(words))
            if faq.example_model and not wants_sizing:
                example = self._calculate(_example_plan(faq.example_model, language), record, words)
                if isinstance(example, Calculations):
                    parts.append(composer.compose_worked_example(example, words))
                    reply.calculations.extend(example.by_class)
        if wants_sizing:
            # A search for the model ("the largest model on an L40S") needs no model: any stands in.
            plan = plan_sizing(
                merged if merged.model else merged.model_copy(update={"model": "8b"}), language, reading
            )
            assert plan is not None  # a model is set
            answered = self._answer_asked(plan, merged, reading, words, record)
            if answered is not None:
                asked_answer, asked_query = answered
                merged = merged.model_copy(update=asked_answer.settles)
                parts.append(self._compose_asked(asked_answer, plan, reading, words))
                reply.calculations.extend(asked_answer.results)
                reply.intent = f"asked:{question or 'compare'}"
                search_query = search_query or words[asked_query]
                reply.missing = asked_answer.missing
            else:
                outcome = self._calculate(plan, record, words)
                if isinstance(outcome, Calculations):
                    shown = outcome.on_card or outcome.by_class
                    focus = composer.focus_option(shown[0], plan) if shown else None
                    parts.append(
                        composer.compose_sizing(
                            outcome,
                            words,
                            task=merged.tasks,
                            injection=reading.injection,
                            lead=(
                                asked.performance_lead(question, plan, outcome, words)
                                or asked.sizing_lead(question, shown[0], focus, words)
                                or asked.unit_lead(reading, shown, words)
                            )
                            if shown
                            else [],
                            notes=[
                                *asked.notes(plan, reading, words),
                                *(asked.escalation(plan, shown[0], words) if len(shown) == 1 else []),
                            ],
                        )
                    )
                    reply.calculations.extend(outcome.shown)
                    hint = (
                        "search_quantized" if any(r.below_16_bit for r in outcome.shown) else "search_sizing"
                    )
                    if question in ("throughput", "pages", "kv_bytes"):
                        hint = f"search_{question}"
                    elif reading.hardware_kind:
                        hint = "search_hardware"
                    search_query = search_query or topic_query(words[hint], outcome.shown)
                else:
                    parts.append(outcome)
                # "How many users can it serve?" is answered with the count: not asked back.
                reply.missing = [
                    slot for slot in merged.missing_slots() if not (slot == "users" and plan.users_target)
                ]
        elif not parts and not merged.model and (reading.names_a_slot or reading.sizing_words):
            reply.intent = "need_model"
            if question == "price":
                parts.append(words["price_note"])
            if reading.notes:  # what was written and could not be used ("phi-3 mini"), said first
                parts.append(" ".join(reading_note.text(language) for reading_note in reading.notes))
            if merged.family and not reading.unknown_model:  # the note has listed the family's models
                family, models = family_label(merged.family), family_list(merged.family)
                parts.append(words.fill("need_model_family", family=family, models=models))
            else:
                parts.append(words["need_model"])
            parts.append(composer.compose_card_classes(words))
            search_query = words["search_sizing"]
            reply.missing = merged.missing_slots()
        elif not parts and reading.bare_number and merged.model:
            # "con tres?": three cards or three users is not said; the conversation is kept, and asked.
            reply.intent = "clarify_number"
            parts.append(words.fill("clarify_number", count=reading.bare_number))
        elif not parts:
            if reading.greeting:
                reply.intent, text = "greeting", words["greeting"]
            elif reading.thanks:
                reply.intent, text = "thanks", words["thanks"]
            elif reading.reset:
                reply.intent, text = "reset", words["reset"]
            else:
                reply.intent, text = "off_topic", words["off_topic"]
            parts.append(text)

        if search_query:
            found = self._search(search_query[:500], language, record, words)
            if found is None:
                reply.notice = words["notice_sources_unavailable"]
                parts.append(composer.compose_sources([], False, words))
            else:
                reply.sources = found
                parts.append(composer.compose_sources(found, True, words))
        followup = composer.compose_followup(reply.missing, words)
        if followup:
            parts.append(followup)
        reply.answer = "\n\n".join(part for part in parts if part)
        reply.state = merged.model_copy(
            update={
                "language": language,
                "asked": reply.missing if followup else [],
                "pending_count": reading.bare_number if reply.intent == "clarify_number" else None,
                "compared_cards": list(compared),
            }
        )
        return reply

    def _answer_asked(
        self,
        plan: SizingPlan,
        state: ConversationState,
        reading: Understanding,
        words: Texts,
        record: Callable[[Step], None],
    ) -> tuple[asked.Asked, str] | None:
        """The answer to a reverse search, a comparison or a fine-tuning question (with the key of
        its article query); None when the question is a plain sizing."""
        question = reading.question
        if question is None and state.gpu and not state.model:
            question = "largest_model"
        if training_question(reading, state):
            question = "finetuning"  # also "and with rank 8?", "and on an L40S?" after a training answer
        try:
            if question == "largest_model" and state.gpu:
                named = bool(state.precision) and state.precision in plan.precisions
                found = asked.answer_largest(plan, state.gpu, named, words, state.family)
                return found, "search_largest_model"
            if question == "largest_model":
                return asked.Asked(lead=[words["need_card"]]), "search_largest_model"  # it is the question
            if not state.model:
                return None
            if question == "max_context" and (plan.gpu or plan.card_class):
                return asked.answer_context(plan, words), "search_max_context"
            if question == "gpu_count":
                return asked.answer_gpus(plan, words), "search_gpu_count"
            if question == "cheapest":
                return asked.answer_cheapest(plan, words), "search_cheapest"
            if question == "finetuning":
                return asked.answer_finetuning(plan, words), "search_finetuning"
            sides = comparison_sides(state, words.language, reading)
            if len(sides) > 1:
                return asked.answer_comparison(sides, words, question), "search_compare"
        except SizingError as error:
            record(Step(kind="calculate", title=words.step("calculate"), detail=str(error), status="error"))
            return asked.Asked(
                lead=[words.fill("calc_error", error=localized(error, words.language))]
            ), "search_sizing"
        return None

    def _compose_asked(
        self, answer: asked.Asked, plan: SizingPlan, reading: Understanding, words: Texts
    ) -> str:
        """Lead (with the notes on what was assumed), the comparison table, one arithmetic block,
        the quality caveat below 16 bits."""
        parts = [words["injection"]] if reading.injection else []
        parts.append(" ".join([*answer.lead, *asked.notes(plan, reading, words)]))
        if answer.table:
            parts.append("\n".join(answer.table))
        if answer.block is not None:
            parts.append(composer.arithmetic_block(answer.block, words))
        compressed = composer.most_compressed(answer.results) if answer.serving else None
        if compressed is not None and compressed.caveat:
            caveat = words.fill("caveat_title", quality=words["quality_cost"])
            parts.append(f"{caveat} {compressed.caveat}")
        if answer.results and answer.serving:
            parts.append(composer.assumed_line(plan, words))
        return "\n\n".join(part for part in parts if part)

    def _calculate(
        self, plan: SizingPlan, record: Callable[[Step], None], words: Texts
    ) -> Calculations | str:
        """The plan's results, or the error sentence when the calculator refuses the input."""
        title = words.step("calculate")
        try:
            outcome = run_plan(plan)
        except SizingError as error:
            record(Step(kind="calculate", title=title, detail=str(error), status="error"))
            return words.fill("calc_error", error=localized(error, words.language))
        for result in outcome.shown:
            detail = f"{result.model.name} · {result.precision} · {composer.gb(result.total_gb, words)} GB"
            record(Step(kind="calculate", title=title, detail=detail))
        return outcome

    def _search(
        self, query: str, language: Language, record: Callable[[Step], None], words: Texts
    ) -> list[Source] | None:
        """Cited sections, or None when the article index cannot be searched."""
        if self.store is None:
            record(Step(kind="search", title=words.step("search_failed"), status="error"))
            return None
        try:
            key = (query, language)
            cached = self._found.get(key)
            if cached and time.monotonic() - cached[0] < SEARCH_CACHE_SECONDS:
                passages: Sequence[PassageLike] = cached[1]
            else:
                passages = self.store.search(query, k=SOURCES_PER_ANSWER, lang=language)
                if len(self._found) >= SEARCH_CACHE_SIZE:
                    self._found.clear()
                self._found[key] = (time.monotonic(), passages)
        except Exception as error:  # KnowledgeError, or a broken index: the answer goes on without sources
            log.warning("article search failed: %s", error)
            record(
                Step(
                    kind="search", title=words.step("search_failed"), detail=str(error)[:200], status="error"
                )
            )
            return None
        sources: list[Source] = []
        for passage in passages:
            source = Source(
                title=passage.title,
                path=passage.path,
                section=passage.section,
                score=getattr(passage, "score", None),
            )
            if all(
                (known.title, known.path, known.section) != (source.title, source.path, source.section)
                for known in sources
            ):
                sources.append(source)
        detail = "; ".join(source.section for source in sources)
        record(Step(kind="search", title=words.step("search"), detail=detail))
        return sources


def compared_cards(reading: Understanding, state: ConversationState) -> tuple[str, ...]:
    """The catalog cards a message weighs against each other with no model in the conversation
    ("h100 or h200?", "diferencia entre l40s y a6000"); () for any other message."""
    cards = tuple(card for card in reading.cards if card not in catalog().class_ids)
    if len(cards) < 2 or not reading.cards_compared or state.model or reading.family:
        return ()
    return cards


def defined_format(reading: Understanding) -> str | None:
    """The one format a "what is X?" question asks about and data/formats.yaml defines ("what is
    fp8?", "explain nf4", "what is an fp8 kv cache?"); None for any other message."""
    if not reading.format_question or reading.model or reading.family or reading.cards:
        return None  # "what is llama 3.1 8b at fp8?" is a sizing
    if len(reading.precisions) == 1 and not reading.precision_assumed:
        key = reading.precisions[0]
    elif not reading.precisions and reading.kv_dtype == "fp8":
        key = "kv_fp8"
    else:
        return None
    return key if format_definition(key, reading.language) is not None else None


def _main_faq(reading: Understanding) -> FaqEntry | None:
    entries = faq_entries()
    return entries[reading.faq[0]] if reading.faq else None


def _example_plan(model: str, language: Language) -> SizingPlan:
    return SizingPlan(model=model, precisions=EXAMPLE_PRECISIONS, side_by_side=True, language=language)


def slot_summary(state: ConversationState) -> str:
    """One line of the known slots, for the steps panel."""
    known = [
        f"{name}={getattr(state, name)}"
        for name in ("model", "precision", "tasks", "context", "users", "gpu", "engine", "kv_dtype")
        if getattr(state, name) is not None
    ]
    return " · ".join(known) or "—"


def topic_query(base: str, results: Sequence[SizingResult]) -> str:
    """The article query for a sizing answer: its topics, not the visitor's words.

    The offline answer's text is fixed by its topics (the arithmetic, card classes, what
    quantization costs), so those are what it cites; the visitor's wording would only add noise.
    """
    low, high = SEVENTY_B_CLASS
    if any(low <= result.model.params / 1e9 <= high for result in results):
        return f"{base} 70B"
    return base
