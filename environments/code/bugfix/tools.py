"""BugFix's tools as text: reading a tool call out of a reply, and formatting what the tools show.

See :mod:`agentgym.environments.code.bugfix.env` for the tools themselves and their syntax.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

from agentgym.core import InvalidAction
from agentgym.utils import text as reply_text
from agentgym.utils.text import last_action_line, strip_thinking

MAX_CAT_LINES = 250
MAX_LINE_CHARS = 400
MAX_OUTPUT_CHARS = 6_000
MAX_WRITE_BYTES = 200_000
MAX_SEARCH_HITS = 60
MAX_SEARCH_FILES = 500
MAX_READ_BYTES = 4_000_000

SEARCH_REPLACE = re.compile(
    r"^<{5,}[ \t]*SEARCH[ \t]*\n(.*?)\n?^={5,}[ \t]*\n(.*?)\n?^>{5,}[ \t]*REPLACE[ \t]*$", re.M | re.S
)
RUN_TESTS_COMMAND = re.compile(
    r"^(?:run_tests|run-tests|runtests|python3? +run_tests\.py|python3? +-m +pytest|pytest)\b(.*)$", re.I
)
TOOL_ALIASES = {
    "ls": "ls",
    "dir": "ls",
    "cat": "cat",
    "open": "cat",
    "view": "cat",
    "search": "search",
    "grep": "search",
    "write": "write",
    "create": "write",
    "replace": "replace",
    "edit": "replace",
    "submit": "submit",
}


def extract_tool_call(reply: str) -> str:
    """The tool call in an LLM reply: from the last ``Action:`` line outside fenced blocks to the end.

    Reasoning up to a closing ``</think>`` is dropped; without an ``Action:`` line the whole
    reply is the call. The first line (the tool and its arguments) loses surrounding
    whitespace, backticks and asterisks; the lines after it (fenced blocks) are kept as they are.
    """
    body = strip_thinking(reply)
    action = last_action_line(body, outside=reply_text.fenced_blocks(body))
    if action is None:
        lines = body.split("\n")
        first = next((index for index, line in enumerate(lines) if line.strip()), 0)
        head, rest = lines[first], lines[first + 1 :]
    else:
        head, rest = action.group(1), body[action.end() :].split("\n")[1:]
    head = head.strip().strip("`*").strip()
    return "\n".join([head, *rest]).rstrip()


def fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced blocks in ``text``, in order; a block left open is an invalid action."""
    blocks = reply_text.fenced_blocks(text)
    if blocks and not blocks[-1].closed:
        raise InvalidAction(f"a fenced block opened with {blocks[-1].fence[:10]} is never closed.")
    return [block.content for block in blocks]


def read_regular(path: Any) -> bytes | None:
    """A regular file's bytes, never following a final link nor blocking on a FIFO; None otherwise."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
            return None
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
        return data if len(data) <= MAX_READ_BYTES else None
    finally:
        os.close(descriptor)


def fence_for(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def numbered(text: str, first: int, last: int) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for number in range(first, min(last, len(lines)) + 1):
        line = lines[number - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" [... {len(line) - MAX_LINE_CHARS} more characters]"
        out.append(f"{number:>4} | {line}")
    return "\n".join(out)


_SUMMARY = re.compile(r"^=+ (.+?) =+$", re.M)


def parse_summary(output: str) -> dict[str, int]:
    """The counts in the runner's last summary line: {"passed": n, "failed": n, "error": n}."""
    lines = _SUMMARY.findall(output)
    counts = {"passed": 0, "failed": 0, "error": 0}
    if lines and lines[-1] != "FAILURES":
        for number, label in re.findall(r"(\d+) (passed|failed|error)", lines[-1]):
            counts[label] = int(number)
    return counts
