"""The event stream the web chat consumes: the calculator's result before any answer text."""

from __future__ import annotations

from pathlib import Path

from assistant.service import CalculationEvent, FinalEvent, TextDelta
from tests.openai_stub import StubOpenAI, text, tool_call
from tests.test_service_llm import INVENTED, assistant_for


def test_the_calculation_arrives_before_the_text_and_matches_the_reply(tmp_path: Path) -> None:
    call = tool_call([("calculate_vram", {"model": "Llama 3.1 70B", "precision": "int4", "users": 8})])
    with StubOpenAI([call, text(INVENTED, chunk_chars=3)]) as stub:
        events = list(assistant_for(stub.url, tmp_path).stream("Llama 3.1 70B at 4 bits for 8 users"))
    kinds = [type(event).__name__ for event in events]
    first_text = kinds.index("TextDelta")
    calculations = [event for event in events if isinstance(event, CalculationEvent)]
    assert calculations and kinds.index("CalculationEvent") < first_text
    final = events[-1]
    assert isinstance(final, FinalEvent)
    assert calculations[0].result in final.reply.calculations
    # The text shown is only what passed the guardrail: the invented figure never streams.
    shown = "".join(event.text for event in events if isinstance(event, TextDelta))
    assert shown == final.reply.answer and "13.7 GB" not in shown
