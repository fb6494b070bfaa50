"""The Calculator tab: the form, the memory chart, the verdict, and the `calculate` API.

`build_calculator_tab(demo, settings)` lays out the form in the current Tab and wires its
events. The `calculate` API keeps its ten named parameters (gradio_client callers pass them
by name); the panel's own events receive the form as one dict of component -> value.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

import gradio as gr

from assistant.settings import Settings
from assistant.ui import handlers
from assistant.ui.handlers import CalculatorInputs, uploaded_path
from assistant.ui.labels import browser_lang, label
from tools.errors import SizingError

log = logging.getLogger(__name__)

# Most cards of one kind the calculator offers (an 8-GPU server is the common ceiling).
MAX_CARDS = 8


def default_model(choices: list[tuple[str, str]]) -> str | None:
    """The catalog model the calculator opens with: a 70B, the article's running example."""
    ids = [model_id for _, model_id in choices]
    preferred = [model_id for model_id in ids if "70b" in model_id.lower()]
    candidates = preferred or ids
    return candidates[0] if candidates else None


def calculator_inputs(values: Sequence[Any]) -> CalculatorInputs:
    """The panel's widget values, in CalculatorInputs field order, as CalculatorInputs; the
    upload widget's file becomes its path (empty boxes stay None or "", "not given")."""
    given = dict(zip((field.name for field in dataclasses.fields(CalculatorInputs)), values, strict=True))
    return CalculatorInputs(**{**given, "config_path": uploaded_path(given["config_path"])})


def build_calculator_tab(
    demo: gr.Blocks, settings: Settings, calculator_memory: gr.State, hub: Any = None
) -> None:
    """The calculator form and results in the current layout context; `calculator_memory` keeps
    the last result and its language (the sales draft falls back to it)."""
    from tools import ENGINES, KV_DTYPES, PRECISIONS

    models = handlers.model_choices()
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=280):
            model = gr.Dropdown(
                choices=models,
                value=default_model(models),
                label=label("Model"),
                allow_custom_value=True,
                filterable=True,
                elem_id="calc-model",
            )
            params_b = gr.Number(
                value=0,
                label=label("Parameters (billions)"),
                info=label("0 uses the model above; any other number sizes a model of that size."),
                minimum=0,
                elem_id="calc-params",
            )
            config_file = gr.File(
                label=label("Hugging Face config.json"),
                file_types=[".json"],
                type="filepath",
                height=130,
                elem_id="calc-config",
            )
            precision = gr.Dropdown(
                choices=list(PRECISIONS), value="bf16", label=label("Precision"), elem_id="calc-precision"
            )
            kv_dtype = gr.Dropdown(
                choices=[
                    ("16-bit", ""),
                    *((name, name) for name in KV_DTYPES if name not in ("bf16", "fp16")),
                ],
                value="",
                label=label("KV cache precision"),
                elem_id="calc-kv",
            )
            context = gr.Number(
                value=8192, precision=0, label=label("Context (tokens per sequence)"), elem_id="calc-context"
            )
            users = gr.Number(value=1, precision=0, label=label("Concurrent users"), elem_id="calc-users")
            engine = gr.Dropdown(
                choices=list(ENGINES), value="vllm", label=label("Engine"), elem_id="calc-engine"
            )
            card = gr.Dropdown(
                choices=handlers.card_choices("en"), value="", label=label("Card"), elem_id="calc-card"
            )
            card_count = gr.Slider(
                minimum=1,
                maximum=MAX_CARDS,
                step=1,
                value=1,
                label=label("Number of cards"),
                elem_id="calc-card-count",
            )
            service = gr.Dropdown(
                choices=handlers.service_choices("en"),
                value="",
                label=label("Latency target"),
                elem_id="calc-service",
            )
        with gr.Column(scale=2, min_width=300):
            chart = gr.HTML(label=label("Memory chart"), elem_id="calc-chart")
            verdict = gr.Markdown(elem_id="calc-verdict")
            details = gr.Markdown(elem_id="calc-details")

    # In CalculatorInputs order: the API's parameters and the dict the panel's events receive.
    fields: list[Any] = [
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
        service,
    ]

    def inputs_from(form: dict[Any, Any]) -> CalculatorInputs:
        return calculator_inputs([form[field] for field in fields])

    def update(form: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
        lang = browser_lang(request)
        try:
            view = handlers.calculator_view(inputs_from(form), lang, hub)
        except Exception:  # a bug must not leave the panel stale or show a traceback
            log.exception("calculator update failed")
            view = handlers.failed_calculator_view(lang)
        remembered = (view.result, lang) if view.result is not None else None
        # A bad input's message shows once, in the verdict; the chart area stays empty.
        chart_html = view.chart_html if view.result is not None else ""
        return chart_html, view.verdict_markdown, view.details_markdown, remembered

    def page_load(form: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
        lang = browser_lang(request)
        card_dropdown = gr.Dropdown(choices=handlers.card_choices(lang))
        service_dropdown = gr.Dropdown(choices=handlers.service_choices(lang))
        return (card_dropdown, service_dropdown, *update(form, request))

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
        service: str | None,
        request: gr.Request,
    ) -> dict[str, Any]:
        # `service`, the latency target, came last and is optional: ten-value callers still work.
        inputs = calculator_inputs(
            [
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
                service,
            ]
        )
        try:
            return handlers.calculate_json(inputs, browser_lang(request), hub)
        except SizingError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    outputs = [chart, verdict, details, calculator_memory]
    gr.on(
        triggers=[field.change for field in fields],
        fn=update,
        inputs=set(fields),
        outputs=outputs,
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
        concurrency_id="calculate",
        concurrency_limit=settings.concurrency_limit,
    )
    # Hidden components that carry the API endpoint (gradio_client sees these, not the widgets).
    api_result = gr.JSON(visible=False)
    api_trigger = gr.Button(visible=False)
    api_trigger.click(
        calculate,
        inputs=fields,
        outputs=[api_result],
        api_name="calculate",
        api_description="Size one configuration; returns the SizingResult as JSON (as `sizing calc --json`).",
        concurrency_id="calculate",
        concurrency_limit=settings.concurrency_limit,
    )
    demo.load(
        page_load,
        inputs=set(fields),
        outputs=[card, service, *outputs],
        api_visibility="private",
        show_progress="hidden",
    )
