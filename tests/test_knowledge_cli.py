"""`sizing ingest` and `sizing search` end to end: the real CLI in a subprocess, offline."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.article_pair import WEIGHTS_AND_CARDS, write_articles
from tests.sizing_cli import run_sizing as sizing

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    articles = write_articles(tmp_path / "articles", WEIGHTS_AND_CARDS)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "SIZING_DATA_DIR": str(tmp_path / "data"),
        "SIZING_ARTICLES_DIR": str(articles),
    }


def test_ingest_json_then_idempotent_rerun_then_search(env: dict[str, str], tmp_path: Path) -> None:
    first = sizing("ingest", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"chunks": 5, "added": 5, "updated": 0, "removed": 0}
    assert (tmp_path / "data" / "chroma").is_dir()

    again = sizing("ingest", "--json", env=env)
    assert json.loads(again.stdout) == {"chunks": 5, "added": 0, "updated": 0, "removed": 0}

    found = sizing(
        "search", "¿Cuánto crece la caché KV con los usuarios?", "--k", "2", "--lang", "en", "--json", env=env
    )
    assert found.returncode == 0, found.stderr
    passages = json.loads(found.stdout)
    assert len(passages) == 2
    assert set(passages[0]) == {"text", "title", "path", "section", "lang", "score"}
    assert (passages[0]["path"], passages[0]["section"]) == ("en/weights.md", "KV cache")
    assert all(p["lang"] == "en" for p in passages)
    assert passages[0]["score"] >= passages[1]["score"]

    rebuilt = sizing("ingest", "--rebuild", "--json", env=env)
    assert json.loads(rebuilt.stdout) == {"chunks": 5, "added": 5, "updated": 0, "removed": 0}


def test_search_on_a_fresh_machine_builds_the_index_first(env: dict[str, str]) -> None:
    found = sizing("search", "bytes per parameter at 8 bits", env=env)
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("1. Model weights › Bytes per parameter")


def test_malformed_article_is_named_and_skipped(env: dict[str, str]) -> None:
    write_articles(Path(env["SIZING_ARTICLES_DIR"]), {"es/roto.md": "---\ntitle: [roto\n---\n## A\ntexto\n"})
    result = sizing("ingest", env=env)
    assert result.returncode == 0
    assert result.stdout.strip() == "5 sections indexed: 5 added, 0 updated, 0 removed"
    assert "skipped malformed article es/roto.md: front matter is not valid YAML" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "x", "--lang", "fr"), "invalid choice: 'fr'"),
        (("search", "x", "--k", "0"), "must be at least 1"),
    ],
)
def test_bad_arguments_are_one_clear_line(env: dict[str, str], args: tuple[str, ...], message: str) -> None:
    result = sizing(*args, env=env)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_unreachable_chroma_server_is_one_line_exit_2(env: dict[str, str]) -> None:
    result = sizing("search", "anything", env={**env, "SIZING_CHROMA_URL": "http://127.0.0.1:9"})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Chroma server at http://127.0.0.1:9 unreachable" in lines[0]


def test_cli_against_a_real_chroma_server(env: dict[str, str], chroma_server: str) -> None:
    server_env = {**env, "SIZING_CHROMA_URL": chroma_server, "SIZING_COLLECTION": "cli-articles"}
    first = sizing("ingest", "--json", env=server_env)
    assert json.loads(first.stdout) == {"chunks": 5, "added": 5, "updated": 0, "removed": 0}, first.stderr
    found = sizing(
        "search", "how much does each user add to memory", "--lang", "es", "--json", env=server_env
    )
    assert json.loads(found.stdout)[0]["section"] == "Caché KV"
