"""Reports: side by side, escaped, with totals; the blind sheet hides who wrote what."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from assistant.evals.client import Answer, Endpoint
from assistant.evals.compare import ComparePlan, CompareReport, TaskResult, summarize
from assistant.evals.report import render_blind, render_html, render_markdown
from assistant.evals.tasks import parse_tasks

HOSTILE = '<script>alert("x")</script> & <b>bold</b>'


def _report(results: list[TaskResult], total: int | None = None) -> CompareReport:
    tasks = parse_tasks("\n".join(json.dumps({"id": r.key, "prompt": r.prompt}) for r in results))
    plan = ComparePlan(
        a=Endpoint("http://127.0.0.1:8001/v1", "llama-70b-bf16"),
        b=Endpoint("http://127.0.0.1:8002/v1", "llama-70b-awq"),
        tasks=tasks,
    )
    report = summarize(plan, results)
    return report.model_copy(update={"total_tasks": total or len(results)})


def _result(
    index: int, a_out: str, b_out: str, a_score: float | None, b_score: float | None, **kw: object
) -> TaskResult:
    return TaskResult(
        index=index,
        key=f"t{index}",
        category=str(kw.get("category", "qa")),
        prompt=str(kw.get("prompt", f"question {index}")),
        scorer=str(kw.get("scorer", "contains")),
        expected=kw.get("expected", "x"),  # type: ignore[arg-type]
        a=Answer(output=a_out, latency_ms=100.0 + index, completion_tokens=5),
        b=Answer(output=b_out, latency_ms=50.0 + index, completion_tokens=4, error=kw.get("b_error")),  # type: ignore[arg-type]
        a_score=a_score,
        b_score=b_score,
    )


class _Rows(HTMLParser):
    """Collects the text of each table row's cells."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _rows(html: str) -> list[list[str]]:
    parser = _Rows()
    parser.feed(html)
    return parser.rows


def test_html_puts_both_answers_of_a_task_in_one_row_with_scores_and_latency() -> None:
    report = _report(
        [
            _result(0, "48 GB class", "80 GB class", 1.0, 0.0, prompt="Which class?"),
            _result(1, "billing", "billing", 1.0, 1.0, scorer="exact", category="cls"),
        ]
    )
    html = render_html(report)
    rows = _rows(html)
    task_row = next(row for row in rows if row and "Which class?" in row[0])
    assert "48 GB class" in task_row[1] and "score 1.00" in task_row[1] and "100 ms" in task_row[1]
    assert "80 GB class" in task_row[2] and "score 0.00" in task_row[2] and "50 ms" in task_row[2]
    totals = {row[0]: row[1:] for row in rows if len(row) == 3}
    assert totals["score (mean over scored tasks)"] == ["1.00", "0.50"]
    assert totals["scorer: contains"] == ["1.00", "0.00"]
    assert totals["scorer: exact"] == ["1.00", "1.00"]
    assert totals["category: cls"] == ["1.00", "1.00"]
    assert totals["latency p50"] == ["100 ms", "50 ms"]
    assert "llama-70b-awq" in html and "http://127.0.0.1:8002/v1" in html
    assert 'class="answer better"' in html and 'class="answer worse"' in html


def test_everything_from_endpoints_and_tasks_is_escaped() -> None:
    report = _report(
        [_result(0, HOSTILE, "fine", 0.0, 1.0, prompt=HOSTILE, expected=HOSTILE, b_error=HOSTILE)]
    )
    for html in (render_html(report), render_blind(report, seed=1)[0]):
        assert "<script>" not in html and "<b>bold</b>" not in html
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html


def test_failed_call_is_shown_as_a_failure() -> None:
    report = _report([_result(0, "ok", "", 1.0, 0.0, b_error="HTTP 500: boom")])
    html = render_html(report)
    assert '<div class="error">failed: HTTP 500: boom</div>' in html
    assert "failed calls" in html
    markdown = render_markdown(report)
    assert "Failed calls on 1 task, e.g. `t0`: HTTP 500: boom" in markdown


def test_partial_report_says_so() -> None:
    report = _report([_result(0, "a", "b", 1.0, 1.0)], total=4)
    assert not report.complete
    assert "Partial report: 1 of 4 tasks finished" in render_html(report)
    assert "**Partial:** 1 of 4 tasks finished." in render_markdown(report)


def test_markdown_summary_has_totals_headline_and_largest_gaps() -> None:
    report = _report(
        [
            _result(0, "a", "b", 1.0, 0.0, prompt="the big miss"),
            _result(1, "a", "b", 1.0, 0.5, prompt="the half miss"),
            _result(2, "a", "b", 1.0, 1.0, prompt="the tie"),
        ]
    )
    markdown = render_markdown(report)
    assert "| score (mean over scored tasks) | 1.00 | 0.50 |" in markdown
    assert "B scores 0.50 below A (-50%) over 3 scored tasks" in markdown
    assert "B's median latency is 0.50× A's" in markdown
    gaps = [line for line in markdown.splitlines() if line.startswith("- `")]
    assert [g.split("`")[1] for g in gaps] == ["t0", "t1"]  # largest first, ties left out
    assert markdown.count("|") > 20


def test_blind_sheet_hides_models_scores_and_latency_and_the_key_unblinds_it() -> None:
    results = [_result(i, f"answer-from-A-{i}", f"answer-from-B-{i}", 1.0, 0.0) for i in range(20)]
    report = _report(results)
    html, key = render_blind(report, seed=7)
    for secret in ("llama-70b-bf16", "llama-70b-awq", "8001", "8002", "answer better", "answer worse"):
        assert secret not in html
    assert not re.search(r"score \d|\d ms|output tokens", html)
    assert key["a"]["model"] == "llama-70b-bf16" and key["seed"] == 7
    orders = set()
    for row in _rows(html)[1:]:
        task_key = re.search(r"t\d+", row[0])
        assert task_key
        mapping = key["tasks"][task_key.group(0)]
        first_writer = "A" if "answer-from-A" in row[1] else "B"
        assert mapping["1"] == first_writer.lower()
        orders.add(mapping["1"])
    assert orders == {"a", "b"}  # shuffled, not always A first
    assert render_blind(report, seed=7) == (html, key)  # a seed reproduces the sheet


def test_counts_agree_with_their_nouns() -> None:
    one = _report([_result(0, "a", "", 1.0, 0.0, b_error="HTTP 500: boom")], total=1)
    markdown = render_markdown(one)
    assert "B scores 1.00 below A (-100%) over 1 scored task.\n" in markdown
    assert "Failed calls on 1 task," in markdown and "(s)" not in markdown
    partial = _report([_result(0, "a", "b", 1.0, 1.0)], total=1).model_copy(update={"tasks": []})
    assert "**Partial:** 0 of 1 task finished." in render_markdown(partial)
    assert "Partial report: 0 of 1 task finished" in render_html(partial)
