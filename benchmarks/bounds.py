"""How long the largest request the input bounds allow takes, and how fast a hostile one is refused.

Run: PYTHONPATH=. python benchmarks/bounds.py [--repeat 5]

The "worst case" is a config.json at the limits of tools/architecture.py (512 layers, MoE with
MLA, 262k vocabulary, just under the 10,000B parameter ceiling) sized for 1M tokens × 1,000
users on every card class, so that nothing fits and every suggestion is computed. "cold" is
the first request for that architecture in the process; "warm" repeats it (the weights per
precision are remembered per architecture). The hostile configs are the ones that used to keep
the server computing: 10⁶ layers, NaN, a 400-digit size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from tools import SizingRequest, calculate_vram
from tools.architecture import LIMITS
from tools.config_file import parse_config_text
from tools.errors import SizingError


def worst_config(seed: int) -> dict[str, Any]:
    """A DeepSeek-style MoE at the layer limit; `seed` varies the vocabulary so each is new."""
    return {
        "model_type": "deepseek_v3",
        "hidden_size": 16_384,
        "num_hidden_layers": LIMITS["num_hidden_layers"],
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "intermediate_size": 53_248,
        "vocab_size": 262_144 + seed,
        "max_position_embeddings": 1_048_576,
        "n_routed_experts": 190,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2_048,
        "first_k_dense_replace": 3,
        "n_shared_experts": 1,
        "kv_lora_rank": 512,
        "q_lora_rank": 1_536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
    }


def timed_ms(call: Any) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    calculate_vram(SizingRequest(model="70b"))  # load the catalog and card data first

    for engine, precision in (("llamacpp", "fp32"), ("vllm", "fp32")):
        cold, warm = [], []
        for seed in range(args.repeat):

            def request(seed: int = seed, engine: str = engine, precision: str = precision) -> None:
                calculate_vram(
                    SizingRequest(
                        model="worst",
                        config=worst_config(seed),
                        precision=precision,
                        engine=engine,
                        context=1_000_000,
                        users=1_000,
                    )
                )

            cold.append(timed_ms(request))
            warm.append(timed_ms(request))
        print(
            f"worst-case valid request, {engine} {precision}: cold median {statistics.median(cold):.0f} ms "
            f"(max {max(cold):.0f}), warm median {statistics.median(warm):.0f} ms  [{args.repeat} runs]"
        )

    hostile = {
        "10^6 layers": '{"hidden_size": 4096, "num_hidden_layers": 1000000, "num_attention_heads": 32, '
        '"vocab_size": 32000}',
        "NaN layers": '{"hidden_size": 4096, "num_hidden_layers": NaN, "num_attention_heads": 32, '
        '"vocab_size": 32000}',
        "400-digit hidden": '{"hidden_size": ' + "9" * 400 + ', "num_hidden_layers": 32, '
        '"num_attention_heads": 32, "vocab_size": 32000}',
        "nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    }
    for name, text in hostile.items():
        message = ""

        def refuse(text: str = text) -> None:
            nonlocal message
            try:
                calculate_vram(SizingRequest(model="x", config=parse_config_text(text, "config.json")))
            except SizingError as exc:
                message = str(exc)

        elapsed = timed_ms(refuse)
        print(f"hostile config ({name}): refused in {elapsed:.1f} ms: {message[:110]}")
    print(f"machine: {os.cpu_count()} CPUs, 1-min load average {os.getloadavg()[0]:.1f} (shared)")


if __name__ == "__main__":
    main()
