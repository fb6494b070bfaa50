"""The agent's reverse-search tools: each answers from tools.reverse and records what it found,
so the guardrail sees the calculation behind the numbers the model quotes."""

from __future__ import annotations

import json

from assistant.llm_tools import ToolLog, build_tools
from tools import SizingRequest
from tools.reverse import fewest_gpus


def invoke(log: ToolLog, search: str, args: dict[str, object]) -> dict[str, object]:
    tool = next(tool for tool in build_tools(log, None) if tool.name == "reverse_search")
    call = {
        "type": "tool_call",
        "id": f"call-{search}",
        "name": tool.name,
        "args": {"search": search, **args},
    }
    message = tool.invoke(call)
    return json.loads(str(message.content))


def test_fewest_gpus_returns_the_search_result_and_records_its_calculation() -> None:
    log = ToolLog(lang="en")
    payload = invoke(log, "fewest_gpus", {"model": "llama-3.1-405b", "precision": "fp8", "gpu": "a100-80gb"})
    expected = fewest_gpus(SizingRequest(model="llama-3.1-405b", precision="fp8"), "a100-80gb")
    assert payload["found"] == {"card": "a100-80gb", "count": expected.count}
    assert log.calculations["call-fewest_gpus"] == expected.result


def test_largest_model_needs_no_model_and_names_one_that_fits() -> None:
    log = ToolLog(lang="es")
    payload = invoke(log, "largest_model", {"gpu": "l40s", "precision": "int4", "users": 10})
    found = payload["found"]
    assert isinstance(found, dict) and found["model"]
    assert log.calculations["call-largest_model"].options[0].fits


def test_a_bad_argument_goes_back_to_the_model_as_an_error() -> None:
    log = ToolLog(lang="en")
    payload = invoke(log, "longest_context", {"model": "llama-3.1-8b", "precision": "int4"})
    assert "gpu" in str(payload["error"])
    assert not log.calculations
