"""Test helpers: which ids the every-env tests play, and one oracle episode."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym

import agentgym

#: Families with one id per task page (MiniWoB++'s 130) are played on every n-th id only by the
#: tests that play episodes of every registered id; check_env and metadata still cover all ids.
SAMPLED_FAMILIES: dict[str, int] = {"miniwob": 13}


def sampled(env_ids: list[str]) -> list[str]:
    """``env_ids`` with only every n-th id of the families in :data:`SAMPLED_FAMILIES`."""
    by_family: dict[str, list[str]] = {}
    for env_id in env_ids:
        by_family.setdefault(agentgym.env_info(env_id).family, []).append(env_id)
    return [env_id for family, ids in by_family.items() for env_id in ids[:: SAMPLED_FAMILIES.get(family, 1)]]


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
