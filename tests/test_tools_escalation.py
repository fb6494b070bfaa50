"""When nothing compared fits, `alternatives` names hardware that holds the request unchanged;
vLLM's tensor-parallel degree must divide the attention heads; GGUF MXFP4 keeps the rest at Q8_0."""

from __future__ import annotations

import pytest

from tools import SizingRequest, SizingResult, calculate_vram
from tools.catalog import resolve
from tools.gguf import gguf_tensor_types


def calc(**kwargs: object) -> SizingResult:
    return calculate_vram(SizingRequest(**kwargs))  # type: ignore[arg-type]


def test_deepseek_v3_fp8_escalates_to_a_node_that_holds_it() -> None:
    result = calc(model="deepseek-v3", precision="fp8", context=32768)
    assert result.recommended is None
    labels = [alt.label for alt in result.alternatives]
    assert "8× H200" in labels
    assert all(alt.fits and alt.max_concurrent_sequences >= 1 for alt in result.alternatives)
    # Each alternative is the fewest GPUs of its card: one step down does not hold it.
    h200 = next(alt for alt in result.alternatives if alt.label == "8× H200")
    assert not calc(model="deepseek-v3", precision="fp8", context=32768, gpu="h200:4").options[0].fits
    assert (
        h200.max_concurrent_sequences
        == calc(model="deepseek-v3", precision="fp8", context=32768, gpu="h200:8")
        .options[0]
        .max_concurrent_sequences
    )
    # Cheapest total memory first.
    usable = [alt.usable_gb for alt in result.alternatives]
    assert usable == sorted(usable)


def test_beyond_one_node_it_says_pipeline_parallel_across_nodes() -> None:
    result = calc(model="deepseek-v3", precision="bf16", context=131072, users=16)
    assert result.alternatives
    for alt in result.alternatives:
        assert alt.fits and alt.gpus % 8 == 0 and alt.gpus > 8
        assert "pipeline parallel across nodes" in alt.label
    es = calc(model="deepseek-v3", precision="bf16", context=131072, users=16, lang="es")
    assert all("paralelismo de pipeline entre nodos" in alt.label for alt in es.alternatives)


def test_engines_without_multi_node_stop_at_one_node() -> None:
    result = calc(model="deepseek-v3", precision="bf16", context=131072, users=16, engine="transformers")
    assert result.alternatives == []


def test_a_request_nothing_holds_has_no_alternatives() -> None:
    assert calc(model="llama-3.1-405b", precision="bf16", users=100_000).alternatives == []


def test_vllm_tp_degree_must_divide_the_attention_heads() -> None:
    result = calc(model="phi-4", gpu="h100-80gb:3")  # 40 heads
    assert not result.options[0].fits
    line = result.suggestions[0]
    assert "40 attention heads" in line and "3 does not" in line and "1, 2, 4, 5, 8, 10" in line
    assert calc(model="phi-4", gpu="h100-80gb:4").options[0].fits
    # llama.cpp splits by layers, so any GPU count works.
    llamacpp = calc(model="phi-4", gpu="h100-80gb:3", engine="llamacpp", precision="q8_0")
    assert llamacpp.options[0].fits
    assert not any("attention heads" in s for s in llamacpp.suggestions)
    es = calc(model="phi-4", gpu="h100-80gb:3", lang="es")
    assert "40 cabezas de atención" in es.suggestions[0]


def test_gguf_mxfp4_keeps_non_expert_tensors_at_q8_0() -> None:
    """llama.cpp's MXFP4_MOE: expert stacks MXFP4, everything else quantizable at Q8_0."""
    arch = resolve("gpt-oss-20b").arch
    types = {(t.category, t.layer): ggml for t, ggml in gguf_tensor_types(arch, "mxfp4")}
    assert types[("ffn_up_exps", 0)] == "MXFP4" and types[("ffn_down_exps", 3)] == "MXFP4"
    assert types[("attn_q", 0)] == "Q8_0" and types[("output", None)] == "Q8_0"
    assert types[("token_embd", None)] == "Q8_0" and types[("ffn_gate_inp", 0)] == "F32"
    gguf = calc(model="gpt-oss-20b", precision="mxfp4", engine="llamacpp")
    safetensors = calc(model="gpt-oss-20b", precision="mxfp4")
    # bartowski/openai_gpt-oss-20b-GGUF gpt-oss-20b-MXFP4.gguf: 12.1 GB.
    assert gguf.weights_gb == pytest.approx(12.1, rel=0.01)
    assert safetensors.weights_gb > gguf.weights_gb * 1.1  # vLLM keeps attention at 16 bits
    assert "Q8_0" in gguf.arithmetic[0]


def test_output_head_and_embedding_fall_back_when_the_block_does_not_divide_the_row() -> None:
    """tensor_type_fallback also applies to token_embd: gpt-oss's 2880-wide rows are not a
    multiple of 256, so Q4_K_M's Q4_K embedding becomes Q5_0."""
    arch = resolve("gpt-oss-20b").arch
    types = {(t.category, t.layer): ggml for t, ggml in gguf_tensor_types(arch, "q4_k_m")}
    assert types[("token_embd", None)] == "Q5_0"
    assert types[("output", None)] == "Q8_0"


def test_more_than_one_node_asked_for_is_pipeline_parallel() -> None:
    result = calc(model="deepseek-v3", precision="bf16", gpu="h100-80gb:16", context=32768)
    option = result.options[0]
    assert option.label == "2 nodes × 8× H100 80GB (SXM) (pipeline parallel across nodes)"
    line = next(line for line in result.arithmetic if line.startswith("KV cache per token"))
    assert "× 8 tensor-parallel GPUs" in line  # TP 8 inside each node, not 16
    one_node = calc(model="llama-3.1-70b", gpu="h100-80gb:8").options[0]
    two_nodes = calc(model="llama-3.1-70b", gpu="h100-80gb:16").options[0]
    assert two_nodes.decode_tokens_per_s and one_node.decode_tokens_per_s
    assert two_nodes.decode_tokens_per_s < 1.2 * one_node.decode_tokens_per_s  # stages take turns
