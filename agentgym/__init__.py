"""agentgym: Gymnasium-style environments for LLM agents.

``import agentgym`` registers every env id with Gymnasium::

    import gymnasium as gym
    import agentgym

    env = gym.make("Sokoban-v0")
    obs, info = env.reset(options={"task_id": 0})

Families of other packages register too, through the ``agentgym.envs`` entry point group
(:mod:`agentgym.contract.plugins`; a broken plugin only warns).
"""

import sys

from agentgym.contract import core, plugins, registry, reply_text, tool_parsing, tools, vector
from agentgym.contract.core import (
    INFRA_ERROR_KEY,
    InfrastructureError,
    InvalidAction,
    TaskSplits,
    TextEnv,
    UnicodeText,
    parse_action,
    split_reply,
)
from agentgym.contract.plugins import load_plugins
from agentgym.contract.registry import EnvInfo, env_info, list_envs, prepare_env, register, register_families
from agentgym.contract.vector import SharedTextBatch  # noqa: F401 (registers UnicodeText with Gymnasium's vector shared memory)
from agentgym.wrappers import ChatWrapper

# The contract's modules stood here before they moved into agentgym.contract: their old names (``agentgym.core``,
# ``from agentgym.tools import ToolCall``) stay importable as the same module objects, plugins' included.
for _module in (core, plugins, registry, reply_text, tool_parsing, tools, vector):
    sys.modules.setdefault(f"agentgym.{_module.__name__.rpartition('.')[2]}", _module)
del _module

__version__ = "0.1.0"

__all__ = [
    "ChatWrapper",
    "RemoteEnv",
    "EnvInfo",
    "INFRA_ERROR_KEY",
    "InfrastructureError",
    "InvalidAction",
    "TaskSplits",
    "TextEnv",
    "UnicodeText",
    "env_info",
    "list_envs",
    "parse_action",
    "prepare_env",
    "register",
    "split_reply",
]

register_families()
load_plugins()


def __getattr__(name: str) -> object:
    """``agentgym.RemoteEnv``, imported on first use (it needs httpx)."""
    if name == "RemoteEnv":
        from agentgym.serving.client import RemoteEnv

        return RemoteEnv
    raise AttributeError(f"module 'agentgym' has no attribute {name!r}")
