"""The reply-reading helpers under the name families import them by; they live in
:mod:`agentgym.contract.reply_text`, on the contract's floor, since the core reads replies with them
(docs/architecture.md)."""

from agentgym.contract.reply_text import (
    ACTION_LINE,
    THINK_END,
    FencedBlock,
    elide,
    fenced_blocks,
    last_action_line,
    strip_thinking,
)

__all__ = ["ACTION_LINE", "THINK_END", "FencedBlock", "elide", "fenced_blocks", "last_action_line", "strip_thinking"]
