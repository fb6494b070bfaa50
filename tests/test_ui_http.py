"""The app's own HTTP routes: article pages, the widget and its snippet, framing and CORS policy."""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest
from fastapi.testclient import TestClient

from assistant.settings import Settings
from assistant.ui import widget
from assistant.ui.articles import ArticleLibrary
from tests.ui_apps import build_http_app, built
from tests.ui_fakes import FakeAssistant

EMBEDDER = "https://www.vendor.example"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("http"),
        widget_allowed_origins=f"{EMBEDDER}, https://shop.vendor.example",
        widget_title="Acme GPU helper",
        widget_primary_color="#facc15",
        widget_logo_url="https://cdn.vendor.example/logo.svg",
        widget_greeting="Welcome to Acme! Which model do you want to serve?",
    )
    return TestClient(build_http_app(FakeAssistant(), settings))


def test_an_article_page_has_one_element_per_section(client: TestClient) -> None:
    page = client.get("/articles/en/vram-arithmetic")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<html lang="en">' in page.text
    assert '<section id="the-formula"><h2>The formula</h2>' in page.text
    assert "<table>" in page.text  # Markdown tables render
    assert 'href="/articles/es/aritmetica-vram"' in page.text  # the other language, one click away
    spanish = client.get("/articles/es/aritmetica-vram")
    assert '<section id="la-fórmula"><h2>La fórmula</h2>' in spanish.text


def test_an_unknown_article_is_a_404_in_the_visitor_language(client: TestClient) -> None:
    page = client.get("/articles/es/no-existe", headers={"accept-language": "es-ES"})
    assert page.status_code == 404 and "No hay ningún artículo no-existe en es." in page.text
    assert client.get("/articles/../etc/passwd").status_code == 404


def test_article_markdown_cannot_inject_markup(tmp_path: Path) -> None:
    folder = tmp_path / "en"
    folder.mkdir()
    (folder / "evil.md").write_text(
        "---\ntitle: Evil <b>title</b>\nlang: en\nslug: evil\n---\n"
        "Lead <script>alert(1)</script> [x](javascript:alert(2))\n\n## <img src=x onerror=alert(3)>\n\nBody\n",
        encoding="utf-8",
    )
    page = ArticleLibrary.from_folder(tmp_path).page_html("en", "evil")
    assert page is not None
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert 'href="javascript:' not in page  # left as text, never a link
    assert "<img" not in page and "Evil &lt;b&gt;title&lt;/b&gt;" in page


def test_the_main_app_may_be_framed_only_by_itself(client: TestClient) -> None:
    for path in ("/", "/config", "/healthz", "/articles/en/vram-arithmetic"):
        assert client.get(path).headers["content-security-policy"] == "frame-ancestors 'self'", path


def test_the_widget_may_be_framed_by_the_allowed_origins(client: TestClient) -> None:
    page = client.get("/widget/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == (
        f"frame-ancestors 'self' {EMBEDDER} https://shop.vendor.example"
    )


def test_cors_answers_only_the_allowed_origins(client: TestClient) -> None:
    allowed = client.get("/widget/config", headers={"origin": EMBEDDER})
    assert allowed.headers.get("access-control-allow-origin") == EMBEDDER
    other = client.get("/widget/config", headers={"origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    preflight = client.options(
        "/gradio_api/queue/join",
        headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
    )
    assert preflight.status_code == 400


def test_the_widget_has_only_the_chat_and_no_public_api(client: TestClient) -> None:
    config = client.get("/widget/config").json()
    kinds = {component["type"] for component in config["components"]}
    assert "tabs" not in kinds and "tabitem" not in kinds
    assert "chatbot" in kinds
    labels = " ".join(str(component.get("props", {}).get("label", "")) for component in config["components"])
    for absent in ("Compare", "Sales draft", "Customer name", "Precision", "endpoint"):
        assert absent not in labels
    assert all(dependency.get("api_visibility") == "private" for dependency in config["dependencies"])
    assert "Acme GPU helper" in str(config) and "https://cdn.vendor.example/logo.svg" in str(config)
    chatbot = next(c for c in config["components"] if c["type"] == "chatbot")
    assert chatbot["props"]["placeholder"] == "Welcome to Acme! Which model do you want to serve?"


def test_the_widget_buttons_use_the_colour_with_readable_text(client: TestClient) -> None:
    config = client.get("/widget/config").json()
    css = config["css"]
    assert "--button-primary-background-fill: #facc15" in css
    assert "--button-primary-text-color: #111827" in css  # dark text on yellow
    assert widget.contrast("#111827", "#facc15") >= widget.MIN_CONTRAST
    assert widget.text_colour_on("#1d4ed8") == "#ffffff"


def test_the_snippet_script_opens_the_widget(client: TestClient) -> None:
    script = client.get(widget.SCRIPT_PATH)
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert '"/widget/"' in script.text and "Acme GPU helper" in script.text and "#facc15" in script.text


def test_widget_settings_reject_bad_values(tmp_path: Path) -> None:
    for bad in (
        {"widget_allowed_origins": "www.vendor.example"},
        {"widget_allowed_origins": "https://vendor.example/page"},
        {"widget_primary_color": "blue"},
        {"widget_logo_url": "javascript:alert(1)"},
        {"widget_logo_url": "http://insecure.example/logo.png"},
    ):
        with pytest.raises(ValueError):
            Settings(data_dir=tmp_path, **bad)


def test_the_main_app_has_only_its_public_endpoints(tmp_path: Path) -> None:
    from assistant.ui.app import build_app

    demo = built(build_app, FakeAssistant(), Settings(data_dir=tmp_path))
    assert isinstance(demo, gr.Blocks)
    public = {fn.api_name for fn in demo.fns.values() if fn.fn is not None and fn.api_visibility != "private"}
    assert public == {"chat", "calculate", "draft", "handoff"}  # the last two: the sales desk
