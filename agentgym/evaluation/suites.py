"""Benchmark suites: YAML files naming envs, splits, episode counts and turn limits.

A suite file::

    description: Every environment, 5 test episodes each
    split: test            # default for every env
    episodes: 5            # default per env; "all" plays the whole split
    max_turns: null        # default turn limit (null: the env's registered limit)
    envs:
      - env: Sokoban-v0
      - env: FrozenLake-v0
        kwargs: {is_slippery: true}
        episodes: 20

``load_suite("quick")`` reads ``agentgym/evaluation/suites/quick.yaml`` (package data);
a path to a ``.yaml`` file works too.

**Published protocols** are suites too (``agentgym eval --suite browsergym-miniwob``): a
``protocol:`` block says whose table the suite reproduces (its source, the metrics it
reports, where our envs differ), ``history_window`` the turns of history the protocol's
agent sees, and an item may list its exact ``task_ids`` (repeated ids are played as repeats)
instead of "the first N of the split". docs/protocols.md describes each one::

    protocol:
      name: BrowserGym MiniWoB
      source: {repository: ServiceNow/BrowserGym, commit: ..., files: [...]}
      citation: ...
      metrics: {success: ...}
      differences: [...]
    history_window: 2
    envs:
      - env: MiniWoB-click-button-v0
        split: train
        task_ids: [3, 17, 17, 30, 8]
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agentgym.contract.registry import env_info
from agentgym.evaluation.runner import EvalItem

ITEM_KEYS = {"env", "split", "episodes", "max_turns", "kwargs", "task_ids"}
#: What a ``protocol:`` block must say.
PROTOCOL_KEYS = {"name", "source", "citation", "metrics", "differences"}


@dataclass(frozen=True)
class Suite:
    """A parsed suite: its items and, for a published protocol, what it reproduces."""

    name: str
    description: str
    items: list[EvalItem]
    #: The ``protocol:`` block (None for our own suites); ``run.json`` records it.
    protocol: dict[str, Any] | None = None
    #: The turns of history the protocol's agent sees (None: the whole episode).
    history_window: int | None = None


def suite_names() -> list[str]:
    """The suites shipped with agentgym."""
    folder = resources.files("agentgym.evaluation") / "suites"
    return sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml"))


def load_suite(name_or_path: str) -> Suite:
    """A shipped suite by name, or a suite file by path; ``ValueError`` if it is malformed."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        text, name = path.read_text(), path.stem
    else:
        entry = resources.files("agentgym.evaluation") / "suites" / f"{name_or_path}.yaml"
        if not entry.is_file():
            raise ValueError(f"unknown suite {name_or_path!r}; shipped suites: {', '.join(suite_names())}")
        text, name = entry.read_text(), name_or_path
    return parse_suite(name, yaml.safe_load(text))


def parse_suite(name: str, data: Any) -> Suite:
    """Build a suite from parsed YAML, checking every key and env id."""
    if not isinstance(data, dict) or not isinstance(data.get("envs"), list) or not data["envs"]:
        raise ValueError(f"suite {name!r} needs a non-empty 'envs' list")
    defaults = {key: data[key] for key in ("split", "episodes", "max_turns") if key in data}
    items = []
    for entry in data["envs"]:
        if not isinstance(entry, dict) or "env" not in entry or set(entry) - ITEM_KEYS:
            raise ValueError(f"suite {name!r}: bad entry {entry!r}; keys are {sorted(ITEM_KEYS)}")
        merged = defaults | entry
        split = merged.get("split", "test")
        episodes = merged.get("episodes", 10)
        task_ids = _task_ids(name, merged, split)
        if task_ids is not None:
            episodes = len(task_ids)
        elif episodes == "all":
            episodes = len(env_info(merged["env"]).splits.ids(split))
        items.append(
            EvalItem(
                env=env_info(merged["env"]).id,
                episodes=int(episodes),
                split=split,
                max_turns=merged.get("max_turns"),
                kwargs=dict(merged.get("kwargs") or {}),
                task_ids=task_ids,
            )
        )
    protocol = data.get("protocol")
    if protocol is not None and (not isinstance(protocol, dict) or PROTOCOL_KEYS - set(protocol)):
        raise ValueError(f"suite {name!r}: its protocol block needs the keys {sorted(PROTOCOL_KEYS)}")
    history_window = data.get("history_window")
    if history_window is not None and (not isinstance(history_window, int) or history_window < 0):
        raise ValueError(f"suite {name!r}: history_window must be a number of turns >= 0")
    return Suite(name, str(data.get("description", "")), items, protocol, history_window)


def _task_ids(name: str, entry: dict[str, Any], split: str) -> tuple[int, ...] | None:
    """An entry's explicit ``task_ids``, each checked to be a task of ``split``; None if it has none."""
    if "task_ids" not in entry:
        return None
    task_ids = entry["task_ids"]
    valid = env_info(entry["env"]).splits.ids(split)  # type: ignore[arg-type]
    if not isinstance(task_ids, list) or not task_ids:
        raise ValueError(f"suite {name!r}: {entry['env']}'s task_ids must be a non-empty list")
    outside = [task_id for task_id in task_ids if not isinstance(task_id, int) or task_id not in valid]
    if outside:
        raise ValueError(f"suite {name!r}: {entry['env']}'s task_ids {outside[:5]} are not tasks of its {split} split")
    return tuple(task_ids)
