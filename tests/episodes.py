"""Test helper: play one episode of an env's oracle and report how it ended."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym


@dataclass(frozen=True)
class EpisodeResult:
    task_id: int
    success: bool
    score: float
    total_reward: float
    steps: int


def play_oracle(env: gym.Env, task_id: int, seed: int = 0) -> EpisodeResult:
    """Play task ``task_id`` with ``env.unwrapped.oracle_action()`` until the episode ends."""
    base = env.unwrapped
    _, info = env.reset(seed=seed, options={"task_id": task_id})
    total_reward, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(base.oracle_action())
        total_reward += reward
    return EpisodeResult(task_id, bool(info["success"]), float(info["score"]), total_reward, int(info["steps"]))
