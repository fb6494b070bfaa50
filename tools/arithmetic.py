"""The arithmetic lines of a result: every factor printed, every line multiplying out.

Per-token cache (with the copies tensor parallelism keeps), sliding layers, the per-sequence
total in vLLM's 16-token blocks, the engine overhead per GPU × GPUs, the total, and one line per
option with the signed room left for the KV cache. tests/test_tools_arithmetic.py parses them
back and multiplies them out.
"""

from __future__ import annotations

import math

from tools.architecture import Architecture
from tools.engines import ENGINE_LABELS, VLLM_BLOCK_SIZE, Estimate, llamacpp_sliding_cells
from tools.evaluation import Evaluation, copy_estimate, evaluate, total_bytes
from tools.i18n import GB, gb, integer, number
from tools.kv_cache import KV_BLOCKS, KvLayout, kv_layout
from tools.scenario import Scenario
from tools.texts import counted, text


def arithmetic_lines(scenario: Scenario, evaluations: list[Evaluation], reference: Evaluation) -> list[str]:
    lang, info = scenario.lang, scenario.model.info
    w = scenario.weights
    lines = []
    if info.reference_note:
        lines.append(info.reference_note)
    if scenario.host_note:
        lines.append(text(scenario.host_note, lang))
    if scenario.released:
        lines.append(text("line_release_precision", lang, precision=scenario.precision, model=info.name))
    lines.append(
        text(
            "line_weights",
            lang,
            params=f"{number(w.params / 1e9, lang)} B",
            precision=scenario.precision,
            note=text(f"fmt_{w.note}", lang),
            gb=gb(w.bytes, lang),
            bpw=number(w.bits_per_weight, lang),
        )
    )
    extras = scenario.extras
    if extras.weights_bytes:
        lines.append(_extras_line(scenario))
    est = reference.estimate
    lines.extend(_kv_lines(scenario, est))
    lines.append(_overhead_line(scenario, est))
    kv_total = est.kv_bytes_per_sequence * scenario.users
    total = total_bytes(scenario, est)
    lines.append(
        text(
            "line_total_extras" if extras.weights_bytes else "line_total",
            lang,
            weights=gb(scenario.weights.bytes, lang),
            extras=gb(extras.weights_bytes, lang),
            kv=gb(kv_total, lang),
            overhead=gb(est.overhead_bytes, lang),
            total=gb(total, lang),
            label=reference.option.label,
        )
    )
    for ev in evaluations:
        lines.append(_option_line(scenario, ev))
        if ev.option.replicas is not None:
            lines.append(_copy_line(scenario, ev))
    lines.append(text("line_units", lang))
    return lines


def _extras_line(scenario: Scenario) -> str:
    lang, extras = scenario.lang, scenario.extras
    parts = []
    if extras.lora_slot_bytes:
        parts.append(
            text(
                "extra_lora",
                lang,
                loras=extras.max_loras,
                rank=extras.max_lora_rank,
                gb=gb(extras.lora_slot_bytes, lang),
            )
        )
    if extras.draft_weights_bytes:
        parts.append(
            text("extra_draft", lang, name=extras.draft_name, gb=gb(extras.draft_weights_bytes, lang))
        )
    if extras.mtp_weights_bytes:
        parts.append(text("extra_mtp", lang, layers=extras.mtp_layers, gb=gb(extras.mtp_weights_bytes, lang)))
    if extras.vision_bytes:
        parts.append(text("extra_vision", lang, gb=gb(extras.vision_bytes, lang)))
    return text("line_extras", lang, parts=" + ".join(parts), gb=gb(extras.weights_bytes, lang))


def extras_note(scenario: Scenario, ev: Evaluation) -> str | None:
    """What the serving extras the request asked for (a draft model, MTP layers, LoRA slots) add to
    the total on `ev`: their weights and the cache a draft or MTP layers keep in the same pool, the
    answer to "how much extra memory?". None when none was asked for; a vision tower is the
    model's own, not an option the request chose, so it is left to the arithmetic."""
    lang, extras = scenario.lang, scenario.extras
    what = []
    if extras.draft_name:
        what.append(text("extras_what_draft", lang, name=extras.draft_name))
    if extras.mtp_layers:
        what.append(text("extras_what_mtp", lang))
    if extras.lora_slot_bytes:
        what.append(text("extras_what_lora", lang, loras=extras.max_loras, rank=extras.max_lora_rank))
    if not what:
        return None
    weights = extras.requested_bytes
    without_cache = scenario._replace(extras=extras._replace(draft_arch=None, mtp_layers=0))
    per_sequence = (
        ev.estimate.kv_bytes_per_sequence
        - evaluate(without_cache, ev.candidate).estimate.kv_bytes_per_sequence
    )
    cache = per_sequence * scenario.users
    kv = ""
    if cache > 0:
        tp = tensor_parallel(scenario, ev.estimate)
        per_token = sum(
            kv_layout(arch, scenario.kv_dtype, tp).full_bytes_per_token * tp
            for arch in extras.kv_archs(scenario.model.arch)
        )
        kv = text(
            "extras_added_kv",
            lang,
            kv_gb=gb(cache, lang),
            bytes=integer(per_token, lang),
            tokens=integer(scenario.context, lang),
            sequences=counted(scenario.users, "sequence", lang),
        )
    return text(
        "extras_added",
        lang,
        what=text("extras_what_join", lang).join(what),
        weights_gb=gb(weights, lang),
        kv=kv,
        extra_gb=gb(weights + cache, lang),
        total_gb=number(ev.option.total_gb, lang, 2),
    )


def tensor_parallel(scenario: Scenario, est: Estimate) -> int:
    """GPUs that split each layer's KV heads: vLLM's TP degree; llama.cpp and transformers split
    by layers, so every token's cache is on one GPU."""
    return est.gpus // est.pipeline if scenario.engine == "vllm" else 1


def kv_copies_shown(arch: Architecture, layout: KvLayout, tp: int) -> bool:
    """Whether the per-GPU cache times the TP degree is more than one copy of the model's cache
    (the MLA latent on every GPU; KV heads fewer than, or not divisible by, the TP degree)."""
    return tp > 1 and (arch.is_mla or layout.heads_per_gpu * tp != arch.num_kv_heads)


def _kv_lines(scenario: Scenario, est: Estimate) -> list[str]:
    """Per-token cache, sliding layers and the per-sequence total, in the bytes the total uses."""
    lang, arch = scenario.lang, scenario.model.arch
    tp = tensor_parallel(scenario, est)
    layout = kv_layout(arch, scenario.kv_dtype, tp)
    copies = kv_copies_shown(arch, layout, tp)
    shown = layout if copies else kv_layout(arch, scenario.kv_dtype, 1)
    per_block, block_bytes = KV_BLOCKS[scenario.kv_dtype]
    fields = {
        "layers": shown.full_layers,
        "elem": number(block_bytes / per_block, lang, 4 if per_block > 1 else 0),
        "kv": scenario.kv_dtype,
        "bytes": integer(shown.full_bytes_per_token, lang),
    }
    if arch.is_mla:
        line = text("line_kv_mla", lang, latent=arch.kv_lora_rank, rope=arch.qk_rope_head_dim, **fields)
    else:
        line = text("line_kv_gqa", lang, heads=shown.heads_per_gpu, head_dim=arch.head_dim, **fields)
    if copies:
        line += text("kv_copies", lang, gpus=tp, total=integer(layout.full_bytes_per_token * tp, lang))
    lines = [line]
    for extra in scenario.extras.kv_archs(arch):
        other = kv_layout(extra, scenario.kv_dtype, tp)
        what = scenario.extras.draft_name if extra is scenario.extras.draft_arch else "MTP"
        lines.append(
            text(
                "line_kv_extra",
                lang,
                what=what,
                layers=other.full_layers,
                bytes=integer(other.full_bytes_per_token * tp, lang),
            )
        )
    tokens = _kv_tokens(scenario)
    if layout.sliding_layers:
        cells = _sliding_cells(scenario, layout)
        lines.append(
            text(
                "line_kv_sliding",
                lang,
                layers=layout.sliding_layers,
                per_layer=integer(layout.bytes_per_token_per_layer * tp, lang),
                cells=integer(min(cells, tokens), lang),
            )
        )
    per_seq = est.kv_bytes_per_sequence
    blocks = text("kv_blocks", lang, tokens=integer(tokens, lang)) if tokens != scenario.context else ""
    lines.append(
        text(
            "line_kv_total",
            lang,
            per_seq=gb(per_seq, lang, 3),
            context=integer(scenario.context, lang) + blocks,
            users=integer(scenario.users, lang),
            gb=gb(per_seq * scenario.users, lang),
        )
    )
    return lines


def _kv_tokens(scenario: Scenario) -> int:
    """Tokens of cache one sequence holds: vLLM allocates whole 16-token blocks."""
    if scenario.engine == "vllm":
        return math.ceil(scenario.context / VLLM_BLOCK_SIZE) * VLLM_BLOCK_SIZE
    return scenario.context


def _sliding_cells(scenario: Scenario, layout: KvLayout) -> int:
    if scenario.engine in ("llamacpp", "ollama"):
        return llamacpp_sliding_cells(layout) or scenario.context
    if scenario.engine == "vllm" and layout.sliding_window:
        return layout.sliding_window + VLLM_BLOCK_SIZE
    return layout.sliding_window or scenario.context


def _overhead_line(scenario: Scenario, est: Estimate) -> str:
    """The engine's overhead: per-GPU parts times the GPUs, plus parts counted once."""
    lang = scenario.lang
    once = {"prefill_activation"} if scenario.engine == "transformers" else set()
    per_gpu = [(key, value) for key, value in est.overhead_parts if key not in once]
    whole = [(key, value) for key, value in est.overhead_parts if key in once]

    def listed(parts: list[tuple[str, int]]) -> str:
        return " + ".join(text(f"part_{key}", lang, gb=gb(value, lang)) for key, value in parts)

    engine = ENGINE_LABELS[scenario.engine]
    if est.gpus == 1:
        return text(
            "line_overhead",
            lang,
            engine=engine,
            parts=listed(est.overhead_parts),
            gb=gb(est.overhead_bytes, lang),
        )
    extra = (" + " + listed(whole)) if whole else ""
    return text(
        "line_overhead_gpus",
        lang,
        engine=engine,
        parts=listed(per_gpu),
        gpus=est.gpus,
        extra=extra,
        gb=gb(est.overhead_bytes, lang),
    )


def _copy_line(scenario: Scenario, ev: Evaluation) -> str:
    """The copies vLLM runs when it cannot split the heads over every GPU: one copy's sum."""
    plan = ev.option.replicas
    assert plan is not None
    hw = min(ev.candidate.members, key=lambda member: member.usable_bytes_per_gpu)
    one, est = copy_estimate(scenario, hw, plan)
    lang = scenario.lang
    return text(
        "line_copy",
        lang,
        label=ev.option.label,
        copies=plan.replicas,
        tp=plan.tensor_parallel,
        gpus=counted(plan.tensor_parallel, "gpu", lang),
        share=integer(plan.users_per_replica, lang),
        weights=gb(one.weights.bytes + one.extras.weights_bytes, lang),
        kv=gb(est.kv_bytes_per_sequence * one.users, lang),
        overhead=gb(est.overhead_bytes, lang),
        total=gb(total_bytes(one, est), lang),
        seqs=counted(plan.max_concurrent_sequences, "sequence", lang),
    )


def _option_line(scenario: Scenario, ev: Evaluation) -> str:
    lang, est = scenario.lang, ev.estimate
    # A negative room is printed as such, so that usable - weights - overhead still adds up.
    room = est.kv_room_bytes
    fields = {
        "label": ev.option.label,
        "usable": number(ev.option.usable_gb, lang),
        "weights": gb(est.weights_bytes, lang),
        "room": gb(room, lang),
        "seqs": counted(ev.option.max_concurrent_sequences, "sequence", lang),
        "context": integer(scenario.context, lang),
    }
    if scenario.engine == "vllm":
        seq_tokens = est.kv_bytes_per_sequence / _kv_tokens(scenario)
        tokens = int(max(0, room) / seq_tokens) if seq_tokens else 0
        # vLLM's own overhead inside its budget: activation + non-torch (context and graphs sit in the slack).
        inside = sum(b for key, b in est.overhead_parts if key in ("activation", "non_torch")) * est.gpus
        line = text(
            "line_option_vllm",
            lang,
            util=number(scenario.utilization * 100, lang, 0),
            budget=gb(est.budget_bytes, lang),
            overhead=gb(inside, lang),
            tokens=integer(tokens, lang),
            **fields,
        )
        if not est.slack_ok:
            slack = ev.option.usable_gb * GB - est.budget_bytes
            need = (
                sum(b for key, b in est.overhead_parts if key in ("cuda_context", "cuda_graphs")) * est.gpus
            )
            line += "; " + text(
                "line_slack", lang, label=ev.option.label, slack=gb(slack, lang), need=gb(need, lang)
            )
        return line
    if scenario.engine == "transformers":
        # The prefill activations grow with each sequence, so they share the room with the KV.
        context_bytes = sum(b for key, b in est.overhead_parts if key == "cuda_context") * est.gpus
        per_seq = est.kv_bytes_per_sequence + (est.overhead_bytes - context_bytes) / scenario.users
        return text(
            "line_option_transformers",
            lang,
            overhead=gb(context_bytes, lang),
            per_seq=gb(per_seq, lang, 3),
            **fields,
        )
    host = scenario.weights.bytes - est.weights_bytes
    if host > 0:
        # llama.cpp keeps the input embedding (token lookup table) in host RAM, not on the GPU.
        return text(
            "line_option_host_embedding",
            lang,
            overhead=gb(est.overhead_bytes, lang),
            all_weights=gb(scenario.weights.bytes, lang),
            host=gb(host, lang),
            **fields,
        )
    return text("line_option", lang, overhead=gb(est.overhead_bytes, lang), **fields)


__all__ = ["arithmetic_lines", "kv_copies_shown", "tensor_parallel"]
