"""The offline assistant: deterministic bilingual understanding, the calculator, templates.

Words, sentences and FAQ answers live in `assistant/offline/data/*.yaml` (business-editable);
model and card names come from the `tools` catalog.
"""
