"""No precision named: a catalog model is sized in the format it is published in, and says so."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from tools import SizingRequest, calculate_vram
from tools.catalog import release_precisions


def test_release_precisions_come_from_the_catalog_with_a_source() -> None:
    doc = json.loads(resources.files("tools").joinpath("data", "models.json").read_text(encoding="utf-8"))
    published = {m["id"]: m["release_precision"] for m in doc["models"] if "release_precision" in m}
    assert release_precisions() == {k: v["precision"] for k, v in published.items()}
    assert {"gpt-oss-20b": "mxfp4", "gpt-oss-120b": "mxfp4", "deepseek-v3": "fp8"}.items() <= (
        release_precisions().items()
    )
    assert all("https://" in v["source"] for v in published.values())


@pytest.mark.parametrize(
    ("model", "gpu", "precision"),
    [
        ("gpt-oss-120b", "h100-80gb", "mxfp4"),
        ("deepseek-r1", "h200:8", "fp8"),
        ("gpt-oss-20b", None, "mxfp4"),
    ],
)
@pytest.mark.parametrize(("lang", "words"), [("en", "published in"), ("es", "en que se publica")])
def test_no_precision_sizes_the_release_format(
    model: str, gpu: str | None, precision: str, lang: str, words: str
) -> None:
    result = calculate_vram(SizingRequest(model=model, gpu=gpu, lang=lang))  # type: ignore[arg-type]
    assert result.precision == precision
    assert words in result.arithmetic[0] and precision in result.arithmetic[0]
    assert result.caveat is None  # the published weights are not a quantization of the model


def test_gpt_oss_120b_fits_one_h100_in_its_release_format() -> None:
    result = calculate_vram(SizingRequest(model="gpt-oss-120b", gpu="h100-80gb"))
    assert result.options[0].fits
    assert result.weights_gb == pytest.approx(65.2, abs=0.1)


def test_an_explicit_precision_is_kept() -> None:
    for precision in ("bf16", "mxfp4", "fp8"):
        result = calculate_vram(SizingRequest(model="gpt-oss-120b", gpu="h100-80gb", precision=precision))
        assert result.precision == precision
        assert not any("published in" in line for line in result.arithmetic)
    assert calculate_vram(SizingRequest(model="gpt-oss-120b", precision="mxfp4")).caveat  # asked for


def test_bare_sizes_and_other_models_keep_bf16() -> None:
    assert calculate_vram(SizingRequest(model="671b", gpu="h200:8")).precision == "bf16"
    assert calculate_vram(SizingRequest(model="llama-3.1-8b")).precision == "bf16"


def test_an_engine_that_cannot_load_the_release_format_keeps_its_default() -> None:
    result = calculate_vram(SizingRequest(model="deepseek-v3", engine="llamacpp", gpu="h200:8"))
    assert result.precision == "bf16"  # llama.cpp loads no fp8 checkpoint
    assert not any("published in" in line for line in result.arithmetic)
