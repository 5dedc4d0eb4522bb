"""Oracle success and latency of the BabyAI-Text and TextCraft ids.

For every id, the oracle plays the first ``--tasks`` test tasks to their end. Reported per id:
the oracle's success rate (with the failed task ids), its mean episode length, and the mean
time of ``reset``, of ``step`` (engine + text observation) and of ``oracle_action`` (the
BabyAI bot's replanning, TextCraft's planner), each timed alone. For BabyAI, the same moves
are replayed on the bare minigrid level (its ``step`` computes minigrid's image observation)
to give the cost of the text layer as a ratio of step times measured in the same run.

    python benchmarks/babyai_textcraft.py                 # writes results/babyai_textcraft.{md,json}
    python benchmarks/babyai_textcraft.py --tasks 20 --family textcraft --no-write
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time

import gymnasium as gym
from recording import record

import agentgym
from agentgym.environments.babyai.env import ACTIONS


def replay_on_minigrid(level: str, task_id: int, moves: list[str]) -> list[float]:
    """The times of minigrid's own ``step`` for ``moves`` (our action words) on the bare level."""
    world = gym.make(level, disable_env_checker=True).unwrapped
    with contextlib.redirect_stdout(io.StringIO()):  # minigrid prints its rejected samples
        world.reset(seed=task_id)
    times = []
    for move in moves:
        start = time.perf_counter()
        world.step(ACTIONS[move])
        times.append(time.perf_counter() - start)
    return times


def measure(env_id: str, tasks: int) -> dict:
    env = gym.make(env_id)
    base = env.unwrapped
    level = agentgym.env_info(env_id).kwargs.get("level")
    resets, steps, plans, lengths, failures, bare_steps = [], [], [], [], [], []
    for task_id in agentgym.env_info(env_id).splits.ids("test")[:tasks]:
        start = time.perf_counter()
        env.reset(options={"task_id": task_id})
        resets.append(time.perf_counter() - start)
        terminated = truncated = False
        moves = []
        while not (terminated or truncated):
            start = time.perf_counter()
            action = base.oracle_action()
            plans.append(time.perf_counter() - start)
            start = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            steps.append(time.perf_counter() - start)
            moves.append(action)
        if level:
            bare_steps += replay_on_minigrid(level, task_id, moves)
        lengths.append(info["steps"])
        if not info["success"]:
            failures.append(task_id)
    env.close()
    return {
        "id": env_id,
        "tasks": tasks,
        "success_rate": 1 - len(failures) / tasks,
        "failed_tasks": failures,
        "mean_steps": sum(lengths) / tasks,
        "reset_ms": 1e3 * sum(resets) / len(resets),
        "step_ms": 1e3 * sum(steps) / len(steps),
        "oracle_ms": 1e3 * sum(plans) / len(plans),
        "minigrid_step_ms": 1e3 * sum(bare_steps) / len(bare_steps) if bare_steps else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100, help="test tasks per id")
    parser.add_argument("--family", choices=["babyai", "textcraft"], action="append", help="default: both")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rows = []
    for family in args.family or ["babyai", "textcraft"]:
        for info in agentgym.list_envs(family):
            row = measure(info.id, args.tasks)
            rows.append(row)
            print(
                f"{row['id']}: oracle success {row['success_rate']:.1%} (failed {row['failed_tasks']}), "
                f"{row['mean_steps']:.1f} steps, reset {row['reset_ms']:.2f} ms, step {row['step_ms']:.3f} ms, "
                f"oracle {row['oracle_ms']:.3f} ms"
                + (f", bare minigrid step {row['minigrid_step_ms']:.3f} ms" if row["minigrid_step_ms"] else ""),
                flush=True,
            )
    table = "\n".join(
        [
            "| id | oracle success | failed test tasks | mean steps | reset (ms) | step (ms) | oracle action (ms) "
            "| step / bare minigrid step |",
            "|---|---|---|---|---|---|---|---|",
            *(
                f"| {r['id']} | {r['success_rate']:.1%} | {', '.join(map(str, r['failed_tasks'])) or '-'} | "
                f"{r['mean_steps']:.1f} | {r['reset_ms']:.2f} | {r['step_ms']:.3f} | {r['oracle_ms']:.3f} | "
                + (f"{r['step_ms'] / r['minigrid_step_ms']:.2f} |" if r["minigrid_step_ms"] else "- |")
                for r in rows
            ),
        ]
    )
    print(table)
    if not args.no_write:
        setup = f"the first {args.tasks} test tasks of every id, one process, means per call"
        record("babyai_textcraft", "BabyAI-Text and TextCraft: oracle success and latency", setup, table, rows)


if __name__ == "__main__":
    main()
