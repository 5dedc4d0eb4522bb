"""agentgym.contract.reply_text (families import it as agentgym.utils.text): the one reading of a reply (</think>,
Action: lines, fenced blocks) and elide."""

from __future__ import annotations

import doctest
from fractions import Fraction

import agentgym.contract.reply_text as text_module
from agentgym.contract.core import split_reply
from agentgym.environments.code.bash import extract_command
from agentgym.environments.code.bugfix import extract_tool_call
from agentgym.environments.code.humaneval import extract_code
from agentgym.utils.text import elide, fenced_blocks, last_action_line, strip_thinking


def test_module_examples() -> None:
    failures, tried = doctest.testmod(text_module)
    assert tried and not failures


def test_strip_thinking_keeps_what_follows_the_last_close() -> None:
    assert strip_thinking("a</think>b</think>c") == "c"
    assert strip_thinking("<think>unfinished") == "<think>unfinished"


def test_fenced_blocks_follow_commonmark_fences() -> None:
    text = "intro\n````python\n```\ninner\n```\n````\n  ~~~\n  tilde\n  ~~~~\n```sh\nopen"
    blocks = fenced_blocks(text)
    assert [(b.fence, b.info, b.content, b.closed) for b in blocks] == [
        ("````", "python", "```\ninner\n```", True),
        ("~~~", "", "  tilde", True),
        ("```", "sh", "open", False),
    ]
    assert text[blocks[0].start : blocks[0].end] == "````python\n```\ninner\n```\n````\n"
    assert blocks[-1].end == len(text)
    # A fence after text opens a block only when asked (code-only replies: "Action: ```python").
    assert "x" not in [b.content for b in fenced_blocks("Action: ```python\nx\n```")]
    assert [b.content for b in fenced_blocks("Action: ```python\nx\n```", after_text=True)] == ["x"]


def test_last_action_line_skips_lines_inside_blocks() -> None:
    reply = "Action: write a.py\n```\nAction: not this\n```"
    assert last_action_line(reply).group(1) == " not this"
    assert last_action_line(reply, outside=fenced_blocks(reply)).group(1) == " write a.py"
    assert last_action_line("no action here") is None


def test_every_reader_drops_thinking_the_same_way() -> None:
    reply = "<think>Action: wrong\n```bash\nrm -rf /\n```</think>Action: ls"
    assert split_reply(reply) == ("", "ls")
    assert extract_command(reply) == "ls"
    assert extract_tool_call(reply) == "ls"
    assert extract_code("<think>```python\nbad\n```</think>```python\ngood\n```") == "good"


def test_shell_block_after_a_block_in_another_language() -> None:
    """The command is the shell block, not text between the python block's closing fence and it."""
    reply = "The code:\n```python\nprint(1)\n```\nRun it:\n```bash\npython3 main.py\n```"
    assert extract_command(reply) == "python3 main.py"


def test_elide_keeps_head_and_tail_shares() -> None:
    assert elide("short", 10) == "short"
    cut = elide("a" * 50 + "b" * 50, 30, Fraction(2, 3))
    assert cut == "a" * 20 + "\n[... 70 characters omitted ...]\n" + "b" * 10
    assert elide("x" * 101, 100) == "x" * 50 + "\n[... 1 characters omitted ...]\n" + "x" * 50
