"""BugFix's tools: reading a tool call out of a reply, and the file tools on the work dir.

:class:`FileTools` runs ``ls``, ``cat``, ``search``, ``write`` and ``replace``; the env
(:mod:`agentgym.environments.code.bugfix.env`) dispatches to them and runs ``run_tests``
and ``submit`` itself, since those judge the episode.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentgym.contract.core import InvalidAction, quote
from agentgym.sandbox import Sandbox, SandboxError
from agentgym.utils import text as reply_text
from agentgym.utils.text import elide, last_action_line, strip_thinking

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


class FileTools:
    """The file tools on a sandbox's work dir: ls, cat, search, write and replace.

    Each returns the observation text; a bad path or argument raises :class:`InvalidAction`
    and changes nothing.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def host_path(self, path: str) -> Path:
        """The host path of ``path`` in the work dir; a path that leads out is an invalid action."""
        try:
            return self.sandbox.path(path)
        except (SandboxError, ValueError, OSError) as error:
            raise InvalidAction(f"{quote(path, 100)} is not a path in the repository ({error}).") from None

    def read(self, path: str) -> str:
        """The text of a repository file, for the agent (bad paths are invalid actions)."""
        host = self.host_path(path)
        if host.is_dir():
            raise InvalidAction(f"{quote(path, 100)} is a directory; use ls.")
        if not host.exists():
            raise InvalidAction(f"there is no file {quote(path, 100)}.")
        try:
            return self.sandbox.read_file(path, max_bytes=MAX_READ_BYTES)
        except (SandboxError, OSError, ValueError):
            raise InvalidAction(
                f"cannot read {quote(path, 100)}: not a regular file, or over {MAX_READ_BYTES} bytes."
            ) from None

    def ls(self, path: str) -> str:
        """The entries of a directory, directories marked with ``/``."""
        host = self.host_path(path)
        try:
            names = sorted(host.iterdir(), key=lambda entry: entry.name)
        except NotADirectoryError:
            raise InvalidAction(f"{quote(path, 100)} is a file; use cat.") from None
        except OSError as error:
            raise InvalidAction(f"cannot list {quote(path, 100)}: {error.strerror}") from None
        entries = [entry.name + ("/" if entry.is_dir() and not entry.is_symlink() else "") for entry in names]
        shown = entries[:200] + ([f"... and {len(entries) - 200} more"] if len(entries) > 200 else [])
        return f"$ ls {path}\n" + ("\n".join(shown) if shown else "(empty)")

    def cat(self, argument: str) -> str:
        """A file with line numbers: ``FILE [START[-END]]``, at most :data:`MAX_CAT_LINES` lines."""
        parts = argument.split()
        path = parts[0].strip("'\"`")
        text = self.read(path)
        total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        first, last = 1, MAX_CAT_LINES
        if len(parts) > 1:
            bounds = re.fullmatch(r"(\d+)(?:\s*[-:,]\s*(\d+)|\s+(\d+))?", " ".join(parts[1:]))
            if not bounds:
                raise InvalidAction("a line range is START-END, e.g. 'cat file.py 40-80'.")
            first = max(1, int(bounds.group(1)))
            end = bounds.group(2) or bounds.group(3)
            last = int(end) if end else first + MAX_CAT_LINES - 1
            last = min(last, first + MAX_CAT_LINES - 1)
        if total == 0:
            return f"{path} is empty."
        if first > total:
            raise InvalidAction(f"{quote(path, 100)} has only {total} lines.")
        body = numbered(text, first, last)
        note = ""
        if first > 1 or last < total:
            note = f"\n(lines {first}-{min(last, total)} of {total}; 'cat {path} START-END' shows other lines)"
        return f"{path}:\n{elide(body, 20_000)}{note}"

    def search(self, text: str) -> str:
        """Every line of the repository that holds ``text``."""
        if not text:
            raise InvalidAction("search needs the text to look for, e.g. 'search def median'.")
        root = str(self.sandbox.workdir)
        hits, files = [], 0
        for directory, subdirectories, names in os.walk(root):  # never follows links
            subdirectories.sort()
            for name in sorted(names):
                files += 1
                host = os.path.join(directory, name)
                if files > MAX_SEARCH_FILES or os.path.islink(host):
                    continue
                relative = os.path.relpath(host, root)
                try:
                    data = self.sandbox.read_file(relative, max_bytes=MAX_READ_BYTES)
                except (SandboxError, OSError, ValueError):
                    continue
                for number, line in enumerate(data.split("\n"), 1):
                    if text in line:
                        hits.append(f"{relative}:{number}: {line.strip()[:200]}")
        if not hits:
            return f"No line contains {quote(text, 100)}."
        shown = hits[:MAX_SEARCH_HITS]
        more = f"\n... and {len(hits) - len(shown)} more" if len(hits) > len(shown) else ""
        return f"{len(hits)} lines contain {quote(text, 100)}:\n" + "\n".join(shown) + more

    def write(self, path: str, rest: str) -> str:
        """Replace (or create) ``path`` with the one fenced block in ``rest``."""
        blocks = fenced_blocks(rest)
        if len(blocks) != 1:
            raise InvalidAction(f"write takes exactly one fenced block with the new content (found {len(blocks)}).")
        content = blocks[0] + "\n" if blocks[0] else ""
        if len(content.encode("utf-8", "surrogatepass")) > MAX_WRITE_BYTES:
            raise InvalidAction(f"the content is larger than {MAX_WRITE_BYTES} bytes.")
        host = self.host_path(path)
        if host.is_dir():
            raise InvalidAction(f"{quote(path, 100)} is a directory.")
        try:
            self.sandbox.write_file(path, content.encode("utf-8", "replace"))
        except (SandboxError, OSError, ValueError) as error:
            raise InvalidAction(f"cannot write {quote(path, 100)}: {error}") from None
        return f"Wrote {path} ({content.count(chr(10))} lines)."

    def replace(self, path: str, rest: str) -> str:
        """Replace the one occurrence of an old text (first block, or aider's SEARCH part) by the new one."""
        pair = SEARCH_REPLACE.search(rest)
        if pair:
            old, new = pair.group(1), pair.group(2)
        else:
            blocks = fenced_blocks(rest)
            if len(blocks) != 2:
                raise InvalidAction(
                    f"replace takes two fenced blocks, the old text and the new text (found {len(blocks)})."
                )
            old, new = blocks
        if not old.strip():
            raise InvalidAction("the old text is empty.")
        text = self.read(path)
        count = text.count(old)
        if count == 0:
            raise InvalidAction(
                f"the old text does not occur in {path}; it must match exactly, indentation included "
                f"(use 'cat {path}' and copy the lines)."
            )
        if count > 1:
            raise InvalidAction(f"the old text occurs {count} times in {path}; add lines around it to pick one.")
        updated = text.replace(old, new)
        try:
            self.sandbox.write_file(path, updated.encode("utf-8", "replace"))
        except (SandboxError, OSError, ValueError) as error:
            raise InvalidAction(f"cannot write {quote(path, 100)}: {error}") from None
        line = text[: text.index(old)].count("\n") + 1
        return f"Replaced {old.count(chr(10)) + 1} line(s) at line {line} of {path} with {new.count(chr(10)) + 1}."
