"""`sizing calc --finetune ...` in process: the flags reach the training sizer; bad input is one line."""

from __future__ import annotations

import pytest


def test_finetune_flags_size_training(capsys: pytest.CaptureFixture[str]) -> None:
    import json as _json

    from assistant.cli import main as cli_main

    code = cli_main(
        ["calc", "llama-3.1-8b", "--finetune", "qlora", "--lora-rank", "32", "--seq", "4k", "--batch", "2",
         "--optimizer", "adamw8bit", "--no-gradient-checkpointing", "--gpu", "rtx-3090", "--json"]
    )  # fmt: skip
    assert code == 0
    data = _json.loads(capsys.readouterr().out)
    ft = data["finetune"]
    assert ft["method"] == "qlora" and ft["lora_rank"] == 32 and ft["seq"] == 4096 and ft["batch"] == 2
    assert ft["optimizer"] == "adamw8bit" and ft["gradient_checkpointing"] is False
    assert data["total_gb"] == ft["total_gb"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--finetune", "lora", "--engine", "vllm"], "--engine vllm does not apply"),
        (["--finetune", "sft"], "unknown fine-tuning method 'sft'"),
        (["--finetune", "lora", "--seq", "long"], "--seq 'long' must be a whole number"),
    ],
)
def test_finetune_bad_input_is_one_line(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from assistant.cli import main as cli_main

    assert cli_main(["calc", "llama-3.1-8b", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_serving_extras_flags(capsys: pytest.CaptureFixture[str]) -> None:
    import json as _json

    from assistant.cli import main as cli_main

    argv = ["calc", "llama-3.1-70b", "--precision", "fp8", "--gpu", "h100-80gb:2", "--max-loras", "4",
            "--max-lora-rank", "64", "--draft", "llama-3.2-1b", "--json"]  # fmt: skip
    assert cli_main(argv) == 0
    data = _json.loads(capsys.readouterr().out)
    assert any(line.startswith("Serving extras: 4 LoRA slots at rank 64") for line in data["arithmetic"])
    assert cli_main(["calc", "llama-3.1-70b", "--max-loras", "many"]) == 2
    assert "--max-loras 'many' must be a whole number" in capsys.readouterr().err
