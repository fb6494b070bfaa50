"""`sizing ask` and `sizing chat`: the assistant from a terminal.

    sizing ask "What GPU do I need for Llama 3.1 70B?"          # Markdown answer
    sizing ask "¿Qué GPU para un 70B a 4 bits?" --json          # {answer, language, mode, notice, ...}
    sizing ask --batch questions.txt                            # one question per line -> one JSON per line
    sizing chat                                                 # a conversation; slots kept across turns

Offline unless SIZING_LLM_BASE_URL and SIZING_LLM_MODEL are set. The assistant (and with it
Chroma or LangChain) is imported only inside the handlers, so `--help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from assistant.cli.files import read_failure
from assistant.cli.options import add_command, add_json_flag
from tools.errors import InvalidInputError

if TYPE_CHECKING:
    from assistant.cli.options import Subparsers
    from assistant.schemas import Reply
    from assistant.service import Assistant
    from assistant.settings import Settings

# Words that end `sizing chat` (besides end of input).
EXIT_WORDS = frozenset({"exit", "quit", "salir", ":q", "/exit", "/quit"})
RESET_WORDS = frozenset({"/reset", "/new"})
HELP_WORDS = frozenset({"/help", "/?"})
# A message that is one /word is a command, never a question.
COMMAND_SHAPE = re.compile(r"/[\w?-]+")
COMMANDS_LINE = (
    "commands: /state (remembered slots), /reset (start over), /help, exit or /quit (or type a question)"
)
STATE_WORDS = frozenset({"/state", "/slots"})
# A batch file is read no further than this (a million questions of ordinary length).
MAX_BATCH_CHARS = 64_000_000


def register(subparsers: Subparsers) -> None:
    ask = add_command(subparsers, "ask", run)
    ask.add_argument("question", nargs="?", help="the question, in Spanish or English")
    add_json_flag(ask, "print the reply as one JSON object")
    ask.add_argument(
        "--batch",
        metavar="FILE",
        help="answer every non-blank line of FILE ('-' = stdin); prints one JSON object per line",
    )

    chat = add_command(subparsers, "chat", run_chat)
    add_json_flag(chat, "print each reply as one JSON object per line")


def _assistant(settings: Settings) -> Assistant:
    from assistant.service import build_assistant

    return build_assistant(settings)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """answer one sizing question (or a file of them)

    Answer a GPU-sizing question with the arithmetic, the card class and the caveat."""
    if args.batch is not None:
        if args.question:
            raise InvalidInputError("give either a QUESTION or --batch FILE, not both")
        lines = _read_batch(args.batch)
        assistant = _assistant(settings)
        for question in lines:
            reply = assistant.answer(question)
            _write_json(_batch_record(question, reply, settings.max_input_chars), sys.stdout)
        return 0
    if not args.question or not args.question.strip():
        raise InvalidInputError('no question given: sizing ask "What GPU for a 70B?" (or --batch FILE)')
    reply = _assistant(settings).answer(args.question)
    if args.json:
        _write_json(reply.public_json(), sys.stdout)
    else:
        _print_reply(reply, sys.stdout, sys.stderr)
    return 0


def _read_batch(source: str) -> list[str]:
    try:
        if source == "-":
            content = sys.stdin.read(MAX_BATCH_CHARS + 1)
        else:
            with Path(source).open(encoding="utf-8") as stream:
                content = stream.read(MAX_BATCH_CHARS + 1)  # /dev/zero is read no further
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInputError(f"cannot read the batch file {source!r}: {read_failure(error)}") from None
    if len(content) > MAX_BATCH_CHARS:
        raise InvalidInputError(
            f"the batch file {source} is larger than {MAX_BATCH_CHARS:,} characters; split it into smaller files"
        )
    return [line.strip() for line in content.splitlines() if line.strip()]


def _batch_record(question: str, reply: Reply, max_chars: int) -> dict[str, Any]:
    """One --batch line: the question as far as it was answered (the assistant reads at most
    max_chars of it), so a 1 MB line is not echoed whole; question_chars gives its full length."""
    record: dict[str, Any] = {"question": question[:max_chars], **reply.public_json()}
    if len(question) > max_chars:
        record["question_chars"] = len(question)
    return record


def _write_json(payload: dict[str, Any], out: TextIO) -> None:
    out.write(json.dumps(payload, ensure_ascii=False) + "\n")
    out.flush()


def _print_reply(reply: Reply, out: TextIO, err: TextIO) -> None:
    if reply.notice:
        err.write(f"note: {reply.notice}\n")
        err.flush()
    out.write(reply.answer.rstrip() + "\n")
    out.flush()


def run_chat(args: argparse.Namespace, settings: Settings) -> int:
    """a sizing conversation in the terminal (slots kept across turns)

    Type questions; the assistant remembers the model, precision, tasks, context and users across
    turns. 'exit' or end of input (Ctrl-D) quits; '/reset' starts over; '/state' shows the remembered
    slots."""
    return chat_loop(_assistant(settings), sys.stdin, sys.stdout, sys.stderr, json_lines=args.json)


def chat_loop(assistant: Assistant, lines: TextIO, out: TextIO, err: TextIO, json_lines: bool = False) -> int:
    """Read questions line by line until EOF or an exit word; keep the conversation state between them."""
    from assistant.schemas import ConversationState

    interactive = lines.isatty()
    if interactive:
        err.write(f"sizing chat ({assistant.mode} mode) — 'exit' or Ctrl-D to quit, '/reset' to start over\n")
    state = ConversationState()
    while True:
        if interactive:
            err.write("> ")
            err.flush()
        line = lines.readline()
        if not line:
            break
        message = line.strip()
        if message.lower() in EXIT_WORDS:
            break
        if not message:
            continue
        if message.lower() in RESET_WORDS:
            state = ConversationState(language=state.language)
            err.write("(conversation reset)\n")
            continue
        if message.lower() in STATE_WORDS:
            out.write(state.model_dump_json(exclude={"history"}) + "\n")
            continue
        if COMMAND_SHAPE.fullmatch(message):
            unknown = "" if message.lower() in HELP_WORDS else f"unknown command {message!r}; "
            err.write(f"{unknown}{COMMANDS_LINE}\n")
            continue
        reply = assistant.answer(message, state)
        state = reply.state
        if json_lines:
            _write_json(reply.public_json(), out)
        else:
            _print_reply(reply, out, err)
            out.write("\n")
    return 0
