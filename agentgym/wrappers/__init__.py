"""Wrappers: each adds one behaviour to any agentgym env.

Floor: wrappers; it imports only its own floor and those below it: contract, env machinery (docs/architecture.md).
"""

from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT, ChatWrapper
from agentgym.wrappers.computer_use import ComputerUseWrapper

__all__ = ["ChatWrapper", "ComputerUseWrapper", "DEFAULT_SYSTEM_PROMPT"]
