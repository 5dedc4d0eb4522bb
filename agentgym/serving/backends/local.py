"""The local backend: the family's class in this process (``gym.make(ENV_ID)``'s default)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentgym.contract.registry import env_info


def env_class(env_id: str) -> Callable[..., gym.Env]:
    """The family's real entry point of an agentgym id (importing its module)."""
    return load_env_creator(env_info(env_id).entry_point)


def make_local(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """The env in this process."""
    return env_class(env_id)(**kwargs)
