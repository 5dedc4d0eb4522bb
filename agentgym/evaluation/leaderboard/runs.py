"""Finding runs for a leaderboard: eval runs, arenas and training runs under the folders given.

:func:`discover` walks every folder it is given: a folder holding
``run.json`` and ``episodes.jsonl`` is a run (an ``agentgym eval`` run, or an arena when
its ``run.json`` says ``"kind": "arena"``); a folder holding ``metrics.jsonl`` is a
training run, whose ``eval/iteration-N`` runs give its learning curve and whose latest
greedy evaluation joins the leaderboard as ``<training run> @ iteration N``. So
``agentgym leaderboard results/quick`` (the folder the main job writes) finds both runs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.evaluation.results import EPISODES_FILE, RUN_FILE, read_run

#: A training run's folder holds this file (see :mod:`agentgym.train.trainer`).
METRICS_FILE = "metrics.jsonl"
_EVAL_FOLDER = re.compile(r"iteration-(\d+)(?:-temperature-([0-9.eE+-]+))?$")


class LeaderboardError(ValueError):
    """Folders that cannot make one leaderboard (no runs, mixed splits, duplicates, mismatches)."""


@dataclass(frozen=True)
class RunFolder:
    """One results folder found by :func:`discover`."""

    path: Path
    label: str  #: its path from (and including) the folder it was found under
    run: dict[str, Any]  #: its ``run.json``
    training: str | None = None  #: the label of the training run it evaluates
    iteration: int | None = None  #: the training iteration it evaluates
    temperature: float | None = None  #: its sampling temperature (None: greedy)

    @property
    def is_arena(self) -> bool:
        return self.run.get("kind") == "arena"


@dataclass(frozen=True)
class TrainingRun:
    """A training run's folder: its ``metrics.jsonl`` rows and its evaluation runs."""

    path: Path
    label: str
    metrics: list[dict[str, Any]]
    evals: list[RunFolder]


@dataclass
class Found:
    """What :func:`discover` found: eval runs, arenas and training runs."""

    evals: list[RunFolder] = field(default_factory=list)
    arenas: list[RunFolder] = field(default_factory=list)
    trainings: list[TrainingRun] = field(default_factory=list)


def _read_run_json(folder: Path) -> dict[str, Any]:
    try:
        run = read_run(folder)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as error:
        raise LeaderboardError(f"{folder}/{RUN_FILE} is not readable: {error}") from error
    if not isinstance(run, dict) or ("policy" not in run and run.get("kind") != "arena"):
        raise LeaderboardError(f"{folder}/{RUN_FILE} is not a run configuration (no 'policy')")
    return run


def _read_metrics(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a crash
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def discover(paths: Sequence[Path | str]) -> Found:
    """Every run under ``paths`` (each a run folder or any folder holding runs, at any depth).

    Raises :class:`LeaderboardError` for a path that does not exist or holds no run.
    A run reached twice (a folder and its parent both given) is taken once. A run in
    ``X/eval/iteration-N`` where ``X`` holds ``metrics.jsonl`` belongs to training run
    ``X``, even when only ``X/eval`` was given.
    """
    found = Found()
    seen: set[Path] = set()
    labels: set[str] = set()
    trainings: dict[Path, TrainingRun] = {}

    def training_of(root: Path, folder: Path) -> TrainingRun:
        key = folder.resolve()
        if key not in trainings:
            inside = key == root.resolve() or root.resolve() in key.parents
            label = _unique(_label(root, folder) if inside else folder.resolve().name, labels)
            trainings[key] = TrainingRun(folder, label, _read_metrics(folder / METRICS_FILE), [])
            found.trainings.append(trainings[key])
        return trainings[key]

    for given in paths:
        root = Path(given)
        if not root.is_dir():
            what = "does not exist" if not root.exists() else "is not a folder"
            raise LeaderboardError(f"{given} {what}; pass folders that hold runs written by `agentgym eval`")
        count = 0
        for folder, subfolders, files in os.walk(root):
            subfolders.sort()
            here = Path(folder)
            if METRICS_FILE in files:
                training_of(root, here)
            if RUN_FILE not in files or EPISODES_FILE not in files:
                continue
            subfolders[:] = []  # a run holds no runs (only e.g. its screenshots)
            count += 1
            if here.resolve() in seen:
                continue
            seen.add(here.resolve())
            run = _read_run_json(here)
            trainer = here.resolve().parent.parent
            match = _EVAL_FOLDER.match(here.name)
            owner = None
            if match and here.resolve().parent.name == "eval" and (trainer / METRICS_FILE).is_file():
                owner = training_of(root, trainer)
            folder_run = RunFolder(
                here,
                _unique(_label(root, here), labels),
                run,
                training=owner.label if owner else None,
                iteration=int(match[1]) if owner and match else None,
                temperature=float(match[2]) if owner and match and match[2] else None,
            )
            if owner is not None:
                owner.evals.append(folder_run)
            elif folder_run.is_arena:
                found.arenas.append(folder_run)
            else:
                found.evals.append(folder_run)
        if count == 0:
            raise LeaderboardError(
                f"{given} holds no runs (folders with {RUN_FILE} and {EPISODES_FILE}, as `agentgym eval` writes)"
            )
    for training in found.trainings:
        training.evals.sort(key=lambda run: (run.iteration or 0, run.temperature or 0.0))
        greedy = [run for run in training.evals if run.temperature is None]
        if greedy:
            found.evals.append(greedy[-1])
    return found


def _label(root: Path, folder: Path) -> str:
    name = root.resolve().name or str(root)
    relative = folder.relative_to(root).as_posix()
    return name if relative == "." else f"{name}/{relative}"


def _unique(label: str, taken: set[str]) -> str:
    candidate, number = label, 2
    while candidate in taken:
        candidate, number = f"{label} ({number})", number + 1
    taken.add(candidate)
    return candidate
