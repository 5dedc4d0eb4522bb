"""ScienceWorld's 30 task types, their official variation splits, and agentgym's task ids.

The table is ScienceWorld 1.2.3's (``get_variations_train/dev/test`` of each task; a test
checks it against the engine). In every task type the official train variations come
first, then dev, then test, so a split is a contiguous range of variation indices.

agentgym's task ids run over all 7,207 (task type, variation) pairs, train ids first, then
dev, then test (:class:`~agentgym.contract.core.TaskSplits`). Inside a split the task types take
turns: the split's first 30 ids are the first variation of that split of each task type in
the table's order, the next 30 the second variation of each, and so on (task types with
fewer variations drop out once theirs are used up). So the first N tasks of a split cover
every task type evenly, and :func:`task_ids` lists one task type's ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from agentgym.contract.core import SPLIT_NAMES, Split, TaskSplits


@dataclass(frozen=True)
class TaskType:
    """One of ScienceWorld's task types with its official variation split."""

    number: str  # the paper's numbering, e.g. "1-1"
    name: str  # the engine's name, e.g. "boil"
    title: str
    train: int  # variations 0 .. train-1
    dev: int  # the next ``dev`` variations
    test: int  # the rest

    @property
    def variations(self) -> int:
        return self.train + self.dev + self.test

    def split_variations(self, split: Split) -> range:
        """The variation indices of ``split`` (official split)."""
        start = {"train": 0, "dev": self.train, "test": self.train + self.dev}[split]
        return range(start, start + getattr(self, split))


TASK_TYPES: tuple[TaskType, ...] = (
    TaskType("1-1", "boil", "Matter: boil a substance", 14, 7, 9),
    TaskType("1-2", "melt", "Matter: melt a substance", 14, 7, 9),
    TaskType("1-3", "freeze", "Matter: freeze a substance", 14, 7, 9),
    TaskType("1-4", "change-the-state-of-matter-of", "Matter: change the state of matter", 14, 7, 9),
    TaskType("2-1", "use-thermometer", "Measurement: use a thermometer", 270, 135, 135),
    TaskType("2-2", "measure-melting-point-known-substance", "Measurement: melting point (known)", 218, 109, 109),
    TaskType("2-3", "measure-melting-point-unknown-substance", "Measurement: melting point (unknown)", 150, 75, 75),
    TaskType("3-1", "power-component", "Electricity: create a circuit", 10, 5, 5),
    TaskType("3-2", "power-component-renewable-vs-nonrenewable-energy", "Electricity: renewable energy", 10, 5, 5),
    TaskType("3-3", "test-conductivity", "Electricity: conductivity (known)", 450, 225, 225),
    TaskType("3-4", "test-conductivity-of-unknown-substances", "Electricity: conductivity (unknown)", 300, 150, 150),
    TaskType("4-1", "find-living-thing", "Classification: find a living thing", 150, 75, 75),
    TaskType("4-2", "find-non-living-thing", "Classification: find a non-living thing", 150, 75, 75),
    TaskType("4-3", "find-plant", "Classification: find a plant", 150, 75, 75),
    TaskType("4-4", "find-animal", "Classification: find an animal", 150, 75, 75),
    TaskType("5-1", "grow-plant", "Biology: grow a plant", 62, 31, 33),
    TaskType("5-2", "grow-fruit", "Biology: grow a fruit", 62, 31, 33),
    TaskType("6-1", "chemistry-mix", "Chemistry: mix chemicals", 16, 8, 8),
    TaskType("6-2", "chemistry-mix-paint-secondary-color", "Chemistry: mix a secondary colour", 18, 9, 9),
    TaskType("6-3", "chemistry-mix-paint-tertiary-color", "Chemistry: mix a tertiary colour", 18, 9, 9),
    TaskType("7-1", "lifespan-longest-lived", "Biology: longest-lived animal", 62, 31, 32),
    TaskType("7-2", "lifespan-shortest-lived", "Biology: shortest-lived animal", 62, 31, 32),
    TaskType("7-3", "lifespan-longest-lived-then-shortest-lived", "Biology: longest- then shortest-lived", 62, 31, 32),
    TaskType("8-1", "identify-life-stages-1", "Biology: life stages of a plant", 6, 3, 5),
    TaskType("8-2", "identify-life-stages-2", "Biology: life stages of an animal", 4, 2, 4),
    TaskType("9-1", "inclined-plane-determine-angle", "Forces: inclined plane angle", 84, 42, 42),
    TaskType("9-2", "inclined-plane-friction-named-surfaces", "Forces: friction (known surfaces)", 692, 346, 348),
    TaskType("9-3", "inclined-plane-friction-unnamed-surfaces", "Forces: friction (unknown surfaces)", 80, 40, 42),
    TaskType("10-1", "mendelian-genetics-known-plant", "Biology: Mendelian genetics (known)", 60, 30, 30),
    TaskType("10-2", "mendelian-genetics-unknown-plant", "Biology: Mendelian genetics (unknown)", 240, 120, 120),
)
TASK_NAMES: tuple[str, ...] = tuple(task.name for task in TASK_TYPES)
_BY_NAME = {task.name: task for task in TASK_TYPES}

SPLITS = TaskSplits(*(sum(getattr(task, split) for task in TASK_TYPES) for split in SPLIT_NAMES))


def task_type(name: str) -> TaskType:
    """The task type called ``name`` (the engine's name, e.g. ``"boil"``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown ScienceWorld task {name!r}; the tasks are: {', '.join(TASK_NAMES)}") from None


@cache
def task_table() -> tuple[tuple[str, int], ...]:
    """``(task name, variation)`` of every task id, in id order (see the module docstring)."""
    table: list[tuple[str, int]] = []
    for split in SPLIT_NAMES:
        rounds = max(getattr(task, split) for task in TASK_TYPES)
        for index in range(rounds):
            table.extend(
                (task.name, task.split_variations(split)[index]) for task in TASK_TYPES if index < getattr(task, split)
            )
    return tuple(table)


def task_of(task_id: int) -> tuple[str, int]:
    """The ``(task name, variation)`` that task ``task_id`` plays."""
    SPLITS.split_of(task_id)  # raises ValueError when out of range
    return task_table()[task_id]


def task_ids(name: str, split: Split) -> list[int]:
    """The task ids of task type ``name`` in ``split``, in variation order."""
    task_type(name)
    ids = SPLITS.ids(split)
    return [task_id for task_id in ids if task_table()[task_id][0] == name]
