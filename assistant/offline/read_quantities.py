"""The amounts a message gives: concurrent users, head counts, context, request lengths, a
budget, LoRA adapter slots and a training question's knobs, in digits or in words ("twenty
users", "eramos cuatro")."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from assistant.offline.lexicon import Lexicon, rules
from assistant.offline.notes import ReadingNote, note
from assistant.offline.numbers import parse_number
from assistant.offline.spans import blank


def digits_for_number_words(text: str, lex: Lexicon) -> str:
    """ "twenty users", "eramos cuatro", "a dozen people at once" -> digits, same length kept."""
    after = "|".join(rf"(?<=\b{word} )" for word in lex.number_word_after)
    for word, number in lex.number_words.items():
        pattern = rf"(?:{after}){word}\b|\b(?:an? |una? )?{word}\b{lex.number_word_context}"
        text = re.sub(pattern, _as_digits(number), text)
    return text


def _as_digits(number: int) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return str(number).ljust(len(match.group(0)))

    return replace


def find_head_count(text: str, lex: Lexicon) -> tuple[str, int | None]:
    for pattern in lex.head_count:
        match = pattern.search(text)
        if match:
            value = parse_number(match.group(1))
            if value and value >= 1:
                return blank(text, match.start(), match.end()), int(value)
    return text, None


def _negative(text: str, start: int) -> bool:
    """A minus sign written right before a number ("-3 usuarios"), not a hyphen inside a name."""
    return bool(re.search(r"(?:^|[\s(=:])-\s?$", text[:start]))


def find_users(text: str, lex: Lexicon, notes: list[ReadingNote]) -> tuple[str, int | None]:
    from tools.scenario import MAX_USERS

    for pattern in lex.users:
        match = pattern.search(text)
        if match:
            value = parse_number(match.group(1))
            if value is not None and (value < 1 or value > MAX_USERS or _negative(text, match.start(1))):
                shown = -value if _negative(text, match.start(1)) else value
                notes.append(note("users_out_of_range", value=shown, limit=MAX_USERS))
                return blank(text, match.start(), match.end()), None
            users = scaled(match.group(1), match.group(2), 1000)
            if users and users > MAX_USERS:
                notes.append(note("users_out_of_range", value=users, limit=MAX_USERS))
                return blank(text, match.start(), match.end()), None
            if users:
                return blank(text, match.start(), match.end()), users
    if lex.users_single.search(text):
        return text, 1
    return text, None


def find_context(text: str, lex: Lexicon, notes: list[ReadingNote]) -> tuple[str, int | None]:
    from tools.scenario import MAX_CONTEXT

    for pattern in lex.context:
        match = pattern.search(text)
        if match:
            suffix = match.group(2) if match.lastindex and match.lastindex >= 2 else None
            context = scaled(match.group(1), suffix, lex.context_k)
            if context and context > MAX_CONTEXT:
                notes.append(note("context_out_of_range", value=context, limit=MAX_CONTEXT))
                return blank(text, match.start(), match.end()), None
            if context and context >= 128:
                return blank(text, match.start(), match.end()), context
    return text, None


# Tokens kept beside a document read whole: the instructions and the answer (rounded up to 1k).
PAGES_RESERVE = 1024


@dataclass(frozen=True)
class Pages:
    """A document's length said in pages, and the context it needs."""

    pages: int
    tokens: int  # at data/rules_of_thumb.yaml's tokens per page
    per_page: int
    context: int  # tokens + PAGES_RESERVE, rounded up to a multiple of 1,024


def find_pages(text: str, lex: Lexicon, notes: list[ReadingNote]) -> tuple[str, Pages | None]:
    """A document's length in pages ("contracts of up to 50 pages") and the context it needs;
    None when no page count is said, or the context would exceed the calculator's (said in a
    note)."""
    from tools.scenario import MAX_CONTEXT

    for pattern in lex.context_pages:
        match = pattern.search(text)
        pages = parse_number(match.group(1)) if match else None
        if match is None or not pages or pages < 1:
            continue
        per_page = int(rules()["tokens_per_page"])
        tokens = round(pages * per_page)
        context = -(-(tokens + PAGES_RESERVE) // 1024) * 1024
        text = blank(text, match.start(), match.end())
        if context > MAX_CONTEXT:
            notes.append(note("context_out_of_range", value=context, limit=MAX_CONTEXT))
            return text, None
        return text, Pages(round(pages), tokens, per_page, context)
    return text, None


def scaled(raw: str, suffix: str | None, k: int) -> int | None:
    value = parse_number(raw)
    if value is None:
        return None
    if suffix == "k":
        value *= k
    elif suffix and suffix.startswith("mill"):  # "10 millones", "2 million": decimal millions
        value *= 1_000_000
    elif suffix == "m":
        value *= k * k
    return int(value) if value >= 1 else None


def first_number(match: re.Match[str]) -> tuple[str, str | None] | None:
    """The first (number, suffix) group pair a multi-branch pattern filled."""
    groups = match.groups()
    for index in range(0, len(groups) - 1, 2):
        if groups[index]:
            return groups[index], groups[index + 1]
    return None


def find_lengths(text: str, lex: Lexicon) -> tuple[str, int | None, int | None]:
    """ "1000 tokens in and 200 out", "prompts of 4k tokens", "each contract is about 6000 tokens
    and the summary 400": per-request lengths, never a context."""
    words = lex.length_words
    text, prompt, prompt_end = _length(text, (lex.input_len,), None)
    if prompt is None:
        text, prompt, prompt_end = _length(text, (words.input_after, words.input_before), None)
    text, answer, _ = _length(text, (lex.output_len,), None)
    if answer is None:
        # Without the word "tokens" an answer's number is one only after a prompt's length.
        text, answer, _ = _length(text, (words.output_after, words.output_before), prompt_end)
    if answer is None and prompt_end is not None:
        text, answer, _ = _length(text, (words.output_into,), prompt_end, after=prompt_end)
    return text, prompt, answer


def _length(
    text: str, patterns: tuple[re.Pattern[str], ...], prompt_end: int | None, after: int = 0
) -> tuple[str, int | None, int | None]:
    """The first pattern's length (its span blanked) and where that span ends. A match whose
    pattern has a `tok` group needs it filled unless a prompt's length was read (`prompt_end`)."""
    for pattern in patterns:
        for match in pattern.finditer(text, after):
            if "tok" in pattern.groupindex and not match.group("tok") and prompt_end is None:
                continue
            if "n" in pattern.groupindex:
                read: tuple[str, str | None] | None = (match.group("n"), match.group("k"))
            else:
                read = first_number(match)
            value = scaled(read[0], read[1], 1000) if read else None
            if value:
                return blank(text, match.start(), match.end()), value, match.end()
    return text, None, None


def find_job_count(text: str, lex: Lexicon) -> tuple[str, int | None]:
    """ "10.000 correos cada noche", "50k documents overnight": the requests of one batch job."""
    match = lex.job_count.search(text)
    if not match:
        return text, None
    suffix = match.group(2)
    value = scaled(match.group(1) or "1", "k" if suffix == "mil" else suffix, 1000)  # "un millón"
    if not value:
        return text, None
    # The number only: the word after it may also carry the request's length ("tickets of 500 tokens").
    return blank(text, match.start(), match.end(2) if match.group(2) else match.end(1)), value


def find_budget(text: str, lex: Lexicon) -> tuple[str, str | None]:
    match = lex.budget.search(text)
    if not match:
        return text, None
    written = next(group for group in match.groups() if group)
    return blank(text, match.start(), match.end()), written.strip()


def find_lora(text: str, folded: str, lex: Lexicon) -> tuple[str, str, int | None, int | None]:
    """LoRA adapters served at once (vLLM --enable-lora/--max-loras): slots, the rank, and the
    message with those spans blanked for the task reading (serving adapters is not fine-tuning)."""
    slots_match = lex.lora_slots.search(text)
    enabled = lex.lora_enable.search(text)
    if not slots_match and not enabled:
        return text, folded, None, None
    slots = int(next(group for group in slots_match.groups() if group)) if slots_match else None
    rank_match = lex.lora_rank.search(text)
    rank = int(next(group for group in rank_match.groups() if group)) if rank_match else None
    task_text = folded
    for match in (slots_match, enabled, rank_match):
        if match:
            text = blank(text, match.start(), match.end())
            task_text = blank(task_text, match.start(), match.end())
    return text, task_text, max(1, slots or lex.lora_default_slots), rank


# A LoRA rank beyond this is a figure read wrongly (the largest published ranks are 256-1024).
MAX_FINETUNE_RANK = 2048


def find_finetune(text: str, task_text: str, lex: Lexicon) -> tuple[str, str | None, int | None]:
    """A training question's method (the earliest one named: full, LoRA, QLoRA) and LoRA rank,
    with the rank's span blanked so its figure is not read as users or context. A follow-up
    without training words ("and with rank 8?") gives its rank only as "rank N" / "rango N"."""
    training = is_training(task_text, lex)
    named = [
        (match.start(), method) for pattern, method in lex.finetune_methods if (match := pattern.search(text))
    ]
    method = min(named)[1] if training and named else None
    match = lex.finetune_rank.search(text)
    if match and not training and not re.match(r"rank|rango", match.group(0)):
        match = None
    if not match:
        return text, method, None
    rank = int(next(group for group in match.groups() if group))
    if not 1 <= rank <= MAX_FINETUNE_RANK:
        return text, method, None
    return blank(text, match.start(), match.end()), method, rank


# Below this many tokens a "sequence" figure is a count of sequences, not a training length.
MIN_TRAIN_SEQ = 64


@dataclass(frozen=True)
class TrainingKnobs:
    """What a message says of how a model is trained (tools.finetune.FinetuneSpec's knobs)."""

    batch: int | None = None  # micro-batch per GPU
    seq: int | None = None  # tokens per training sequence
    optimizer: str | None = None  # adamw | adamw8bit | sgd
    checkpointing: bool | None = None  # gradient checkpointing said on or off


def is_training(task_text: str, lex: Lexicon) -> bool:
    """The message is about training (its first task word is a training one)."""
    return next((task for pattern, task in lex.tasks if pattern.search(task_text)), None) == "finetuning"


def find_training(text: str, training: bool, lex: Lexicon) -> tuple[str, TrainingKnobs]:
    """A training question's micro-batch, sequence length, optimizer and gradient checkpointing.
    In a training message their spans are blanked, so "batch 8" is not read as 8 users, "4096-token
    sequences" as a serving context or "8-bit Adam" as 8-bit weights. Elsewhere only the batch and
    the sequence length are read, and left for the users and context readers too: they are a
    training follow-up's ("and with batch 8?") only when the conversation is about training."""
    from tools.finetune import MAX_BATCH, MAX_SEQ

    batch: int | None = None
    seq: int | None = None
    text = _batch_words_as_digits(text, lex)
    match, global_batch = _micro_batch(lex.train_batch, text)
    if training and global_batch:  # said, but not what a GPU holds: no users either
        text = blank(text, global_batch.start(), global_batch.end())
    if match and 1 <= int(match.group(1)) <= MAX_BATCH:
        batch = int(match.group(1))
        text = blank(text, match.start(), match.end()) if training else text
    for pattern in lex.train_seq:
        match = pattern.search(text)
        tokens = scaled(match.group(1), match.group(2), 1024) if match else None
        if match and tokens and MIN_TRAIN_SEQ <= tokens <= MAX_SEQ:
            seq = tokens
            text = blank(text, match.start(), match.end()) if training else text
            break
    if not training:
        return text, TrainingKnobs(batch=batch, seq=seq)
    optimizer = None
    for pattern, name in lex.train_optimizer:
        if match := pattern.search(text):
            optimizer, text = name, blank(text, match.start(), match.end())
            break
    checkpointing = None
    for pattern, said in ((lex.checkpointing_off, False), (lex.checkpointing_on, True)):
        if match := pattern.search(text):
            checkpointing, text = said, blank(text, match.start(), match.end())
            break
    return text, TrainingKnobs(batch, seq, optimizer, checkpointing)


def _batch_words_as_digits(text: str, lex: Lexicon) -> str:
    """ "a batch of eight", "lote de cuatro" -> digits, same length kept."""

    def replace(match: re.Match[str]) -> str:
        number = lex.number_words.get(match.group(2))
        if number is None:
            return match.group(0)
        return match.group(1) + str(number).ljust(len(match.group(2)))

    return lex.train_batch_word.sub(replace, text)


# A batch figure that is not the micro-batch: the global one, gradient accumulation's product.
_NOT_MICRO = re.compile(r"(?:global|effective|total|overall|accumulated)[ -]$")


def _micro_batch(
    patterns: tuple[re.Pattern[str], ...], text: str
) -> tuple[re.Match[str] | None, re.Match[str] | None]:
    """(the first batch figure that is not a global one, the first global one): "global batch 64
    with micro-batch 4" trains micro-batches of 4."""
    micro = global_batch = None
    for pattern in patterns:
        for match in pattern.finditer(text):
            if _NOT_MICRO.search(text[max(0, match.start() - 13) : match.start()]):
                global_batch = global_batch or match
            elif micro is None:
                micro = match
    return micro, global_batch
