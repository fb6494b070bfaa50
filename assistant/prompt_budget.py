"""The prompt budget: what one model call sends, in tokens, kept within the served context.

Local servers truncate or refuse a prompt longer than their context window, and some do it
silently (Ollama keeps the last tokens of an over-long prompt, dropping the system prompt
first). So before every model call the agent measures the system prompt, the tool schemas
and the messages (history, tool results, article passages) and keeps the total within
`llm_context_tokens - llm_max_tokens`: the oldest history turns go first, then article
passages from the last one up. What was left out is reported (a step and a log line); a
prompt that still cannot fit is an `LLMUnavailableError`, never a truncated prompt.

Tokens are estimated per kind of character, on the high side of what the served tokenizer
makes of these prompts: digits cost most (many tokenizers split numbers into single digits,
and the calculator's results are full of them), then punctuation, accented letters, plain
words. Measured against SmolLM2-135M's tokenizer on the system prompt, the tool schemas, three
calculator results in English and Spanish and every article section: the estimate is 1.07 to
1.45 times the real count (`benchmarks/llm_real.py` prints both; the real-model lane checks
that the estimate never falls below the server's count).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from assistant.errors import LLMUnavailableError

# Tokens per character of each kind, fitted high on SmolLM2's tokenizer (measured 0.21 per
# ASCII letter or space, 1.3 per digit, 0.6 per punctuation mark; accented letters vary).
TOKENS_PER_LETTER = 0.28
TOKENS_PER_DIGIT = 1.4
TOKENS_PER_SYMBOL = 0.75
TOKENS_PER_NON_ASCII_BYTE = 1.5
# On top, for texts unlike those measured (the fit's worst case, a Spanish section full of
# accents and «», came within 3 % of the real count).
MARGIN = 1.1
# The chat template's own tokens around each message (role markers, separators).
TOKENS_PER_MESSAGE = 6
# How passages are joined in a search_articles result (assistant.llm_tools.passages_for_model).
PASSAGE_SEPARATOR = "\n\n["


class PromptTooLargeError(LLMUnavailableError):
    """Even without history and passages the prompt does not fit the context window."""

    kind = "prompt_budget"


@dataclass
class FittedPrompt:
    messages: list[AnyMessage]
    tokens: int
    budget: int
    trimmed: list[str] = field(default_factory=list)  # "history", "passages": what was left out


def estimate_tokens(text: str) -> int:
    letters = digits = symbols = non_ascii = 0
    for char in text:
        if not char.isascii():
            non_ascii += len(char.encode("utf-8"))
        elif char.isdigit():
            digits += 1
        elif char.isalpha() or char == " ":
            letters += 1
        else:
            symbols += 1
    return math.ceil(
        MARGIN
        * (
            letters * TOKENS_PER_LETTER
            + digits * TOKENS_PER_DIGIT
            + symbols * TOKENS_PER_SYMBOL
            + non_ascii * TOKENS_PER_NON_ASCII_BYTE
        )
    )


def message_tokens(message: AnyMessage) -> int:
    content = message.content if isinstance(message.content, str) else json.dumps(message.content)
    tokens = estimate_tokens(content) + TOKENS_PER_MESSAGE
    if isinstance(message, AIMessage) and message.tool_calls:
        tokens += estimate_tokens(json.dumps([[c["name"], c["args"]] for c in message.tool_calls]))
    return tokens


def prompt_tokens(system: str, tools: Sequence[Any], messages: Sequence[AnyMessage]) -> int:
    schemas = [tool for tool in tools if isinstance(tool, dict)]
    fixed = estimate_tokens(system) + TOKENS_PER_MESSAGE + estimate_tokens(json.dumps(schemas))
    return fixed + sum(message_tokens(message) for message in messages)


def fit_request(
    system: str,
    tools: Sequence[Any],
    messages: list[AnyMessage],
    *,
    context_tokens: int,
    answer_tokens: int,
) -> FittedPrompt:
    """`messages` trimmed until the prompt plus the answer fit `context_tokens`."""
    budget = context_tokens - answer_tokens
    fitted = FittedPrompt(list(messages), prompt_tokens(system, tools, messages), budget)
    current = _current_question(fitted.messages)
    while fitted.tokens > budget and current > 0:
        fitted.messages.pop(0)
        current -= 1
        _note(fitted, "history")
        fitted.tokens = prompt_tokens(system, tools, fitted.messages)
    while fitted.tokens > budget and _drop_last_passage(fitted.messages):
        _note(fitted, "passages")
        fitted.tokens = prompt_tokens(system, tools, fitted.messages)
    if fitted.tokens > budget:
        raise PromptTooLargeError(
            f"the prompt needs about {fitted.tokens} tokens, more than the {budget} that "
            f"SIZING_LLM_CONTEXT_TOKENS={context_tokens} leaves after SIZING_LLM_MAX_TOKENS={answer_tokens}"
        )
    return fitted


def _current_question(messages: Sequence[AnyMessage]) -> int:
    """Index of the visitor's current message: the last human turn."""
    humans = [index for index, message in enumerate(messages) if isinstance(message, HumanMessage)]
    return humans[-1] if humans else 0


def _drop_last_passage(messages: list[AnyMessage]) -> bool:
    """Remove the last passage of the last search result that still has one."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not (isinstance(message, ToolMessage) and message.name == "search_articles"):
            continue
        content = str(message.content)
        cut = content.rfind(PASSAGE_SEPARATOR)
        if cut <= 0 and not content.startswith("["):
            continue
        shorter = content[:cut] if cut > 0 else "no matching article section"
        messages[index] = message.model_copy(update={"content": shorter})
        return True
    return False


def _note(fitted: FittedPrompt, what: str) -> None:
    if what not in fitted.trimmed:
        fitted.trimmed.append(what)
