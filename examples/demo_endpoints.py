"""Two scripted OpenAI-compatible endpoints for trying `sizing compare` without any GPU.

Run from the repository root:

    .venv/bin/python examples/demo_endpoints.py            # prints the two URLs, serves until Ctrl-C

then, in another terminal, the command it prints. Endpoint A answers every task of
examples/sizing-desk-tasks.jsonl the way a careful model would; endpoint B is a made-up
"degraded" model that slips on four of them (a precision outside the schema, a rounded
context length, a misrouted inquiry, the 16-bit figure instead of the 8-bit one) and
answers a little faster. The answers are written by hand to show what a report looks
like: they are not measurements of any real model. For real figures, point the command at
two real servers (for example vLLM serving the same model at bf16 and at AWQ 4-bit).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "examples" / "sizing-desk-tasks.jsonl"

# Hand-written answers per task id: what a careful model says...
CAREFUL_ANSWERS = {
    "extract-1": '{"model": "Llama 3.1 70B", "precision": "int4", "context_tokens": 8192, "concurrent_users": 20}',
    "extract-2": '{"model": "Qwen2.5 32B", "precision": "bf16", "context_tokens": 32768, "concurrent_users": 5}',
    "extract-3": '```json\n{"model": "8B", "precision": "fp8", "context_tokens": null, "concurrent_users": null}\n```',
    "extract-4": "L40S, L40, A100, H100",
    "classify-1": "billing",
    "classify-2": "Sizing.",
    "classify-3": "support",
    "classify-4": "4-bit",
    "qa-1": "About 70 GB.",
    "qa-2": "Two 80 GB cards.",
    "qa-3": "It grows with the context length and with every concurrent user.",
    "qa-4": "Not in the passage.",
}
# ...and where the made-up degraded model differs.
DEGRADED_ANSWERS = {
    **CAREFUL_ANSWERS,
    "extract-1": '{"model": "Llama 3.1 70B", "precision": "4-bit", "context_tokens": 8192, "concurrent_users": 20}',
    "extract-2": '{"model": "Qwen2.5 32B", "precision": "bf16", "context_tokens": 32000, "concurrent_users": 5}',
    "classify-2": "support",
    "qa-1": "About 140 GB.",
}


def answer_script(answers: dict[str, str], delay_s: float) -> Any:
    """A stub script that finds the task a request belongs to and answers it from `answers`."""
    from assistant.evals.tasks import load_tasks
    from tests.openai_stub import slow, text

    by_messages = {str(task.chat_messages()): task.key for task in load_tasks(TASKS)}

    def reply(request: dict[str, Any]) -> Any:
        key = by_messages.get(str(request.get("messages")))
        said = answers.get(key or "", "I do not know.")
        return slow(delay_s, text(said)) if delay_s else text(said)

    return reply


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))  # tests/ holds the stub server; it is not an installed package
    from tests.openai_stub import StubOpenAI

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    careful = StubOpenAI(answer_script(CAREFUL_ANSWERS, 0.12), models=("demo-bf16",)).start()
    degraded = StubOpenAI(answer_script(DEGRADED_ANSWERS, 0.05), models=("demo-int4",)).start()
    print(f"A (careful)  {careful.url}  model demo-bf16")
    print(f"B (degraded) {degraded.url}  model demo-int4")
    print(
        "\nTry:\n  .venv/bin/sizing compare "
        f"--a-url {careful.url} --a-model demo-bf16 --b-url {degraded.url} --b-model demo-int4 "
        f"--tasks examples/sizing-desk-tasks.jsonl --out /tmp/sizing-compare/report.html\n"
        f"  .venv/bin/sizing loadtest --url {degraded.url} --model demo-int4 --users 4 --requests 20 "
        "--target-p95-ms 500\n\nCtrl-C stops both.",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        careful.close()
        degraded.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
