"""The embeddable widget: `/widget` (the chat alone) and `/widget.js` (the one-line snippet).

A vendor's page embeds the chat with either line:

    <iframe src="https://sizing.example.com/widget/" title="Sizing Assistant"
            style="width:400px;height:640px;border:0"></iframe>
    <script src="https://sizing.example.com/widget.js" defer></script>

The script adds a round button that opens the same iframe in a panel. The widget is its own
Gradio app with no tabs and no named API endpoints: the calculator form, the sales draft, the
Compare tab and any admin tab are not in it, so nothing embedded can reach them. Which sites may
frame it is `SIZING_WIDGET_ALLOWED_ORIGINS`, sent as `Content-Security-Policy: frame-ancestors`
(the main app allows only itself) and used as the CORS allow-list (`security_headers`).
"""

from __future__ import annotations

import html
from pathlib import Path

import gradio as gr

from assistant.settings import Settings
from assistant.ui.chat_panel import CHAT_CSS, build_chat_panel
from assistant.ui.chat_view import AnswerView
from assistant.ui.client_limits import GateFactory, client_gates
from assistant.ui.handlers import ChatAssistant
from assistant.ui.texts import Lang

WIDGET_PATH = "/widget"
SCRIPT_PATH = "/widget.js"
LAUNCHER_SCRIPT = Path(__file__).with_name("static") / "widget.js"
# The conversation fills the frame less the header, the question box and the button under it.
WIDGET_CHAT_HEIGHT = "max(220px, calc(100vh - 262px))"
# WCAG AA contrast for normal text.
MIN_CONTRAST = 4.5


def _luminance(colour: str) -> float:
    """Relative luminance of '#rrggbb' (WCAG 2 definition)."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(first: str, second: str) -> float:
    """WCAG contrast ratio of two '#rrggbb' colours (1 to 21)."""
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def text_colour_on(background: str) -> str:
    """White or near-black, whichever reads better on the background."""
    return "#ffffff" if contrast("#ffffff", background) >= contrast("#111827", background) else "#111827"


def widget_css(settings: Settings) -> str:
    accent = settings.widget_primary_color
    on_accent = text_colour_on(accent)
    # Links in answers use the accent only where it stays readable on the white page.
    link = accent if contrast(accent, "#ffffff") >= MIN_CONTRAST else "#1d4ed8"
    return (
        CHAT_CSS
        + f"""
:root, .dark {{
  --button-primary-background-fill: {accent}; --button-primary-background-fill-hover: {accent};
  --button-primary-text-color: {on_accent}; --button-primary-text-color-hover: {on_accent};
  --button-primary-border-color: {accent}; --color-accent: {accent}; --border-color-accent: {accent};
  --link-text-color: {link}; --link-text-color-hover: {link}; --link-text-color-visited: {link};
}}
.gradio-container {{ max-width: 100% !important; padding: 8px !important; }}
#widget-header {{ display: flex; align-items: center; gap: 10px; margin: 0; }}
.gradio-container .main, .gradio-container .contain {{ gap: 6px !important; }}
#widget-header img {{ height: 32px; width: auto; }}
#widget-header h1 {{ font-size: 1.2em; margin: 0; }}
footer {{ display: none !important; }}
"""
    )


def header_html(settings: Settings) -> str:
    title = html.escape(settings.widget_title)
    logo = (
        f'<img src="{html.escape(settings.widget_logo_url, quote=True)}" alt="">'
        if settings.widget_logo_url
        else ""
    )
    return f'<div id="widget-header">{logo}<h1>{title}</h1></div>'


def build_widget(
    assistant: ChatAssistant, settings: Settings, view: AnswerView, gates: GateFactory | None = None
) -> gr.Blocks:
    """The widget's Blocks: a header (logo, title) and the chat; every event private."""
    from assistant.ui.catalogue import phrase

    def greeting(lang: Lang) -> str:
        return settings.widget_greeting or phrase("widget_greeting", lang)

    with gr.Blocks(title=settings.widget_title, analytics_enabled=False) as widget:
        gr.HTML(header_html(settings), padding=False)
        build_chat_panel(
            widget,
            assistant,
            settings,
            view,
            storage_key="sizing-widget-chat",
            height=WIDGET_CHAT_HEIGHT,
            greeting=greeting,
            client_gate=gates or client_gates(settings),
        )
    widget.queue(default_concurrency_limit=settings.concurrency_limit)
    return widget


def launcher_script(settings: Settings) -> str:
    """`/widget.js`: adds a button that opens the widget in a panel on the embedding page."""
    title = settings.widget_title.replace("\\", "\\\\").replace('"', '\\"')
    return (
        LAUNCHER_SCRIPT.read_text(encoding="utf-8")
        .replace("__TITLE__", title)
        .replace("__ACCENT__", settings.widget_primary_color)
        .replace("__ON_ACCENT__", text_colour_on(settings.widget_primary_color))
    )


def frame_ancestors(settings: Settings, path: str) -> str:
    """The CSP frame-ancestors of a response: the widget for the allowed origins, the rest only itself."""
    if path == WIDGET_PATH or path.startswith(WIDGET_PATH + "/"):
        return " ".join(["frame-ancestors", "'self'", *settings.widget_origins])
    return "frame-ancestors 'self'"
