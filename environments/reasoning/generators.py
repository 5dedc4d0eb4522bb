"""reasoning-gym's procedural generators as agentgym envs (``ReasoningGym-v0``, ``ReasoningGym-Python-v0``).

Task: item ``i`` of reasoning-gym's generator ``dataset`` (any of the 105 in
``reasoning_gym.factory.DATASETS`` but the ``composite`` mixer), made by
``reasoning_gym.create_dataset(dataset, seed=S, size=N, **config)[i]``: each split has its own
seed ``S`` (``seed`` plus :data:`SPLIT_SEED_OFFSETS`) and ``N`` is the split's size, so train ids
0-9,999 are items 0-9,999 of the train seed, dev ids items 0-999 of the dev seed, test ids items
0-999 of the test seed. ``config`` is passed through to the generator's config dataclass
(difficulty: ``min_terms``, ``max_digits``, ...); ``level`` takes the config of reasoning-gym's own
curriculum for the generator at that global level (0 its easiest; ``config`` entries override it), so a
curriculum is a list of ids by level. Nothing is re-implemented: questions, answers and scores are
reasoning-gym's.

Observation: the generator's question, then the answer syntax (:mod:`.answers`). Action, reward
and termination: see :mod:`.answers`; the score is the generator's own ``score_answer(answer,
item)`` (0 where it raises on an answer it cannot read).

Oracle: the item's ``answer``; for the generators whose items have none (any valid solution
scores), the solution the item's metadata holds (``oracles.yaml``); ``boxnet`` and ``rush_hour``
hold none, so their envs have no oracle. Random baseline: the answer of another item of the same
split, drawn uniformly.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import yaml

from agentgym.environments.reasoning import REASONING_SPLITS
from agentgym.environments.reasoning.answers import INTERPRETER_PACKAGES, AnswerEnv
from agentgym.sandbox import Limits

#: How far apart the splits' reasoning-gym seeds are (more than a split holds items).
SPLIT_SEED_OFFSETS = {"train": 0, "dev": 1_000_000, "test": 2_000_000}
#: reasoning-gym entries that are not generators of their own.
NOT_GENERATORS = ("composite",)


def generator_names() -> list[str]:
    """Every reasoning-gym generator an env can play, sorted."""
    # The package first: its __init__ imports the generators, which fill DATASETS as they load. A thread that
    # imported only reasoning_gym.factory while another thread was still importing the package would see part of
    # it (0 of 106 generators when tried); importing the package waits for the other thread to finish.
    import reasoning_gym  # noqa: F401
    from reasoning_gym.factory import DATASETS

    return sorted(name for name in DATASETS if name not in NOT_GENERATORS)


@cache
def metadata_oracles() -> dict[str, str]:
    """Generator -> the metadata key of a valid solution, for generators without an ``answer``."""
    return yaml.safe_load(resources.files(__package__).joinpath("oracles.yaml").read_text(encoding="utf-8"))


def curriculum_config(name: str, level: int | None) -> dict[str, Any]:
    """The config of reasoning-gym's curriculum for generator ``name`` at global ``level`` (0: its easiest), as
    JSON-ready data without the seed and size (the env's splits set those); ``{}`` for level None."""
    if level is None:
        return {}
    import dataclasses

    from reasoning_gym.factory import create_curriculum, has_curriculum

    if not has_curriculum(name):
        raise ValueError(f"reasoning-gym has no curriculum for {name!r}: give its difficulty as config= instead")
    curriculum = create_curriculum(name)
    curriculum.set_global_level(level)
    config = curriculum.generate_configuration()
    # What the curriculum sets: the fields that differ from the config's defaults (others, such as a date,
    # stay the generator's own and need not be JSON).
    defaults = dataclasses.asdict(type(config)())
    chosen = {key: value for key, value in dataclasses.asdict(config).items() if value != defaults.get(key)}
    return json.loads(json.dumps({key: value for key, value in chosen.items() if key not in ("seed", "size")}))


@lru_cache(maxsize=64)
def make_dataset(name: str, seed: int, size: int, config_json: str) -> Any:
    """A reasoning-gym dataset, shared by the envs of this process (the config as sorted JSON)."""
    import reasoning_gym

    return reasoning_gym.create_dataset(name, seed=seed, size=size, **json.loads(config_json))


class ReasoningGymEnv(AnswerEnv):
    """One reasoning-gym generator as an env (see the module docstring).

    ``dataset``: the generator's name; ``config``: its config fields; ``level``: its curriculum's level
    (:func:`curriculum_config`); ``seed``: the base of the splits' seeds; ``tools``: offer the Python
    interpreter (multi-turn).
    """

    splits = REASONING_SPLITS  # items are always found by REASONING_SPLITS (the -Attack id has 6x the ids)

    def __init__(
        self,
        dataset: str = "basic_arithmetic",
        config: Mapping[str, Any] | None = None,
        level: int | None = None,
        seed: int = 0,
        tools: bool = False,
        interpreter_limits: Limits | Mapping[str, Any] | None = None,
        interpreter_packages: Sequence[str] = INTERPRETER_PACKAGES,
        render_mode: str | None = None,
        flexible_answer: bool = False,
    ) -> None:
        super().__init__(tools, interpreter_limits, interpreter_packages, render_mode, flexible_answer)
        names = generator_names()
        if dataset not in names:
            raise ValueError(f"unknown reasoning-gym generator {dataset!r}; choose one of {', '.join(names)}")
        self.dataset_name = dataset
        self.config_json = json.dumps({**curriculum_config(dataset, level), **(config or {})}, sort_keys=True)
        self.seed = seed
        self.oracle_key = metadata_oracles().get(dataset)
        self.item: dict[str, Any] = {}
        self.dataset_for("dev")  # a bad config fails at make time; dev is the smallest split to build
        self.has_oracle = (
            self.oracle_key is not None or self._item(REASONING_SPLITS.ids("dev")[0])["answer"] is not None
        )

    def dataset_for(self, split: str) -> Any:
        """The reasoning-gym dataset that holds ``split``'s items."""
        size = REASONING_SPLITS.counts()[split]
        return make_dataset(self.dataset_name, self.seed + SPLIT_SEED_OFFSETS[split], size, self.config_json)

    def _item(self, task_id: int) -> dict[str, Any]:
        split = REASONING_SPLITS.split_of(task_id)
        return self.dataset_for(split)[task_id - REASONING_SPLITS.ids(split)[0]]

    def _generate(self, task_id: int) -> str:
        self.item = self._item(task_id)
        self.question = str(self.item["question"]).strip()
        return self.question

    def judge(self, answer: str) -> float:
        dataset = self.dataset_for(self.split)
        try:
            return float(dataset.score_answer(answer, self.item))
        except Exception:  # noqa: BLE001 (some scorers raise on answers they cannot read: 0, as a wrong answer)
            return 0.0

    def expected_answer(self) -> str | None:
        return solution(self.item, self.oracle_key)

    def random_action(self, rng: random.Random) -> str:
        """The answer of another item of this split, drawn uniformly (the "random" baseline)."""
        other = self._item(rng.choice(REASONING_SPLITS.ids(self.split)))
        return f"answer[{solution(other, self.oracle_key) or '?'}]"


def solution(item: Mapping[str, Any], oracle_key: str | None) -> str | None:
    """An item's answer, or the valid solution its metadata holds (as text: JSON for other values)."""
    if item.get("answer") is not None:
        return str(item["answer"])
    if oracle_key is None or oracle_key not in item.get("metadata", {}):
        return None
    value = item["metadata"][oracle_key]
    return value if isinstance(value, str) else json.dumps(value)
