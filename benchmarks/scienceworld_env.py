"""ScienceWorld-v0: the oracle per task type, reset/step latency, and memory over many episodes.

* **Oracle per task type**: for each of the 30 task types, ``--variations`` variations
  spread over the official train, dev and test splits (the first of each split, then the
  next ones), each played by ``oracle_action()`` (the simulator's gold action sequence)
  through ``gym.make`` (so the registered step limit applies). Success rate, score, steps,
  and seconds per episode (including the gold sequence's computation).
* **Latency and memory**: one env plays ``--episodes`` short episodes on task ids drawn
  with a seeded generator from all splits: a reset, then ``--steps`` steps, each the random
  baseline's command (a valid action-object combination) or, one step in four, an invalid
  command. Median and p99 of reset and step (the random baseline's query for valid actions
  is timed apart); resident memory (RSS) of the Python process and of its JVM, after the
  first 50 episodes and at the end.

    python benchmarks/scienceworld_env.py                      # writes results/scienceworld_env.{md,json}
    python benchmarks/scienceworld_env.py --no-write --variations 1 --episodes 100
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any

import gymnasium as gym
from recording import record

import agentgym
from agentgym.environments.scienceworld.tasks import TASK_TYPES, task_ids

INVALID_COMMANDS = ("xyzzy", "open the thing that is not here", "go to the moon")


def rss_mib(pid: int) -> float:
    """Resident memory of process ``pid`` in MiB (``VmRSS`` in ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def oracle_variations(name: str, count: int) -> list[int]:
    """``count`` task ids of task type ``name``, round-robin over test, dev and train."""
    pools = [task_ids(name, split) for split in ("train", "dev", "test")]
    chosen: list[int] = []
    for index in range(max(map(len, pools))):
        chosen.extend(pool[index] for pool in pools if index < len(pool))
    return chosen[:count]


def play_oracle(env: gym.Env, task_id: int) -> dict[str, Any]:
    base = env.unwrapped
    start = time.perf_counter()
    env.reset(options={"task_id": task_id})
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, info = env.step(base.oracle_action())
    return {
        "task_id": task_id,
        "task_name": info["task_name"],
        "variation": info["variation"],
        "split": info["split"],
        "success": info["success"],
        "score": info["score"],
        "steps": info["steps"],
        "gold_length": len(base.gold_actions()),
        "seconds": time.perf_counter() - start,
    }


def oracle_sweep(variations: int, simplifications: str) -> list[dict[str, Any]]:
    results = []
    with gym.make("ScienceWorld-v0", simplifications=simplifications) as env:
        for task in TASK_TYPES:
            for task_id in oracle_variations(task.name, variations):
                result = play_oracle(env, task_id)
                print(
                    f"{task.number} {task.name} v{result['variation']} ({result['split']}): "
                    f"success {result['success']} score {result['score']:.2f} steps {result['steps']} "
                    f"{result['seconds']:.1f} s",
                    flush=True,
                )
                results.append(result)
    return results


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latency_and_memory(episodes: int, steps: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    splits = agentgym.env_info("ScienceWorld-v0").splits
    resets, step_times, query_times, rss = [], [], [], []
    with gym.make("ScienceWorld-v0") as env:
        base = env.unwrapped
        started = time.perf_counter()
        for episode in range(episodes):
            task_id = rng.randrange(splits.total)
            start = time.perf_counter()
            env.reset(options={"task_id": task_id})
            resets.append(time.perf_counter() - start)
            for _ in range(steps):
                if rng.random() < 0.25:
                    command = rng.choice(INVALID_COMMANDS)
                else:
                    start = time.perf_counter()
                    command = base.random_action(rng)
                    query_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                _, _, terminated, truncated, _ = env.step(command)
                step_times.append(time.perf_counter() - start)
                if terminated or truncated:
                    break
            if episode + 1 in (50, episodes) or (episode + 1) % 100 == 0:
                rss.append(
                    {"episodes": episode + 1, "python_mib": rss_mib(os.getpid()), "jvm_mib": rss_mib(base.engine.pid)}
                )
                print(f"{episode + 1} episodes: {rss[-1]}", flush=True)
        jvm_pid = base.engine.pid
        seconds = time.perf_counter() - started
    jvm_gone = not os.path.exists(f"/proc/{jvm_pid}")
    return {
        "episodes": episodes,
        "steps_per_episode": steps,
        "seconds": seconds,
        "reset_median_ms": 1000 * statistics.median(resets),
        "reset_p99_ms": 1000 * percentile(resets, 0.99),
        "step_median_ms": 1000 * statistics.median(step_times),
        "step_p99_ms": 1000 * percentile(step_times, 0.99),
        "valid_actions_median_ms": 1000 * statistics.median(query_times),
        "rss": rss,
        "jvm_gone_after_close": jvm_gone,
    }


def oracle_table(results: list[dict[str, Any]]) -> str:
    rows = [
        "| task | type | variations (split) | oracle success | mean score | mean steps | s / episode |",
        "|---|---|---|---|---|---|---|",
    ]
    for task in TASK_TYPES:
        mine = [result for result in results if result["task_name"] == task.name]
        played = ", ".join(f"{result['variation']} ({result['split']})" for result in mine)
        wins = sum(result["success"] for result in mine)
        rows.append(
            f"| {task.number} | {task.name} | {played} | {wins}/{len(mine)} | "
            f"{statistics.mean(result['score'] for result in mine):.2f} | "
            f"{statistics.mean(result['steps'] for result in mine):.0f} | "
            f"{statistics.mean(result['seconds'] for result in mine):.1f} |"
        )
    wins = sum(result["success"] for result in results)
    rows.append(f"| all | | {len(results)} episodes | {wins}/{len(results)} ({100 * wins / len(results):.1f}%) | | | |")
    return "\n".join(rows)


def latency_table(latency: dict[str, Any]) -> str:
    rss = latency["rss"]
    counts = ", ".join(str(point["episodes"]) for point in rss)

    def series(key: str) -> str:
        return " → ".join(f"{point[key]:.0f}" for point in rss)

    return "\n".join(
        [
            "| measure | value |",
            "|---|---|",
            f"| episodes × steps | {latency['episodes']} × up to {latency['steps_per_episode']} |",
            f"| reset (load a task's variation + first look), median / p99 | "
            f"{latency['reset_median_ms']:.1f} / {latency['reset_p99_ms']:.1f} ms |",
            f"| step, median / p99 | {latency['step_median_ms']:.1f} / {latency['step_p99_ms']:.1f} ms |",
            f"| valid actions query (random baseline), median | {latency['valid_actions_median_ms']:.1f} ms |",
            f"| RSS Python after {counts} episodes | {series('python_mib')} MiB |",
            f"| RSS JVM after {counts} episodes | {series('jvm_mib')} MiB |",
            f"| JVM process gone after `env.close()` | {latency['jvm_gone_after_close']} |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variations", type=int, default=3, help="oracle episodes per task type")
    parser.add_argument("--simplifications", default="", help="'' (default) or 'easy', ...")
    parser.add_argument("--episodes", type=int, default=500, help="episodes of the latency/memory run")
    parser.add_argument("--steps", type=int, default=5, help="steps per episode of the latency/memory run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print only; do not write results/")
    args = parser.parse_args()

    load = os.getloadavg()[0]
    started = time.perf_counter()
    oracle = oracle_sweep(args.variations, args.simplifications)
    latency = latency_and_memory(args.episodes, args.steps, args.seed)
    seconds = time.perf_counter() - started
    table = (
        f"Oracle (gold action sequence), {args.variations} variations per task type, "
        f"simplifications {args.simplifications or 'none'!r}:\n\n{oracle_table(oracle)}\n\n"
        f"Latency and memory (one env, one JVM, random tasks of all splits):\n\n{latency_table(latency)}"
    )
    print(table)
    if not args.no_write:
        record(
            "scienceworld_env",
            "ScienceWorld-v0: oracle per task type, latency, memory",
            f"{args.variations} oracle variations per task type; {args.episodes} episodes of up to {args.steps} "
            f"steps; {os.cpu_count()} CPUs, 1-minute load average {load:.1f} at start (shared machine: "
            f"timings are inflated when other work runs); {seconds:.0f} s in all",
            table,
            {"oracle": oracle, "latency": latency, "simplifications": args.simplifications},
        )


if __name__ == "__main__":
    main()
