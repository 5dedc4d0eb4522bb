"""Utilities for environment authors: the contract checker (:func:`check_text_env`).

Like Gymnasium's ``gymnasium.utils.env_checker.check_env`` and PettingZoo's ``api_test``,
:func:`check_text_env` checks by code that an environment keeps agentgym's contract, so
that the author of a new family can check it before registering it::

    import gymnasium as gym
    from agentgym.utils import check_text_env

    check_text_env(gym.make("Sokoban-v0"))
"""

from agentgym.utils.env_checker import (
    HOSTILE_REPLIES,
    RULES,
    CheckReport,
    ContractViolation,
    check_replies,
    check_text_env,
)

__all__ = ["HOSTILE_REPLIES", "RULES", "CheckReport", "ContractViolation", "check_replies", "check_text_env"]
