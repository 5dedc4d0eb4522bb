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
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from agentgym.evaluation.runner import EvalItem
from agentgym.registry import env_info

ITEM_KEYS = {"env", "split", "episodes", "max_turns", "kwargs"}


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    items: list[EvalItem]


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
        if episodes == "all":
            episodes = len(env_info(merged["env"]).splits.ids(split))
        items.append(
            EvalItem(
                env=env_info(merged["env"]).id,
                episodes=int(episodes),
                split=split,
                max_turns=merged.get("max_turns"),
                kwargs=dict(merged.get("kwargs") or {}),
            )
        )
    return Suite(name, str(data.get("description", "")), items)
