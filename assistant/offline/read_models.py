"""The models a message names, and the weights and KV-cache precisions written with them.

Catalog aliases first, then "<family> <size>", then a bare size ("70B", "70.000 millones");
a family one typo away ("lama 3 70b") is that family; a speculative draft model is read apart
so it is not a second model to compare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.offline.lexicon import Lexicon, lexicon
from assistant.offline.names import ModelName, catalog, name_key
from assistant.offline.notes import ReadingNote, note
from assistant.offline.numbers import parse_number
from assistant.offline.spans import blank, is_ruled_out
from tools.catalog import catalog_architecture


@dataclass(frozen=True)
class FoundModel:
    position: int  # in the folded message
    model_id: str
    label: str
    ruled_out: bool  # "not the 7B"


def find_models(text: str, notes: list[ReadingNote]) -> tuple[str, list[FoundModel]]:
    """Catalog aliases first, then "<family> <size>", then a bare size ("70B", "70.000 millones")."""
    cat = catalog()
    lex = lexicon()
    original = text
    # Aliases are matched on the name-key form of the message; the raw span is then blanked (and
    # its position taken) by a pattern that tolerates the separators the visitor wrote.
    keyed = name_key(text)
    # Spans an alias has claimed: "mistral small" is not also "mistral". `keyed` keeps sizeless
    # family names, which the sizes after them need ("llama 3.1 ... 70b").
    claimed = keyed
    found: list[FoundModel] = []
    sizeless: list[tuple[int, str, ModelName]] = []
    for key, model in cat.model_keys:
        if key not in claimed:
            continue
        match = re.search(rf"(?<![a-z0-9.]){re.escape(key)}(?![a-z0-9])", claimed)
        if match:
            claimed = blank(claimed, match.start(), match.end())
            if not re.search(r"\d[bm]\b", key):  # "llama3.1", "mixtral": a family, unless no size follows
                sizeless.append((_name_position(text, key), key, model))
                continue
            keyed = blank(keyed, match.start(), match.end())
            text, position = _blank_name_in_text(text, key)
            found.append(FoundModel(position, model.model_id, model.label, is_ruled_out(original, position)))
            _note_released(key, model, notes)
    sizes: list[tuple[int, float]] = []
    for pattern in lex.model_size:
        for match in pattern.finditer(text):
            value = parse_number(match.group(1))
            if value:
                sizes.append((match.start(), value))
                text = blank(text, match.start(), match.end())
    for match in lex.model_size_millions.finditer(text):
        value = parse_number(match.group(1))
        if value:
            sizes.append((match.start(), value / 1000))
            text = blank(text, match.start(), match.end())
    for position, size_b in sorted(sizes):
        family_model = _family_model(keyed, size_b)
        # "not qwen 32b": the correction comes before the family word, not the size.
        named_at = _family_start(text, family_model.family, position) if family_model else position
        ruled_out = is_ruled_out(original, position) or is_ruled_out(original, named_at)
        if family_model and all(model.model_id != family_model.model_id for model in found):
            found.append(FoundModel(position, family_model.model_id, family_model.label, ruled_out))
            text = _blank_family_before(text, family_model.family, position)
            written = _other_version(keyed, family_model, size_b)
            if written and not ruled_out:
                notes.append(note("model_substituted", written=written, label=family_model.label))
            elif not ruled_out:
                _note_same_size(keyed, family_model, size_b, notes)
        elif not family_model:
            found.append(FoundModel(position, f"{size_b:g}b", f"{size_b:g}B", ruled_out))
    if not sizes:  # a family alias with no size ("mixtral", "llama3.1") names the catalog's default
        for position, key, model in sizeless:
            if _ASKS_WHICH.search(original[:position]) and len(family_members(find_family(key) or "")) > 1:
                continue  # "which qwen3 fits an L4?": the family is asked for, not its default tag
            if unknown_variant(text, key):
                continue  # "mistral large 2": a model the catalog lacks, not Mistral's default
            text, sized = _size_after_name(text, key)  # "mistral 24": the family's 24B, not its default
            if all(found_model.model_id != (sized or model).model_id for found_model in found):
                chosen = sized or model
                found.append(
                    FoundModel(position, chosen.model_id, chosen.label, is_ruled_out(original, position))
                )
                text, _ = _blank_name_in_text(text, key)  # "qwen 3 h100": the 3 is not a card count
                _note_released(key, model, notes)
                if sized is None:
                    _note_default_size(key, model, notes)
    # "un 3b, llama 3.2 3b": a bare size repeating a catalog model named alongside is that model.
    named = [model for model in found if not _BARE.fullmatch(model.model_id)]
    found = [
        model
        for model in found
        if not _BARE.fullmatch(model.model_id)
        or not any(_same_size(model.model_id, other.model_id) for other in named)
    ]
    found.sort(key=lambda model: model.position)
    return text, found


# "which qwen3 ...", "cual llama 3.1 ...": a name with no size after these asks which of the family.
_ASKS_WHICH = re.compile(r"\b(?:which|cual|biggest|largest)\s+$")


def _note_released(key: str, model: ModelName, notes: list[ReadingNote]) -> None:
    """ "deepseek r1": a model published with a catalog entry's architecture and weights is sized
    as that entry, and the answer says so."""
    name = catalog().released_names.get(key)
    if name:
        notes.append(note("model_released_as", name=name, label=model.label))


def _note_default_size(key: str, model: ModelName, notes: list[ReadingNote]) -> None:
    """ "qwen2.5", "llama3.1" with no size: the catalog's default of that name is sized, and the
    answer names the family's other sizes."""
    family = find_family(key)
    written = name_key(key).split()  # "deepseek v3" names one model: DeepSeek R1 Distill is not a V3
    others = [
        other.label
        for other in (family_members(family) if family else [])
        if other != model and set(written) <= set(name_key(other.label).split())
    ]
    if others and key not in catalog().released_names:
        notes.append(note("model_default_size", label=model.label, others=", ".join(others)))


_BARE = re.compile(r"\d+(?:\.\d+)?b")

# After a family word, what makes it a tool, not a model ("llama.cpp", "llama-server"); before it,
# Spanish pronouns that make "llama" a verb ("se llama", "me llama").
_FAMILY_AFTER = r"(?![a-z0-9]|\.?cpp\b| (?:cpp|server|bench|swap|stack|index|guard|file)\b)"
_FAMILY_BEFORE = "".join(rf"(?<!\b{word} )" for word in ("se", "me", "te", "le", "lo", "nos", "les"))


def _family_mention(text: str) -> tuple[str, str | None] | None:
    """The first catalog family phrase written as a model name, and the version after it if any."""
    keyed = name_key(text)
    for phrase, _ in catalog().family_phrases:
        pattern = (
            rf"{_FAMILY_BEFORE}(?<![a-z0-9.]){re.escape(phrase)}{_FAMILY_AFTER}(?: (\d+(?:\.\d+)?)(?![\d.]))?"
        )
        match = re.search(pattern, keyed)
        if match:
            return phrase, match.group(1)
    return None


def find_family(text: str) -> str | None:
    """A catalog family named with no size ("llama", "qwen 2.5", "deepseek"): the family phrase
    and any version written after it; None when none is, or when the version is none the catalog
    has ("llama 4")."""
    mention = _family_mention(text)
    if mention is None:
        return None
    phrase, version = mention
    spec = f"{phrase} {version}" if version else phrase
    return spec if family_members(spec) else None


@dataclass(frozen=True)
class FamilyReading:
    family: str | None = None  # a family phrase with catalog models, and its version if any
    unknown: tuple[str, str] | None = None  # a version the catalog lacks: ("Phi 3", "phi")
    counted: tuple[str, str] | None = None  # "deepseek 8 h200": ("DeepSeek 8", "8"), read as 8 cards
    model: ModelName | None = None  # "gpt oss 20": a size written without its "b", gpt-oss-20b


def read_family(text: str) -> tuple[str, FamilyReading]:
    """A family named with no size, and what the number after it is.

    A version the catalog has ("gemma 3 4090", "qwen 3 h100") is the family's, and is blanked so
    the card reader does not count it. Any other number the card reader takes as a card count is
    one ("deepseek 8 h200", "llama 8 h100"); one that is a family model's size written without
    its "b" is that model ("gpt oss 20", "qwen 72 on 2 h100"); otherwise it is a version the
    catalog lacks ("phi-3 mini").
    """
    mention = _family_mention(text)
    if mention is None:
        return text, FamilyReading()
    phrase, version = mention
    variant = unknown_variant(text, phrase)
    if variant:
        return text, FamilyReading(unknown=(variant, phrase))
    if version is None:
        blanked, sized_model = _size_after_name(text, phrase)  # "un llama de 70", "a qwen of 32"
        if sized_model is not None:
            return blanked, FamilyReading(model=sized_model)
        return text, FamilyReading(family=phrase if family_members(phrase) else None)
    spec = f"{phrase} {version}"
    span = _version_span(text, phrase, version)
    if family_members(spec):
        blanked, sized_model = _size_after_name(text, spec)  # "llama 3.1 de 70"
        if sized_model is not None:
            return blanked, FamilyReading(model=sized_model)
        return (blank(text, *span) if span else text), FamilyReading(family=spec)
    written = f"{family_label(phrase)} {version}"
    if span and _reads_as_count(text, span, phrase):
        family = phrase if family_members(phrase) else None
        return text, FamilyReading(family=family, counted=(written, version))
    sized = family_model_of_size(phrase, f"{version}b")
    if span and not _BARE.fullmatch(sized):  # "gpt oss 20", "qwen 72": no such version, a size
        model = next(model for model in family_members(phrase) if model.model_id == sized)
        return blank(text, *span), FamilyReading(model=model)
    return text, FamilyReading(unknown=(written, phrase))


def unknown_variant(text: str, key: str) -> str | None:
    """ "mistral large 2", "qwen max": a variant word after a family name (lexicon `model_variant`)
    that no catalog model of the family carries; the model as written ("Mistral Large 2"), else None."""
    variant = lexicon().model_variant.pattern
    version = r"(?:[\s\-_]+(\d+(?:\.\d+)?)(?![\d.]))?"
    pattern = rf"(?<![a-z0-9.]){_name_pattern(key)}[\s\-_]+({variant})(?![a-z0-9]){version}"
    match = re.search(pattern, text)
    if not match:
        return None
    family = find_family(key) or key
    word = match.group(1)
    if any(word in name_key(model.label).split() for model in family_members(family)):
        return None
    written = f"{family_label(family)} {word.capitalize() if len(word) > 2 else word.upper()}"
    return written + (f" {match.group(2)}" if match.group(2) else "")


# The cards of one node: a count beyond it that is also a family model's size is the size
# ("qwen3 32 h100": Qwen3 32B on an H100, not 32 H100s for the 8B).
NODE_GPUS = 8


def _reads_as_count(text: str, span: tuple[int, int], family: str) -> bool:
    """Whether the number at `span`, after `family`, is the count of the card after it."""
    if not _is_card_count(text, span):
        return False
    number = float(text[span[0] : span[1]])
    sized = family_model_of_size(family, f"{text[span[0] : span[1]]}b")
    return number <= NODE_GPUS or _BARE.fullmatch(sized) is not None


def _is_card_count(text: str, span: tuple[int, int]) -> bool:
    """Whether the card reader takes the number at `span` as a count of the card after it."""
    from assistant.offline.read_cards import find_cards

    read, _ = find_cards(text, None, [])
    return not read[span[0] : span[1]].strip()


def _version_span(text: str, phrase: str, version: str) -> tuple[int, int] | None:
    """Where the version after a family phrase is written ("gemma-3", "qwen3", "llama 3.1")."""
    pattern = rf"(?<![a-z0-9.]){_name_pattern(phrase)}[\s\-_:/]*({re.escape(version)})(?![\d.])"
    match = re.search(pattern, text)
    return match.span(1) if match else None


def family_members(spec: str) -> tuple[ModelName, ...]:
    """The catalog models of a family phrase, of the version it gives if any ("llama 3": 3.1, 3.2, 3.3)."""
    for phrase, members in catalog().family_phrases:
        if spec == phrase:
            return members
        if spec.startswith(phrase + " "):
            return tuple(
                model for model in members if re.match(rf"{re.escape(spec)}[ .]", name_key(model.label) + " ")
            )
    return ()


def family_list(spec: str) -> str:
    """The family's catalog models, as the answer lists them: "Gemma 2 9B, Gemma 2 27B, ..."."""
    return ", ".join(model.label for model in family_members(spec))


def family_label(spec: str) -> str:
    """The family as the catalog spells it: "Llama", "Qwen2.5", "gpt-oss"."""
    members = family_members(spec)
    if not members:
        return spec
    pattern = r"[\s\-_]*".join(re.escape(word) for word in spec.split(" "))
    match = re.search(pattern, members[0].label, flags=re.IGNORECASE)
    return match.group(0) if match else spec


def family_model_of_size(spec: str, bare: str) -> str:
    """A bare size said after a family ("the 70b" after "llama"): that family's model of that size."""
    if not _BARE.fullmatch(bare):
        return bare
    size = float(bare[:-1])
    near = [model for model in family_members(spec) if abs(model.params_b - size) <= 0.1 * size]
    return near[0].model_id if near else bare


def _same_size(bare: str, model_id: str) -> bool:
    size = float(bare[:-1])
    model = next((entry for entry in catalog().models if entry.model_id == model_id), None)
    return model is not None and abs(model.params_b - size) <= 0.1 * size


def _name_position(text: str, key: str) -> int:
    match = re.search(_name_pattern(key), text)
    return match.start() if match else 0


def _name_pattern(key: str) -> str:
    parts = [re.escape(part) for part in re.split(r"\s+", key)]
    # Between parts the raw text may have separators, or nothing where name_key inserted a space.
    return r"[\s\-_:/()\[\],]*".join(parts)


def _blank_name_in_text(text: str, key: str) -> tuple[str, int]:
    """Blank the raw spelling of a matched model name, whatever separators it used; and where it was."""
    match = re.search(_name_pattern(key), text)
    return (blank(text, match.start(), match.end()), match.start()) if match else (text, 0)


def _size_after_name(text: str, key: str) -> tuple[str, ModelName | None]:
    """ "mistral 24", "qwen3 32 on h100", "un llama de 70": a number after a name with no size
    (or after its "de", "of") that is the size of one of its family's models, written without its
    "b"; that model, and the number blanked. Never a context or a memory ("qwen3 de 32k")."""
    family = find_family(key)
    match = re.search(
        rf"{_name_pattern(key)}[\s\-_]*(?:(?:de|of)\s+)?(\d+(?:\.\d+)?)(?![\d.]|\s*(?:k\b|gb\b|tokens?\b|gpus?\b|cards?\b|tarjetas?\b|graficas?\b|users?\b|usuarios?\b|x\b))",
        text,
    )
    if not family or not match or _reads_as_count(text, match.span(1), family):  # "qwen3 8 h100": 8 cards
        return text, None
    sized = family_model_of_size(family, f"{match.group(1)}b")
    model = next((model for model in family_members(family) if model.model_id == sized), None)
    return (blank(text, *match.span(1)), model) if model else (text, None)


def _blank_family_before(text: str, family: str, position: int) -> str:
    """ "llama 2 70b a100": the family and version written just before a size are the model's
    name, not a card count."""
    start = _family_start(text, family, position)
    return blank(text, start, position) if start < position else text


def _family_start(text: str, family: str, position: int) -> int:
    """Where the family and version written just before the size at `position` begin (the
    position itself when none is)."""
    pattern = rf"(?<![a-z0-9.]){re.escape(family)}[\s\-_]*(?:\d+(?:\.\d+)?[\s\-_]*)?(?:[a-z]+[\s\-_]+)?$"
    match = re.search(pattern, text[:position])
    return match.start() if match else position


def _other_version(keyed_text: str, model: ModelName, size_b: float) -> str | None:
    """ "Llama 2 70B" when the text names a version of the family that the matched catalog model
    is not (the catalog's Llama 3.1 70B stands in for it); None when the versions agree."""
    family = re.escape(model.family)
    written = re.search(rf"\b{family} (\d+(?:\.\d+)?) (?:[a-z]+ )?{size_b:g} ?b\b", keyed_text)
    own = re.search(rf"\b{family} (\d+(?:\.\d+)?)\b", name_key(model.label))
    if not written or not own:
        return None
    version, own_version = written.group(1), own.group(1)
    if own_version == version or own_version.startswith(version + "."):
        return None
    return f"{model.family.capitalize()} {version} {size_b:g}B"


def _family_model(keyed_text: str, size_b: float) -> ModelName | None:
    """The catalog model of a family named in the text whose size is within 10% of size_b, the
    one whose name says the size closest ("qwen 30b": Qwen3 30B-A3B, not Qwen2.5 32B); of equals,
    the first in the catalog."""
    candidates = _family_candidates(keyed_text, size_b)
    return candidates[0] if candidates else None


def _family_candidates(keyed_text: str, size_b: float) -> list[ModelName]:
    words = set(keyed_text.split())
    near = [
        model
        for model in catalog().models
        if model.family in words and abs(model.params_b - size_b) <= 0.1 * size_b
    ]
    return sorted(near, key=lambda model: abs(_named_size(model) - size_b))  # stable: catalog order


# The size a model's name says ("Qwen3 30B-A3B": 30); not an expert count's ("Mixtral 8x7B").
_NAMED_SIZE = re.compile(r"(?<![x\d.])(\d+(?:\.\d+)?)B\b")


def _named_size(model: ModelName) -> float:
    said = _NAMED_SIZE.search(model.label)
    return float(said.group(1)) if said else model.params_b


def _note_same_size(keyed_text: str, chosen: ModelName, size_b: float, notes: list[ReadingNote]) -> None:
    """ "qwen 32b": the catalog has Qwen2.5 32B and Qwen3 32B; the first is sized and the answer
    names the others of that size whose architecture differs (Llama 3.3 70B is Llama 3.1 70B's)."""
    named = _named_size(chosen)
    others = [
        model.label
        for model in _family_candidates(keyed_text, size_b)
        if model != chosen
        and _named_size(model) == named
        and catalog_architecture(model.model_id) != catalog_architecture(chosen.model_id)
    ]
    if others:
        notes.append(note("model_same_size", label=chosen.label, others=", ".join(others)))


def _edit_distance_one(word: str, target: str) -> bool:
    """One insertion, deletion, substitution or swap of neighbours apart."""
    if word == target or abs(len(word) - len(target)) > 1:
        return False
    if len(word) == len(target):
        diffs = [index for index, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
        if len(diffs) == 1:
            return True
        first, second = [*diffs, 0, 0][:2]
        return (
            len(diffs) == 2
            and second == first + 1
            and word[first] == target[second]
            and word[second] == target[first]
        )
    short, long_ = sorted((word, target), key=len)
    return any(long_[:index] + long_[index + 1 :] == short for index in range(len(long_)))


def fix_family_typos(text: str) -> str:
    """ "lama 3 70b", "quen 2.5 7b": a word one typo away from a catalog family, followed by a
    version or size, is that family."""
    families = [family for family in catalog().families if len(family) >= 4 and family.isalpha()]

    def fixed(match: re.Match[str]) -> str:
        word = match.group(1)
        if word in families:
            return word
        near = [family for family in families if _edit_distance_one(word, family)]
        return near[0] if len(near) == 1 else word

    return re.sub(r"\b([a-z]{4,})(?=[\s-]*\d)", fixed, text)


def find_draft(text: str, lex: Lexicon) -> tuple[str, str | None]:
    """Speculative decoding's draft model ("--draft llama-3.2-1b", "speculative decoding with
    Llama 3.2 1B"), with its name blanked so it is not a second model to compare."""
    match = lex.draft.search(text)
    if not match:
        return text, None
    group = next(index for index in range(1, (match.lastindex or 0) + 1) if match.group(index))
    span = match.group(group)
    blanked, models = find_models(span, [])
    if not models:
        return text, None
    start = match.start(group)
    text = blank(text, match.start(), start)
    last = max(index for index, (a, b) in enumerate(zip(span, blanked, strict=True)) if a != b)
    return blank(text, start, start + last + 1), models[0].model_id


_REPO_ID = re.compile(r"(?<![\w/])[a-z][\w.-]+/([\w.-]*\d[\w.-]*)")


def names_release_repo(text: str, lex: Lexicon) -> bool:
    """A Hub repo id ("Qwen/Qwen2.5-32B-Instruct") whose name marks no quantized upload: the
    16-bit checkpoint the model is released as."""
    repos = [match.group(1) for match in _REPO_ID.finditer(text)]
    return bool(repos) and not any(lex.quantized_repo.search(repo) for repo in repos)


def find_precisions(text: str, lex: Lexicon) -> tuple[str, list[tuple[int, str]]]:
    """Every weights precision written, with its position, in the order written."""
    hits: list[tuple[int, str]] = []
    for pattern, precision in lex.precision:
        for match in pattern.finditer(text):
            hits.append((match.start(), precision))
            text = blank(text, match.start(), match.end())
    return text, sorted(hits)


def precision_per_model(models: list[FoundModel], hits: list[tuple[int, str]]) -> tuple[str | None, ...]:
    """For each model, the first precision written after it and before the next model."""
    if not models:
        return ()
    ordered = sorted(models, key=lambda model: model.position)
    bounds = [model.position for model in ordered[1:]] + [10**9]
    per_model: dict[int, str | None] = {}
    for model, bound in zip(ordered, bounds, strict=True):
        after = [precision for position, precision in sorted(hits) if model.position <= position < bound]
        per_model[model.position] = after[0] if after else None
    return tuple(per_model[model.position] for model in models)


def find_kv_dtype(text: str, lex: Lexicon) -> tuple[str, str | None]:
    match = lex.kv_cache.search(text)
    if not match:
        return text, None
    written = re.sub(r"[\s_-]", "", next(group for group in match.groups() if group))
    return blank(text, match.start(), match.end()), lex.kv_ids.get(written)
