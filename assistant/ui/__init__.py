"""The web front end (Gradio): chat, calculator panel with chart, sales draft, API.

Run it with `sizing serve` (or `make run`). `app.build_app(assistant, settings)` builds the
Gradio Blocks; `app.build_http_app(assistant, settings)` wraps it in the ASGI app that also
answers `GET /healthz`. The event handlers are plain functions in `handlers.py`.
"""
