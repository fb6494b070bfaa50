"""The sizing engine: pure, typed VRAM arithmetic (pydantic only; no LangChain, Gradio or Chroma).

    from tools import calculate_vram, SizingRequest
    result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="awq", context=8192, users=4))
    result.performance  # TTFT, TPOT, tokens/s per user and in total, requests/s: each {low, best, high}

Importing this package reads nothing and builds nothing; data files load on first use.
"""

from __future__ import annotations

from tools.calculator import calculate_vram, default_engine
from tools.cards import card_classes, list_cards
from tools.catalog import list_models, resolve_model
from tools.engines import ENGINES
from tools.finetune import FinetuneBreakdown, FinetuneSpec
from tools.hub import HubFiles, HubLookup, HubLookupError
from tools.kv_cache import KV_DTYPES
from tools.performance import estimate_performance, performance_line, service_classes, workload_from_request
from tools.precision import PRECISIONS
from tools.schemas import (
    Band,
    Card,
    CardClass,
    CardOption,
    FileWeights,
    Measurement,
    ModelInfo,
    PerformanceEstimate,
    PerformanceTarget,
    SizingRequest,
    SizingResult,
)

__all__ = [
    "ENGINES",
    "KV_DTYPES",
    "PRECISIONS",
    "Band",
    "Card",
    "CardClass",
    "CardOption",
    "FileWeights",
    "FinetuneBreakdown",
    "FinetuneSpec",
    "HubFiles",
    "HubLookup",
    "HubLookupError",
    "Measurement",
    "ModelInfo",
    "PerformanceEstimate",
    "PerformanceTarget",
    "SizingRequest",
    "SizingResult",
    "calculate_vram",
    "card_classes",
    "default_engine",
    "estimate_performance",
    "list_cards",
    "list_models",
    "performance_line",
    "resolve_model",
    "service_classes",
    "workload_from_request",
]
