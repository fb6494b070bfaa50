"""Inputs that drive work are bounded: sizes in a config.json, the config file itself.

A hostile config is refused with the limit named (a typed ModelConfigError, so the CLI prints
one line and the web app shows the reason), and a valid one at the limits builds its per-layer
tensor list once per request however many suggestions it computes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assistant.cli.calc import read_config
from assistant.ui.handlers import CalculatorInputs, calculator_view
from tools import SizingRequest, calculate_vram
from tools.architecture import LIMITS, MAX_TOTAL_PARAMS, Architecture, architecture_from_config
from tools.config_file import MAX_CONFIG_BYTES, MAX_DEPTH, parse_config_text, read_config_file
from tools.errors import ModelConfigError, SizingError

LLAMA_8B: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}
MOE: dict[str, Any] = {
    **LLAMA_8B,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 1024,
}


def config_with(**changes: Any) -> dict[str, Any]:
    return {
        **(MOE if any(word in key for key in changes for word in ("expert", "mlp", "moe")) else LLAMA_8B),
        **changes,
    }


# Bounds tests run with a timeout: unbounded, some of these kept a server computing for minutes.
pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("field", "value", "limit"),
    [
        ("num_hidden_layers", 1_000_000, LIMITS["num_hidden_layers"]),
        ("num_hidden_layers", 10**400, LIMITS["num_hidden_layers"]),
        ("hidden_size", 10**7, LIMITS["hidden_size"]),
        ("num_attention_heads", 100_000, LIMITS["num_attention_heads"]),
        ("num_key_value_heads", 100_000, LIMITS["num_attention_heads"]),
        ("head_dim", 10**6, LIMITS["head_dim"]),
        ("intermediate_size", 10**8, LIMITS["intermediate_size"]),
        ("vocab_size", 10**9, LIMITS["vocab_size"]),
        ("max_position_embeddings", 10**15, LIMITS["max_position_embeddings"]),
        ("sliding_window", 10**15, LIMITS["sliding_window"]),
        ("num_local_experts", 10**6, LIMITS["num_experts"]),
        ("moe_intermediate_size", 10**9, LIMITS["moe_intermediate_size"]),
    ],
)
def test_a_size_beyond_real_models_names_its_limit(field: str, value: int, limit: int) -> None:
    with pytest.raises(ModelConfigError) as caught:
        architecture_from_config(config_with(**{field: value}))
    message = str(caught.value)
    assert field in message and f"{limit:,}" in message
    assert len(message) < 200  # a 400-digit value is described, not echoed


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 12.5, "32", [32], True], ids=repr)
def test_a_size_that_is_not_a_whole_number_is_refused_by_name(value: Any) -> None:
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        architecture_from_config(config_with(num_hidden_layers=value))


def test_a_config_implying_more_parameters_than_any_model_is_refused() -> None:
    giant = config_with(
        num_hidden_layers=LIMITS["num_hidden_layers"],
        hidden_size=LIMITS["hidden_size"],
        intermediate_size=LIMITS["intermediate_size"],
    )
    with pytest.raises(ModelConfigError, match=f"{MAX_TOTAL_PARAMS / 1e9:,.0f}B"):
        architecture_from_config(giant)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"num_experts_per_tok": 9}, "at most the 8 experts"),
        ({"mlp_only_layers": list(range(10_000))}, "mlp_only_layers"),
        ({"mlp_only_layers": [5000]}, "not a layer number"),
        ({"layer_types": ["full_attention"] * 1_000_000}, "layer_types lists 1,000,000 layers"),
        ({"sliding_window": "wide"}, "sliding_window"),
    ],
)
def test_per_layer_fields_are_checked_before_anything_is_built(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelConfigError, match=says):
        architecture_from_config(config_with(**changes))


def test_wrapper_configs_nested_without_end_are_refused() -> None:
    config: dict[str, Any] = dict(LLAMA_8B)
    for _ in range(2_000):
        config = {"model_type": "wrapper", "text_config": config}
    with pytest.raises(ModelConfigError, match="levels deep"):
        architecture_from_config(config)


def test_the_largest_valid_architecture_builds_its_tensors_once_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = config_with(
        num_hidden_layers=LIMITS["num_hidden_layers"],
        vocab_size=128_257,  # an architecture no other test has built
        max_position_embeddings=1_048_576,
    )
    builds: list[int] = []
    original = Architecture.build_tensors

    def counted(self: Architecture) -> Any:
        builds.append(self.num_layers)
        return original(self)

    monkeypatch.setattr(Architecture, "build_tensors", counted)
    # Nothing fits 1M tokens × 1,000 users: every suggestion (context, KV, quantization, more
    # and larger cards, smaller models) is computed, each a calculation of its own.
    result = calculate_vram(
        SizingRequest(
            model="big", config=config, precision="fp32", engine="llamacpp", context=1_000_000, users=1_000
        )
    )
    assert result.recommended is None and len(result.suggestions) >= 3
    assert builds.count(LIMITS["num_hidden_layers"]) == 1


# ---------------------------------------------------------------- the config text and file


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"hidden_size": NaN}', "NaN"),
        ('{"hidden_size": Infinity}', "Infinity"),
        ('{"hidden_size": -Infinity}', "Infinity"),
        ('{"hidden_size": 1e999}', "too large"),
        ('{"hidden_size": ' + "9" * 400 + "}", "400-digit"),
        ("[" * 100_000 + "]" * 100_000, "levels deep"),
        ('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), "levels deep"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
    ],
    ids=["nan", "inf", "-inf", "1e999", "400-digits", "deep-list", "deep-object", "bad-json", "list"],
)
def test_a_hostile_config_text_gets_its_reason(text: str, says: str) -> None:
    with pytest.raises(ModelConfigError, match=says):
        parse_config_text(text, "config.json")


@pytest.mark.parametrize(
    "text",
    ['{"num_hidden_layers": NaN}', '{"hidden_size": ' + "9" * 400 + "}", "[" * 100_000 + "]" * 100_000],
    ids=["nan", "400-digits", "deep"],
)
def test_the_web_calculator_shows_the_reason_for_a_hostile_upload(tmp_path: Path, text: str) -> None:
    upload = tmp_path / "config.json"
    upload.write_text(text, encoding="utf-8")
    view = calculator_view(CalculatorInputs(config_path=str(upload)), "en")
    assert view.result is None and "Cannot calculate" in view.verdict_markdown
    assert "config.json" in view.verdict_markdown  # the reason, not the generic failure
    assert "went wrong" not in view.verdict_markdown.lower()


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({**LLAMA_8B, "num_hidden_layers": 1_000_000}, "at most 512"),
        ({**LLAMA_8B, "vocab_size": 10**12}, "at most 4,194,304"),
    ],
)
def test_the_calculate_api_refuses_a_hostile_upload_with_the_reason(
    tmp_path: Path, config: dict[str, Any], says: str
) -> None:
    from assistant.ui.handlers import calculate_json

    upload = tmp_path / "config.json"
    upload.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ModelConfigError, match=says):
        calculate_json(CalculatorInputs(config_path=str(upload)), "en")


def test_a_config_file_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "config.json"
    big.write_text(json.dumps({**LLAMA_8B, "padding": "x" * MAX_CONFIG_BYTES}), encoding="utf-8")
    for reader in (read_config, read_config_file):
        with pytest.raises(ModelConfigError, match="larger than 1,000 KB"):
            reader(str(big))


def test_dev_zero_as_a_config_is_refused_after_a_megabyte() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this system")
    with pytest.raises(ModelConfigError, match="larger than"):
        read_config("/dev/zero")


def test_a_valid_config_file_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_8B), encoding="utf-8")
    assert read_config(str(path)) == LLAMA_8B
    assert architecture_from_config(read_config_file(path)).num_layers == 32


def test_every_bound_error_is_a_sizing_error() -> None:
    assert issubclass(ModelConfigError, SizingError)
