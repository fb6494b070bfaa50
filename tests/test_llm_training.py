"""LLM mode sizes fine-tuning with the training calculator, not the serving one: the app hands the
model its `calculate_training` results for a training question (the knobs it gave included), the
model can call `calculate_training` itself, and the guardrail checks its figures against those
results. Against the OpenAI-compatible stub on loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assistant.agent import build_chat_model, run_agent
from assistant.llm_tools import TRAINING_TOOLS
from assistant.schemas import ConversationState
from assistant.service import build_assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles, section
from tests.openai_stub import StubOpenAI, text, tool_call
from tools import SizingRequest, calculate_vram
from tools.finetune import FinetuneSpec

SHELF = [section("Full fine-tuning keeps gradients and optimizer states.", "Fine-tuning", "en/ft.md", "Full")]


def _settings(url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, llm_base_url=url, llm_model="stub-model", llm_timeout=10.0)


def _training(model: str, gpu: str | None = None, **knobs: Any) -> float:
    request = SizingRequest(model=model, engine="transformers", gpu=gpu, finetune=FinetuneSpec(**knobs))
    result = calculate_vram(request)
    assert result.finetune is not None
    return result.finetune.total_gb


def _tool_messages(request: dict[str, Any], name: str) -> list[dict[str, Any]]:
    calls = {
        call["id"]: call["function"]["name"]
        for message in request["messages"]
        for call in message.get("tool_calls") or []
    }
    return [
        json.loads(message["content"])
        for message in request["messages"]
        if message["role"] == "tool" and calls.get(message["tool_call_id"]) == name
    ]


def test_a_training_question_gets_the_training_results(tmp_path: Path) -> None:
    need = _training("llama-3.1-8b", "l40s", method="lora", batch=4, seq=4096)
    answer = f"LoRA of Llama 3.1 8B with micro-batch 4 × 4,096 tokens needs {need:.2f} GB: it fits one L40S."
    with StubOpenAI([text(answer)]) as stub:
        assistant = build_assistant(_settings(stub.url, tmp_path), store=FakeArticles(SHELF))
        reply = assistant.answer("lora on llama 3.1 8b, batch 4, seq 4096, on an L40S?", None)
        sent = stub.requests[0]
    assert reply.mode == "llm"
    # The model was handed the training calculations, the one asked first, with the knobs said.
    # A training conversation is offered the training calculator in place of the reverse searches.
    offered = {spec["function"]["name"] for spec in sent["tools"]}
    assert offered == set(TRAINING_TOOLS)
    training = next(
        spec["function"]["parameters"]
        for spec in sent["tools"]
        if spec["function"]["name"] == "calculate_training"
    )
    assert training["required"] == ["model", "method"]
    trained = _tool_messages(sent, "calculate_training")
    assert trained and not _tool_messages(sent, "calculate_vram")
    first = trained[0]["finetune"]
    assert (first["method"], first["batch"], first["seq"]) == ("lora", 4, 4096)
    assert first["total_gb"] == need
    # Its figure comes from them, so the guardrail keeps it; the reply carries the training results.
    assert f"{need:.2f} GB" in reply.answer
    assert reply.calculations and all(r.finetune is not None for r in reply.calculations)


def test_a_training_question_fits_the_default_context(tmp_path: Path) -> None:
    # Three methods side by side, as a serving question's three precisions: the default 8,192 tokens.
    need = _training("qwen2.5-7b", method="full", batch=2, seq=4096)
    with StubOpenAI([text(f"Full fine-tuning of Qwen2.5 7B needs {need:.2f} GB.")]) as stub:
        settings = _settings(stub.url, tmp_path)
        reply = build_assistant(settings, store=FakeArticles(SHELF)).answer(
            "full fine-tune qwen2.5 7b, micro-batch 2, seq len 4096: what GPU?", None
        )
    assert reply.mode == "llm", reply.notice
    assert f"{need:.2f} GB" in reply.answer


def test_the_model_can_call_the_training_calculator(tmp_path: Path) -> None:
    arguments = {"model": "mistral 7b", "method": "full", "optimizer": "adamw8bit", "gpu": "h100:2"}
    script = [
        tool_call([("calculate_training", arguments)]),
        text("Full fine-tuning of Mistral 7B: see above."),
    ]
    with StubOpenAI(script) as stub:
        settings = _settings(stub.url, tmp_path)
        state = ConversationState(model="mistral-7b", tasks="finetuning")
        outcome = run_agent(
            build_chat_model(settings), "and full fine-tuning?", state, store=None, settings=settings
        )
        second = stub.requests[1]
    assert [r.finetune.optimizer for r in outcome.calculations if r.finetune] == ["adamw8bit"]
    result = _tool_messages(second, "calculate_training")[0]
    per_gpu = _training("mistral-7b", "h100-80gb:2", method="full", optimizer="adamw8bit")
    assert result["finetune"]["total_gb"] == per_gpu and result["finetune"]["gpus"] == 2
    assert "max_micro_batch" in result["options"][0] and "users" not in result


def test_a_bad_training_argument_goes_back_to_the_model(tmp_path: Path) -> None:
    script = [
        tool_call([("calculate_training", {"model": "llama 3.1 8b", "method": "full", "batch": 0})]),
        text("Which micro-batch do you train with?"),
    ]
    with StubOpenAI(script) as stub:
        settings = _settings(stub.url, tmp_path)
        outcome = run_agent(
            build_chat_model(settings),
            "full fine-tune llama 8b",
            ConversationState(tasks="finetuning"),
            store=None,
            settings=settings,
        )
        second = stub.requests[1]
    tool = next(message for message in second["messages"] if message["role"] == "tool")
    assert "error" in json.loads(tool["content"]) and outcome.calculations == []
