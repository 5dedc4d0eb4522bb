"""Runner overhead: env steps per second through ``agentgym eval``'s runner vs a bare loop.

Both play the same episodes (same tasks, same seeds) with the oracle policy, in one
process. The bare loop is what a user writes by hand: ``reset``, then ``oracle_action`` and
``step`` until the episode ends. The runner adds the chat wrapper, 256 episodes in
flight, per-turn records and an append-only trajectory file. Target: >= 50% of direct.

    python benchmarks/runner_overhead.py                 # writes results/runner_overhead.{md,json}
    python benchmarks/runner_overhead.py --env Maze-v0 --episodes 500 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

import gymnasium as gym
from recording import record

from agentgym.llm.policies import OraclePolicy
from agentgym.evaluation.runner import EvalItem, plan, run_eval


def direct(item: EvalItem) -> tuple[int, float]:
    """Steps and seconds for the bare loop over the run's planned episodes."""
    env = gym.make(item.env)
    base = env.unwrapped
    steps, clock = 0, time.perf_counter()
    for planned in plan([item], seed=0):
        env.reset(seed=planned.seed, options={"task_id": planned.task_id})
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, _ = env.step(base.oracle_action())
            steps += 1
    return steps, time.perf_counter() - clock


def through_runner(item: EvalItem, concurrency: int) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as out:
        stats = asyncio.run(run_eval("oracle", OraclePolicy(), [item], out, concurrency=concurrency))
    return stats.steps, stats.wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", action="append", help="env id (repeatable; default: FrozenLake, Maze, Sokoban)")
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per env (train split)")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    rows = []
    for env_id in args.env or ["FrozenLake-v0", "Maze-v0", "Sokoban-v0"]:
        item = EvalItem(env_id, args.episodes, split="train")
        direct(EvalItem(env_id, 50, split="dev"))  # warm caches (imports, word lists) for both
        direct_steps, direct_s = direct(item)
        runner_steps, runner_s = through_runner(item, args.concurrency)
        assert runner_steps == direct_steps, (runner_steps, direct_steps)
        rows.append(
            {
                "env": env_id,
                "episodes": args.episodes,
                "steps": direct_steps,
                "direct_steps_per_s": direct_steps / direct_s,
                "runner_steps_per_s": runner_steps / runner_s,
                "ratio": (runner_steps / runner_s) / (direct_steps / direct_s),
            }
        )
    lines = [
        "| env | episodes | steps | direct steps/s | runner steps/s | runner ÷ direct |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['env']} | {row['episodes']} | {row['steps']} | {row['direct_steps_per_s']:,.0f} | "
            f"{row['runner_steps_per_s']:,.0f} | {row['ratio']:.0%} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return
    setup = (
        f"oracle policy, concurrency {args.concurrency}, {args.episodes} train episodes per env; "
        "target: runner >= 50% of direct"
    )
    record("runner_overhead", "Runner overhead", setup, table, rows)


if __name__ == "__main__":
    main()
