"""Mistyped commands get one line naming the bad value and what is valid, and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sizing_cli import run_sizing

pytestmark = pytest.mark.e2e


def env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SIZING_DATA_DIR": str(tmp_path / "data")}


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["calc", "70b", "--measurements", "/no/such/measured.json"], ["/no/such/measured.json", "no such file"]),
        (["calc", "-70b"], ["'-70b'", "without a dash", "'70b'"]),
        (["calc", "70", "b"], ["'b'", "one word", "'70b'"]),
        (["calc", "70b", "--bogus"], ["unknown option '--bogus'"]),
        (["calc", "70"], ["did you mean '70b'?"]),
        (["calc", "70b", "--users", "maxx"], ["'maxx'", "max"]),
        (["draft", "--file", "/dev/null"], ["empty"]),
        (["draft", "--file", "no-such-email.txt"], ["no-such-email.txt", "no such file"]),
        (["leads", "delete", "--email", "notanemail"], ["'notanemail'", "name@company.com"]),
        (["report", "--low-score", "5"], ["'5'", "from 0 to 1"]),
        (["report", "--low-score", "-0.2"], ["from 0 to 1"]),
        (["calibrate", "add"], ["required: --model"]),
        (
            ["calibrate", "add", "--model", "70b", "--gpu", "h100", "--users", "8", "--input-len", "100",
             "--output-len", "100", "--ttft-ms", "100", "--tpot-ms", "14", "--total-tok-s", "99999999"],
            ["--total-tok-s", "contradicts", "571"],
        ),
    ],
)  # fmt: skip
def test_a_mistyped_command_is_one_line_and_exit_2(
    args: list[str], needles: list[str], tmp_path: Path
) -> None:
    proc = run_sizing(*args, env=env(tmp_path))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr and "usage:" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "no such file"), (b"\xff\xfe\x00bad", "not UTF-8 text")],
)
def test_ask_batch_file_errors_are_words_not_errno(
    content: bytes | None, reason: str, tmp_path: Path
) -> None:
    batch = tmp_path / "questions.txt"
    if content is not None:
        batch.write_bytes(content)
    proc = run_sizing("ask", "--batch", str(batch), env=env(tmp_path))
    assert proc.returncode == 2 and reason in proc.stderr
    assert "Errno" not in proc.stderr and "codec" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_consistent_measurement_is_still_accepted(tmp_path: Path) -> None:
    measured = tmp_path / "measured.json"
    proc = run_sizing(
        "calibrate", "add", "--model", "70b", "--gpu", "h100", "--users", "8", "--input-len", "100",
        "--output-len", "100", "--ttft-ms", "100", "--tpot-ms", "14", "--total-tok-s", "500",
        "--file", str(measured), env=env(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
