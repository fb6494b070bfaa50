"""Promises of the foundation: settings documented, CLI errors are one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def test_every_setting_is_documented() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(SIZING_[A-Z_]+)`", page, flags=re.MULTILINE))
    fields = {f"SIZING_{name.upper()}" for name in Settings.model_fields}
    missing = fields - documented
    assert not missing, f"settings missing from docs/settings.md: {sorted(missing)}"
    stale = {name for name in documented if name not in fields}
    assert not stale, f"docs/settings.md documents settings that do not exist: {sorted(stale)}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unknown = {name for name in re.findall(r"`(SIZING_[A-Z_]+)`", readme) if name not in fields}
    assert not unknown, f"README names settings that do not exist: {sorted(unknown)}"


def test_every_setting_has_a_description() -> None:
    for name, field in Settings.model_fields.items():
        assert field.description, f"Settings.{name} has no description"


def test_settings_are_frozen_and_read_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIZING_PORT", "9999")
    settings = Settings()
    assert settings.port == 9999
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError on frozen models
        settings.port = 1  # type: ignore[misc]


@pytest.mark.e2e  # the CLI in a subprocess
def test_bad_setting_is_one_clear_line(tmp_path: Path) -> None:
    env = {"SIZING_PORT": "not-a-port", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", "calc", "8b"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "invalid setting" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_ci_script_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make test" in ci
    assert "make test" in readme and "make run" in readme
