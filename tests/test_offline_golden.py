"""Golden questions answered offline: numbers against the calculator, language, caveat, follow-up.

The questions live in tests/golden/questions*.jsonl. Each names what the assistant must have
calculated (the calculator requests, written out by hand, not derived from the parser), the
language of the answer, the slots still missing and whether the quantization caveat is due.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assistant.offline.composer import gb, most_compressed
from assistant.offline.responder import OfflineResponder
from assistant.offline.texts import texts
from assistant.schemas import ConversationState
from assistant.service import Assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles, section
from tools import SizingRequest, SizingResult, calculate_vram

GOLDEN = Path(__file__).parent / "golden"
QUESTIONS = [
    json.loads(line) for line in (GOLDEN / "questions.jsonl").read_text("utf-8").splitlines() if line
]
CONVERSATIONS = [
    json.loads(line)
    for line in (GOLDEN / "questions_conversations.jsonl").read_text("utf-8").splitlines()
    if line
]


# The one section every search finds, in the language asked for.
SIZING_ARTICLE = section(
    "Parameters times bytes per parameter, plus overhead and KV cache.",
    title="Sizing article ({lang})",
    path="{lang}/sizing.md",
    heading="The arithmetic anyone can check",
)


def expected_calculations(requests: list[dict[str, Any]], lang: str) -> list[SizingResult]:
    """What the answer must carry: results on the named card first, then across the card classes."""
    on_card = [
        calculate_vram(SizingRequest(lang=lang, **request)) for request in requests if request.get("gpu")
    ]
    by_class = [calculate_vram(SizingRequest(lang=lang, **{**request, "gpu": None})) for request in requests]
    return [*on_card, *by_class]


def check_answer(answer: str, calculations: list[SizingResult], case: dict[str, Any], lang: str) -> None:
    words = texts(lang)  # type: ignore[arg-type]
    expected = expected_calculations(case.get("requests", []), lang)
    assert [result.model_dump() for result in calculations] == [result.model_dump() for result in expected]

    named_card = sum(1 for request in case.get("requests", []) if request.get("gpu"))
    shown = expected[:named_card] or expected
    for result in shown:
        assert f"{gb(result.total_gb, words)} GB" in answer, f"total of {result.precision} missing"
        assert f"{gb(result.weights_gb, words)} GB" in answer, f"weights of {result.precision} missing"
    if expected and case["intent"] == "sizing":
        assert words["arithmetic_title"] in answer
        assert any(line in answer for line in expected[0].arithmetic)

    compressed = most_compressed(expected)
    if case["caveat"]:
        assert compressed is not None and compressed.caveat
        assert compressed.caveat in answer
        assert "sizing compare" in answer
    else:
        assert all(result.caveat is None or result.caveat not in answer for result in expected)
        assert compressed is None or not case["requests"]

    followup_items = words.mapping("followup_items")
    if case["missing"]:
        last = answer.rstrip().splitlines()[-1]
        assert last.endswith("?")
        for slot in case["missing"]:
            assert followup_items[slot] in last
    else:
        assert words["followup"].split("{")[0] not in answer

    for phrase in case.get("contains", []):
        assert phrase in answer


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    # Explicit, so no SIZING_* variable of the machine running the tests can turn on LLM mode.
    return Settings(data_dir=tmp_path, llm_base_url=None, llm_model=None, chroma_url=None)


def test_there_are_at_least_thirty_golden_questions_in_both_languages() -> None:
    languages = [case["lang"] for case in QUESTIONS] + [
        turn["lang"] for conversation in CONVERSATIONS for turn in conversation["turns"]
    ]
    assert len(QUESTIONS) >= 30
    assert languages.count("es") >= 12 and languages.count("en") >= 12


@pytest.mark.parametrize("case", QUESTIONS, ids=[case["id"] for case in QUESTIONS])
def test_golden_question(case: dict[str, Any], settings: Settings) -> None:
    store = FakeArticles([SIZING_ARTICLE])
    offline = OfflineResponder(store).respond(case["q"], ConversationState(), case["lang"])
    assert offline.intent == case["intent"]

    reply = Assistant(settings, store, None).answer(case["q"])
    assert reply.mode == "offline"
    assert reply.language == case["lang"]
    assert reply.missing == case["missing"]
    assert reply.answer == offline.answer
    check_answer(reply.answer, reply.calculations, case, case["lang"])
    if case["intent"] in ("sizing", "need_model") or case["intent"].startswith("faq:"):
        assert reply.sources and reply.sources[0].path == f"{case['lang']}/sizing.md"
        assert texts(case["lang"])["sources_title"] in reply.answer
        assert store.searches[-1][2] == case["lang"]
    else:
        assert not reply.sources


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=[c["id"] for c in CONVERSATIONS])
def test_golden_conversation(conversation: dict[str, Any], settings: Settings) -> None:
    assistant = Assistant(settings, FakeArticles([SIZING_ARTICLE]), None)
    state = ConversationState()
    for turn in conversation["turns"]:
        reply = assistant.answer(turn["q"], state)
        assert reply.language == turn["lang"], turn["q"]
        assert reply.missing == turn["missing"], turn["q"]
        if "requests" in turn:
            case = {"intent": "sizing", "caveat": None, **turn}
            case["caveat"] = (
                most_compressed(expected_calculations(turn["requests"], turn["lang"])) is not None
            )
            check_answer(reply.answer, reply.calculations, case, turn["lang"])
        # The state survives a JSON round trip, as the web app keeps it.
        state = ConversationState.model_validate_json(reply.state.model_dump_json())
