"""Scores in [0, 1] for one answer to one task.

contains  fraction of the expected strings found in the answer (case and spacing ignored)
exact     1 when the answer equals `expected` (case, spacing, surrounding quotes and final period ignored)
regex     1 when the pattern in `expected` matches somewhere in the answer (within REGEX_TIMEOUT_S)
json      0 unless the answer is JSON (a ```json fence around it is accepted) that passes `schema`;
          then 1, or the fraction of the fields in an `expected` object that the answer matches
judge     a third model grades both answers without knowing which endpoint wrote which,
          twice with the order swapped (position bias cancels out); its 0-10 marks become 0-1
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex

from assistant.evals.client import Answer, Endpoint, chat
from assistant.evals.tasks import Task

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

# The `regex` engine (the one tasks are checked with) stops a match after this long.
REGEX_TIMEOUT_S = 1.0
_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```$", re.DOTALL)


def _normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def score_contains(output: str, expected: str | list[str]) -> float:
    wanted = [expected] if isinstance(expected, str) else expected
    said = _normalize(output)
    return sum(1 for item in wanted if _normalize(item) in said) / len(wanted)


def _bare(text: str) -> str:
    text = _normalize(text)
    text = text.strip("\"'`“”«»")
    return text.rstrip(".!。").strip()


def score_exact(output: str, expected: str) -> float:
    return 1.0 if _bare(output) == _bare(expected) else 0.0


def score_regex(output: str, pattern: str, timeout_s: float = REGEX_TIMEOUT_S) -> float:
    """1 when the pattern matches; 0 when it does not, or when matching outlasts `timeout_s`
    (a backtracking pattern such as `(a|aa)+$` grows exponentially with the answer's length)."""
    try:
        return 1.0 if regex.search(pattern, output, timeout=timeout_s) else 0.0
    except TimeoutError:
        log.warning(
            "regex %r gave up after %g s on a %d-character answer; scored 0", pattern, timeout_s, len(output)
        )
        return 0.0


def parse_json_answer(output: str) -> Any:
    """The JSON value in an answer; raises ValueError when there is none."""
    text = output.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    return json.loads(text)


def score_json(output: str, schema: dict[str, Any] | None, expected: Any) -> float:
    try:
        value = parse_json_answer(output)
    except ValueError:
        return 0.0
    if schema is not None:
        from jsonschema import validators

        validator = validators.validator_for(schema)(schema)
        if not validator.is_valid(value):
            return 0.0
    if expected is None:
        return 1.0
    if isinstance(expected, dict) and expected:
        if not isinstance(value, dict):
            return 0.0
        matched = sum(1 for key, wanted in expected.items() if key in value and _same(value[key], wanted))
        return matched / len(expected)
    return 1.0 if _same(value, expected) else 0.0


def _same(got: Any, wanted: Any) -> bool:
    if isinstance(got, str) and isinstance(wanted, str):
        return _normalize(got) == _normalize(wanted)
    return bool(got == wanted)


def score_answer(task: Task, answer: Answer) -> float | None:
    """The score of one answer under the task's scorer (not `judge`); None for unscored tasks."""
    scorer = task.effective_scorer
    if scorer is None:
        return None
    if not answer.ok:
        return 0.0  # an endpoint failure is a failed task
    expected = task.expected
    if scorer == "contains":
        assert isinstance(expected, str | list)
        return score_contains(
            answer.output, [str(item) for item in expected] if isinstance(expected, list) else expected
        )
    if scorer == "exact":
        return score_exact(answer.output, str(expected))
    if scorer == "regex":
        return score_regex(answer.output, str(expected))
    if scorer == "json":
        return score_json(answer.output, task.json_schema, expected)
    raise ValueError(f"scorer {scorer!r} is not graded by score_answer")


# ---------------------------------------------------------------------------- judge

JUDGE_INSTRUCTIONS = (
    "You grade answers written by two assistants to the same request. Judge correctness first, "
    "then completeness and clarity; length is not a merit. If a reference answer is given, use it "
    "as the ground truth. Give each answer a mark from 0 (wrong or missing) to 10 (fully right). "
    'Reply with JSON only, exactly: {"answer_1": <mark>, "answer_2": <mark>}'
)
JUDGE_MAX_TOKENS = 200
NO_ANSWER = "(no answer: the endpoint failed)"


@dataclass(frozen=True)
class JudgeVerdict:
    a_score: float | None
    b_score: float | None
    rounds: int  # how many of the two position-swapped rounds gave usable marks
    error: str | None = None


def judge_prompt(task: Task, first: str, second: str) -> list[dict[str, str]]:
    conversation = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in task.chat_messages())
    parts = [f"## Request\n{conversation}"]
    if task.expected is not None:
        reference = task.expected if isinstance(task.expected, str) else json.dumps(task.expected)
        parts.append(f"## Reference answer\n{reference}")
    parts.append(f"## Answer 1\n{first}")
    parts.append(f"## Answer 2\n{second}")
    return [
        {"role": "system", "content": JUDGE_INSTRUCTIONS},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


_MARK = {key: re.compile(rf"answer[ _-]?{key}\D{{0,6}}?(\d+(?:\.\d+)?)", re.IGNORECASE) for key in ("1", "2")}


def parse_marks(reply: str) -> tuple[float, float] | None:
    """The two 0-10 marks in a judge's reply, as 0-1 scores; None when it gave none."""
    marks: dict[str, float] = {}
    try:
        value = parse_json_answer(reply)
        if isinstance(value, dict):
            for key in ("1", "2"):
                mark = value.get(f"answer_{key}")
                if isinstance(mark, int | float) and not isinstance(mark, bool):
                    marks[key] = float(mark)
    except ValueError:
        pass
    for key in ("1", "2"):
        if key not in marks:
            found = _MARK[key].search(reply)
            if found:
                marks[key] = float(found.group(1))
    if len(marks) != 2:
        return None
    return (min(max(marks["1"], 0.0), 10.0) / 10, min(max(marks["2"], 0.0), 10.0) / 10)


def judge_pair(
    client: openai.OpenAI,
    judge: Endpoint,
    task: Task,
    answer_a: Answer,
    answer_b: Answer,
    deadline: float | None = None,
) -> JudgeVerdict:
    """Both answers graded blind, once in each order; the two rounds are averaged."""
    if not answer_a.ok and not answer_b.ok:
        return JudgeVerdict(0.0, 0.0, rounds=0)
    text_a = answer_a.output if answer_a.ok else NO_ANSWER
    text_b = answer_b.output if answer_b.ok else NO_ANSWER
    a_marks: list[float] = []
    b_marks: list[float] = []
    problems: list[str] = []
    for a_first in (True, False):
        first, second = (text_a, text_b) if a_first else (text_b, text_a)
        reply = chat(
            client, judge, judge_prompt(task, first, second), max_tokens=JUDGE_MAX_TOKENS, deadline=deadline
        )
        if not reply.ok:
            problems.append(f"judge failed: {reply.error}")
            continue
        marks = parse_marks(reply.output)
        if marks is None:
            problems.append(f"judge gave no marks: {reply.output[:120]!r}")
            continue
        a_marks.append(marks[0] if a_first else marks[1])
        b_marks.append(marks[1] if a_first else marks[0])
    if not a_marks:
        return JudgeVerdict(None, None, rounds=0, error="; ".join(problems))
    a_score = sum(a_marks) / len(a_marks) if answer_a.ok else 0.0
    b_score = sum(b_marks) / len(b_marks) if answer_b.ok else 0.0
    return JudgeVerdict(a_score, b_score, rounds=len(a_marks), error="; ".join(problems) or None)
