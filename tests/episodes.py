"""Test helpers: which ids the every-env tests play, and one oracle episode."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TypeVar

import gymnasium as gym

import agentgym

T = TypeVar("T")

#: Families whose ids share one machinery (MiniWoB++'s 130 task pages; TextWorld's four generator settings,
#: whose every id tests/test_textworld.py plays each run, and whose contract check is mostly minutes of game
#: generation on a fresh machine): the tests that play episodes of every registered id, and the contract and
#: fingerprint check, take every n-th id of these only.
SAMPLED_FAMILIES: dict[str, int] = {"miniwob": 13, "textworld": 2}
#: Ids whose family's other ids are subsets of its tasks (the web apps' site ids, WebApps-Shop-v0 ..., of
#: WebApps-v0's one env class; each grounding source's id of Grounding-v0's mix, every source of which
#: tests/test_grounding.py checks on its own): the tests that play every id play one id of the family a run,
#: this one and the others in turn.
SUBSETS_OF: dict[str, str] = {"webapps": "WebApps-v0", "grounding": "Grounding-v0"}


def rotation() -> int:
    """Which slice of each sampled family this run takes: ``$AGENTGYM_TEST_ROTATION``, else the UTC day
    number, so that successive days cover every id (the run's header prints it, to replay a run's sample)."""
    return int(os.environ.get("AGENTGYM_TEST_ROTATION", int(time.time() // 86400)))


def sample_everything() -> bool:
    """``AGENTGYM_TEST_SAMPLE=all``: no sampling, every id of every family in every test (a long run)."""
    return os.environ.get("AGENTGYM_TEST_SAMPLE") == "all"


def in_turn(items: list[T], stride: int) -> list[T]:
    """Every ``stride``-th of ``items``, starting at the run's :func:`rotation` (all of them under
    :func:`sample_everything`): ``stride`` successive days cover every item."""
    if sample_everything():
        return list(items)
    return items[rotation() % stride :: stride]


def grounding_sources_in_full() -> list[str]:
    """The grounding sources whose every screenshot this run renders (the background prepare of conftest.py;
    tests/test_grounding.py's checks of whole sources): one a run, in turn; every source under
    :func:`sample_everything`. The others' tasks come from their shipped index, screenshots rendered on first use."""
    from agentgym.environments.grounding.dataset import sources_config

    sources = list(sources_config()["sources"])
    return in_turn(sources, len(sources))


def sampled(env_ids: list[str], strides: dict[str, int] = SAMPLED_FAMILIES) -> list[str]:
    """``env_ids`` with only every n-th id of the families in ``strides``, starting at the run's
    :func:`rotation`, and one id of a family in :data:`SUBSETS_OF` (its whole id or one of the others, in
    turn); all of them under :func:`sample_everything`."""
    by_family: dict[str, list[str]] = {}
    for env_id in env_ids:
        by_family.setdefault(agentgym.env_info(env_id).family, []).append(env_id)
    picked = []
    for family, ids in by_family.items():
        stride = len(ids) if SUBSETS_OF.get(family) in ids else strides.get(family, 1)
        picked.extend(in_turn(ids, stride))
    return picked


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
