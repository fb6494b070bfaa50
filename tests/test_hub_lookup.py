"""Models by Hub id, against a Hub-compatible server on loopback: config.json, safetensors
headers (exact counts), quantization_config, the disk cache (offline once cached), and one
clear line for a repo that is missing, gated or unreachable, followed by the fallback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.hub_client import HuggingFaceHub, hub_from_settings
from assistant.settings import Settings
from tests.hub_server import HubState, hub_server, safetensors_header
from tools import SizingRequest, calculate_vram
from tools.errors import UnknownModelError
from tools.hub import HubLookupError

TINY = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "intermediate_size": 2816,
    "vocab_size": 32000,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def _tiny_tensors() -> dict[str, tuple[str, list[int]]]:
    out: dict[str, tuple[str, list[int]]] = {
        "model.embed_tokens.weight": ("BF16", [32000, 1024]),
        "lm_head.weight": ("BF16", [32000, 1024]),
        "model.norm.weight": ("BF16", [1024]),
    }
    for i in range(4):
        p = f"model.layers.{i}."
        out |= {
            p + "self_attn.q_proj.weight": ("BF16", [1024, 1024]),
            p + "self_attn.k_proj.weight": ("BF16", [256, 1024]),
            p + "self_attn.v_proj.weight": ("BF16", [256, 1024]),
            p + "self_attn.o_proj.weight": ("BF16", [1024, 1024]),
            p + "mlp.gate_proj.weight": ("BF16", [2816, 1024]),
            p + "mlp.up_proj.weight": ("BF16", [2816, 1024]),
            p + "mlp.down_proj.weight": ("BF16", [1024, 2816]),
            p + "input_layernorm.weight": ("BF16", [1024]),
            p + "post_attention_layernorm.weight": ("BF16", [1024]),
        }
    return out


def _count(tensors: dict[str, tuple[str, list[int]]]) -> int:
    total = 0
    for _, shape in tensors.values():
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[HuggingFaceHub, HubState]]:
    with hub_server() as (url, state):
        tensors = _tiny_tensors()
        first = dict(list(tensors.items())[:20])
        second = dict(list(tensors.items())[20:])
        state.add(
            "acme/tiny-llama",
            {
                "config.json": TINY,
                "model.safetensors.index.json": {
                    "metadata": {"total_size": 0},
                    "weight_map": {
                        **dict.fromkeys(first, "model-00001-of-00002.safetensors"),
                        **dict.fromkeys(second, "model-00002-of-00002.safetensors"),
                    },
                },
                "model-00001-of-00002.safetensors": safetensors_header(first),
                "model-00002-of-00002.safetensors": safetensors_header(second),
            },
        )
        awq = dict(TINY, quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})
        state.add("acme/tiny-llama-awq", {"config.json": awq})
        state.add("acme/gated-model", {"config.json": TINY})
        state.gated.add("acme/gated-model")
        yield HuggingFaceHub(url, None, tmp_path / "hub"), state


def test_config_and_safetensors_headers_give_the_exact_parameter_count(hub) -> None:
    client, _ = hub
    files = client.model_files("acme/tiny-llama")
    expected = _count(_tiny_tensors())
    assert files.dtype_counts == {"BF16": expected}
    result = calculate_vram(SizingRequest(model="acme/tiny-llama"), hub=client)
    assert result.model.params == expected
    assert result.weights_gb == pytest.approx(expected * 2 / 1e9, abs=0.01)
    assert result.model.kv_heads == 2 and result.kv_bytes_per_token == 4 * 2 * 2 * 128 * 2
    assert "safetensors headers" in result.arithmetic[0]


def test_quantization_config_sets_the_precision(hub) -> None:
    client, _ = hub
    result = calculate_vram(SizingRequest(model="acme/tiny-llama-awq"), hub=client)
    assert result.precision == "awq" and result.below_16_bit
    explicit = calculate_vram(SizingRequest(model="acme/tiny-llama-awq", precision="bf16"), hub=client)
    assert explicit.precision == "bf16"


def test_cached_repos_are_sized_offline(hub, tmp_path: Path) -> None:
    client, state = hub
    client.model_files("acme/tiny-llama")
    seen = len(state.requests)
    state.repos.clear()  # the server forgets everything: only the cache can answer
    again = client.model_files("acme/tiny-llama")
    assert again.dtype_counts and len(state.requests) == seen


@pytest.mark.parametrize(
    ("repo", "reason"),
    [
        ("acme/does-not-exist", "was not found"),
        ("acme/gated-model", "is gated: set SIZING_HF_TOKEN"),
    ],
)
def test_missing_and_gated_repos_raise_one_clear_reason(hub, repo: str, reason: str) -> None:
    client, _ = hub
    with pytest.raises(HubLookupError, match=reason) as info:
        client.model_files(repo)
    assert repo in str(info.value) and "\n" not in str(info.value)


def test_a_failed_lookup_names_the_repo_then_falls_back(hub) -> None:
    client, _ = hub
    # Not on this Hub, but in the catalog under its Hub id.
    result = calculate_vram(SizingRequest(model="meta-llama/Llama-3.1-8B-Instruct"), hub=client)
    assert result.model.id == "llama-3.1-8b"
    assert result.arithmetic[0].startswith(
        "Hugging Face repo meta-llama/Llama-3.1-8B-Instruct: was not found"
    )
    # Neither: the size in the name, on the reference architecture.
    sized = calculate_vram(SizingRequest(model="someone/Cool-Model-13B-v2"), hub=client)
    assert sized.model.params == 13_000_000_000 and "was not found" in sized.arithmetic[0]
    with pytest.raises(UnknownModelError, match="someone/no-size-here"):
        calculate_vram(SizingRequest(model="someone/no-size-here"), hub=client)


def test_unreachable_hub_is_one_line_and_falls_back(tmp_path: Path) -> None:
    client = HuggingFaceHub("http://127.0.0.1:9", None, tmp_path / "hub", timeout=2)
    with pytest.raises(HubLookupError, match="could not be reached"):
        client.model_files("acme/anything")
    result = calculate_vram(SizingRequest(model="meta-llama/Llama-3.3-70B-Instruct"), hub=client)
    assert result.model.id == "llama-3.3-70b" and "could not be reached" in result.arithmetic[0]


def test_lookups_off_by_default_and_one_setting_turns_them_on(tmp_path: Path) -> None:
    assert hub_from_settings(Settings(data_dir=tmp_path)) is None
    on = hub_from_settings(Settings(data_dir=tmp_path, hf_lookups=True, hf_endpoint="http://127.0.0.1:1"))
    assert isinstance(on, HuggingFaceHub) and on.endpoint == "http://127.0.0.1:1"
    off = calculate_vram(SizingRequest(model="someone/Thing-7B"))
    assert off.arithmetic[0].startswith("Hugging Face repo someone/Thing-7B: Hub lookups are off")


def test_the_calculator_panel_sizes_a_hub_id(hub) -> None:
    from assistant.ui.handlers import CalculatorInputs, calculate_json

    client, _ = hub
    data = calculate_json(CalculatorInputs(model="acme/tiny-llama"), "en", client)
    assert data["model"]["params"] == _count(_tiny_tensors())


def test_the_agents_calculator_tool_sizes_a_hub_id(hub) -> None:
    import json

    from assistant.llm_tools import ToolLog, build_tools

    client, _ = hub
    log = ToolLog(lang="en")
    tool = next(t for t in build_tools(log, None, client) if t.name == "calculate_vram")
    call = {"type": "tool_call", "id": "call-1", "name": "calculate_vram",
            "args": {"model": "acme/tiny-llama", "precision": "bf16"}}  # fmt: skip
    message = tool.invoke(call)
    data = json.loads(message.content)  # the compact result the model reads
    assert data["precision"] == "bf16"
    [result] = log.calculations.values()  # the full calculation the guardrail checks against
    assert result.model.params == _count(_tiny_tensors()) and data["model"] == result.model.name


@pytest.mark.parametrize(("model", "said"), [("deepseek-r1", True), ("deepseek-v3", False)])
def test_the_agents_calculator_tool_says_a_released_model_was_sized_as_its_entry(
    model: str, said: bool
) -> None:
    import json

    from assistant.llm_tools import ToolLog, build_tools

    log = ToolLog(lang="en")
    tool = next(t for t in build_tools(log, None) if t.name == "calculate_vram")
    call = {"type": "tool_call", "id": "call-1", "name": "calculate_vram",
            "args": {"model": model, "precision": "fp8", "gpu": "h200:8"}}  # fmt: skip
    data = json.loads(tool.invoke(call).content)
    assert data["model"] == "DeepSeek V3 (671B)"
    assert ("DeepSeek R1 is sized as DeepSeek V3 (671B)" in data.get("sized_as", "")) is said
