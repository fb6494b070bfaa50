"""The sizing engine: pure, typed VRAM arithmetic (pydantic only; no LangChain, Gradio or Chroma).

    from tools import calculate_vram, SizingRequest
    result = calculate_vram(SizingRequest(model="llama-3.1-70b", precision="awq", context=8192, users=4))

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
from tools.precision import PRECISIONS
from tools.schemas import Card, CardClass, CardOption, FileWeights, ModelInfo, SizingRequest, SizingResult

__all__ = [
    "ENGINES",
    "KV_DTYPES",
    "PRECISIONS",
    "Card",
    "CardClass",
    "CardOption",
    "FileWeights",
    "FinetuneBreakdown",
    "FinetuneSpec",
    "HubFiles",
    "HubLookup",
    "HubLookupError",
    "ModelInfo",
    "SizingRequest",
    "SizingResult",
    "calculate_vram",
    "card_classes",
    "default_engine",
    "list_cards",
    "list_models",
    "resolve_model",
]
