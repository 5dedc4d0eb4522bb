"""The scripted baselines every env has: ``oracle`` (its solver) and ``random``.

``play_episode`` runs one episode of either on a made env; ``run_baselines`` plays the
first tasks of a split for several envs and summarises them (``agentgym demo``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from statistics import fmean

import gymnasium as gym

from agentgym.core import Split, TextEnv
from agentgym.registry import env_info

BASELINES = ("oracle", "random")


@dataclass(frozen=True)
class EpisodeResult:
    """The outcome of one episode."""

    env_id: str
    task_id: int
    policy: str
    success: bool
    score: float
    total_reward: float
    steps: int
    truncated: bool


def play_episode(env: gym.Env, policy: str, task_id: int, seed: int = 0) -> EpisodeResult:
    """Play task ``task_id`` with the ``oracle`` or ``random`` baseline until the episode ends."""
    if policy not in BASELINES:
        raise ValueError(f"unknown baseline {policy!r}; expected one of {BASELINES}")
    base = env.unwrapped
    assert isinstance(base, TextEnv), "baselines need an agentgym TextEnv"
    rng = random.Random(seed)
    _, info = env.reset(seed=seed, options={"task_id": task_id})
    total_reward, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        action = base.oracle_action() if policy == "oracle" else base.random_action(rng)
        _, reward, terminated, truncated, info = env.step(action)
        total_reward += reward
    return EpisodeResult(
        env_id=env.spec.id if env.spec else type(base).__name__,
        task_id=task_id,
        policy=policy,
        success=bool(info["success"]),
        score=float(info["score"]),
        total_reward=total_reward,
        steps=int(info["steps"]),
        truncated=truncated,
    )


def run_baselines(
    env_ids: list[str], episodes: int, split: Split = "test", policies: tuple[str, ...] = BASELINES
) -> list[EpisodeResult]:
    """Play the first ``episodes`` tasks of ``split`` of each env with each baseline."""
    results = []
    for env_id in env_ids:
        task_ids = env_info(env_id).splits.ids(split)[:episodes]
        env = gym.make(env_id)
        try:
            for policy in policies:
                results += [play_episode(env, policy, task_id, seed=task_id) for task_id in task_ids]
        finally:
            env.close()
    return results


def summarize(results: list[EpisodeResult]) -> list[dict[str, object]]:
    """One row per (env, policy): episodes, success rate, mean score and mean steps."""
    groups: dict[tuple[str, str], list[EpisodeResult]] = {}
    for result in results:
        groups.setdefault((result.env_id, result.policy), []).append(result)
    return [
        {
            "env": env_id,
            "policy": policy,
            "episodes": len(group),
            "success_rate": fmean(r.success for r in group),
            "mean_score": fmean(r.score for r in group),
            "mean_steps": fmean(r.steps for r in group),
        }
        for (env_id, policy), group in groups.items()
    ]
