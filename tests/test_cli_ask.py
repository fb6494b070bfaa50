"""`sizing ask` and `sizing chat` end to end: the real CLI (`python -m assistant`) in subprocesses.

One small article index (an article pair written here) is built once for the module with `sizing ingest`
in a temporary data folder, so every question also exercises the real embedded retrieval.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.article_pair import write_articles
from tests.servers import free_port
from tests.sizing_cli import REPLY_JSON_FIELDS, run_sizing
from tools import SizingRequest, calculate_vram

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    home = tmp_path_factory.mktemp("sizing-ask")
    articles = write_articles(home / "articles")
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "SIZING_DATA_DIR": str(home / "data"),
        "SIZING_ARTICLES_DIR": str(articles),
        "SIZING_LOG_LEVEL": "WARNING",
    }
    ingest = run_sizing("ingest", env=environment, timeout=300)
    assert ingest.returncode == 0, ingest.stderr
    yield environment


def sizing(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_sizing(*args, env=env, stdin=stdin, timeout=120)


def test_ask_json(env: dict[str, str]) -> None:
    proc = sizing("ask", "¿Cabe Llama 3.1 70B a 4 bits en una L40S con 20 usuarios?", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == REPLY_JSON_FIELDS
    assert data["language"] == "es" and data["mode"] == "offline" and data["notice"] is None
    assert data["missing"] == ["tasks", "context"]
    on_card = calculate_vram(
        SizingRequest(model="llama-3.1-70b", precision="int4", users=20, gpu="l40s", lang="es")
    )
    # Each calculation is exactly the `sizing calc --json` object.
    assert data["calculations"][0] == on_card.model_dump(mode="json")
    assert "no cabe" in data["answer"] and on_card.caveat in data["answer"]
    assert data["sources"] and set(data["sources"][0]) == {"title", "path", "section"}
    assert all(source["path"].startswith("es/") for source in data["sources"])


def test_ask_prints_markdown(env: dict[str, str]) -> None:
    proc = sizing("ask", "What GPU do I need for Qwen2.5 32B at 8 bits?", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "**The arithmetic**" in proc.stdout and "Qwen2.5 32B at 8-bit (INT8)" in proc.stdout
    assert proc.stdout.rstrip().endswith("?")  # the one follow-up question
    assert "Traceback" not in proc.stderr


def test_batch_file_one_json_object_per_line(env: dict[str, str], tmp_path: Path) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text(
        "What GPU for a 70B?\n\n¿Cuánta calidad se pierde con 4 bits?\nWrite me a poem\n", "utf-8"
    )
    proc = sizing("ask", "--batch", str(questions), env=env)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["question"] for line in lines] == [
        "What GPU for a 70B?",
        "¿Cuánta calidad se pierde con 4 bits?",
        "Write me a poem",
    ]
    assert [len(line["calculations"]) for line in lines] == [3, 0, 0]
    assert [line["language"] for line in lines] == ["en", "es", "en"]
    # Questions in a batch are independent: no slot leaks from the first line into the third.
    assert lines[2]["missing"] == []


def test_batch_from_stdin(env: dict[str, str]) -> None:
    proc = sizing("ask", "--batch", "-", "--json", env=env, stdin="Mistral 7B on an L4\n")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert json.loads(line)["calculations"][0]["options"][0]["card"] == "l4"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ask",), "no question given"),
        (("ask", "   "), "no question given"),
        (("ask", "--batch", "/nonexistent/questions.txt"), "cannot read the batch file"),
        (("ask", "70B?", "--batch", "-"), "not both"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(env: dict[str, str], args: tuple[str, ...], message: str) -> None:
    proc = sizing(*args, env=env, stdin="")
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_chat_keeps_slots_across_turns_from_a_pipe(env: dict[str, str]) -> None:
    turns = "What GPU for Qwen2.5 32B?\n\nat 8 bits for 12 users\nexit\nthis line is never read\n"
    proc = sizing("chat", "--json", env=env, stdin=turns)
    assert proc.returncode == 0, proc.stderr
    first, second = (json.loads(line) for line in proc.stdout.splitlines())
    assert [c["precision"] for c in first["calculations"]] == ["bf16", "int8", "int4"]
    assert [(c["model"]["id"], c["precision"], c["users"]) for c in second["calculations"]] == [
        ("qwen2.5-32b", "int8", 12)
    ]
    assert second["missing"] == ["tasks", "context"]


def test_chat_markdown_ends_at_end_of_input(env: dict[str, str]) -> None:
    proc = sizing("chat", env=env, stdin="Hola\n¿y para un 70B?\n")
    assert proc.returncode == 0, proc.stderr
    assert "¡Hola!" in proc.stdout and "no indicó la precisión" in proc.stdout


def test_unreachable_llm_falls_back_to_the_offline_answer(env: dict[str, str]) -> None:
    llm_env = {**env, "SIZING_LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "SIZING_LLM_MODEL": "x"}
    proc = sizing("ask", "Llama 3.1 70B at 4 bits", "--json", env=llm_env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["mode"] == "offline" and data["notice"].startswith("The language model is unavailable")
    assert data["calculations"][0]["precision"] == "int4"
