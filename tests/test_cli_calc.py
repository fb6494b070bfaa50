"""`sizing calc` end to end: the real console script in a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIZING = ROOT / ".venv" / "bin" / "sizing"

pytestmark = pytest.mark.e2e


def sizing(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SIZING_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run([str(SIZING), "calc", *args], capture_output=True, text=True, env=env, timeout=120)


def test_json_is_the_result_object(tmp_path: Path) -> None:
    proc = sizing("llama-3.1-70b", "--precision", "awq", "--users", "4", "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (
        data["model"]["id"] == "llama-3.1-70b"
        and data["model"]["kv_heads"] == 8
        and data["model"]["head_dim"] == 128
    )
    assert data["precision"] == "awq" and data["users"] == 4 and data["engine"] == "vllm"
    assert [o["card_class"] for o in data["options"]] == ["48gb", "80gb", "2x80gb"]
    assert data["recommended"] == "80gb" and data["caveat"] and "sizing compare" in data["caveat"]
    assert data["kv_bytes_per_token"] == 327_680 and data["weights_gb"] > 35


def test_table_shows_options_and_arithmetic(tmp_path: Path) -> None:
    proc = sizing("Llama 3.1 8B", "--gpu", "rtx-4090", "--context", "32k", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "RTX 4090" in out and "Arithmetic:" in out and "Weights: 8.03 B parameters" in out
    assert "32,768 tokens" in out and "GB = 10^9 bytes" in out


def test_config_path_and_spanish(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
        ),
        encoding="utf-8",
    )  # fmt: skip
    proc = sizing("mi-modelo", "--config", str(config), "--lang", "es", "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["model"]["name"] == "mi-modelo" and data["model"]["params"] == 8_030_261_248
    assert data["arithmetic"][0].startswith("Pesos:")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["70b", "--users", "0"], "users"),
        (["70b", "--context", "-5"], "--context"),
        (["no-such-model"], "valid choices"),
        (["70b", "--precision", "q4"], "q4_k_m"),
        (["70b", "--gpu", "h900"], "h100-80gb"),
        (["70b", "--engine", "tgi"], "llamacpp"),
        (["70b", "--kv-dtype", "int2"], "q8_0"),
        (["70b", "--lang", "fr"], "en, es"),
        (["x", "--config", "/no/such/config.json"], "/no/such/config.json"),
        ([], "MODEL"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = sizing(*args, tmp_path=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert needle in lines[0]


def test_unreadable_config_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json", encoding="utf-8")
    proc = sizing("x", "--config", str(bad), tmp_path=tmp_path)
    assert (
        proc.returncode == 2
        and "not valid JSON" in proc.stderr
        and len(proc.stderr.strip().splitlines()) == 1
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("deepseek-r1",), "DeepSeek R1 is sized as DeepSeek V3 (671B)"),
        (("DeepSeek R1", "--lang", "es"), "DeepSeek R1 se dimensiona como DeepSeek V3 (671B)"),
    ],
)
def test_a_released_model_says_which_entry_it_was_sized_as(
    args: tuple[str, ...], said: str, tmp_path: Path
) -> None:
    proc = sizing(*args, "--gpu", "h200:8", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].startswith(said)
    plain = sizing("deepseek-v3", "--gpu", "h200:8", tmp_path=tmp_path)
    assert "is sized as" not in plain.stdout
