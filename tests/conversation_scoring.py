"""Scores offline answers against the conversation question sets (tests/golden/conversation_*.jsonl).

Each case states checkable facts, never an answer text: the calculator requests the answer must
have sized (`sized`, written by hand), the number asked for (`number`, computed here by brute force
over `tools.calculate_vram`, independently of `tools/reverse.py`), the comparison's winner, the
quality caveat, phrases that must or must not appear, whether one follow-up question is due. The
"lead" is what comes before the first table or arithmetic block: verdicts, numbers and winners
must be there, where a reader sees them first.

Used by benchmarks/conversation.py (scores by kind and language) and tests/test_conversation_heldout.py
(the regression floor).
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from assistant.schemas import ConversationState, Reply
from assistant.service import Assistant
from assistant.settings import Settings
from tests.fakes import FakeArticles, section
from tools import SizingRequest, SizingResult, calculate_vram, list_cards, list_models
from tools.catalog import resolve
from tools.errors import SizingError

GOLDEN = Path(__file__).parent / "golden"
# GPU counts a reverse "how many" answer may name: servers hold 1, 2, 4 or 8 cards and tensor
# parallelism splits attention heads evenly; beyond 8, whole 8-GPU nodes.
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)

FITS = {"en": r"\bfits?\b|\bholds? it\b|\bfit on\b", "es": r"(?<!no )\bcaben?\b|(?<!no )\bentra\b"}
NO_FIT = {
    "en": r"does not fit|doesn't fit|do not fit|won't fit|not fit|nothing fits|neither|none of",
    "es": r"no cabe|no caben|no entra|ninguna",
}
UNKNOWN = (
    r"don't know|do not know|not in (?:my|the) catalog|unknown|no conozco|desconoc|no est[aá] en (?:el|mi) "
    r"cat[aá]logo|not one i know|no la tengo"
)
ASSUMPTION = r"assum|supuest|suponiendo|asum"
QUALITY = {"en": r"\bquality\b", "es": r"\bcalidad\b"}
# Words of the English answer that must never show up in a Spanish one.
ENGLISH_LABELS = r"does not fit|\bMax users\b|\bHeadroom\b|\bclass\b|tokens of context|\bUsable\b"
CONTRADICTIONS = r"\(0[.,]00 GB short\)|faltan 0[.,]00 GB"
# What a performance figure rests on (tools/data/perf_texts.json's basis sentences).
BASIS = {
    "en": r"calibrated on \d+ published|measured on this|scaled to your own",
    "es": r"calibrado con \d+ mediciones|medido en esta|ajustada a su propia",
}
MEETS = {"en": r"\bmeets?\b|\bwithin the target\b", "es": r"(?<!no )\bcumplen?\b"}
MISSES = {
    "en": r"does not meet|doesn't meet|not meet|misses|none .{0,40}meets",
    "es": r"no cumplen?|ninguna .{0,40}cumple",
}
# The performance estimate's figure each "perf_*" oracle reads, and its scale.
PERF_FIGURES = {
    "perf_tok_s_per_user": ("output_tok_s_per_user", 1.0),
    "perf_tok_s_total": ("output_tok_s_total", 1.0),
    "perf_ttft_ms": ("ttft_ms", 1.0),
    "perf_requests_per_hour": ("requests_per_s", 3600.0),
    "perf_users": ("capacity", 1.0),  # with users_target: the most users served within the target
}


def load(name: str) -> list[dict[str, Any]]:
    path = GOLDEN / name
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def recording_store() -> FakeArticles:
    """An article store that records each query and answers with one passage."""
    return FakeArticles([section("x", "Article", "{lang}/a.md", "Section")])


# --------------------------------------------------------------------------- oracles


def _calc(request: dict[str, Any], lang: str) -> SizingResult | None:
    try:
        return _calc_cached(json.dumps({**request, "lang": lang}, sort_keys=True))
    except SizingError:
        return None


@cache
def _calc_cached(request_json: str) -> SizingResult:
    return calculate_vram(SizingRequest(**json.loads(request_json)))


def _fits(request: dict[str, Any], lang: str = "en") -> bool:
    result = _calc(request, lang)
    return bool(result and result.options and result.options[0].fits)


def _quoted(card: Any) -> bool:
    """A GPU of the line-up we quote: Macs, CPU hosts and cards sized only when named are not."""
    return bool(card.suggested) and card.kind not in ("apple", "cpu")


def oracle_performance(spec: dict[str, Any], lang: str) -> tuple[float, float, float, bool | None]:
    """(low, best, high, meets_target) of the recommended option's performance estimate
    (`calculate_vram(...).performance`) for a "perf_*" number."""
    result = _calc(spec["request"], lang)
    assert result and result.performance, spec
    name, scale = PERF_FIGURES[spec["what"]]
    band = getattr(result.performance, name)
    return band.low * scale, band.best * scale, band.high * scale, result.performance.meets_target


def _has_performance(spec: dict[str, Any], lang: str) -> bool:
    result = _calc(spec["request"], lang)
    return bool(result and result.performance)


def _stated(value: float, text: str) -> bool:
    tolerance = max(abs(value) * 0.03, 1.0)
    return any(abs(found - value) <= tolerance for found in numbers_in(text))


def oracle_number(spec: dict[str, Any], lang: str) -> tuple[str, Any]:
    """('number', value) or ('name', text): what the answer's lead must state."""
    what = spec["what"]
    if what in PERF_FIGURES:
        return "number", oracle_performance(spec, lang)[1]
    base = {"precision": spec.get("precision", "bf16")}
    for key in ("context", "users"):
        if spec.get(key):
            base[key] = spec[key]
    if what == "decode_tok_s":
        result = _calc(spec["request"], lang)
        assert result and result.options[0].decode_tokens_per_s
        return "number", result.options[0].decode_tokens_per_s
    if what == "kv_bytes_per_token":
        result = _calc(spec["request"], lang)
        assert result
        return "number", result.kv_bytes_per_token
    if what == "largest_model":
        fitting = [
            model for model in list_models() if _fits({**base, "model": model.id, "gpu": spec["card"]})
        ]
        best = max(fitting, key=lambda model: model.params)
        return "name", best.name
    if what == "max_context":
        request = {**base, "model": spec["model"], "gpu": spec["card"]}
        # The model's own position limit caps the answer, as a serving engine would refuse more.
        limit = resolve(spec["model"]).arch.max_position_embeddings or 10_000_000
        if _fits({**request, "context": limit}):
            return "number", limit
        low, high = 0, limit
        if not _fits({**request, "context": 128}):
            return "number", 0
        low = 128
        while high - low > 1:
            middle = (low + high) // 2
            if _fits({**request, "context": middle}):
                low = middle
            else:
                high = middle
        return "number", low
    if what == "fewest_gpus":
        cards = [spec["card"]] if spec["card"] else [card.id for card in list_cards() if _quoted(card)]
        options = []
        for card in cards:
            for count in GPU_COUNTS:
                if _fits({**base, "model": spec["model"], "gpu": f"{card}:{count}"}):
                    options.append(count)
                    break
        return "number", min(options)
    if what == "smallest_card":
        request = spec["request"]
        # Among the cards we quote (the catalog's `suggested` GPUs), as a salesperson would answer.
        fitting = [card for card in list_cards() if _quoted(card) and _fits({**request, "gpu": card.id})]
        return "name", min(fitting, key=lambda card: card.memory_mib).name
    raise ValueError(what)


# --------------------------------------------------------------------------- checks


def lead_of(answer: str) -> str:
    """The answer before its first table, arithmetic block or sources list."""
    cut = re.search(
        r"^\|.*$|^\*\*(?:The arithmetic|La aritm|Sources|Fuentes)|^<details", answer, flags=re.MULTILINE
    )
    return answer[: cut.start()] if cut else answer


def before_arithmetic(answer: str) -> str:
    cut = re.search(r"^\*\*(?:The arithmetic|La aritm)", answer, flags=re.MULTILINE)
    return answer[: cut.start()] if cut else answer


def numbers_in(text: str) -> list[float]:
    found = []
    for raw in re.findall(r"\d[\d.,]*", text):
        raw = raw.rstrip(".,")
        for candidate in (raw.replace(",", ""), raw.replace(".", "").replace(",", ".")):
            with contextlib.suppress(ValueError):
                found.append(float(candidate))
    k_values = [float(m) * 1024 for m in re.findall(r"(\d+(?:[.,]\d+)?)\s?[Kk]\b", text.replace(",", "."))]
    return found + k_values


def _matches(result: SizingResult, expected: SizingResult, gpu: str | None) -> bool:
    same = (
        result.model.id == expected.model.id
        and result.precision == expected.precision
        and result.engine == expected.engine
        and result.context == expected.context
        and result.users == expected.users
        and result.kv_dtype == expected.kv_dtype
    )
    if not same or not gpu:
        return same
    want = expected.options[0]
    return any(
        option.label == want.label
        and option.fits == want.fits
        and option.max_concurrent_sequences == want.max_concurrent_sequences
        for option in result.options
    )


# A training case's FinetuneSpec fields; what a case leaves out is the calculator's default.
TRAINING_FIELDS = ("method", "lora_rank", "batch", "seq", "optimizer", "gradient_checkpointing")


def _training_request(spec: dict[str, Any]) -> dict[str, Any]:
    finetune = {name: spec[name] for name in TRAINING_FIELDS if name in spec}
    request: dict[str, Any] = {"model": spec["model"], "engine": "transformers", "finetune": finetune}
    if spec.get("gpu"):
        request["gpu"] = spec["gpu"]
    return request


def _same_training(result: SizingResult, expected: SizingResult, gpu: str | None) -> bool:
    """The answer trained what the case says: the same model, method and knobs (and card)."""
    mine, want = result.finetune, expected.finetune
    if mine is None or want is None or result.model.id != expected.model.id:
        return False
    knobs = ("method", "batch", "seq", "optimizer", "gradient_checkpointing", "gpus", "total_gb")
    if any(getattr(mine, name) != getattr(want, name) for name in knobs):
        return False
    if want.method != "full" and mine.lora_rank != want.lora_rank:
        return False
    return not gpu or any(option.label == expected.options[0].label for option in result.options)


@dataclass
class Score:
    case_id: str
    kind: str
    lang: str
    checks: dict[str, bool] = field(default_factory=dict)
    lead_chars: int | None = None
    sizing: bool = False
    before_arithmetic_chars: int | None = None  # the whole answer up to its arithmetic block
    answer_chars: int | None = None

    @property
    def passed(self) -> bool:
        return all(self.checks.values())


def score_turn(
    case: dict[str, Any], answer: str, language: str, calculations: list[SizingResult], queries: list[str]
) -> tuple[dict[str, bool], str]:
    lang = case["lang"]
    lead = lead_of(answer)
    checks: dict[str, bool] = {"language": language == lang}
    folded = answer.lower()
    for index, request in enumerate(case.get("sized", [])):
        expected = _calc(request, lang)
        if expected is None:  # a spec this calculator cannot size yet counts as not sized
            checks[f"sized[{index}]"] = False
            continue
        found = any(_matches(result, expected, request.get("gpu")) for result in calculations)
        checks[f"sized[{index}]"] = found
        if case.get("verdict") and request.get("gpu"):
            fits = expected.options[0].fits
            pattern = FITS[lang] if fits else NO_FIT[lang]
            said = bool(re.search(pattern, lead, flags=re.IGNORECASE))
            contrary = bool(re.search(NO_FIT[lang] if fits else FITS[lang], lead, flags=re.IGNORECASE))
            checks[f"verdict[{index}]"] = said and (not contrary or not fits)
    for index, spec in enumerate(case.get("trained", [])):
        expected = _calc(_training_request(spec), lang)
        assert expected is not None and expected.finetune is not None, spec
        checks[f"trained[{index}]"] = any(
            _same_training(result, expected, spec.get("gpu")) for result in calculations
        )
        checks[f"trained_total[{index}]"] = _stated(expected.finetune.total_gb, lead)
    for model_id in case.get("not_sized", []):
        checks[f"not_sized:{model_id}"] = not any(
            result.model.id == model_id or result.model.id == _calc({"model": model_id}, lang).model.id  # type: ignore[union-attr]
            for result in calculations
        )
    if (
        "number" in case
        and case["number"]["what"] == "perf_users"
        and not _has_performance(case["number"], lang)
    ):
        # "How many users can it serve?" where the model does not fit the card: the lead says so.
        checks["number"] = bool(re.search(NO_FIT[lang], lead, flags=re.IGNORECASE))
        case = {key: value for key, value in case.items() if key not in ("number", "band", "basis")}
    if "number" in case:
        kind, value = oracle_number(case["number"], lang)
        if kind == "name":
            checks["number"] = value.lower() in lead.lower()
        else:
            checks["number"] = _stated(value, lead)
    if case.get("band"):  # the performance figure's calibrated range, next to it
        low, _, high, _ = oracle_performance(case["number"], lang)
        checks["band"] = _stated(low, lead) and _stated(high, lead)
    if case.get("basis"):
        checks["basis"] = bool(re.search(BASIS[lang], lead, flags=re.IGNORECASE))
    if case.get("meets"):  # the verdict against the latency target, as the estimate has it
        meets_target = oracle_performance(case["number"], lang)[3]
        said = re.search(MEETS[lang] if meets_target else MISSES[lang], lead, flags=re.IGNORECASE)
        checks["meets"] = meets_target is not None and bool(said)
    if "winner" in case:
        winner = case["winner"].lower()
        lowered = lead.lower()
        checks["winner"] = winner in lowered.split(".")[0] or winner in lowered.split("\n")[0]
    if case.get("why"):
        checks["both_sides_sized"] = (
            len({(r.model.id, r.precision) for r in calculations}) > 1
            or len({option.label for r in calculations for option in r.options}) > 1
        )
    if "both_models" in case:
        checks["both_models"] = all(name.lower() in lead.lower() for name in case["both_models"])
    if case.get("caveat_quality"):
        checks["caveat_quality"] = bool(re.search(QUALITY[lang], folded))
    if case.get("assumption"):
        checks["assumption"] = bool(re.search(ASSUMPTION, folded))
    for pattern in case.get("contains", []):
        checks[f"contains:{pattern}"] = bool(re.search(pattern, answer, flags=re.IGNORECASE))
    for pattern in case.get("absent", []):
        checks[f"absent:{pattern}"] = not re.search(pattern, answer, flags=re.IGNORECASE)
    for pattern in case.get("search", []):
        checks[f"search:{pattern}"] = any(re.search(pattern, query, flags=re.IGNORECASE) for query in queries)
    if "hardware" in case:
        named, memory = case["hardware"]["named"], case["hardware"]["memory_gb"]
        # Sized on hardware of the memory said: the usable figure, or (for a Mac, whose GPU may
        # wire only part of its unified memory) the catalog host's physical memory.
        sized_there = any(
            abs(option.usable_gb - memory) <= 0.15 * memory
            or abs(_physical_gb(option.card) - memory) <= 0.15 * memory
            for result in calculations
            for option in result.options[:1]
            if option.card
        )
        said_unknown = bool(re.search(UNKNOWN, folded)) and named.lower() in folded
        checks["hardware"] = sized_there or said_unknown
    if "followup" in case:
        last = answer.rstrip().splitlines()[-1] if answer.strip() else ""
        checks["followup"] = last.rstrip("*_ ").endswith("?") == case["followup"]
    # Checks every answer must pass, whatever was asked.
    checks["no_contradiction"] = not re.search(CONTRADICTIONS, answer)
    if lang == "es":
        checks["spanish_labels"] = not re.search(ENGLISH_LABELS, answer)
    return checks, lead


def _assistant(store: FakeArticles) -> Assistant:
    data_dir = Path(tempfile.mkdtemp(prefix="convo-score-"))
    settings = Settings(data_dir=data_dir, llm_base_url=None, llm_model=None, chroma_url=None)
    return Assistant(settings, store, None)


def ask_turns(*turns: str) -> list[Reply]:
    """The offline assistant's replies to one conversation, each turn with the state before it."""
    assistant = _assistant(recording_store())
    state = ConversationState()
    replies = []
    for turn in turns:
        reply = assistant.answer(turn, state)
        replies.append(reply)
        state = reply.state
    return replies


def score_singles(cases: Iterable[dict[str, Any]]) -> list[Score]:
    scores = []
    for case in cases:
        store = recording_store()
        reply = _assistant(store).answer(case["q"])
        checks, lead = score_turn(case, reply.answer, reply.language, reply.calculations, store.queries)
        scores.append(
            Score(
                case["id"],
                case["kind"],
                case["lang"],
                checks,
                len(lead),
                bool(reply.calculations),
                len(before_arithmetic(reply.answer)),
                len(reply.answer),
            )
        )
    return scores


def assert_share_passed(scores: list[Score], floor: float) -> None:
    """At least `floor` of the scored questions pass every check; the failed checks are shown."""
    failed = {s.case_id: [n for n, ok in s.checks.items() if not ok] for s in scores if not s.passed}
    assert sum(s.passed for s in scores) / len(scores) >= floor, failed


def score_conversations(conversations: Iterable[dict[str, Any]]) -> list[Score]:
    scores = []
    for conversation in conversations:
        store = recording_store()
        assistant = _assistant(store)
        state = ConversationState()
        checks: dict[str, bool] = {}
        for number, turn in enumerate(conversation["turns"]):
            store.searches.clear()
            reply = assistant.answer(turn["q"], state)
            turn_checks, _ = score_turn(turn, reply.answer, reply.language, reply.calculations, store.queries)
            checks.update({f"t{number}:{name}": ok for name, ok in turn_checks.items()})
            state = ConversationState.model_validate_json(reply.state.model_dump_json())
        langs = {turn["lang"] for turn in conversation["turns"]}
        scores.append(
            Score(conversation["id"], f"conv:{conversation['kind']}", "/".join(sorted(langs)), checks)
        )
    return scores


def _physical_gb(card_id: str) -> float:
    """A catalog card's physical memory in decimal GB (its marketed figure)."""
    import tools

    card = next((card for card in tools.list_cards() if card.id == card_id), None)
    return card.memory_mib * 1024 * 1024 / 1e9 if card else 0.0
