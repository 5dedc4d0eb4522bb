"""The oracle and random baselines on every reasoning-gym generator and on Math-v0, per generator and per group.

Each generator (``ReasoningGym-v0`` with ``dataset=NAME``) plays its first ``--episodes`` test tasks with the
oracle's answer and with the random baseline's (another item's answer), scored by reasoning-gym's own
``score_answer``; groups are reasoning-gym's packages (arithmetic, algebra, games, ...). Writes
``benchmarks/results/reasoning_baselines.{json,md}``.

    python benchmarks/reasoning_baselines.py --episodes 10
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import reasoning_gym.factory

import agentgym  # noqa: F401  (registers the envs)

RESULTS = Path(__file__).resolve().parent / "results"


def play(env_id: str, kwargs: dict[str, Any], episodes: int) -> dict[str, Any]:
    """Mean score and success of the oracle and the random answer on the first test tasks."""
    env = gym.make(env_id, **kwargs)
    unwrapped = env.unwrapped
    tasks = unwrapped.splits.ids("test")[:episodes]
    row: dict[str, Any] = {"episodes": len(tasks), "has_oracle": unwrapped.has_oracle}
    start = time.perf_counter()
    for policy in ("oracle", "random"):
        rng = random.Random(0)
        scores, wins = [], 0
        for task_id in tasks:
            env.reset(seed=task_id, options={"task_id": task_id})
            action = unwrapped.oracle_action() if policy == "oracle" else unwrapped.random_action(rng)
            _, _, _, _, info = env.step(f"Action: {action}")
            scores.append(info["score"])
            wins += bool(info["success"])
        row[policy] = {"score": sum(scores) / len(scores), "success": wins / len(tasks)}
    row["seconds"] = time.perf_counter() - start
    env.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=10)
    args = parser.parse_args()
    rows: dict[str, dict[str, Any]] = {}
    for name in sorted(reasoning_gym.factory.DATASETS):
        if name == "composite":  # reasoning-gym's mixer of other generators: not an id of its own
            continue
        dataset_class = reasoning_gym.factory.DATASETS[name][0]
        group = dataset_class.__module__.split(".")[1]
        rows[name] = {"group": group, **play("ReasoningGym-v0", {"dataset": name}, args.episodes)}
        print(name, rows[name], flush=True)
    math = play("Math-v0", {}, args.episodes)
    report = {"episodes": args.episodes, "generators": rows, "math": math}
    (RESULTS / "reasoning_baselines.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "reasoning_baselines.md").write_text(markdown(report), encoding="utf-8")


def markdown(report: dict[str, Any]) -> str:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in report["generators"].values():
        groups[row["group"]].append(row)
    lines = [
        "# Reasoning: the oracle and random baselines",
        "",
        f"The first {report['episodes']} test tasks of each reasoning-gym generator (`ReasoningGym-v0`, "
        "`dataset=NAME`), scored by its own `score_answer`; `Math-v0` judged by math-verify. Score is the mean "
        "score, success the share scoring 1. Made by `benchmarks/reasoning_baselines.py`.",
        "",
        "## Per group",
        "",
        "| group | generators | oracle score | oracle success | random score | random success |",
        "|---|---|---|---|---|---|",
    ]
    for group, rows in sorted(groups.items()):
        oracle = [sum(row["oracle"][key] for row in rows) / len(rows) for key in ("score", "success")]
        chance = [sum(row["random"][key] for row in rows) / len(rows) for key in ("score", "success")]
        lines.append(
            f"| {group} | {len(rows)} | {oracle[0]:.2f} | {oracle[1]:.0%} | {chance[0]:.2f} | {chance[1]:.0%} |"
        )
    math = report["math"]
    lines += [
        f"| Math-v0 | 1 | {math['oracle']['score']:.2f} | {math['oracle']['success']:.0%} | "
        f"{math['random']['score']:.2f} | {math['random']['success']:.0%} |",
        "",
        "## Per generator",
        "",
        "| generator | group | oracle score | random score | oracle available |",
        "|---|---|---|---|---|",
    ]
    for name, row in report["generators"].items():
        lines.append(
            f"| {name} | {row['group']} | {row['oracle']['score']:.2f} | {row['random']['score']:.2f} | "
            f"{'yes' if row['has_oracle'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
