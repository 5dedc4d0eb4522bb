"""A run's plan: its items (env, episodes, split, turns, kwargs) and every episode they make, each with its
task id, repeat and seed, the same in every process (what lets a results folder resume)."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from agentgym.contract.registry import env_info
from agentgym.evaluation.results import episode_key

#: Env kwargs that say where an env runs, not what it plays: left out of episode labels.
BACKEND_KWARGS = ("backend", "ray_", "docker_")


@dataclass(frozen=True)
class EvalItem:
    """One env of a run: how many episodes, on which split, with what turn limit.

    ``task_ids`` (a published protocol's exact list) replaces "the first ``episodes`` tasks of the split".
    """

    env: str
    episodes: int
    split: str = "test"
    max_turns: int | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    task_ids: tuple[int, ...] | None = None

    def describe(self) -> dict[str, Any]:
        """The item as ``run.json`` records it (``task_ids`` only where the item has them)."""
        data = asdict(self)
        if self.task_ids is None:
            del data["task_ids"]
        else:
            data["task_ids"] = list(self.task_ids)
        return data

    @cached_property
    def label(self) -> str:
        """The env id with its kwargs, ``FrozenLake-v0[is_slippery=True]``; backend kwargs are left out.

        Where an env runs (``backend``, ``ray_*``, ``docker_*``) does not change its episodes,
        so runs on different backends share episode keys and seeds (and can resume each other).
        """
        kwargs = {key: value for key, value in sorted(self.kwargs.items()) if not key.startswith(BACKEND_KWARGS)}
        if not kwargs:
            return self.env
        return f"{self.env}[{','.join(f'{key}={value!r}' for key, value in kwargs.items())}]"


@dataclass(frozen=True)
class PlannedEpisode:
    key: str
    item: EvalItem
    task_id: int
    repeat: int
    seed: int


def stable_seed(*parts: object) -> int:
    """A 31-bit seed derived from ``parts``, the same in every process."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") >> 1


def plan(items: list[EvalItem], seed: int) -> list[PlannedEpisode]:
    """Every episode of a run: the first ``episodes`` tasks of each item's split, or its ``task_ids``.

    Asking for more episodes than the split holds plays its tasks again as further
    repeats (with other seeds); a task id listed twice in ``task_ids`` is played as repeats too.
    """
    planned = []
    for item in items:
        if item.task_ids is not None:
            chosen = list(item.task_ids)
        else:
            split_ids = env_info(item.env).splits.ids(item.split)  # type: ignore[arg-type]
            chosen = [split_ids[index % len(split_ids)] for index in range(item.episodes)]
        seen: dict[int, int] = {}
        for task_id in chosen:
            repeat = seen[task_id] = seen.get(task_id, -1) + 1
            key = episode_key(item.label, item.split, task_id, repeat)
            planned.append(PlannedEpisode(key, item, task_id, repeat, stable_seed(seed, key)))
    return planned


def planned_tasks(planned: list[PlannedEpisode]) -> dict[str, set[int]]:
    """Each item's label -> the task ids its planned episodes play (what its preparation prepares)."""
    tasks: dict[str, set[int]] = {}
    for episode in planned:
        tasks.setdefault(episode.item.label, set()).add(episode.task_id)
    return tasks
