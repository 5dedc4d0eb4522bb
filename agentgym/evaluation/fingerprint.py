"""Task-set fingerprints: what each registered id means, pinned so that a change is noticed.

An env id's tasks are made by code (a generator, a data file, an engine); changing that code
silently changes what ``Sokoban-v0`` means and makes numbers measured before and after
incomparable. The fingerprint of an id is the sha256 of a canonical JSON record of a fixed
sample of its tasks: for the first :data:`TASKS_PER_SPLIT` task ids of each split, the first
observation's text and instruction and, where the env has an oracle, the oracle's first
:data:`MAX_ORACLE_STEPS` actions with their rewards, terminations and the final success and
score. Screenshots are not hashed (their text is).

The fingerprints are recorded in ``agentgym/evaluation/fingerprints.json`` (package data), written by
``agentgym fingerprint --write`` (or ``python -m agentgym.evaluation.fingerprint --write``); the
contract test recomputes them and fails on a change. Results record them (``run.json``'s
``env_fingerprints``, read from the file, never recomputed at eval time). An env class may
set ``fingerprint_exempt = "why"`` when its tasks are not ours to pin (ALFWorld's come from
the user's game files); its id is recorded with a null fingerprint and the reason.
See docs/versioning.md.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.contract.core import SPLIT_NAMES, TaskSplits, observation_text
from agentgym.contract.registry import env_info, list_envs

#: The committed fingerprints (package data).
FINGERPRINTS_FILE = Path(__file__).with_name("fingerprints.json")
#: Bumped when what a fingerprint covers changes (every fingerprint then changes once).
FORMAT = 1
#: How many task ids of each split (the first ones) a fingerprint covers.
TASKS_PER_SPLIT = 2
#: How many oracle steps of each sampled task a fingerprint covers.
MAX_ORACLE_STEPS = 30


class FingerprintChanged(AssertionError):
    """An id's tasks no longer match its recorded fingerprint; the message says what to do."""

    def __init__(self, env_id: str, recorded: str | None, current: str) -> None:
        self.env_id, self.recorded, self.current = env_id, recorded, current
        super().__init__(
            f"{env_id}'s task set changed: its fingerprint is now {current}, {FINGERPRINTS_FILE.name} records "
            f"{recorded}. Numbers measured on {env_id} before this change are not comparable with numbers after it. "
            f"If the change alters tasks, register the new tasks as a new version ({bump_version(env_id)}) and keep "
            f"{env_id} registered with the old tasks when they can still be made; add the new id with "
            f"`agentgym fingerprint --write {bump_version(env_id)}`. If the change is deliberate and nobody's numbers "
            f"are affected (no release carried the old tasks), regenerate the record: "
            f"`agentgym fingerprint --write {env_id}`. See docs/versioning.md."
        )


def bump_version(env_id: str) -> str:
    """The next version of an id: ``Sokoban-v0`` -> ``Sokoban-v1`` (``-v1`` appended if it has none)."""
    match = re.fullmatch(r"(.*)-v(\d+)", env_id)
    return f"{match.group(1)}-v{int(match.group(2)) + 1}" if match else f"{env_id}-v1"


def task_sample(splits: TaskSplits) -> list[int]:
    """The task ids a fingerprint covers: the first :data:`TASKS_PER_SPLIT` of each split."""
    return [task_id for split in SPLIT_NAMES for task_id in splits.ids(split)[:TASKS_PER_SPLIT]]


def _number(value: float) -> float:
    """A float rounded so that last-bit differences between machines do not change the hash."""
    return round(float(value), 9)


def task_record(env: gym.Env, task_id: int) -> dict[str, Any]:
    """What a fingerprint covers of one task (see the module docstring).

    An env class whose pages hold what is not the task's (the web apps: the env's tenant in
    every URL, the time of day) defines ``fingerprint_task(task_id)``: the task's definition as
    JSON-serialisable data, recorded instead of an episode.
    """
    base = env.unwrapped
    if hasattr(base, "fingerprint_task"):
        return {"task_id": task_id, "task": base.fingerprint_task(task_id)}
    observation, info = env.reset(seed=task_id, options={"task_id": task_id})
    record: dict[str, Any] = {
        "task_id": task_id,
        "observation": observation_text(observation),
        "instruction": info["instruction"],
    }
    if getattr(base, "has_oracle", True):
        steps = []
        for _ in range(MAX_ORACLE_STEPS):
            action = base.oracle_action()
            _, reward, terminated, truncated, info = env.step(action)
            steps.append([action, _number(reward), terminated, truncated])
            if terminated or truncated:
                break
        record |= {"oracle": steps, "success": bool(info["success"]), "score": _number(info["score"])}
    return record


def fingerprint_of(env: gym.Env) -> str:
    """The fingerprint of ``env``'s tasks (sha256 hex); plays the sampled tasks on ``env``."""
    records = [task_record(env, task_id) for task_id in task_sample(env.unwrapped.splits)]
    canonical = json.dumps({"format": FORMAT, "tasks": records}, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def exemption(env_id: str) -> str | None:
    """Why ``env_id`` has no fingerprint (its env class's ``fingerprint_exempt``), or ``None``."""
    from gymnasium.envs.registration import load_env_creator

    return getattr(load_env_creator(env_info(env_id).entry_point), "fingerprint_exempt", None)


def env_fingerprint(env_id: str, **kwargs: Any) -> str:
    """Make ``env_id`` (with its registered kwargs plus ``kwargs``), compute its fingerprint, close it."""
    with gym.make(env_id, **kwargs) as env:
        return fingerprint_of(env)


@functools.lru_cache(maxsize=1)
def _recorded() -> dict[str, Any]:
    return json.loads(FINGERPRINTS_FILE.read_text())


def recorded_fingerprints() -> dict[str, str | None]:
    """The committed fingerprint of every recorded id (``None`` for exempt ones)."""
    return dict(_recorded()["fingerprints"])


def recorded_fingerprint(env_id: str) -> str | None:
    """The committed fingerprint of ``env_id``; ``None`` when it is exempt or not recorded."""
    return _recorded()["fingerprints"].get(env_id.removeprefix("agentgym:"))


def check_fingerprint(env_id: str, env: gym.Env | None = None) -> str | None:
    """Recompute ``env_id``'s fingerprint (on ``env`` if given) and compare it with the record.

    Returns the fingerprint (``None`` for an exempt id); raises :class:`FingerprintChanged`
    when it differs from the record or the id is not recorded.
    """
    data = _recorded()
    if env_id in data.get("exempt", {}):
        return None
    current = fingerprint_of(env) if env is not None else env_fingerprint(env_id)
    recorded = data["fingerprints"].get(env_id)
    if current != recorded:
        raise FingerprintChanged(env_id, recorded, current)
    return current


def write(env_ids: Sequence[str] | None = None, path: Path = FINGERPRINTS_FILE) -> dict[str, Any]:
    """Compute the fingerprints of ``env_ids`` (default: every registered id) into ``path``.

    Other ids' records are kept, ids no longer registered are dropped. Prints one line per id.
    """
    registered = {info.id for info in list_envs()}
    data = json.loads(path.read_text()) if path.exists() else {}
    fingerprints: dict[str, str | None] = data.get("fingerprints", {})
    exempt: dict[str, str] = data.get("exempt", {})
    for env_id in env_ids or sorted(registered):
        env_info(env_id)  # an unknown id raises, naming the closest ones
        started = time.perf_counter()
        reason = exemption(env_id)
        if reason:
            fingerprints[env_id], exempt[env_id] = None, reason
            print(f"{env_id}: exempt ({reason})", file=sys.stderr)
            continue
        exempt.pop(env_id, None)
        fingerprints[env_id] = env_fingerprint(env_id)
        print(f"{env_id}: {fingerprints[env_id]} ({time.perf_counter() - started:.1f}s)", file=sys.stderr)
    data = {
        "format": FORMAT,
        "sample": {"tasks_per_split": TASKS_PER_SPLIT, "max_oracle_steps": MAX_ORACLE_STEPS},
        "fingerprints": {env_id: fingerprints[env_id] for env_id in sorted(fingerprints) if env_id in registered},
        "exempt": {env_id: exempt[env_id] for env_id in sorted(exempt) if env_id in registered},
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    _recorded.cache_clear()
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """``agentgym fingerprint [--write | --check] [ID ...]``."""
    parser = argparse.ArgumentParser(
        prog="agentgym fingerprint",
        description="compute env ids' task-set fingerprints; compare them with the committed record or rewrite it",
    )
    parser.add_argument("env_ids", nargs="*", metavar="ID", help="env ids (default: every registered id)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"record the fingerprints in {FINGERPRINTS_FILE}")
    action.add_argument("--check", action="store_true", help="exit 1 if a fingerprint differs from the record")
    args = parser.parse_args(argv)
    if args.write:
        write(args.env_ids or None)
        return 0
    changed = 0
    for env_id in args.env_ids or [info.id for info in list_envs()]:
        if not args.check:
            print(f"{env_id}\t{env_fingerprint(env_id)}")
            continue
        try:
            print(f"{env_id}\t{check_fingerprint(env_id) or 'exempt'}")
        except FingerprintChanged as error:
            print(f"{env_id}\tCHANGED: {error}", file=sys.stderr)
            changed += 1
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
