"""Wrappers: each adds one behaviour to any agentgym env."""

from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT, ChatWrapper

__all__ = ["ChatWrapper", "DEFAULT_SYSTEM_PROMPT"]
