"""`sizing calc` performance flags and `sizing calibrate`, end to end in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.cli.calc import parse_rate
from tests.sizing_cli import run_sizing
from tools.errors import InvalidInputError

pytestmark = pytest.mark.e2e


def sizing(*args: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SIZING_DATA_DIR": str(tmp_path / "data")}
    return run_sizing(*args, env=env, timeout=120)


@pytest.mark.parametrize(
    ("text", "per_s"),
    [
        ("2", 2.0),
        ("2/s", 2.0),
        ("30/min", 0.5),
        ("360/h", 0.1),
        ("1.5 / min", 0.025),
        ("86400/day", 1.0),
        ("43.2k/d", 0.5),
    ],
)
def test_rate_accepts_per_second_minute_hour(text: str, per_s: float) -> None:
    assert parse_rate(text) == pytest.approx(per_s)


@pytest.mark.parametrize("text", ["0", "0/min", "-1", "fast", "3/fortnight", "2kk/s"])
def test_bad_rate_is_refused(text: str) -> None:
    with pytest.raises(InvalidInputError):
        parse_rate(text)


def test_json_has_performance_on_every_option_and_the_recommended(tmp_path: Path) -> None:
    proc = sizing(
        "calc", "llama-3.1-8b", "--rate", "30/min", "--input-len", "2000", "--output-len", "300",
        "--service", "interactive_chat", "--json", tmp_path=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    perf = data["performance"]
    assert perf["input_len"] == 2000 and perf["output_len"] == 300
    assert perf["requests_per_s"]["best"] == pytest.approx(0.5, rel=1e-3)
    for key in ("concurrency", "ttft_ms", "tpot_ms", "output_tok_s_per_user", "output_tok_s_total"):
        assert set(perf[key]) == {"low", "best", "high"}
    assert perf["basis"] in ("model", "measured", "scaled") and perf["meets_target"] in (True, False)
    assert all(o["performance"] for o in data["options"] if o["max_concurrent_sequences"])


def test_table_has_speed_columns_and_line(tmp_path: Path) -> None:
    proc = sizing("calc", "llama-3.1-8b", "--gpu", "h100-80gb", "--users", "max", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "TTFT ms" in proc.stdout and "tok/s/user" in proc.stdout and "tok/s total" in proc.stdout
    assert "Speed:" in proc.stdout and "tokens/s per user" in proc.stdout
    spanish = sizing("calc", "8b", "--service", "voice_agent", "--lang", "es", tmp_path=tmp_path)
    assert spanish.returncode == 0 and "Velocidad:" in spanish.stdout and "tok/s/usuario" in spanish.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--rate", "0"], "--rate"),
        (["--rate", "30/fortnight"], "--rate"),
        (["--input-len", "-5"], "--input-len"),
        (["--output-len", "abc"], "--output-len"),
        (["--service", "fast"], "interactive_chat"),
        (["--users", "maxx"], "--users"),
        (["--ttft-ms", "-3"], "--ttft-ms"),
        (["--input-len", "9000"], "exceeds the context"),
    ],
)
def test_bad_performance_flags_are_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = sizing("calc", "llama-3.1-8b", *args, tmp_path=tmp_path)
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr and needle in lines[0]


def test_calibrate_add_then_calc_reports_measured(tmp_path: Path) -> None:
    store = tmp_path / "measured.json"
    report = tmp_path / "loadtest.json"
    report.write_text(
        json.dumps(
            {
                "url": "http://gpu-1:8000/v1", "requests": 64, "users": 8, "prompt_tokens": 1024, "max_tokens": 256,
                "ttft_ms_p50": 180.0, "tokens_per_s_per_user": 50.0, "tokens_per_s": 390.0,
            }
        ),
        encoding="utf-8",
    )  # fmt: skip
    added = sizing(
        "calibrate", "add", "--model", "Llama 3.1 8B", "--gpu", "h100-80gb", "--from-loadtest", str(report),
        "--file", str(store), tmp_path=tmp_path,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = sizing("calibrate", "list", "--file", str(store), tmp_path=tmp_path)
    assert "llama-3.1-8b" in listed.stdout and "8 users" in listed.stdout
    calc = sizing(
        "calc", "llama-3.1-8b", "--gpu", "h100-80gb", "--users", "8", "--input-len", "1024", "--output-len", "256",
        "--measurements", str(store), "--json", tmp_path=tmp_path,
    )  # fmt: skip
    assert calc.returncode == 0, calc.stderr
    perf = json.loads(calc.stdout)["performance"]
    assert (
        perf["basis"] == "measured" and perf["ttft_ms"]["best"] == 180.0 and perf["tpot_ms"]["best"] == 20.0
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "llama-3.1-8b", "--gpu", "h100-80gb"], "--users"),
        (
            ["--model", "no-such", "--gpu", "h100-80gb", "--users", "1", "--input-len", "1", "--output-len", "1",
             "--ttft-ms", "1", "--tpot-ms", "1"],
            "valid choices",
        ),
        (["--model", "8b", "--gpu", "h100-80gb", "--from-loadtest", "/no/such.json"], "/no/such.json"),
        (
            ["--model", "8b", "--gpu", "h100-80gb", "--users", "0", "--input-len", "1", "--output-len", "1",
             "--ttft-ms", "1", "--tpot-ms", "1"],
            "--users",
        ),
    ],
)  # fmt: skip
def test_bad_calibrate_input_is_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = sizing("calibrate", "add", *args, "--file", str(tmp_path / "m.json"), tmp_path=tmp_path)
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr


def test_calibrate_from_a_vllm_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    stats = "INFO 11-30 10:0{i}:00 [loggers.py:123] Engine 000: Avg prompt throughput: 812.0 tokens/s, "
    log.write_text(
        "\n".join(
            [
                "INFO starting vLLM",
                *(stats.format(i=i) + f"Avg generation throughput: {g} tokens/s, Running: {r} reqs, Waiting: 0 reqs"
                  for i, (g, r) in enumerate([(0.0, 0), (780.0, 16), (800.0, 16), (820.0, 16)])),
            ]
        ),
        encoding="utf-8",
    )  # fmt: skip
    store = tmp_path / "measured.json"
    added = sizing(
        "calibrate", "add", "--model", "llama-3.1-8b", "--gpu", "h100-80gb", "--from-vllm-log", str(log),
        "--input-len", "1024", "--output-len", "256", "--file", str(store), tmp_path=tmp_path,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "16 users" in added.stdout and "TTFT not measured" in added.stdout
    row = json.loads(store.read_text(encoding="utf-8"))["measurements"][0]
    assert row["concurrency"] == 16 and row["tpot_ms"] == pytest.approx(20.0) and row["ttft_ms"] is None
    calc = sizing(
        "calc", "llama-3.1-8b", "--gpu", "h100-80gb", "--users", "16", "--measurements", str(store), "--json",
        tmp_path=tmp_path,
    )  # fmt: skip
    perf = json.loads(calc.stdout)["performance"]
    assert perf["basis"] == "measured" and perf["tpot_ms"]["best"] == pytest.approx(20.0)
    assert perf["ttft_ms"]["low"] < perf["ttft_ms"]["best"] < perf["ttft_ms"]["high"]  # still the model's
    empty = tmp_path / "idle.log"
    empty.write_text("INFO nothing running\n", encoding="utf-8")
    bad = sizing(
        "calibrate", "add", "--model", "8b", "--gpu", "h100-80gb", "--from-vllm-log", str(empty),
        "--input-len", "1", "--output-len", "1", "--file", str(store), tmp_path=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Running" in bad.stderr
