"""The reports of `sizing compare`: side-by-side HTML, a Markdown summary, a blind review sheet.

Everything an endpoint or a task file wrote is HTML-escaped: answers are untrusted text.
"""

from __future__ import annotations

import json
import random
from html import escape
from typing import Any

from assistant.evals.compare import CompareReport, SideSummary, TaskResult
from assistant.evals.stats import counted

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1b1b1b}
table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}
table.totals{width:auto;min-width:40%}
th,td{border:1px solid #ccc;padding:.4rem .5rem;vertical-align:top;text-align:left}
th{background:#f2f2f2}
td.answer{width:38%}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font-family:ui-monospace,monospace;font-size:.85rem}
.meta{color:#555;font-size:.8rem;margin-top:.3rem}
.error{color:#a00;font-weight:600}
.better{background:#e9f7ec}.worse{background:#fbeaea}
.notice{background:#fff6d6;padding:.5rem;border:1px solid #e0c860}
"""


def _fmt_score(score: float | None) -> str:
    return "—" if score is None else f"{score:.2f}"


def _fmt_ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} ms"


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def _interrupted_notice(report: CompareReport) -> str:
    if report.complete:
        return ""
    return (
        f'<p class="notice">Partial report: {len(report.tasks)} of {counted(report.total_tasks, "task")} finished '
        "(the run was interrupted; rerun with <code>--resume</code> to finish it).</p>"
    )


def _summary_rows(report: CompareReport) -> list[tuple[str, str, str]]:
    a, b = report.a, report.b
    rows = [
        ("score (mean over scored tasks)", _fmt_score(a.score), _fmt_score(b.score)),
        ("scored tasks", str(a.scored_tasks), str(b.scored_tasks)),
        ("failed calls", str(a.errors), str(b.errors)),
        ("latency p50", _fmt_ms(a.latency_ms_p50), _fmt_ms(b.latency_ms_p50)),
        ("latency p95", _fmt_ms(a.latency_ms_p95), _fmt_ms(b.latency_ms_p95)),
        ("output tokens", f"{a.completion_tokens:,}", f"{b.completion_tokens:,}"),
    ]
    for scorer in sorted(set(a.by_scorer) | set(b.by_scorer)):
        rows.append(
            (f"scorer: {scorer}", _fmt_score(a.by_scorer.get(scorer)), _fmt_score(b.by_scorer.get(scorer)))
        )
    for category in sorted(set(a.by_category) | set(b.by_category)):
        rows.append(
            (
                f"category: {category}",
                _fmt_score(a.by_category.get(category)),
                _fmt_score(b.by_category.get(category)),
            )
        )
    return rows


def _answer_cell(answer_score: float | None, other_score: float | None, answer: Any, blind: bool) -> str:
    verdict = ""
    if not blind and answer_score is not None and other_score is not None and answer_score != other_score:
        verdict = "better" if answer_score > other_score else "worse"
    parts = [f'<td class="answer {verdict}">']
    if answer.error:
        parts.append(f'<div class="error">failed: {escape(answer.error)}</div>')
    if answer.output:
        parts.append(f"<pre>{escape(answer.output)}</pre>")
    if not blind:
        tokens = "—" if answer.completion_tokens is None else str(answer.completion_tokens)
        parts.append(
            f'<div class="meta">score {_fmt_score(answer_score)} · {_fmt_ms(answer.latency_ms)} · '
            f"{escape(tokens)} output tokens</div>"
        )
    parts.append("</td>")
    return "".join(parts)


def _task_cell(task: TaskResult) -> str:
    meta = [f"#{task.index + 1}", escape(task.key)]
    if task.category:
        meta.append(escape(task.category))
    meta.append(f"scorer: {escape(task.scorer or 'none (human review)')}")
    cell = f'<td><pre>{escape(task.prompt)}</pre><div class="meta">{" · ".join(meta)}</div>'
    if task.expected is not None:
        expected = (
            task.expected if isinstance(task.expected, str) else json.dumps(task.expected, ensure_ascii=False)
        )
        cell += f'<div class="meta">expected: <code>{escape(expected)}</code></div>'
    if task.judge_note:
        cell += f'<div class="meta error">{escape(task.judge_note)}</div>'
    return cell + "</td>"


def render_html(report: CompareReport) -> str:
    """The side-by-side report: totals, then every task with its two answers next to each other."""
    a, b = report.a, report.b
    title = f"Compare: A = {a.model} vs B = {b.model}"
    head = [
        f"<h1>{escape(title)}</h1>",
        f"<p>A: <code>{escape(a.model)}</code> at <code>{escape(a.url)}</code><br>"
        f"B: <code>{escape(b.model)}</code> at <code>{escape(b.url)}</code>"
        + (f"<br>Judge: <code>{escape(report.judge)}</code>" if report.judge else "")
        + f"<br>Finished {escape(report.finished_at)}</p>",
        _interrupted_notice(report),
        '<h2>Totals</h2><table class="totals"><tr><th></th><th>A</th><th>B</th></tr>',
    ]
    for name, a_value, b_value in _summary_rows(report):
        head.append(f"<tr><th>{escape(name)}</th><td>{escape(a_value)}</td><td>{escape(b_value)}</td></tr>")
    head.append("</table>")
    rows = ["<h2>Tasks</h2><table><tr><th>task</th><th>A</th><th>B</th></tr>"]
    for task in report.tasks:
        rows.append(
            "<tr>"
            + _task_cell(task)
            + _answer_cell(task.a_score, task.b_score, task.a, blind=False)
            + _answer_cell(task.b_score, task.a_score, task.b, blind=False)
            + "</tr>"
        )
    rows.append("</table>")
    return _page(title, "\n".join(head + rows))


def render_blind(report: CompareReport, seed: int | None = None) -> tuple[str, dict[str, Any]]:
    """A review sheet with no model names, scores or latencies, and answers shuffled per task.

    Returns the HTML and the key (which endpoint wrote "Answer 1" / "Answer 2" of each task);
    keep the key away from the reviewer.
    """
    chooser = random.Random(seed)
    key: dict[str, Any] = {
        "a": {"model": report.a.model, "url": report.a.url},
        "b": {"model": report.b.model, "url": report.b.url},
        "seed": seed,
        "tasks": {},
    }
    rows = [
        "<h1>Blind review</h1>",
        "<p>Each task shows two answers from two systems, in random order. Mark the better one "
        "(or a tie) in the last column. Which system wrote which answer is in a separate key.</p>",
        _interrupted_notice(report),
        "<table><tr><th>task</th><th>Answer 1</th><th>Answer 2</th><th>better: 1 / 2 / tie</th></tr>",
    ]
    for task in report.tasks:
        a_first = chooser.random() < 0.5
        first, second = (task.a, task.b) if a_first else (task.b, task.a)
        key["tasks"][task.key] = {"1": "a", "2": "b"} if a_first else {"1": "b", "2": "a"}
        blind_task = task.model_copy(update={"judge_note": None})
        rows.append(
            "<tr>"
            + _task_cell(blind_task)
            + _answer_cell(None, None, first, blind=True)
            + _answer_cell(None, None, second, blind=True)
            + "<td></td></tr>"
        )
    rows.append("</table>")
    return _page("Blind review", "\n".join(rows)), key


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: CompareReport, largest_gaps: int = 5) -> str:
    """A short summary for a terminal, a ticket or a chat: totals and the tasks where A and B differ most."""
    a, b = report.a, report.b
    lines = [
        f"# Compare: A = {a.model} vs B = {b.model}",
        "",
        f"A: `{a.model}` at {a.url}  ",
        f"B: `{b.model}` at {b.url}" + (f"  \nJudge: `{report.judge}`" if report.judge else ""),
        "",
    ]
    if not report.complete:
        lines += [f"**Partial:** {len(report.tasks)} of {counted(report.total_tasks, 'task')} finished.", ""]
    lines += ["| | A | B |", "|---|---|---|"]
    lines += [f"| {_md_cell(n)} | {_md_cell(x)} | {_md_cell(y)} |" for n, x, y in _summary_rows(report)]
    lines += ["", _headline(a, b)]
    gaps = sorted(
        (
            t
            for t in report.tasks
            if t.a_score is not None and t.b_score is not None and t.a_score != t.b_score
        ),
        key=lambda t: (-abs((t.a_score or 0) - (t.b_score or 0)), t.index),
    )[:largest_gaps]
    if gaps:
        lines += ["", "Largest differences:", ""]
        for task in gaps:
            prompt = " ".join(task.prompt.split())
            prompt = prompt if len(prompt) <= 70 else prompt[:69] + "…"
            lines.append(
                f"- `{task.key}` ({task.scorer}): A {_fmt_score(task.a_score)}, B {_fmt_score(task.b_score)} — {prompt}"
            )
    failed = [t for t in report.tasks if t.a.error or t.b.error]
    if failed:
        lines += [
            "",
            f"Failed calls on {counted(len(failed), 'task')}, e.g. `{failed[0].key}`: "
            f"{failed[0].a.error or failed[0].b.error}",
        ]
    return "\n".join(lines) + "\n"


def _headline(a: SideSummary, b: SideSummary) -> str:
    """One sentence: how far B is from A on score and on latency."""
    parts = []
    if a.score is not None and b.score is not None:
        scored = counted(b.scored_tasks, "scored task")
        gap = b.score - a.score
        relative = f" ({gap / a.score:+.0%})" if a.score and gap else ""
        if gap:
            direction = "below" if gap < 0 else "above"
            parts.append(f"B scores {abs(gap):.2f} {direction} A{relative} over {scored}")
        else:
            parts.append(f"B scores the same as A over {scored}")
    if a.latency_ms_p50 and b.latency_ms_p50:
        parts.append(f"B's median latency is {b.latency_ms_p50 / a.latency_ms_p50:.2f}× A's")
    return ("; ".join(parts) + ".") if parts else "No scored task finished on both endpoints."
