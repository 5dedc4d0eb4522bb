"""Utilities for environment authors: the contract checker (:func:`check_text_env`) and reply reading.

Like Gymnasium's ``gymnasium.utils.env_checker.check_env`` and PettingZoo's ``api_test``,
:func:`check_text_env` checks by code that an environment keeps agentgym's contract, so
that the author of a new family can check it before registering it::

    import gymnasium as gym
    from agentgym.utils import check_text_env

    check_text_env(gym.make("Sokoban-v0"))

:mod:`agentgym.utils.text` reads LLM replies (``</think>``, the ``Action:`` line, fenced
blocks) the same way for every env. :mod:`agentgym.utils.files` holds the file lock and the
build-aside-then-rename of caches that several processes fill. The checker's names load on
first use: the core itself reads replies with :mod:`agentgym.utils.text`, so importing this
package must not import the core.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentgym.utils.env_checker import (
        HOSTILE_REPLIES,
        RULES,
        CheckReport,
        ContractViolation,
        check_replies,
        check_text_env,
    )

__all__ = ["HOSTILE_REPLIES", "RULES", "CheckReport", "ContractViolation", "check_replies", "check_text_env"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("agentgym.utils.env_checker"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
