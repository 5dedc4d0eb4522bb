"""The scripted baselines every env has: its oracle and a uniformly random player.

They call the env's ``oracle_action()`` and ``random_action(rng)``: a local
:class:`~agentgym.core.TextEnv` or a :class:`~agentgym.remote.RemoteEnv` (which asks its server).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from agentgym.policies.base import Episode, Message, Policy, Reply


def _baseline(env: gym.Env, method: str) -> Callable[..., Any]:
    function = getattr(env, method, None)
    if not callable(function):
        raise TypeError(f"scripted policies need an env with {method}() (an agentgym env), got {type(env).__name__}")
    return function


class OraclePolicy(Policy):
    """Plays the env's own solver (``oracle_action``): the upper reference on a leaderboard."""

    name = "oracle"

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        return Reply(await episode.in_env(lambda env: _baseline(env, "oracle_action")()))


class RandomPolicy(Policy):
    """Plays a uniformly random legal command, drawn from the episode's seeded generator."""

    name = "random"

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        return Reply(await episode.in_env(lambda env: _baseline(env, "random_action")(episode.rng)))
