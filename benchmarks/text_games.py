"""Text games on their engines: oracle success, reset/step latency and memory over many episodes.

For each env id of the text-game families (TextWorld, ALFWorld, Household, BabyAI-Text,
TextCraft; ScienceWorld, whose episodes take seconds to minutes, has its own
``benchmarks/scienceworld_env.py`` with three variations of each task type, but can be asked for
with ``--family scienceworld``):

* **oracle**: the env's oracle plays ``--oracle-tasks`` test/dev/train tasks (half test, a
  quarter each dev and train) to the end; success rate, mean score, mean steps. Reset and
  step calls of these episodes are timed (median and p99).
* **memory**: ``--memory-episodes`` short episodes in the same env, on the same tasks (reset, then up to
  ``--memory-steps`` random legal commands), with the RSS of this process plus its children
  (ScienceWorld's JVM, TextWorld's interpreter) sampled after 10% of them and at the end.
  Flat means the end is within a few percent of the early sample, after warm-up.

    python benchmarks/text_games.py                                 # every text-game id but ScienceWorld's
    python benchmarks/text_games.py --env BabyAI-Text-GoTo-v0 --no-write
    python benchmarks/text_games.py --family scienceworld --oracle-tasks 3

ALFWorld-v0 is measured only when ``$ALFWORLD_DATA`` points at game files; on the tests' tiny
game set (``python -m agentgym.environments.alfworld.tiny DIR``), which holds 6 test games::

    ALFWORLD_DATA=DIR python benchmarks/text_games.py --family alfworld --oracle-tasks 12 \
        --name text_games_alfworld_tiny
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import time
from dataclasses import asdict, dataclass

import gymnasium as gym
import psutil
from recording import record

import agentgym

FAMILIES = ("textworld", "alfworld", "household", "scienceworld", "babyai", "textcraft")
DEFAULT_FAMILIES = ("textworld", "alfworld", "household", "babyai", "textcraft")


@dataclass
class Row:
    env: str
    oracle_tasks: int
    oracle_success: float
    oracle_mean_score: float
    oracle_mean_steps: float
    reset_median_ms: float
    reset_p99_ms: float
    step_median_ms: float
    step_p99_ms: float
    memory_episodes: int
    rss_early_mib: float
    rss_end_mib: float


def tree_rss_mib() -> float:
    """RSS of this process and all its descendants, in MiB."""
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += child.memory_info().rss
    return total / 2**20


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def spread_task_ids(env_id: str, count: int) -> list[int]:
    """``count`` task ids: half from test, a quarter each from dev and train (fewer if a split is small)."""
    splits = agentgym.env_info(env_id).splits
    quarter = count // 4
    ids = list(splits.ids("test")[: count - 2 * quarter])
    ids += list(splits.ids("dev")[:quarter]) + list(splits.ids("train")[:quarter])
    return ids


def measure(env_id: str, oracle_tasks: int, memory_episodes: int, memory_steps: int) -> Row:
    env = gym.make(env_id)
    base = env.unwrapped
    reset_ms: list[float] = []
    step_ms: list[float] = []
    successes, scores, steps = [], [], []
    task_ids = spread_task_ids(env_id, oracle_tasks)
    for task_id in task_ids:
        start = time.perf_counter()
        env.reset(seed=task_id, options={"task_id": task_id})
        reset_ms.append((time.perf_counter() - start) * 1e3)
        terminated = truncated = False
        while not (terminated or truncated):
            action = base.oracle_action()
            start = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            step_ms.append((time.perf_counter() - start) * 1e3)
        successes.append(bool(info["success"]))
        scores.append(float(info["score"]))
        steps.append(int(info["steps"]))

    rng = random.Random(0)
    rss_early = 0.0
    for episode in range(memory_episodes):
        if episode == max(1, memory_episodes // 10):
            rss_early = tree_rss_mib()
        env.reset(seed=episode, options={"task_id": task_ids[episode % len(task_ids)]})
        for _ in range(memory_steps):
            actions = base.available_actions()
            action = rng.choice(actions) if actions else base.oracle_action()
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    rss_end = tree_rss_mib()
    env.close()
    return Row(
        env=env_id,
        oracle_tasks=len(successes),
        oracle_success=statistics.fmean(successes),
        oracle_mean_score=statistics.fmean(scores),
        oracle_mean_steps=statistics.fmean(steps),
        reset_median_ms=statistics.median(reset_ms),
        reset_p99_ms=percentile(reset_ms, 0.99),
        step_median_ms=statistics.median(step_ms),
        step_p99_ms=percentile(step_ms, 0.99),
        memory_episodes=memory_episodes,
        rss_early_mib=rss_early,
        rss_end_mib=rss_end,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", action="append", help="env id (repeatable; default: every text-game id)")
    parser.add_argument("--family", action="append", choices=FAMILIES, help="only these families")
    parser.add_argument("--oracle-tasks", type=int, default=100, help="oracle episodes per env")
    parser.add_argument("--memory-episodes", type=int, default=500, help="short episodes for the memory check")
    parser.add_argument("--memory-steps", type=int, default=5, help="random steps per memory episode")
    parser.add_argument("--name", default="text_games", help="results/<name>.{md,json} to write")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    families = args.family or DEFAULT_FAMILIES
    env_ids = args.env or [info.id for info in agentgym.list_envs() if info.family in families]
    if not os.environ.get("ALFWORLD_DATA"):
        env_ids = [env_id for env_id in env_ids if agentgym.env_info(env_id).family != "alfworld"]
    rows = []
    for env_id in env_ids:
        row = measure(env_id, args.oracle_tasks, args.memory_episodes, args.memory_steps)
        print(row, flush=True)
        rows.append(row)

    header = (
        "| env | oracle tasks | oracle success | mean score | mean steps | reset median ms | reset p99 ms "
        "| step median ms | step p99 ms | RSS after 10% of episodes MiB | RSS at end MiB |"
    )
    lines = [header, "|" + "---|" * 11]
    for row in rows:
        lines.append(
            f"| {row.env} | {row.oracle_tasks} | {row.oracle_success:.1%} | {row.oracle_mean_score:.3f} "
            f"| {row.oracle_mean_steps:.1f} | {row.reset_median_ms:.2f} | {row.reset_p99_ms:.2f} "
            f"| {row.step_median_ms:.3f} | {row.step_p99_ms:.3f} | {row.rss_early_mib:.0f} | {row.rss_end_mib:.0f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return
    setup = (
        f"{args.oracle_tasks} oracle episodes per env (half test, a quarter each dev and train); memory: "
        f"{args.memory_episodes} episodes of up to {args.memory_steps} random steps, RSS of the process tree"
    )
    record(args.name, "Text games: oracle success, latency, memory", setup, table, [asdict(row) for row in rows])


if __name__ == "__main__":
    main()
