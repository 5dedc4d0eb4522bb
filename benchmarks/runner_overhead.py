"""Runner overhead: env steps per second through ``agentgym eval``'s runner vs a bare loop.

Both play the same episodes (same tasks, same seeds) with the oracle policy, in one
process. The bare loop is what a user writes by hand: ``reset``, then ``oracle_action`` and
``step`` until the episode ends. The runner adds the chat wrapper, 256 episodes in
flight, per-turn records and an append-only trajectory file. Target: >= 80% of direct.

The machine is shared, so the two are measured side by side in one process: ``--rounds``
rounds, each playing the direct loop and then the runner over the same episodes, and each
side's best round is reported (the round least disturbed by other load), with the median
of the per-round ratios beside it.

    python benchmarks/runner_overhead.py                 # writes results/runner_overhead.{md,json}
    python benchmarks/runner_overhead.py --env Maze-v0 --episodes 500 --rounds 3 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import gymnasium as gym
from recording import record

from agentgym.evaluation.runner import EvalItem, plan, run_eval
from agentgym.llm.policies import OraclePolicy


def direct(item: EvalItem) -> tuple[int, float, float]:
    """Steps, seconds and CPU seconds for the bare loop over the run's planned episodes."""
    env = gym.make(item.env)
    base = env.unwrapped
    steps, clock, cpu = 0, time.perf_counter(), time.process_time()
    for planned in plan([item], seed=0):
        env.reset(seed=planned.seed, options={"task_id": planned.task_id})
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, _ = env.step(base.oracle_action())
            steps += 1
    return steps, time.perf_counter() - clock, time.process_time() - cpu


def through_runner(item: EvalItem, concurrency: int) -> tuple[int, float, float]:
    """Steps, seconds and CPU seconds of ``run_eval`` playing the same episodes: from the plan's
    end (the results folder open) to the last record written and the envs closed."""
    started: list[float] = []
    with tempfile.TemporaryDirectory() as out:
        run = run_eval(
            "oracle",
            OraclePolicy(),
            [item],
            out,
            concurrency=concurrency,
            on_plan=lambda total, done: started.append(time.process_time()),
        )
        stats = asyncio.run(run)
        cpu = time.process_time() - started[0]
    return stats.steps, stats.wall_s, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", action="append", help="env id (repeatable; default: FrozenLake, Maze, Sokoban)")
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per env (train split)")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5, help="direct-then-runner rounds; each side's best is kept")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    rows = []
    for env_id in args.env or ["FrozenLake-v0", "Maze-v0", "Sokoban-v0"]:
        item = EvalItem(env_id, args.episodes, split="train")
        direct(EvalItem(env_id, 50, split="dev"))  # warm caches (imports, word lists) for both
        direct_rates, runner_rates, direct_cpu, runner_cpu = [], [], [], []
        for _ in range(args.rounds):
            direct_steps, direct_s, direct_cpu_s = direct(item)
            runner_steps, runner_s, runner_cpu_s = through_runner(item, args.concurrency)
            assert runner_steps == direct_steps, (runner_steps, direct_steps)
            direct_rates.append(direct_steps / direct_s)
            runner_rates.append(runner_steps / runner_s)
            direct_cpu.append(direct_cpu_s / direct_steps * 1e6)
            runner_cpu.append(runner_cpu_s / runner_steps * 1e6)
        rows.append(
            {
                "env": env_id,
                "episodes": args.episodes,
                "steps": direct_steps,
                "rounds": args.rounds,
                "direct_steps_per_s": max(direct_rates),
                "runner_steps_per_s": max(runner_rates),
                "ratio": max(runner_rates) / max(direct_rates),
                "median_round_ratio": statistics.median(r / d for r, d in zip(runner_rates, direct_rates)),
                "direct_cpu_us_per_step": min(direct_cpu),
                "runner_cpu_us_per_step": min(runner_cpu),
                "cpu_ratio": min(direct_cpu) / min(runner_cpu),
                "direct_rounds": direct_rates,
                "runner_rounds": runner_rates,
            }
        )
    lines = [
        "| env | episodes | steps | direct steps/s (best) | runner steps/s (best) | runner ÷ direct "
        "| median round ratio | CPU µs/step direct / runner | by CPU time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['env']} | {row['episodes']} | {row['steps']} | {row['direct_steps_per_s']:,.0f} | "
            f"{row['runner_steps_per_s']:,.0f} | {row['ratio']:.0%} | {row['median_round_ratio']:.0%} | "
            f"{row['direct_cpu_us_per_step']:.1f} / {row['runner_cpu_us_per_step']:.1f} | {row['cpu_ratio']:.0%} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return
    setup = (
        f"oracle policy, concurrency {args.concurrency}, {args.episodes} train episodes per env, "
        f"{args.rounds} rounds of direct then runner in one process, each side's best round; "
        "target: runner >= 80% of direct"
    )
    record("runner_overhead", "Runner overhead", setup, table, rows)


if __name__ == "__main__":
    main()
