"""The Gradio app and the ASGI app that serves it, with `/healthz`, `/articles/...` and `/widget`.

Run it with `sizing serve` (see `assistant/cli/serve.py`). `build_app(assistant, settings)`
builds the Blocks without serving (tests call it); `build_http_app(assistant, settings)`
mounts it, and the widget, on a FastAPI app for uvicorn. Each tab or panel is built by its own
module (`chat_panel`, `sales_tab`, `calculator_tab`, `compare_tab`, `admin_tab`, `widget`);
this one only assembles them. Per-visitor data lives only in `gr.State` and `gr.BrowserState`.
"""

from __future__ import annotations

import html
import logging
from typing import Any

import gradio as gr
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, Response

from assistant.settings import Settings
from assistant.ui import admin_tab, desk_texts, feedback, handoff, sales_tab, widget
from assistant.ui.articles import ROUTE as ARTICLES_ROUTE
from assistant.ui.articles import ArticleLibrary
from assistant.ui.calculator_tab import build_calculator_tab
from assistant.ui.catalogue import phrase
from assistant.ui.chart import CHART_CSS
from assistant.ui.chat_panel import CHAT_CSS, build_chat_panel, head_script, register_chat_api
from assistant.ui.chat_view import AnswerView
from assistant.ui.client_limits import GateFactory, client_gates
from assistant.ui.desk_wiring import open_desk_or_none
from assistant.ui.handlers import ChatAssistant
from assistant.ui.labels import browser_lang, build_i18n, label
from assistant.ui.session_expiry import bound_sessions, session_lifespan
from assistant.ui.texts import language_from_header
from assistant.ui.theme import app_theme

__all__ = ["build_app", "build_http_app", "build_i18n"]

log = logging.getLogger(__name__)

APP_CSS = (
    CHART_CSS
    + CHAT_CSS
    + """
.gradio-container { max-width: 1280px !important; }
#app-header h1 { margin-bottom: 0.1em; }
#app-header p { margin-top: 0; }
#sales-draft-preview td:last-child, #sales-draft-preview th:last-child { white-space: nowrap; text-align: right; }
/* Tables break lines between words only (never inside one, "Conce|pto"); a table wider than its
   column scrolls sideways inside it (chat.js makes it focusable). */
#sales-draft-preview table, #calc-verdict table, #calc-details table { display: block; overflow-x: auto; max-width: 100%; }
#sales-draft-preview :is(td, th), #calc-verdict :is(td, th), #calc-details :is(td, th) {
  overflow-wrap: normal !important; word-break: normal !important; hyphens: manual; }
#sales-draft-preview td:first-child, #calc-verdict td:first-child { min-width: 6.5em; }
/* The file box's label sits over its top edge: room for it above the upload icon. */
#calc-config button { padding-top: 2.2em; height: 165px !important; }
#calc-config [data-testid="upload-text"] { min-height: 0 !important; }
#calc-verdict table td, #calc-verdict table th { padding: 6px 8px; }
footer, footer a, .show-api { color: #4b5563 !important; }
@media (max-width: 480px) {
  /* On a phone the chat log takes the screen's height, less the question box under it (chat.js
     scrolls the log's top to the screen's top when a question is sent). */
  #chatbot.sizing-chat { height: calc(100svh - 210px) !important; min-height: 420px; }
  /* A dropdown's chosen text gets the width its arrow does not use. */
  input[role="combobox"] { font-size: 13px !important; text-overflow: ellipsis; }
  #calc-verdict table { display: block; overflow-x: auto; font-size: 0.85em; }
  .gradio-container { padding-left: 6px !important; padding-right: 6px !important; }
  #app-header h1 { font-size: 1.5em; }
}
"""
)


def build_app(
    assistant: ChatAssistant,
    settings: Settings,
    library: ArticleLibrary | None = None,
    gates: GateFactory | None = None,
) -> gr.Blocks:
    """The whole web app: chat with sales draft, calculator, compare tab, and the API endpoints."""
    from assistant.hub_client import hub_from_settings

    view = AnswerView(library)
    hub = hub_from_settings(settings)  # Hub ids in the calculator (None when lookups are off)
    # Per address as well as per session: a client chooses its own session id.
    gates = gates or client_gates(settings)
    desk = open_desk_or_none(settings)
    mode = str(getattr(assistant, "mode", "offline"))
    if desk is not None and settings.question_log:
        assistant = feedback.RecordingAssistant(assistant, desk)

    with gr.Blocks(title="Sizing Assistant", analytics_enabled=False) as demo:
        calculator_memory = gr.State(None)
        # One translatable label per Markdown: the browser replaces one i18n marker per string.
        with gr.Column(elem_id="app-header"):
            gr.Markdown("# " + label("Sizing Assistant"))
            gr.Markdown(
                label(
                    "GPU sizing with the arithmetic shown: which card fits your model, why, "
                    "and what quantization costs."
                )
            )
        with gr.Tabs():
            with gr.Tab(label("Chat"), id="chat"), gr.Row(equal_height=False):
                with gr.Column(scale=5, min_width=320):
                    panel = build_chat_panel(
                        demo,
                        assistant,
                        settings,
                        view,
                        storage_key="sizing-chat",
                        feedback=True,
                        after_turn=lambda chatbot, session: handoff.under_the_chat(
                            desk, settings, chatbot, session, browser_lang
                        ),
                        under_log=lambda chatbot, session: feedback.build_feedback(
                            desk, chatbot, session, browser_lang, mode
                        ),
                        client_gate=gates,
                    )
                # A staff tool: public visitors of a 0.0.0.0 deployment don't see it (SIZING_SALES_DRAFT_PANEL).
                if settings.sales_draft_panel_enabled:
                    with gr.Column(scale=2, min_width=300, elem_id="sales-draft"):
                        sales_tab.build_draft_panel(settings, panel.session, calculator_memory, browser_lang)
            with gr.Tab(label("Calculator"), id="calculator"):
                build_calculator_tab(demo, settings, calculator_memory, hub)
            # The tab's form makes this server request any URL a visitor types: only where allowed.
            if settings.compare_tab_enabled:
                with gr.Tab(label("Compare"), id="compare"):
                    _compare_tab(settings)
            if settings.admin_token is not None:
                with gr.Tab(desk_texts.label("Admin"), id="admin"):
                    admin_tab.build_admin_tab(settings, desk, browser_lang)

        sales_tab.register_draft_api(settings, panel.session, browser_lang)
        handoff.register_handoff_api(desk, settings, panel.session, browser_lang)
        register_chat_api(assistant, settings, panel.session, gates)

    demo.queue(default_concurrency_limit=settings.concurrency_limit)
    return demo


def _compare_tab(settings: Settings) -> None:
    """The quantization-comparison tab (`build_compare_tab`), if this build has it."""
    try:
        from assistant.ui.compare_tab import build_compare_tab
    except ImportError:
        log.info("assistant.ui.compare_tab is not available; the Compare tab shows a notice")
        gr.Markdown(label("The Compare tab is not available in this build."))
        return
    build_compare_tab(settings, label=label)


def build_http_app(assistant: ChatAssistant, settings: Settings) -> FastAPI:
    """The ASGI app: `/healthz`, `/articles/<lang>/<slug>`, `/widget.js`, the widget at `/widget`
    and the Gradio app at `/`, with the framing and CORS policy of `SIZING_WIDGET_ALLOWED_ORIGINS`."""
    library = ArticleLibrary.from_settings(settings)
    gates = client_gates(settings)
    view = AnswerView(library)
    chat_widget = widget.build_widget(assistant, settings, view, gates)
    demo = build_app(assistant, settings, library, gates)
    for blocks in (chat_widget, demo):
        bound_sessions(blocks, settings)
    http_app = FastAPI(
        title="Sizing Assistant",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=session_lifespan((chat_widget, demo), settings.session_idle_timeout_s),
    )
    # Gradio leaves CORS to a parent app that configures it: only the allowed origins get answers.
    http_app.add_middleware(
        CORSMiddleware,
        allow_origins=settings.widget_origins,
        allow_methods=["GET", "POST"],
        allow_headers=["content-type"],
        allow_credentials=False,
    )

    @http_app.middleware("http")
    async def framing_policy(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers["Content-Security-Policy"] = widget.frame_ancestors(settings, request.url.path)
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @http_app.get("/healthz")
    def healthz() -> JSONResponse:
        try:
            health = dict(assistant.health())
        except Exception as exc:  # health must answer even when a dependency is down
            log.warning("health check failed: %s", exc)
            health = {
                "mode": "llm" if settings.llm_configured else "offline",
                "llm_reachable": None,
                "llm_answering": None,
                "chroma_reachable": False,
            }
        return JSONResponse(health)

    @http_app.get(ARTICLES_ROUTE + "/{lang}/{slug}")
    def article(lang: str, slug: str, request: Request) -> HTMLResponse:
        page = library.page_html(lang, slug)
        if page is None:
            visitor = language_from_header(request.headers.get("accept-language"))
            message = phrase("article_not_found", visitor, slug=slug, language=lang)
            return HTMLResponse(
                f"<!doctype html><title>404</title><p>{html.escape(message)}</p>", status_code=404
            )
        return HTMLResponse(page)

    @http_app.get(widget.SCRIPT_PATH)
    def widget_script() -> Response:
        return Response(widget.launcher_script(settings), media_type="text/javascript")

    common: dict[str, Any] = {
        "server_name": settings.host,
        "server_port": settings.port,
        "run_history": False,
        "show_error": False,
        "ssr_mode": False,
        "mcp_server": False,
        "i18n": build_i18n(),
        "theme": app_theme(),
        "max_file_size": "1mb",
        "head": head_script(),
    }
    # The widget first: the app at "/" would otherwise take its paths.
    gr.mount_gradio_app(
        http_app,
        chat_widget,
        path=widget.WIDGET_PATH,
        footer_links=[],
        css=widget.widget_css(settings),
        **common,
    )
    return gr.mount_gradio_app(
        http_app,
        demo,
        path="/",
        footer_links=["api"],
        css=APP_CSS,
        **common,
    )
