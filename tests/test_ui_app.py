"""The web app builds without serving: its API endpoints, its health route, its CLI front door."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import gradio as gr
import pytest
from fastapi.testclient import TestClient

from assistant.settings import Settings
from assistant.ui import catalogue
from assistant.ui.app import build_i18n
from assistant.ui.labels import labels_es
from assistant.ui.session import VisitorSession
from tests import sizing_cli
from tests.ui_apps import build_app, build_http_app
from tests.ui_fakes import FakeAssistant

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, concurrency_limit=5, rate_limit_per_minute=7)


def endpoints(demo: gr.Blocks) -> dict[str | None, str]:
    """api_name -> visibility for every event with a backend function."""
    return {fn.api_name: fn.api_visibility for fn in demo.fns.values() if fn.fn is not None}


def test_the_app_builds_with_only_its_public_endpoints(settings: Settings) -> None:
    demo = build_app(FakeAssistant(), settings)
    assert isinstance(demo, gr.Blocks)
    visible = {name for name, visibility in endpoints(demo).items() if visibility != "private"}
    assert visible == {"chat", "calculate", "draft", "handoff"}


def test_chat_events_share_the_configured_concurrency_limit(settings: Settings) -> None:
    demo = build_app(FakeAssistant(), settings)
    chat = [fn for fn in demo.fns.values() if fn.concurrency_id == "chat"]
    assert len(chat) >= 2  # the streamed UI turn and the API share one queue slot pool
    assert {fn.concurrency_limit for fn in chat} == {5}
    assert demo._queue.default_concurrency_limit == 5  # type: ignore[attr-defined]


def test_visitor_state_starts_empty_and_is_not_shared(settings: Settings) -> None:
    demo = build_app(FakeAssistant(), settings)
    states = [block for block in demo.blocks.values() if isinstance(block, gr.State)]
    sessions = [state.value for state in states if isinstance(state.value, VisitorSession)]
    assert sessions == [VisitorSession()]
    # Two apps (two tests, two servers) never share a session object.
    other = build_app(FakeAssistant(), settings)
    other_sessions = [b.value for b in other.blocks.values() if isinstance(b, gr.State)]
    assert all(s is not sessions[0] for s in other_sessions)


def test_every_label_has_a_spanish_translation(settings: Settings) -> None:
    translations = build_i18n().translations
    labels = labels_es()  # the app's and the sales desk's, one table
    catalogue_labels = {key for key in catalogue.all_keys() if key.startswith(catalogue.LABEL_PREFIX)}
    expected = set(labels) | catalogue_labels
    assert set(translations["es"]) == set(translations["en"]) == expected
    assert {key: translations["es"][key] for key in labels} == labels
    for key in catalogue_labels:
        assert translations["es"][key] and translations["es"][key] != translations["en"][key]
    # The browser's i18n marker parser stops at "}".
    assert all("}" not in key for key in translations["en"])


def _compare_handlers(demo: gr.Blocks) -> list[object]:
    return [fn for fn in demo.fns.values() if fn.concurrency_id == "compare"]


def _tab_ids(demo: gr.Blocks) -> set[object]:
    return {block.id for block in demo.blocks.values() if isinstance(block, gr.Tab)}


# Host-gated parts of the app (the compare tab, the sales draft panel): built where the app binds
# loopback unless their setting says otherwise.
WHERE_ALLOWED = pytest.mark.parametrize(
    ("host", "setting", "shown"),
    [
        ("127.0.0.1", None, True),  # loopback: only this machine's user (staff) can reach it
        ("::1", None, True),
        ("localhost", None, True),
        # A public site: the compare form would let anyone make the server call any URL.
        ("0.0.0.0", None, False),
        ("10.1.2.3", None, False),
        ("sizing.example.com", None, False),  # public visitors don't get the staff tool
        ("0.0.0.0", True, True),  # an explicit setting wins either way
        ("127.0.0.1", False, False),
    ],
)


def _compare_tab_built(demo: gr.Blocks) -> list[bool]:
    # The tab, and the handler that sends requests from it.
    return ["compare" in _tab_ids(demo), bool(_compare_handlers(demo))]


def _sales_draft_panel_built(demo: gr.Blocks) -> list[bool]:
    return ["sales-draft" in {block.elem_id for block in demo.blocks.values()}]


# Each host-gated part, by its setting's name: what of it the built app holds.
GATED_PARTS = {"compare_tab": _compare_tab_built, "sales_draft_panel": _sales_draft_panel_built}


@pytest.mark.parametrize("part", sorted(GATED_PARTS))
@WHERE_ALLOWED
def test_a_host_gated_part_is_built_only_where_allowed(
    tmp_path: Path, part: str, host: str, setting: bool | None, shown: bool
) -> None:
    settings = Settings(data_dir=tmp_path, host=host, **{part: setting})  # type: ignore[arg-type]
    assert getattr(settings, f"{part}_enabled") is shown
    demo = build_app(FakeAssistant(), settings)
    for built in GATED_PARTS[part](demo):
        assert built is shown
    # The `draft` API stays either way (the public interface).
    assert any(fn.api_name == "draft" for fn in demo.fns.values())


def test_compare_tab_labels_have_spanish_translations() -> None:
    from assistant.ui.compare_tab import LABELS

    spanish = labels_es()
    for label in LABELS:
        assert spanish[label].strip() and spanish[label] != label


def test_healthz_reports_the_assistant_health(settings: Settings) -> None:
    client = TestClient(build_http_app(FakeAssistant(), settings))
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"mode": "offline", "llm_reachable": None, "chroma_reachable": True}


def test_healthz_answers_even_when_the_health_check_breaks(settings: Settings) -> None:
    class Broken(FakeAssistant):
        def health(self):
            raise RuntimeError("chroma exploded")

    response = TestClient(build_http_app(Broken(), settings)).get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "mode": "offline",
        "llm_reachable": None,
        "llm_answering": None,
        "chroma_reachable": False,
    }


def test_the_page_is_served_at_the_root(settings: Settings) -> None:
    client = TestClient(build_http_app(FakeAssistant(), settings))
    page = client.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    config = client.get("/config").json()
    assert config["title"] == "Sizing Assistant"


def run_sizing(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SIZING_DATA_DIR": str(tmp_path / "data")}
    return sizing_cli.run_sizing(*args, env=env, timeout=120)


@pytest.mark.e2e
def test_serve_help_names_host_and_port(tmp_path: Path) -> None:
    proc = run_sizing("serve", "--help", tmp_path=tmp_path)
    assert proc.returncode == 0
    assert "--host" in proc.stdout and "--port" in proc.stdout


@pytest.mark.e2e
def test_serve_on_a_busy_port_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run_sizing("serve", "--port", str(port), tmp_path=tmp_path)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.e2e
def test_serve_rejects_an_impossible_port(tmp_path: Path) -> None:
    proc = run_sizing("serve", "--port", "70000", tmp_path=tmp_path)
    assert proc.returncode == 2 and "between 1 and 65535" in proc.stderr
