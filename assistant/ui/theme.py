"""The Gradio theme of the app and the widget, with text contrast that meets WCAG AA.

Gradio's Soft theme draws white on blue-500 (3.7:1) and blue-500 labels on blue-100 (3.0:1);
axe-core flags both (serious). The darker shades here keep the look and reach 4.5:1 or more.
"""

from __future__ import annotations

import gradio as gr


def app_theme() -> gr.themes.Base:
    return gr.themes.Soft(primary_hue="blue", secondary_hue="amber").set(
        color_accent="*primary_700",
        button_primary_background_fill="*primary_700",
        button_primary_background_fill_hover="*primary_800",
        button_primary_background_fill_dark="*primary_700",
        button_primary_background_fill_hover_dark="*primary_800",
        block_title_text_color="*primary_800",
        block_label_text_color="*neutral_700",
        block_info_text_color="*neutral_600",
        input_placeholder_color="*neutral_500",
        body_text_color_subdued="*neutral_600",
        # A chosen radio or checkbox label: white on blue-700 (6.7:1), not on blue-500.
        checkbox_label_background_fill_selected="*primary_700",
        checkbox_label_background_fill_selected_dark="*primary_700",
        checkbox_label_text_color_selected="white",
        checkbox_label_text_color_selected_dark="white",
    )
