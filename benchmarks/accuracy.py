"""Accuracy of the VRAM calculator against published figures.

Run:  .venv/bin/python benchmarks/accuracy.py      (or `make bench`)

Prints, for every case in tools/data/calibration_cases.json (sources in tools/data/calibration.json),
the published value, the calculator's value and the signed error, then the median absolute error
per kind. Targets: weights within 3 %, vLLM KV pool within 10 % (medians).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.calibration import CaseResult, all_results

TARGETS = {"weights": 0.03, "vllm_kv_pool": 0.10, "finetune": 0.15}
TITLES = {
    "weights": "Weights vs published file sizes and engine load logs",
    "vllm_kv_pool": "vLLM KV pool vs logged 'KV cache' / 'Available KV cache memory'",
    "vllm_concurrency": "vLLM maximum concurrency vs logged 'Maximum concurrency'",
    "kv_cache": "KV cache vs llama.cpp / Ollama / vLLM log lines and the HF table",
    "llamacpp_compute_buffer": "llama.cpp compute buffer vs log",
    "finetune": "Fine-tuning peak memory vs torchtune / LongLoRA / Unsloth (all held out)",
    "decode_apple": "Apple silicon decode (llama.cpp Metal) vs published tg tok/s (held out)",
    "decode_cpu": "CPU-only decode (llama.cpp) vs published tok/s (held out)",
}


def report(results: list[CaseResult]) -> tuple[str, bool]:
    lines: list[str] = []
    ok = True
    for kind, title in TITLES.items():
        rows = [r for r in results if r.kind == kind]
        if not rows:
            continue
        lines += [
            "",
            f"## {title}",
            f"{'case':42s} {'published':>12s} {'calculated':>12s} {'unit':5s} {'error':>8s}",
        ]
        for r in rows:
            lines.append(
                f"{r.id:42s} {r.published:12.3f} {r.predicted:12.3f} {r.unit:5s} {r.error * 100:+7.2f}%"
            )
        median = statistics.median(abs(r.error) for r in rows)
        target = TARGETS.get(kind)
        verdict = ""
        if target is not None:
            passed = median <= target
            ok &= passed
            verdict = f"  (target {target * 100:.0f} %: {'met' if passed else 'MISSED'})"
        lines.append(f"median |error| over {len(rows)} cases: {median * 100:.2f} %{verdict}")
    return "\n".join(lines), ok


def hub_config_report(results: list[CaseResult]) -> str:
    """Cases sized from a config.json as the Hub serves it (not a catalog entry)."""
    from tools.calibration import load_cases

    cases = load_cases()
    ids = {c["id"] for kind in ("weights", "vllm_kv_pool") for c in cases[kind] if "config" in c}
    rows = [r for r in results if r.id in ids and r.kind in ("weights", "vllm_kv_pool")]
    if not rows:
        return ""
    median = statistics.median(abs(r.error) for r in rows)
    listed = ", ".join(f"{r.id} {r.error * 100:+.2f}%" for r in rows)
    return f"\n## Sized from Hub config.json files\nmedian |error| over {len(rows)} cases: {median * 100:.2f} % ({listed})"


def main() -> int:
    results = all_results()
    text, ok = report(results)
    print(text.lstrip())
    print(hub_config_report(results))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
