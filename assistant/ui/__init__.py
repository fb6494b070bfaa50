"""The web front end (Gradio): chat, calculator panel with chart, sales draft, widget, API.

Run it with `sizing serve` (or `make run`). `app.build_app(assistant, settings)` builds the
Gradio Blocks; `app.build_http_app(assistant, settings)` wraps it, with the `/widget`,
`/articles/...` and `/healthz` routes, in the ASGI app. One builder per tab or panel
(`chat_panel`, `sales_tab`, `calculator_tab`, `compare_tab`, `admin_tab`, `widget`); the event
handlers and the answer's display are plain functions (`handlers`, `chat_view`, `history`,
`articles`). See docs/web.md.
"""
