"""Reading an LLM's reply, and cutting long text for an observation.

One reading of a reply for every env: reasoning up to a closing ``</think>`` is dropped
(:func:`strip_thinking`); the command is on the last ``Action:`` line (:func:`last_action_line`,
also ``**Action:**``, ``> action:`` and the like); multi-line content comes in fenced blocks
(:func:`fenced_blocks`). :func:`agentgym.contract.core.split_reply` and the code family's tool calls,
shell commands and code submissions are built from these.

A fence is a line of three or more backticks or tildes, optionally indented, with an info
string after it (``python``; no backtick in it), and the block ends at a line holding
only the same character, at least as many times (CommonMark's rule). A block left open
runs to the end of the text.

>>> strip_thinking("<think>maybe up?</think>Action: down")
'Action: down'
>>> last_action_line("go\\n**Action:** left\\nAction: right").group(1)
' right'
>>> [block.content for block in fenced_blocks("```python\\nx = 1\\n```\\n~~~\\ny\\n~~~")]
['x = 1', 'y']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

#: What closes a reasoning model's thoughts.
THINK_END = "</think>"
#: A line that starts with ``Action:`` (any case, markdown emphasis or quoting allowed); group 1: the rest.
ACTION_LINE = re.compile(r"^[ \t>*_#`-]*action[*_`]*[ \t]*:(.*)$", re.IGNORECASE | re.MULTILINE)
_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})([^`]*)$")


def strip_thinking(reply: str) -> str:
    """``reply`` after its last ``</think>``, or the whole reply when it has none."""
    end = reply.rfind(THINK_END)
    return reply[end + len(THINK_END) :] if end >= 0 else reply


@dataclass(frozen=True)
class FencedBlock:
    """One fenced block of a text: its fence, info string and content, and where it stands."""

    fence: str  # the opening run, e.g. "```" or "~~~~"
    info: str  # what follows the opening run ("python"), stripped
    content: str  # the lines between the fences, joined by "\n"
    start: int  # offset of the opening line in the text
    end: int  # offset just past the closing line (the text's length for a block left open)
    closed: bool

    def holds(self, offset: int) -> bool:
        """Whether ``offset`` of the text lies on one of this block's lines, fences included."""
        return self.start <= offset < self.end


def fenced_blocks(text: str, after_text: bool = False) -> list[FencedBlock]:
    """The fenced blocks of ``text`` in order; the last may be left open (``closed=False``).

    With ``after_text``, a fence may also open at the end of a line of text
    (``Action: ```python``), as code-only replies often do.
    """
    blocks: list[FencedBlock] = []
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    index = 0
    while index < len(lines):
        opening = _fence_after_text(lines[index]) if after_text else _fence_opening(lines[index])
        if opening is None:
            index += 1
            continue
        (fence, info), first = opening, index
        index += 1
        while index < len(lines) and not _closes(lines[index], fence):
            index += 1
        closed = index < len(lines)
        blocks.append(
            FencedBlock(
                fence=fence,
                info=info.strip(),
                content="\n".join(lines[first + 1 : index]),
                start=offsets[first],
                end=min(offsets[index + 1], len(text)) if closed else len(text),
                closed=closed,
            )
        )
        index += 1
    return blocks


def _fence_opening(line: str) -> tuple[str, str] | None:
    """(fence, info) when ``line`` opens a block: a run of 3+ backticks or tildes, then no backtick."""
    match = _FENCE_OPEN.match(line)
    return None if match is None else (match.group(1), match.group(2))


def _fence_after_text(line: str) -> tuple[str, str] | None:
    """(fence, info) of the first fence in ``line`` that nothing but an info string follows (linear time)."""
    last = line.rfind("`")
    if last >= 0:
        first = last
        while first > 0 and line[first - 1] == "`":
            first -= 1
        if last - first >= 2:
            return line[first : last + 1], line[last + 1 :]
    tildes = line.find("~~~", last + 1)
    if tildes < 0:
        return None
    end = tildes
    while end < len(line) and line[end] == "~":
        end += 1
    return line[tildes:end], line[end:]


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {fence[0]} and len(stripped) >= len(fence)


def last_action_line(text: str, outside: Sequence[FencedBlock] = ()) -> re.Match[str] | None:
    """The last ``Action:`` line of ``text`` (group 1: what follows the colon), skipping lines in ``outside``."""
    last = None
    for match in ACTION_LINE.finditer(text):
        if not any(block.holds(match.start()) for block in outside):
            last = match
    return last


def elide(text: str, limit: int, head_share: Fraction | float = Fraction(1, 2)) -> str:
    """``text`` cut in the middle to about ``limit`` characters, saying how many went.

    The kept head is ``head_share`` of ``limit`` and the tail the rest (each rounded down).
    """
    if len(text) <= limit:
        return text
    share = Fraction(head_share)
    head, tail = int(limit * share), int(limit * (1 - share))
    return f"{text[:head]}\n[... {len(text) - head - tail} characters omitted ...]\n{text[-tail:]}"
