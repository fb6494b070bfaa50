"""The Gradio app and the ASGI app that serves it (with `GET /healthz`).

Run it with `sizing serve` (see `assistant/cli/serve.py`). `build_app(assistant, settings)`
builds the Blocks without serving (tests call it); `build_http_app(assistant, settings)`
mounts it on a FastAPI app for uvicorn. Per-visitor data lives only in `gr.State`.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from assistant.settings import Settings
from assistant.ui import handlers
from assistant.ui.chart import CHART_CSS
from assistant.ui.client_limits import ClientGate, ClientRateLimiter, request_client_key
from assistant.ui.handlers import CalculatorInputs, ChatAssistant, ChatLimits
from assistant.ui.session import VisitorSession
from assistant.ui.session_expiry import bound_sessions, session_lifespan
from assistant.ui.texts import LABELS_ES, Lang, language_from_header
from tools.errors import SizingError

log = logging.getLogger(__name__)

# Example questions shown in the empty chat, in both languages the assistant speaks.
EXAMPLE_QUESTIONS = (
    "¿Qué GPU necesito para un modelo 70B con 20 usuarios?",
    "What GPU do I need for Llama 3.1 8B with 32k context and 10 users?",
    "¿Cabe un 70B en una tarjeta de 48 GB en 4 bits?",
    "Qwen2.5 32B in fp8 for 50 concurrent users: which card?",
)

# Most cards of one kind the calculator offers (an 8-GPU server is the common ceiling).
MAX_CARDS = 8

APP_CSS = (
    CHART_CSS
    + """
.gradio-container { max-width: 1280px !important; }
#app-header h1 { margin-bottom: 0.1em; }
#app-header p { margin-top: 0; opacity: 0.8; }
#chat-input textarea { font-size: 16px; }
#sales-draft-preview td:last-child, #sales-draft-preview th:last-child { white-space: nowrap; text-align: right; }
#calc-verdict table td, #calc-verdict table th { padding: 6px 8px; }
@media (max-width: 480px) {
  #calc-verdict table { display: block; overflow-x: auto; font-size: 0.85em; }
  .gradio-container { padding-left: 6px !important; padding-right: 6px !important; }
  #app-header h1 { font-size: 1.5em; }
}
"""
)


def build_i18n() -> gr.I18n:
    """Static labels in the browser's language: English keys, Spanish translations."""
    return gr.I18n(en={key: key for key in LABELS_ES}, es=dict(LABELS_ES))


def _label(key: str) -> Any:
    """A label the browser translates (see texts.LABELS_ES); the key is the English text."""
    if key not in LABELS_ES:
        raise KeyError(f"label {key!r} has no Spanish translation in texts.LABELS_ES")
    return gr.I18n()(key)


def _browser_lang(request: gr.Request | None) -> Lang:
    if request is None:
        return "en"
    headers = getattr(request, "headers", None) or {}
    return language_from_header(headers.get("accept-language"))


def _default_model(choices: list[tuple[str, str]]) -> str | None:
    """The catalog model the calculator opens with: a 70B, the article's running example."""
    ids = [model_id for _, model_id in choices]
    preferred = [model_id for model_id in ids if "70b" in model_id.lower()]
    candidates = preferred or ids
    return candidates[0] if candidates else None


def build_app(assistant: ChatAssistant, settings: Settings) -> gr.Blocks:
    """The whole web app: chat with sales draft, calculator, compare tab, and the API endpoints."""
    from tools import ENGINES, KV_DTYPES, PRECISIONS

    limits = ChatLimits.from_settings(settings)
    # Per address as well as per session: a client chooses its own session id.
    client_limiter = ClientRateLimiter(settings.client_rate_limit)
    proxies = settings.trusted_proxy_networks

    def client_gate(request: gr.Request) -> ClientGate:
        return ClientGate(client_limiter, request_client_key(request, proxies))

    draft_folder = Path(tempfile.mkdtemp(prefix="sizing-drafts-"))
    models = handlers.model_choices()

    # ---- handlers bound to this app's assistant (wrappers read the browser's language)

    def chat_stream(
        message: str, history: list[dict[str, Any]], session: VisitorSession, request: gr.Request
    ):
        yield from handlers.stream_chat(
            assistant,
            limits,
            message,
            history or [],
            session,
            _browser_lang(request),
            time.monotonic(),
            client_gate(request),
        )

    def chat_api(message: str, session: VisitorSession, request: gr.Request) -> tuple[str, VisitorSession]:
        return handlers.answer_once(
            assistant,
            limits,
            message,
            session,
            _browser_lang(request),
            time.monotonic(),
            client_gate(request),
        )

    # While a turn runs the question box is locked: a second message sent meanwhile would start
    # from the state before the first answer and overwrite it.
    def take_message(message: str) -> tuple[Any, Any, str]:
        return gr.Textbox(value="", interactive=False), gr.Button(interactive=False), message

    def lock_input() -> tuple[Any, Any]:
        return gr.Textbox(interactive=False), gr.Button(interactive=False)

    def unlock_input() -> tuple[Any, Any]:
        return gr.Textbox(interactive=True), gr.Button(interactive=True)

    def pick_example(event: gr.SelectData) -> str:
        value = event.value
        return str(value.get("text", "")) if isinstance(value, dict) else str(value)

    def new_conversation(session: VisitorSession) -> tuple[list[Any], VisitorSession]:
        # Keeps the message times: starting over must not reset the rate limit.
        return [], VisitorSession(sent_at=session.sent_at)

    def calculator_update(
        model: str | None,
        params_b: float | None,
        config_file: Any,
        precision: str,
        kv_dtype: str | None,
        context: float | None,
        users: float | None,
        engine: str,
        card: str | None,
        card_count: float | None,
        request: gr.Request,
    ) -> tuple[Any, ...]:
        lang = _browser_lang(request)
        inputs = calculator_inputs(
            model, params_b, config_file, precision, kv_dtype, context, users, engine, card, card_count
        )
        try:
            view = handlers.calculator_view(inputs, lang)
        except Exception:  # a bug must not leave the panel stale or show a traceback
            log.exception("calculator update failed")
            view = handlers.failed_calculator_view(lang)
        remembered = (view.result, lang) if view.result is not None else None
        return view.chart_html, view.verdict_markdown, view.details_markdown, remembered

    def calculate(
        model: str | None,
        params_b: float | None,
        config_file: Any,
        precision: str,
        kv_dtype: str | None,
        context: float | None,
        users: float | None,
        engine: str,
        card: str | None,
        card_count: float | None,
        request: gr.Request,
    ) -> dict[str, Any]:
        inputs = calculator_inputs(
            model, params_b, config_file, precision, kv_dtype, context, users, engine, card, card_count
        )
        try:
            return handlers.calculate_json(inputs, _browser_lang(request))
        except SizingError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def page_load(
        model: str | None,
        params_b: float | None,
        config_file: Any,
        precision: str,
        kv_dtype: str | None,
        context: float | None,
        users: float | None,
        engine: str,
        card: str | None,
        card_count: float | None,
        request: gr.Request,
    ) -> tuple[Any, ...]:
        card_dropdown = gr.Dropdown(choices=handlers.card_choices(_browser_lang(request)))
        view = calculator_update(
            model,
            params_b,
            config_file,
            precision,
            kv_dtype,
            context,
            users,
            engine,
            card,
            card_count,
            request,
        )
        return (card_dropdown, *view)

    def make_draft(
        session: VisitorSession, calculator_memory: Any, customer: str, request: gr.Request
    ) -> tuple[Any, Any, Any, Any]:
        calculator_result, calculator_lang = calculator_memory or (None, None)
        try:
            draft = handlers.sales_draft(
                session, calculator_result, calculator_lang, customer, _browser_lang(request)
            )
        except handlers.NothingToDraftError as exc:
            gr.Warning(str(exc))
            return (
                gr.Markdown(visible=False),
                gr.Accordion(visible=False),
                "",
                gr.DownloadButton(visible=False),
            )
        session_folder = Path(tempfile.mkdtemp(dir=draft_folder))
        path = session_folder / draft.file_name
        path.write_text(draft.markdown, encoding="utf-8")
        return (
            gr.Markdown(draft.markdown, visible=True),
            gr.Accordion(visible=True),
            draft.markdown,
            gr.DownloadButton(value=str(path), visible=True),
        )

    # ---- layout

    with gr.Blocks(title="Sizing Assistant", analytics_enabled=False) as demo:
        session = gr.State(VisitorSession())
        calculator_memory = gr.State(None)
        pending_message = gr.State("")

        # One translatable label per Markdown: the browser replaces one i18n marker per string.
        with gr.Column(elem_id="app-header"):
            gr.Markdown("# " + _label("Sizing Assistant"))
            gr.Markdown(
                _label(
                    "GPU sizing with the arithmetic shown: which card fits your model, why, "
                    "and what quantization costs."
                )
            )
        with gr.Tabs():
            with gr.Tab(_label("Chat"), id="chat"), gr.Row(equal_height=False):
                with gr.Column(scale=5, min_width=320):
                    chatbot = gr.Chatbot(
                        label=_label("Conversation"),
                        show_label=False,
                        elem_id="chatbot",
                        height=560,
                        layout="panel",
                        buttons=["copy"],
                        feedback_options=None,
                        examples=[{"text": question} for question in EXAMPLE_QUESTIONS],
                    )
                    with gr.Row(equal_height=True):
                        message = gr.Textbox(
                            label=_label("Your question"),
                            show_label=False,
                            placeholder=_label("Ask about a model, a card, a context or a number of users…"),
                            elem_id="chat-input",
                            lines=1,
                            max_lines=6,
                            scale=6,
                            min_width=200,
                            autofocus=True,
                        )
                        send = gr.Button(_label("Send"), variant="primary", scale=1, min_width=90)
                    restart = gr.Button(_label("New conversation"), size="sm", variant="secondary")
                with gr.Column(scale=2, min_width=300, elem_id="sales-draft"):
                    gr.Markdown("### " + _label("Sales draft"))
                    gr.Markdown(
                        _label(
                            "Turn the conversation's last recommendation into a reply for the customer, "
                            "in the customer's language."
                        )
                    )
                    customer = gr.Textbox(label=_label("Customer name (optional)"), max_length=80)
                    draft_button = gr.Button(_label("Draft the customer reply"), variant="primary")
                    draft_preview = gr.Markdown(
                        visible=False, elem_id="sales-draft-preview", container=True, buttons=["copy"]
                    )
                    with gr.Accordion(_label("Markdown source"), open=False, visible=False) as draft_source:
                        draft_text = gr.Textbox(
                            label=_label("Reply (Markdown, ready to copy)"),
                            lines=10,
                            max_lines=30,
                            buttons=["copy"],
                            elem_id="sales-draft-text",
                        )
                    draft_download = gr.DownloadButton(
                        _label("Download .md"), visible=False, elem_id="sales-draft-download"
                    )

            with gr.Tab(_label("Calculator"), id="calculator"), gr.Row(equal_height=False):
                with gr.Column(scale=1, min_width=280):
                    model = gr.Dropdown(
                        choices=models,
                        value=_default_model(models),
                        label=_label("Model"),
                        allow_custom_value=True,
                        filterable=True,
                        elem_id="calc-model",
                    )
                    params_b = gr.Number(
                        value=0,
                        label=_label("Parameters (billions)"),
                        info=_label("0 uses the model above; any other number sizes a model of that size."),
                        minimum=0,
                        elem_id="calc-params",
                    )
                    config_file = gr.File(
                        label=_label("Hugging Face config.json"),
                        file_types=[".json"],
                        type="filepath",
                        height=130,
                        elem_id="calc-config",
                    )
                    precision = gr.Dropdown(
                        choices=list(PRECISIONS),
                        value="bf16",
                        label=_label("Precision"),
                        elem_id="calc-precision",
                    )
                    kv_dtype = gr.Dropdown(
                        choices=[
                            ("16-bit", ""),
                            *((name, name) for name in KV_DTYPES if name not in ("bf16", "fp16")),
                        ],
                        value="",
                        label=_label("KV cache precision"),
                        elem_id="calc-kv",
                    )
                    context = gr.Number(
                        value=8192,
                        precision=0,
                        label=_label("Context (tokens per sequence)"),
                        elem_id="calc-context",
                    )
                    users = gr.Number(
                        value=1, precision=0, label=_label("Concurrent users"), elem_id="calc-users"
                    )
                    engine = gr.Dropdown(
                        choices=list(ENGINES), value="vllm", label=_label("Engine"), elem_id="calc-engine"
                    )
                    card = gr.Dropdown(
                        choices=handlers.card_choices("en"),
                        value="",
                        label=_label("Card"),
                        elem_id="calc-card",
                    )
                    card_count = gr.Slider(
                        minimum=1,
                        maximum=MAX_CARDS,
                        step=1,
                        value=1,
                        label=_label("Number of cards"),
                        elem_id="calc-card-count",
                    )
                with gr.Column(scale=2, min_width=300):
                    chart = gr.HTML(label=_label("Memory chart"), elem_id="calc-chart")
                    verdict = gr.Markdown(elem_id="calc-verdict")
                    details = gr.Markdown(elem_id="calc-details")

            # The tab's form makes this server request any URL a visitor types: only where allowed.
            if settings.compare_tab_enabled:
                with gr.Tab(_label("Compare"), id="compare"):
                    _compare_tab(settings)

        # Hidden components that carry the API endpoints (gradio_client sees these, not the widgets).
        api_message = gr.Textbox(visible=False)
        api_answer = gr.Textbox(visible=False)
        api_chat_trigger = gr.Button(visible=False)
        api_result = gr.JSON(visible=False)
        api_calculate_trigger = gr.Button(visible=False)

        # ---- events

        chat_kwargs: dict[str, Any] = {
            "concurrency_id": "chat",
            "concurrency_limit": settings.concurrency_limit,
        }
        turn_kwargs: dict[str, Any] = {
            "fn": chat_stream,
            "inputs": [pending_message, chatbot, session],
            "outputs": [chatbot, session],
            "api_visibility": "private",
            "show_progress": "minimal",
            **chat_kwargs,
        }
        unlock_kwargs: dict[str, Any] = {
            "fn": unlock_input,
            "outputs": [message, send],
            "queue": False,
            "api_visibility": "private",
        }
        # Back to the question box, with the focus, for the next question (keyboard users).
        refocus_kwargs: dict[str, Any] = {
            "fn": None,
            "js": "() => { document.querySelector('#chat-input textarea')?.focus(); }",
            "queue": False,
        }
        gr.on(
            triggers=[message.submit, send.click],
            fn=take_message,
            inputs=[message],
            outputs=[message, send, pending_message],
            queue=False,
            api_visibility="private",
        ).then(**turn_kwargs).then(**unlock_kwargs).then(**refocus_kwargs)
        chatbot.example_select(
            pick_example, outputs=[pending_message], queue=False, api_visibility="private"
        ).then(lock_input, outputs=[message, send], queue=False, api_visibility="private").then(
            **turn_kwargs
        ).then(**unlock_kwargs).then(**refocus_kwargs)
        gr.on(
            triggers=[restart.click, chatbot.clear],
            fn=new_conversation,
            inputs=[session],
            outputs=[chatbot, session],
            queue=False,
            api_visibility="private",
        )
        api_chat_trigger.click(
            chat_api,
            inputs=[api_message, session],
            outputs=[api_answer, session],
            api_name="chat",
            api_description="Ask the sizing assistant one message; returns the answer (Markdown).",
            **chat_kwargs,
        )

        calculator_fields: list[Any] = [
            model,
            params_b,
            config_file,
            precision,
            kv_dtype,
            context,
            users,
            engine,
            card,
            card_count,
        ]
        calculator_outputs = [chart, verdict, details, calculator_memory]
        gr.on(
            triggers=[field.change for field in calculator_fields],
            fn=calculator_update,
            inputs=calculator_fields,
            outputs=calculator_outputs,
            trigger_mode="always_last",
            show_progress="hidden",
            api_visibility="private",
            concurrency_id="calculate",
            concurrency_limit=settings.concurrency_limit,
        )
        api_calculate_trigger.click(
            calculate,
            inputs=calculator_fields,
            outputs=[api_result],
            api_name="calculate",
            api_description="Size one configuration; returns the SizingResult as JSON (as `sizing calc --json`).",
            concurrency_id="calculate",
            concurrency_limit=settings.concurrency_limit,
        )
        demo.load(
            page_load,
            inputs=calculator_fields,
            outputs=[card, *calculator_outputs],
            api_visibility="private",
            show_progress="hidden",
        )
        draft_button.click(
            make_draft,
            inputs=[session, calculator_memory, customer],
            outputs=[draft_preview, draft_source, draft_text, draft_download],
            api_visibility="private",
        )

    demo.queue(default_concurrency_limit=settings.concurrency_limit)
    return demo


def calculator_inputs(
    model: str | None,
    params_b: float | None,
    config_file: Any,
    precision: str,
    kv_dtype: str | None,
    context: float | None,
    users: float | None,
    engine: str,
    card: str | None,
    card_count: float | None,
) -> CalculatorInputs:
    """The panel's widget values as CalculatorInputs (empty strings mean "not given")."""
    return CalculatorInputs(
        model=model or None,
        params_b=params_b,
        config_path=_uploaded_path(config_file),
        precision=precision,
        kv_dtype=kv_dtype or None,
        context=context,
        users=users,
        engine=engine,
        card=card or None,
        card_count=card_count,
    )


def _uploaded_path(value: Any) -> str | None:
    if not value:
        return None
    if isinstance(value, str):
        return value
    return str(getattr(value, "path", None) or getattr(value, "name", "")) or None


def _compare_tab(settings: Settings) -> None:
    """The quantization-comparison tab (issue 7's `build_compare_tab`), if this build has it."""
    try:
        from assistant.evals.ui import build_compare_tab
    except ImportError:
        log.info("assistant.evals.ui is not available; the Compare tab shows a notice")
        gr.Markdown(_label("The Compare tab is not available in this build."))
        return
    build_compare_tab(settings, label=_label)


def build_http_app(assistant: ChatAssistant, settings: Settings) -> FastAPI:
    """The ASGI app: `GET /healthz` plus the Gradio app at `/`."""
    demo = build_app(assistant, settings)
    bound_sessions(demo, settings)
    http_app = FastAPI(
        title="Sizing Assistant",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=session_lifespan(demo, settings.session_idle_timeout_s),
    )

    @http_app.get("/healthz")
    def healthz() -> JSONResponse:
        try:
            health = dict(assistant.health())
        except Exception as exc:  # health must answer even when a dependency is down
            log.warning("health check failed: %s", exc)
            health = {
                "mode": "llm" if settings.llm_configured else "offline",
                "llm_reachable": None,
                "chroma_reachable": False,
            }
        return JSONResponse(health)

    return gr.mount_gradio_app(
        http_app,
        demo,
        path="/",
        server_name=settings.host,
        server_port=settings.port,
        footer_links=["api"],
        run_history=False,
        show_error=False,
        ssr_mode=False,
        mcp_server=False,
        i18n=build_i18n(),
        theme=gr.themes.Soft(primary_hue="blue", secondary_hue="amber"),
        css=APP_CSS,
        max_file_size="1mb",
    )
