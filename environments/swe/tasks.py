"""The validated task list (``data/tasks/*.jsonl``, built by :mod:`~agentgym.environments.swe.synthesis`), split.

Order and splits: tasks of the repositories marked ``split: test`` in ``repositories.yaml`` form the
test split (repositories never seen in train or dev); the other repositories' tasks are divided
within each repository: one in ten (at least one) goes to dev, those with the lowest hash of their
content. Task ids run through train, then dev, then test; inside a split
tasks are ordered by repository, file, line and kind.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from agentgym.environments.swe.repositories import repositories

DATA = Path(__file__).parent / "data"
SPLITS = ("train", "dev", "test")
#: One task in this many of each train repository goes to dev (at least one where it has two or more).
DEV_SHARE = 10
#: The variants: which mutation kinds an id's tasks come from.
VARIANTS = {
    "edit": (
        "compare",
        "arithmetic",
        "boolean",
        "condition",
        "off_by_one",
        "remove_statement",
        "remove_branch",
        "swap_arguments",
    ),
    "rewrite": ("remove_body",),
}


@dataclass(frozen=True)
class Task:
    """One validated bug: the mutation, the tests that must flip, and the problem statement."""

    repository: str
    version: str
    path: str
    kind: str
    function: str
    first: int
    last: int
    before: str
    after: str
    test_files: tuple[str, ...]
    fail_to_pass: tuple[str, ...]
    problem_statement: str

    @property
    def key(self) -> str:
        digest = hashlib.sha256(self.after.encode()).hexdigest()[:8]
        return f"{self.repository}:{self.path}:{self.first}:{self.kind}:{digest}"

    def pass_to_pass(self) -> tuple[str, ...]:
        """The stable tests of the task's test files that the bug leaves passing."""
        stable = baseline(self.repository)["stable"]
        failing = set(self.fail_to_pass)
        return tuple(test for path in self.test_files for test in stable.get(path, ()) if test not in failing)

    def content_hash(self) -> int:
        """A stable hash of the task's content (its place in the within-repository split)."""
        return int(hashlib.sha256(self.key.encode()).hexdigest(), 16)


#: A baseline larger than this is stored gzipped (packaging's 64,125 stable test ids: 6.3 MB as JSON).
GZIP_BASELINE_BYTES = 1_000_000


def baseline_file(repository: str) -> Path:
    """``data/baselines/<repository>.json``, or ``.json.gz`` where that one is stored."""
    plain = DATA / "baselines" / f"{repository}.json"
    return plain if plain.exists() else plain.with_name(plain.name + ".gz")


def write_baseline(repository: str, content: dict) -> Path:
    """Store a baseline as JSON, gzipped when large (see :data:`GZIP_BASELINE_BYTES`)."""
    text = json.dumps(content, indent=1, sort_keys=True) + "\n"
    plain = DATA / "baselines" / f"{repository}.json"
    plain.parent.mkdir(parents=True, exist_ok=True)
    if len(text) <= GZIP_BASELINE_BYTES:
        plain.write_text(text, encoding="utf-8")
        return plain
    packed = plain.with_name(plain.name + ".gz")
    packed.write_bytes(gzip.compress(text.encode(), mtime=0))
    plain.unlink(missing_ok=True)
    return packed


@cache
def baseline(repository: str) -> dict:
    """The repository's baseline: its stable tests by file and the suite's time."""
    path = baseline_file(repository)
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)


@cache
def all_tasks() -> tuple[Task, ...]:
    """Every validated task of every repository."""
    found = []
    for repository in repositories().values():
        path = DATA / "tasks" / f"{repository.name}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            row["test_files"] = tuple(row["test_files"])
            row["fail_to_pass"] = tuple(row["fail_to_pass"])
            found.append(Task(**row))
    return tuple(found)


@cache
def task_list(variant: str) -> dict[str, tuple[Task, ...]]:
    """The variant's tasks per split (see the module docstring)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    kinds = VARIANTS[variant]
    by_split: dict[str, list[Task]] = {split: [] for split in SPLITS}
    per_repository: dict[str, list[Task]] = {}
    for task in all_tasks():
        if task.kind in kinds:
            per_repository.setdefault(task.repository, []).append(task)
    for name, tasks in per_repository.items():
        if repositories()[name].split == "test":
            by_split["test"] += tasks
            continue
        ranked = sorted(tasks, key=Task.content_hash)
        held_out = max(1, len(ranked) // DEV_SHARE) if len(ranked) > 1 else 0
        by_split["dev"] += ranked[:held_out]
        by_split["train"] += ranked[held_out:]
    return {
        split: tuple(sorted(tasks, key=lambda task: (task.repository, task.path, task.first, task.kind, task.after)))
        for split, tasks in by_split.items()
    }


def ordered(variant: str) -> tuple[Task, ...]:
    """The variant's tasks in task-id order: train, dev, test."""
    split = task_list(variant)
    return split["train"] + split["dev"] + split["test"]


def counts(variant: str) -> dict[str, int]:
    return {split: len(tasks) for split, tasks in task_list(variant).items()}
