"""Scorers grade in [0, 1]; the judge grades blind, in both orders."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assistant.evals.client import Answer, Endpoint, open_client
from assistant.evals.scorers import (
    judge_pair,
    parse_json_answer,
    parse_marks,
    score_answer,
    score_contains,
    score_exact,
    score_json,
    score_regex,
)
from assistant.evals.tasks import parse_tasks
from tests.openai_stub import Reply, StubOpenAI, error, text


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("The 48 GB class fits.", "48 gb", 1.0),
        ("The 48  GB\nclass", "48 GB class", 1.0),
        ("80 GB", "48 GB", 0.0),
        ("L40S and A100", ["L40S", "A100", "H100", "L40"], 0.75),
        ("", ["x"], 0.0),
    ],
)
def test_contains(output: str, expected: Any, score: float) -> None:
    assert score_contains(output, expected) == score


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("billing", "billing", 1.0),
        ("  Billing.\n", "billing", 1.0),
        ('"billing"', "billing", 1.0),
        ("billing team", "billing", 0.0),
        ("sales", "billing", 0.0),
    ],
)
def test_exact(output: str, expected: str, score: float) -> None:
    assert score_exact(output, expected) == score


def test_regex() -> None:
    assert score_regex("About 70 GB of weights", r"\b70\s?GB\b") == 1.0
    assert score_regex("About 170GB", r"\b70\s?GB\b") == 0.0


SCHEMA = {"type": "object", "required": ["precision"], "properties": {"users": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("output", "schema", "expected", "score"),
    [
        ('{"precision": "int4"}', None, None, 1.0),
        ("not json", None, None, 0.0),
        ('```json\n{"precision": "int4"}\n```', SCHEMA, None, 1.0),
        ('{"users": 3}', SCHEMA, None, 0.0),
        ('{"precision": "int4", "users": "three"}', SCHEMA, None, 0.0),
        ('{"precision": "INT4", "users": 20}', SCHEMA, {"precision": "int4", "users": 20}, 1.0),
        ('{"precision": "int8", "users": 20}', SCHEMA, {"precision": "int4", "users": 20}, 0.5),
        ("[1, 2]", None, [1, 2], 1.0),
        ("[1, 2]", None, {"a": 1}, 0.0),
    ],
)
def test_json(output: str, schema: Any, expected: Any, score: float) -> None:
    assert score_json(output, schema, expected) == score


def test_parse_json_answer_refuses_prose() -> None:
    with pytest.raises(ValueError):
        parse_json_answer("Here it is: {}")


def test_failed_answer_scores_zero_and_unscored_task_scores_none() -> None:
    scored, unscored = parse_tasks('{"prompt": "x", "expected": "y"}\n{"prompt": "z"}')
    assert score_answer(scored, Answer(output="y")) == 1.0
    assert score_answer(scored, Answer(output="y", error="HTTP 500")) == 0.0
    assert score_answer(unscored, Answer(output="anything")) is None


@pytest.mark.parametrize(
    ("reply", "marks"),
    [
        ('{"answer_1": 8, "answer_2": 3}', (0.8, 0.3)),
        ('```json\n{"answer_1": 10, "answer_2": 0}\n```', (1.0, 0.0)),
        ("Answer 1: 7/10. Answer 2: 9/10.", (0.7, 0.9)),
        ('{"answer_1": 14, "answer_2": -2}', (1.0, 0.0)),
        ("Both are fine.", None),
    ],
)
def test_parse_marks(reply: str, marks: tuple[float, float] | None) -> None:
    assert parse_marks(reply) == marks


JUDGED = parse_tasks(
    '{"prompt": "What fits a 70B at 4 bits?", "scorer": "judge", "expected": "a 48 GB card"}'
)[0]
RIGHT = Answer(output="One 48 GB card.")
WRONG = Answer(output="A laptop.")


def _section(request: dict[str, Any], name: str) -> str:
    content = request["messages"][-1]["content"]
    return content.split(f"## {name}\n", 1)[1].split("\n\n## ", 1)[0]


def test_judge_sees_both_orders_and_no_endpoint_names() -> None:
    def judge(request: dict[str, Any]) -> Reply:
        # A judge that knows the right answer, whatever position it is in.
        first_right = "48 GB" in _section(request, "Answer 1")
        return text(json.dumps({"answer_1": 9 if first_right else 2, "answer_2": 2 if first_right else 9}))

    with StubOpenAI(judge) as stub:
        endpoint = Endpoint(stub.url, "judge-model")
        verdict = judge_pair(open_client(endpoint), endpoint, JUDGED, RIGHT, WRONG)
    assert (verdict.a_score, verdict.b_score, verdict.rounds) == (0.9, 0.2, 2)
    firsts = [_section(r, "Answer 1") for r in stub.requests]
    assert firsts == [RIGHT.output, WRONG.output]  # swapped between the two rounds
    prompt = stub.requests[0]["messages"][-1]["content"]
    assert "## Reference answer\na 48 GB card" in prompt
    assert "## Answer 1" in prompt and "Answer A" not in prompt  # labels say nothing about the endpoint


def test_judge_position_bias_cancels_out() -> None:
    # A lazy judge that always prefers whatever comes first gives both answers the same average.
    with StubOpenAI([text('{"answer_1": 10, "answer_2": 0}')]) as stub:
        endpoint = Endpoint(stub.url, "judge-model")
        verdict = judge_pair(open_client(endpoint), endpoint, JUDGED, RIGHT, WRONG)
    assert verdict.a_score == verdict.b_score == 0.5


def test_judge_failures_leave_the_task_unscored_with_a_note() -> None:
    with StubOpenAI([error(503, "judge overloaded"), text("no marks here")]) as stub:
        endpoint = Endpoint(stub.url, "judge-model")
        verdict = judge_pair(open_client(endpoint), endpoint, JUDGED, RIGHT, WRONG)
    assert (verdict.a_score, verdict.b_score) == (None, None)
    assert verdict.error and "judge overloaded" in verdict.error and "no marks" in verdict.error


def test_judge_with_one_round_left_and_a_failed_endpoint() -> None:
    with StubOpenAI([error(500, "x"), text('{"answer_1": 2, "answer_2": 8}')]) as stub:
        endpoint = Endpoint(stub.url, "judge-model")
        failed = Answer(error="HTTP 500: boom")
        verdict = judge_pair(open_client(endpoint), endpoint, JUDGED, failed, RIGHT)
    assert verdict.rounds == 1
    assert verdict.a_score == 0.0  # a failed call is a failed task, whatever the judge said
    assert verdict.b_score == 0.2  # second round: B was "Answer 1"
    assert "(no answer" in _section(stub.requests[1], "Answer 2")


def test_judge_is_not_called_when_both_endpoints_failed() -> None:
    with StubOpenAI([text("unused")]) as stub:
        endpoint = Endpoint(stub.url, "judge-model")
        verdict = judge_pair(open_client(endpoint), endpoint, JUDGED, Answer(error="x"), Answer(error="y"))
    assert (verdict.a_score, verdict.b_score) == (0.0, 0.0)
    assert stub.requests == []
