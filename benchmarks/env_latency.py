"""Reset and step latency of agentgym envs, in one process, on one core.

For each env id: median and p99 of ``reset`` and ``step`` (through ``gym.make``, so
with Gymnasium's default wrappers), and single-process steps per second. Steps play
random legal commands (``random_action``), resetting on episode end; only the
``step`` call itself is timed. Gymnasium's own ``FrozenLake-v1`` is measured in the
same run as a reference, so the ratio column is comparable across machines.

    python benchmarks/env_latency.py                    # all envs, writes results/env_latency.{md,json}
    python benchmarks/env_latency.py --env Sokoban-v0 --steps 5000 --no-write
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import gymnasium as gym
from recording import record

import agentgym

REFERENCE = "FrozenLake-v1"  # Gymnasium's own, integer actions


def percentile(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(env_id: str, steps: int, resets: int) -> dict[str, float | str]:
    env = gym.make(env_id)
    base = env.unwrapped
    rng = random.Random(0)
    is_reference = env_id == REFERENCE
    choose = (lambda: env.action_space.sample()) if is_reference else (lambda: base.random_action(rng))

    def task(task_id: int) -> dict[str, dict[str, int]]:
        return {} if is_reference else {"options": {"task_id": task_id}}

    reset_ns = []
    for task_id in range(resets):
        start = time.perf_counter_ns()
        env.reset(seed=task_id, **task(task_id))
        reset_ns.append(time.perf_counter_ns() - start)

    step_ns = []
    episodes = 0
    env.reset(seed=0, **task(0))
    for _ in range(steps):
        action = choose()
        start = time.perf_counter_ns()
        _, _, terminated, truncated, _ = env.step(action)
        step_ns.append(time.perf_counter_ns() - start)
        if terminated or truncated:
            episodes += 1
            env.reset(**task(episodes % resets))
    env.close()
    return {
        "env": env_id,
        "reset_median_us": statistics.median(reset_ns) / 1e3,
        "reset_p99_us": percentile(reset_ns, 0.99) / 1e3,
        "step_median_us": statistics.median(step_ns) / 1e3,
        "step_p99_us": percentile(step_ns, 0.99) / 1e3,
        "steps_per_s": 1e9 / statistics.fmean(step_ns),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", action="append", help="env id (repeatable; default: every agentgym env)")
    parser.add_argument("--steps", type=int, default=20_000, help="timed steps per env")
    parser.add_argument("--resets", type=int, default=300, help="timed resets per env (one task each)")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    env_ids = args.env or [info.id for info in agentgym.list_envs()]
    reference = measure(REFERENCE, args.steps, args.resets)
    rows = [measure(env_id, args.steps, args.resets) for env_id in env_ids]
    for row in rows:
        row["step_median_vs_gymnasium"] = row["step_median_us"] / reference["step_median_us"]

    header = (
        "| env | reset median µs | reset p99 µs | step median µs | step p99 µs | steps/s "
        "| step median ÷ Gymnasium FrozenLake-v1 |"
    )
    lines = [header, "|" + "---|" * 7]
    for row in [*rows, reference | {"step_median_vs_gymnasium": 1.0}]:
        lines.append(
            f"| {row['env']} | {row['reset_median_us']:.1f} | {row['reset_p99_us']:.1f} | "
            f"{row['step_median_us']:.1f} | {row['step_p99_us']:.1f} | {row['steps_per_s']:,.0f} | "
            f"{row['step_median_vs_gymnasium']:.1f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return
    setup = f"{args.steps} steps, {args.resets} resets per env; target: median step under 50 µs"
    record("env_latency", "Env latency", setup, table, {"reference": reference, "envs": rows})


if __name__ == "__main__":
    main()
