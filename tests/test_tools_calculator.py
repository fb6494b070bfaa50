"""Golden tests of the calculator's physics, one fact per test, numbers worked by hand."""

from __future__ import annotations

import pytest

from tools import (
    ENGINES,
    KV_DTYPES,
    PRECISIONS,
    CardOption,
    FinetuneSpec,
    ModelInfo,
    SizingRequest,
    SizingResult,
    calculate_vram,
    card_classes,
    default_engine,
    list_cards,
    list_models,
    resolve_model,
)
from tools.architecture import architecture_from_config
from tools.cards import parse_gpu_spec
from tools.errors import ModelConfigError
from tools.kv_cache import kv_layout


def calc(**kwargs: object) -> SizingResult:
    return calculate_vram(SizingRequest(**kwargs))  # type: ignore[arg-type]


def test_contract_names_and_fields() -> None:
    assert "vllm" in ENGINES and "fp8" in KV_DTYPES and "q4_k_m" in PRECISIONS
    assert set(ModelInfo.model_fields) >= {
        "id",
        "params",
        "active_params",
        "layers",
        "kv_heads",
        "head_dim",
        "reference_note",
    }
    assert set(CardOption.model_fields) == {
        "card_class", "card", "label", "gpus", "usable_gb", "fits", "headroom_gb",
        "max_concurrent_sequences", "decode_tokens_per_s", "serves", "catch", "performance",
        "reason", "reason_code", "replicas",
        "required_usable_gb", "total_gb",
    }  # fmt: skip
    dumped = calc(model="llama-3.1-8b").model_dump(mode="json")
    for key in (
        "weights_gb",
        "kv_bytes_per_token",
        "kv_cache_gb",
        "overhead_gb",
        "total_gb",
        "recommendation",
        "suggestions",
    ):
        assert key in dumped


def test_catalog_ids_are_lowercase_and_aliases_resolve() -> None:
    models = list_models()
    assert all(m.id == m.id.lower() for m in models)
    for wanted in (
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.3-70b",
        "qwen2.5-32b",
        "mixtral-8x7b",
        "gemma-2-27b",
        "deepseek-v3",
        "gpt-oss-120b",
    ):
        assert any(m.id == wanted for m in models)
    assert resolve_model("Llama 3.1 70B").id == "llama-3.1-70b"
    assert resolve_model("llama3.1:70b").id == "llama-3.1-70b"
    assert resolve_model("meta-llama/Llama-3.1-8B-Instruct").id == "llama-3.1-8b"


def test_70b_at_16_bits_is_about_141_gb_of_weights() -> None:
    result = calc(model="llama-3.1-70b", precision="bf16")
    assert result.weights_gb == pytest.approx(70.554 * 2, rel=1e-3)
    assert result.kv_bytes_per_token == 327_680  # 80 layers × 2 × 8 heads × 128 × 2 bytes
    assert result.kv_cache_gb == pytest.approx(327_680 * 8192 / 1e9, abs=0.01)
    assert not result.below_16_bit and result.caveat is None


def test_gptq_keeps_embeddings_at_16_bits_and_is_not_half_a_byte() -> None:
    result = calc(model="llama-3.1-70b", precision="gptq")
    embeddings = 2 * 128_256 * 8192 * 2
    naive = 70.554e9 * 0.5
    assert result.weights_gb * 1e9 > naive + embeddings * 0.7
    assert result.weights_gb == pytest.approx(39.77, abs=0.05)


def test_mxfp4_quantizes_only_the_experts() -> None:
    # gpt-oss-120b: 114.7B expert weights at 4.25 bits + 2.1B other weights at 16 bits = ~65.2 GB.
    assert calc(model="gpt-oss-120b", precision="mxfp4").weights_gb == pytest.approx(65.2, abs=0.3)


def test_moe_keeps_every_expert_resident() -> None:
    result = calc(model="mixtral-8x7b", precision="bf16")
    assert result.model.params > 46e9 and result.model.active_params < 13e9
    assert result.weights_gb == pytest.approx(46.70 * 2, rel=0.01)


def test_head_dim_comes_from_the_config_not_hidden_over_heads() -> None:
    info = resolve_model("mistral-small-24b")  # 5120 / 32 = 160, but the config says 128
    assert info.head_dim == 128
    assert calc(model="mistral-small-24b").kv_bytes_per_token == 40 * 2 * 8 * 128 * 2


def test_sliding_window_layers_stop_growing_at_their_window() -> None:
    short = calc(model="gemma-2-27b", context=4096)
    long = calc(model="gemma-2-27b", context=8192)
    per_layer = 2 * 16 * 128 * 2
    # Only the 23 global layers grow past 4,096 tokens; the 23 local ones stay at their window.
    grown = (long.kv_cache_gb - short.kv_cache_gb) * 1e9
    # (vLLM keeps the window plus one 16-token block: +16 tokens in the 23 local layers.)
    assert grown == pytest.approx(23 * per_layer * (4096 + 16), abs=0.01e9)
    assert long.kv_bytes_per_token == 23 * per_layer


def test_gemma3_and_gpt_oss_layer_patterns() -> None:
    from tools.catalog import catalog_architecture

    gemma3 = catalog_architecture("gemma-3-27b")
    assert gemma3.layers_of_kind("full") == 10 and gemma3.layers_of_kind("sliding") == 52
    gpt_oss = catalog_architecture("gpt-oss-120b")
    assert gpt_oss.layers_of_kind("full") == 18 and gpt_oss.sliding_window == 128


def test_kv_dtypes_with_block_overheads() -> None:
    arch = architecture_from_config(
        {
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 32000,
        }
    )
    assert kv_layout(arch, "bf16").full_bytes_per_token == 131_072
    assert kv_layout(arch, "fp8").full_bytes_per_token == 65_536
    assert kv_layout(arch, "q8_0").full_bytes_per_token == 131_072 * 34 // 64  # 34 bytes per 32 values
    assert kv_layout(arch, "q4_0").full_bytes_per_token == 131_072 * 18 // 64  # 18 bytes per 32 values


def test_tensor_parallel_splits_then_replicates_kv_heads() -> None:
    from tools.catalog import catalog_architecture

    llama = catalog_architecture("llama-3.1-70b")  # 8 KV heads
    per_gpu = [kv_layout(llama, "bf16", tp).full_bytes_per_token for tp in (1, 2, 8, 16)]
    assert per_gpu == [327_680, 163_840, 40_960, 40_960]  # at 16 GPUs each still holds one head


def test_fp8_kv_doubles_vllm_concurrency_roughly() -> None:
    bf16 = calc(model="llama-3.1-70b", precision="awq", gpu="h100-80gb")
    fp8 = calc(model="llama-3.1-70b", precision="awq", gpu="h100-80gb", kv_dtype="fp8")
    assert fp8.options[0].max_concurrent_sequences in range(
        2 * bf16.options[0].max_concurrent_sequences, 2 * bf16.options[0].max_concurrent_sequences + 2
    )
    assert fp8.caveat and "KV" in fp8.caveat


def test_card_usable_memory_is_nvidia_smi_less_driver_reservation() -> None:
    cards = {c.id: c for c in list_cards()}
    assert cards["h100-80gb"].memory_mib == 81559
    assert cards["h100-80gb"].usable_gb == pytest.approx(
        79.18 * 2**30 / 1e9, abs=0.01
    )  # torch total of vLLM's log
    assert cards["l40s"].usable_gb < 48.0  # never the marketing "48 GB"
    assert parse_gpu_spec("h100-80gb:2")[1] == 2 and parse_gpu_spec("2x h100")[0].id == "h100-80gb"


def test_card_classes_table_ids() -> None:
    classes = {c.id: c for c in card_classes()}
    assert set(classes) == {"48gb", "80gb", "2x80gb"}
    assert classes["48gb"].cards == ["l40s", "l40"] and classes["2x80gb"].gpus == 2


def test_a_4_bit_70b_on_48gb_with_vllm_leaves_no_room_for_an_8k_conversation() -> None:
    result = calc(model="llama-3.1-70b", precision="awq", gpu="l40s")
    option = result.options[0]
    assert not option.fits and option.max_concurrent_sequences == 0
    assert option.headroom_gb == pytest.approx(-0.9, abs=0.3)
    assert any("fp8" in s for s in result.suggestions) and any("Qwen2.5 14B" in s for s in result.suggestions)


def test_bare_size_uses_a_stated_reference_architecture() -> None:
    result = calc(model="70b", lang="es")
    assert result.model.params == 70_000_000_000
    assert result.model.reference_note and "Llama 3.1 70B" in result.model.reference_note
    assert "referencia" in result.model.reference_note and result.arithmetic[0] == result.model.reference_note
    assert calc(params_b=13).model.reference_note


def test_config_dict_with_nested_text_config_and_moe_key_variants() -> None:
    config = {
        "model_type": "some_vlm",
        "text_config": {
            "model_type": "qwen3_moe",
            "hidden_size": 2048,
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "moe_intermediate_size": 768,
            "n_routed_experts": 128,
            "moe_topk": 8,
            "vocab_size": 151936,
        },
    }
    result = calc(model="My VLM", config=config)
    assert result.model.name == "My VLM" and result.model.architecture == "moe"
    assert result.model.params == pytest.approx(30.5e9, rel=0.01)
    assert result.kv_bytes_per_token == 48 * 2 * 4 * 128 * 2


def test_hybrid_linear_attention_layers_add_no_per_token_cache() -> None:
    layer_types = ["linear_attention"] * 3 + ["full_attention"]
    config = {
        "hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 24, "num_key_value_heads": 4,
        "head_dim": 256, "vocab_size": 248320, "layer_types": layer_types * 16,
    }  # fmt: skip
    # G6: `llama_kv_cache 16384.00 MiB (262144 cells, 16 layers, 4/1 seqs)`.
    result = calc(model="hybrid", config=config, context=65536, users=4, engine="llamacpp", precision="q8_0")
    assert result.kv_cache_gb * 1e9 == pytest.approx(16384 * 2**20, rel=1e-3)


def test_bad_config_names_the_missing_field() -> None:
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        calc(model="x", config={"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 1000})


def test_suggestions_make_it_fit_and_are_computed() -> None:
    result = calc(model="llama-3.1-70b", precision="bf16", gpu="h100-80gb")
    assert result.recommended is None
    text = " ".join(result.suggestions)
    for needle in ("fp8", "Tensor parallel on 2× H100 80GB (SXM)", "smaller model"):
        assert needle in text


def test_when_nothing_fits_the_alternatives_say_what_would() -> None:
    """A 16-bit 70B fits no class: the result names hardware that holds it, each computed."""
    result = calc(model="70b", precision="bf16")
    assert result.recommended is None
    labels = [option.label for option in result.alternatives]
    assert labels == ["2× H200", "4× 80GB cards (A100 80GB / H100 80GB)"]  # the least memory first
    assert all(option.fits and option.max_concurrent_sequences > 0 for option in result.alternatives)
    h200 = calc(model="70b", precision="bf16", gpu="h200:2").options[0]
    assert result.alternatives[0].max_concurrent_sequences == h200.max_concurrent_sequences
    text = " ".join(result.suggestions)
    assert "Tensor parallel on 4× 80GB cards (A100 80GB / H100 80GB): 340.07 GB usable: fits" in text
    assert "Larger cards: 2× H200" in text
    assert calc(model="70b", precision="awq").alternatives == []


def test_spanish_results_name_classes_and_models_in_spanish() -> None:
    result = calc(model="70b", precision="bf16", lang="es")
    assert result.model.name == "70B (referencia: Llama 3.1 70B)"
    assert [option.label for option in result.options][:2] == [
        "Clase 48GB (L40S, L40)",
        "Clase 80GB (A100 80GB, H100 80GB)",
    ]
    written = " ".join([result.recommendation, *result.arithmetic, *result.suggestions])
    for english in ("class (", "reference:", "Tensor parallel", "cards ("):
        assert english not in written
    assert "Paralelismo tensorial en 4 tarjetas de 80GB (A100 80GB / H100 80GB)" in written
    assert result.alternatives[1].label == "4 tarjetas de 80GB (A100 80GB / H100 80GB)"


def test_recommendation_picks_the_smallest_class_that_fits() -> None:
    assert calc(model="llama-3.1-8b").recommended == "48gb"
    assert calc(model="llama-3.1-70b", precision="awq").recommended == "80gb"
    assert calc(model="llama-3.1-70b", precision="fp8").recommended == "2x80gb"
    assert calc(model="llama-3.1-405b", precision="bf16").recommended is None


def test_decode_rate_is_the_single_user_performance_estimate() -> None:
    option = calc(model="llama-3.1-8b", gpu="a100-80gb").options[0]
    assert option.performance is not None
    per_user = option.performance.output_tok_s_per_user
    assert option.decode_tokens_per_s == pytest.approx(per_user.best, abs=0.05)
    assert per_user.low <= 79.3 <= per_user.high  # calibration V11: 79.3 tok/s measured at bs1
    # Under load the field stays the one-user figure; the per-user speed of the load is lower.
    loaded = calc(model="llama-3.1-8b", gpu="a100-80gb", users=32).options[0]
    assert loaded.decode_tokens_per_s == option.decode_tokens_per_s
    assert loaded.performance and loaded.performance.output_tok_s_per_user.best < per_user.best


def test_a_mixture_of_experts_decodes_faster_than_a_dense_model_of_its_active_size() -> None:
    # A mixture of experts reads 3.3B of its 30.5B parameters per token: faster than a dense 8B, as
    # measured on one A100 (S13 vs S17 in tools/data/performance_calibration.json).
    dense = calc(model="llama-3.1-8b", gpu="a100-80gb").options[0].decode_tokens_per_s
    moe = calc(model="qwen3-30b-a3b", gpu="a100-80gb").options[0].decode_tokens_per_s
    assert moe and dense and moe > dense


def test_texts_follow_the_language() -> None:
    es = calc(model="llama-3.1-70b", precision="awq", lang="es")
    assert es.arithmetic[0].startswith("Pesos:") and "sizing compare" in (es.caveat or "")
    assert "porcentaje universal" in (es.caveat or "")
    assert es.options[0].serves == card_classes()[0].serves["es"]


def test_transformers_and_llamacpp_profiles_differ_from_vllm() -> None:
    vllm = calc(model="llama-3.1-8b", gpu="l40s")
    llamacpp = calc(model="llama-3.1-8b", gpu="l40s", engine="llamacpp", precision="fp16")
    hf = calc(model="llama-3.1-8b", gpu="l40s", engine="transformers", context=32768)
    assert llamacpp.overhead_gb < vllm.overhead_gb
    assert hf.overhead_gb > 3  # prefill of 32k tokens at once
    assert llamacpp.kv_cache_gb == pytest.approx(vllm.kv_cache_gb, rel=0.01)


def test_gpu_may_name_a_card_class() -> None:
    result = calc(model="llama-3.1-70b", precision="awq", gpu="80gb")
    assert [o.card_class for o in result.options] == ["80gb"] and result.recommended == "80gb"
    assert calc(model="llama-3.1-70b", precision="fp8", gpu="2x80gb").options[0].gpus == 2


def test_llamacpp_keeps_the_input_embedding_in_host_memory() -> None:
    """G2 (ollama#9091): Qwen2.5-14B Q4_K_M, CUDA0 model buffer 8148.38 MiB + CPU 417.66 MiB."""
    from tools.calculator import build_scenario, candidates, estimate

    scenario = build_scenario(
        SizingRequest(
            model="qwen2.5-14b", precision="q4_k_m", engine="ollama", context=2048, users=4, gpu="l40s"
        )
    )
    est = estimate(scenario, candidates("l40s")[0].members[0])
    assert est.weights_bytes / 2**20 == pytest.approx(8148.38, rel=0.002)
    assert scenario.embedding_bytes / 2**20 == pytest.approx(417.66, rel=0.002)
    assert est.kv_bytes_per_sequence * 4 == 1536 * 2**20


def test_llamacpp_fit_line_explains_the_weights_left_in_host_ram() -> None:
    """The fit line's GPU weights differ from the weights line by the input embedding: it says so."""
    result = calc(model="llama-3.1-8b", precision="q8_0", engine="ollama", gpu="l40s")
    line = next(line for line in result.arithmetic if line.startswith("L40S:"))
    assert f"(the {result.weights_gb:.2f} GB less the" in line
    assert "input embedding, which stays in host RAM" in line
    vllm = calc(model="llama-3.1-8b", gpu="l40s")
    assert not any("host RAM" in line for line in vllm.arithmetic)


@pytest.mark.parametrize(
    ("precision", "engine"),
    [("q4_k_m", "llamacpp"), ("Q8_0", "llamacpp"), ("awq", "vllm"), ("bf16", "vllm"), ("fp8", "vllm")],
)
def test_default_engine_follows_the_file_format(precision: str, engine: str) -> None:
    assert default_engine(precision) == engine


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("finetune", [None, FinetuneSpec(method="qlora")])
def test_the_result_records_its_language(lang, finetune) -> None:
    result = calculate_vram(SizingRequest(model="llama-3.1-8b", lang=lang, finetune=finetune))
    assert result.lang == lang
    assert result.model_dump(mode="json")["lang"] == lang


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_formats_off_the_ladder_still_get_the_cheaper_step(precision) -> None:
    """The ladder is ordered by bits per weight, so fp16 and int8 step down to what vLLM loads."""
    result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision=precision, gpu="h100-80gb"))
    awq = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="awq", gpu="h100-80gb"))
    assert not result.options[0].fits and awq.options[0].fits
    assert f"Smaller quantization: awq weights take {awq.weights_gb:.2f} GB: fits" in " ".join(
        result.suggestions
    )
