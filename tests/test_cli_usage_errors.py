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


def test_the_first_ask_prints_no_index_build_progress_unless_asked_for(tmp_path: Path) -> None:
    quiet = run_sizing("ask", "what gpu for 70b", env=env(tmp_path))
    assert quiet.returncode == 0, quiet.stderr
    assert "INFO" not in quiet.stderr and "building it" not in quiet.stderr
    verbose = run_sizing(
        "ask", "what gpu for 70b", env={**env(tmp_path / "again"), "SIZING_LOG_LEVEL": "INFO"}
    )
    assert "INFO sizing.knowledge" in verbose.stderr


class NoAnswers:
    mode = "offline"

    def answer(self, message: str, state: object) -> object:
        raise AssertionError(f"a command reached the assistant: {message!r}")


@pytest.mark.parametrize(("line", "unknown"), [("/frobnicate", True), ("/help", False)])
def test_chat_lists_the_commands_for_an_unknown_one(line: str, unknown: bool) -> None:
    import io

    from assistant.cli.ask import chat_loop

    out, err = io.StringIO(), io.StringIO()
    assert chat_loop(NoAnswers(), io.StringIO(f"{line}\nexit\n"), out, err) == 0  # type: ignore[arg-type]
    assert ("unknown command '/frobnicate'" in err.getvalue()) is unknown
    assert "/state" in err.getvalue() and "/reset" in err.getvalue() and out.getvalue() == ""
