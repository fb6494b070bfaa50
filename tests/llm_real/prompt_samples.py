"""The parts of a real prompt, for measuring the prompt budget's estimate against a tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

from assistant.llm_tools import compact_result, tool_specs
from assistant.prompts import SYSTEM_PROMPT
from tools import SizingRequest, calculate_vram

ARTICLES = Path(__file__).resolve().parents[2] / "knowledge" / "articles"
# As much of a section as the model is given (assistant.llm_tools.PASSAGE_CHARS_FOR_MODEL).
SECTION_CHARS = 1200


def prompt_samples() -> dict[str, str]:
    """System prompt, tool schemas, calculator results in both languages, article sections."""
    samples = {"system prompt": SYSTEM_PROMPT, "tool schemas": json.dumps(tool_specs())}
    for lang in ("en", "es"):
        results = [
            calculate_vram(SizingRequest(model="70b", precision=p, lang=lang))
            for p in ("bf16", "int8", "int4")
        ]
        side_by_side = [compact_result(r, arithmetic=False) for r in results]
        samples[f"3 calculations side by side ({lang})"] = json.dumps(side_by_side, ensure_ascii=False)
        samples[f"1 calculation with arithmetic ({lang})"] = json.dumps(
            compact_result(results[2]), ensure_ascii=False
        )
    for path in sorted(ARTICLES.rglob("*.md")):
        body = path.read_text(encoding="utf-8").split("---", 2)[-1]
        samples[f"article {path.parent.name}/{path.stem}"] = body.strip()[:SECTION_CHARS]
    return samples
