"""Utilities for environment authors: the contract checker (:func:`check_text_env`) and reply reading.

Like Gymnasium's ``gymnasium.utils.env_checker.check_env`` and PettingZoo's ``api_test``,
:func:`check_text_env` checks by code that an environment keeps agentgym's contract, so
that the author of a new family can check it before registering it::

    import gymnasium as gym
    from agentgym.utils import check_text_env

    check_text_env(gym.make("Sokoban-v0"))

:mod:`agentgym.utils.text` reads LLM replies (``</think>``, the ``Action:`` line, fenced
blocks) the same way for every env (the helpers of :mod:`agentgym.contract.reply_text`, on the contract's
floor). :mod:`agentgym.utils.files` holds the file lock, the build-aside-then-rename of caches that
several processes fill, and the cache root.

Floor: env machinery; it imports only its own floor and those below it: contract (docs/architecture.md).
"""

from __future__ import annotations

from agentgym.utils.env_checker import (
    HOSTILE_REPLIES,
    RULES,
    CheckReport,
    ContractViolation,
    check_replies,
    check_text_env,
)

__all__ = ["HOSTILE_REPLIES", "RULES", "CheckReport", "ContractViolation", "check_replies", "check_text_env"]
