"""The scripted baselines every env has: its oracle and a uniformly random player."""

from __future__ import annotations

import gymnasium as gym

from agentgym.core import TextEnv
from agentgym.policies.base import Episode, Message, Policy, Reply


def _text_env(env: gym.Env) -> TextEnv:
    if not isinstance(env, TextEnv):
        raise TypeError(f"scripted policies need an agentgym TextEnv, got {type(env).__name__}")
    return env


class OraclePolicy(Policy):
    """Plays the env's own solver (``oracle_action``): the upper reference on a leaderboard."""

    name = "oracle"

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        return Reply(await episode.in_env(lambda env: _text_env(env).oracle_action()))


class RandomPolicy(Policy):
    """Plays a uniformly random legal command, drawn from the episode's seeded generator."""

    name = "random"

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        return Reply(await episode.in_env(lambda env: _text_env(env).random_action(episode.rng)))
