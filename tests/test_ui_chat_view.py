"""How answers are shown in the chat: folded arithmetic and long blocks, linked sources, follow-ups."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.offline.understanding import understand
from assistant.schemas import ConversationState, Reply, Source
from assistant.service import build_assistant
from assistant.settings import Settings
from assistant.ui.articles import ArticleLibrary
from assistant.ui.catalogue import phrase
from assistant.ui.chat_view import (
    FOLD_LIST_ITEMS,
    FOLD_TABLE_ROWS,
    AnswerView,
    fold_long_blocks,
    follow_up_suggestions,
)
from knowledge.store import SHIPPED_ARTICLES
from tests.fakes import FakeArticles


def offline_reply(message: str, tmp_path: Path, state: ConversationState | None = None) -> Reply:
    assistant = build_assistant(Settings(data_dir=tmp_path), store=FakeArticles())
    return assistant.answer(message, state)


def test_the_arithmetic_folds_and_the_verdict_stays_first(tmp_path: Path) -> None:
    reply = offline_reply("What GPU for Llama 3.1 70B in int4 with 8 users and 8k context?", tmp_path)
    shown = fold_long_blocks(reply.answer, "en")
    # The verdict opens the answer, the card table follows unfolded, the arithmetic is folded.
    assert shown.split("\n\n")[0] == reply.answer.split("\n\n")[0]
    assert shown.index("| Card class") < shown.index("<details>")
    details = shown[shown.index("<details>") : shown.index("</details>")]
    assert "<summary>The arithmetic (from the calculator; GB = 10⁹ bytes)</summary>" in details
    assert "Weights: 70.55 B parameters" in details
    # Nothing is lost: every line of the answer is still shown (a folded lead line as its summary).
    for line in reply.answer.splitlines():
        assert line in shown or line.startswith("**The arithmetic**")


def test_spanish_arithmetic_folds_under_its_spanish_title(tmp_path: Path) -> None:
    reply = offline_reply("¿Qué GPU para un 70B en int4 con 8 usuarios?", tmp_path)
    shown = fold_long_blocks(reply.answer, "es")
    assert "<summary>La aritmética (de la calculadora; GB = 10⁹ bytes)</summary>" in shown


def test_short_lists_and_tables_stay_open_long_ones_fold() -> None:
    short_list = "**Sources:**\n" + "\n".join(f"- source {n}" for n in range(FOLD_LIST_ITEMS - 1))
    long_list = "**Per card:**\n" + "\n".join(f"- card {n}" for n in range(FOLD_LIST_ITEMS))
    header = "| a | b |\n|---|---|\n"
    short_table = header + "\n".join(f"| {n} | x |" for n in range(FOLD_TABLE_ROWS))
    long_table = header + "\n".join(f"| {n} | y |" for n in range(FOLD_TABLE_ROWS + 1))
    shown = fold_long_blocks("\n\n".join([short_list, long_list, short_table, long_table]), "en")
    blocks = shown.split("\n\n")
    assert blocks[0] == short_list
    assert blocks[1] == "<details><summary>Per card</summary>"
    assert short_table in shown and shown.count("<details>") == 2
    assert f"<details><summary>Table: {FOLD_TABLE_ROWS + 1} rows</summary>" in shown


def test_code_fences_and_html_in_summaries_are_left_harmless() -> None:
    fenced = "```\n" + "\n".join(f"- not a list {n}" for n in range(8)) + "\n\n- still code\n```"
    assert fold_long_blocks(fenced, "en") == fenced
    sneaky = "**<img src=x onerror=alert(1)>:**\n" + "\n".join(f"- item {n}" for n in range(6))
    shown = fold_long_blocks(sneaky, "en")
    assert "<summary>&lt;img src=x onerror=alert(1)&gt;</summary>" in shown


@pytest.fixture(scope="module")
def library() -> ArticleLibrary:
    return ArticleLibrary.from_folder(SHIPPED_ARTICLES)


def test_cited_sections_become_links_in_the_visitor_language(library: ArticleLibrary) -> None:
    source = Source(
        title="How much VRAM does a language model need?", path="en/vram-arithmetic.md", section="The formula"
    )
    answer = f"Fits.\n\n**Sources:**\n- *{source.title}* — {source.section}"
    reply = Reply(answer=answer, language="en", mode="offline", sources=[source])
    shown = AnswerView(library).markdown(reply.answer, reply, "en")
    assert f"[*{source.title}* — The formula](/articles/en/vram-arithmetic#the-formula)" in shown
    # A Spanish visitor citing the English section is sent to the Spanish twin section.
    assert library.link(source, "es") == "/articles/es/aritmetica-vram#la-fórmula"


def test_sources_the_answer_does_not_list_get_a_linked_line(library: ArticleLibrary) -> None:
    source = Source(
        title="¿Cuánta VRAM necesita un modelo de lenguaje?",
        path="es/aritmetica-vram.md",
        section="La fórmula",
    )
    reply = Reply(answer="Cabe en 80 GB.", language="es", mode="llm", sources=[source], notice="Aviso.")
    shown = AnswerView(library).markdown(reply.answer, reply, "es")
    assert shown.startswith("Cabe en 80 GB.\n\n> Aviso.")
    assert (
        "**Fuentes:** [_¿Cuánta VRAM necesita un modelo de lenguaje? › La fórmula_](/articles/es/aritmetica-vram#la-fórmula)"
        in shown
    )


def test_a_source_without_an_article_stays_plain_text(library: ArticleLibrary) -> None:
    source = Source(title="Gone", path="en/removed.md", section="Old")
    reply = Reply(answer="Fits.\n\n- *Gone* — Old", language="en", mode="offline", sources=[source])
    assert "](" not in AnswerView(library).markdown(reply.answer, reply, "en")


@pytest.mark.parametrize(
    ("first", "lang"),
    [
        ("What GPU for Llama 3.1 70B in bf16?", "en"),
        ("¿Qué GPU para un Llama 3.1 70B en int4?", "es"),
        ("Qwen2.5 32B in fp8 for 10 users with a 16k context, for code", "en"),
    ],
)
def test_every_follow_up_changes_what_the_next_answer_calculates(
    first: str, lang: str, tmp_path: Path
) -> None:
    reply = offline_reply(first, tmp_path)
    suggestions = follow_up_suggestions(reply)
    assert 1 <= len(suggestions) <= 3
    assert reply.calculations
    before = reply.calculations[-1]
    for suggestion in suggestions:
        reading = understand(suggestion, lang)
        assert reading.language == lang, suggestion
        follow = offline_reply(suggestion, tmp_path, reply.state)
        assert follow.calculations, suggestion
        after = follow.calculations[-1]
        changed = (after.precision, after.users, after.context) != (
            before.precision,
            before.users,
            before.context,
        )
        assert changed or follow.state.tasks != reply.state.tasks, suggestion


def test_a_question_without_a_model_suggests_model_sizes(tmp_path: Path) -> None:
    reply = offline_reply("How many users can I serve with 8k context?", tmp_path)
    suggestions = follow_up_suggestions(reply)
    assert suggestions == ["For a 70B model?", "For an 8B model?"]
    follow = offline_reply(suggestions[0], tmp_path, reply.state)
    assert follow.calculations and follow.calculations[-1].model.params > 60e9


@pytest.mark.parametrize(("precision", "bits"), [("q8_0", 4), ("fp8", 4), ("awq", 8), ("bf16", 8)])
def test_the_precision_follow_up_moves_away_from_the_bits_in_use(
    precision: str, bits: int, tmp_path: Path
) -> None:
    reply = offline_reply(f"Llama 3.1 8B in {precision} on an RTX 4090", tmp_path)
    assert reply.calculations and reply.calculations[-1].precision == precision
    assert follow_up_suggestions(reply)[0] == phrase("followup_bits", "en", bits=bits)
