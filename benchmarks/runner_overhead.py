"""Runner overhead: env steps per second through ``agentgym eval``'s runner vs a bare loop.

Both play the same episodes (same tasks, same seeds) with the oracle policy, in one
process. The bare loop is what a user writes by hand: ``reset``, then ``oracle_action`` and
``step`` until the episode ends. The runner adds the chat wrapper, 256 episodes in
flight, per-turn records and an append-only trajectory file. Target: >= 80% of direct.

Beside the runner, the runner with every env on a thread of its own: what the envs whose ids are
inline-safe save by being stepped inline (each turn on a thread costs two hops between the event
loop and the env's thread). Before 6a31acc the episodes an id started together, as here, all
stayed on threads.

Between the two, the recording floor: the bare loop plus what any recording harness must do, the
chat transcript (the same :class:`~agentgym.wrappers.chat.ChatWrapper`) and one JSON line per
episode (its messages and each step's action, reward and info), written and flushed. It says how
much of the runner's cost is the record itself.

The machine is shared, so the sides are measured side by side in one process: ``--rounds``
rounds, each playing the direct loop, the recording floor and then the runner over the same
episodes, and each side's best round is reported (the round least disturbed by other load),
with the median of the per-round ratios beside it.

    python benchmarks/runner_overhead.py                 # writes results/runner_overhead.{md,json}
    python benchmarks/runner_overhead.py --env Maze-v0 --episodes 500 --rounds 3 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from functools import partial
from unittest.mock import patch

import gymnasium as gym
import orjson
from recording import record

from agentgym.evaluation import env_host
from agentgym.evaluation.plan import plan
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT, ChatWrapper

#: The puzzles (a step of 10-30 µs: the harness weighs most), then text envs of 50-400 µs a step.
DEFAULT_ENVS = ["FrozenLake-v0", "Maze-v0", "Sokoban-v0", "TextCraft-v0", "WebShop-v0", "Wordle-v0"]


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


def recording_floor(item: EvalItem) -> tuple[int, float, float]:
    """Steps, seconds and CPU seconds for the bare loop that also keeps the chat transcript and
    writes each episode as a JSON line (messages, and action, reward and info per step)."""
    chat = ChatWrapper(gym.make(item.env), DEFAULT_SYSTEM_PROMPT)
    base = chat.unwrapped
    steps, clock, cpu = 0, time.perf_counter(), time.process_time()
    with tempfile.TemporaryFile() as out:
        for planned in plan([item], seed=0):
            chat.reset(seed=planned.seed, options={"task_id": planned.task_id})
            turns, terminated, truncated = [], False, False
            while not (terminated or truncated):
                action = base.oracle_action()
                _, reward, terminated, truncated, info = chat.step(action)
                turns.append({"action": action, "reward": reward, "info": info})
                steps += 1
            out.write(orjson.dumps({"key": planned.key, "messages": chat.transcript, "turns": turns}) + b"\n")
            out.flush()
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


def through_runner_on_threads(item: EvalItem, concurrency: int) -> tuple[int, float, float]:
    """:func:`through_runner` with no env inline: every env made, stepped and closed on its own thread."""
    with patch.object(env_host, "inline_safe", lambda env_id, kwargs: False):
        return through_runner(item, concurrency)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", action="append", help="env id (repeatable; default: DEFAULT_ENVS)")
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per env (train split)")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every side; each side's best is kept")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    sides = {
        "direct": direct,
        "floor": recording_floor,
        "runner": partial(through_runner, concurrency=args.concurrency),
        "threads": partial(through_runner_on_threads, concurrency=args.concurrency),
    }
    rows = []
    for env_id in args.env or DEFAULT_ENVS:
        item = EvalItem(env_id, args.episodes, split="train")
        direct(EvalItem(env_id, 50, split="dev"))  # warm caches (imports, word lists) for all sides
        rates: dict[str, list[float]] = {side: [] for side in sides}
        cpu: dict[str, list[float]] = {side: [] for side in sides}
        played: set[int] = set()  # every side plays the same episodes: one step count
        for _ in range(args.rounds):
            for side, play in sides.items():
                steps, seconds, cpu_seconds = play(item)
                played.add(steps)
                rates[side].append(steps / seconds)
                cpu[side].append(cpu_seconds / steps * 1e6)
        assert len(played) == 1, played
        (steps,) = played
        best = {side: max(rates[side]) for side in sides}
        least_cpu = {side: min(cpu[side]) for side in sides}
        rows.append(
            {
                "env": env_id,
                "episodes": args.episodes,
                "steps": steps,
                "rounds": args.rounds,
                **{f"{side}_steps_per_s": best[side] for side in sides},
                "ratio": best["runner"] / best["direct"],
                "floor_ratio": best["floor"] / best["direct"],
                "inline_gain": best["runner"] / best["threads"],
                "median_round_ratio": statistics.median(
                    runner / plain for runner, plain in zip(rates["runner"], rates["direct"], strict=True)
                ),
                **{f"{side}_cpu_us_per_step": least_cpu[side] for side in sides},
                "cpu_ratio": least_cpu["direct"] / least_cpu["runner"],
                **{f"{side}_rounds": rates[side] for side in sides},
            }
        )
    lines = [
        "| env | episodes | steps | direct steps/s (best) | recording floor steps/s (best) | runner steps/s (best) "
        "| floor ÷ direct | runner ÷ direct | median round ratio | CPU µs/step direct / floor / runner "
        "| runner by CPU time | runner on threads steps/s (best) | runner ÷ on threads | CPU µs/step on threads |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['env']} | {row['episodes']} | {row['steps']} | {row['direct_steps_per_s']:,.0f} | "
            f"{row['floor_steps_per_s']:,.0f} | {row['runner_steps_per_s']:,.0f} | {row['floor_ratio']:.0%} | "
            f"{row['ratio']:.0%} | {row['median_round_ratio']:.0%} | {row['direct_cpu_us_per_step']:.1f} / "
            f"{row['floor_cpu_us_per_step']:.1f} / {row['runner_cpu_us_per_step']:.1f} | {row['cpu_ratio']:.0%} | "
            f"{row['threads_steps_per_s']:,.0f} | {row['inline_gain']:.2f} | {row['threads_cpu_us_per_step']:.1f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return
    setup = (
        f"oracle policy, concurrency {args.concurrency}, {args.episodes} train episodes per env, "
        f"{args.rounds} rounds of direct, recording floor, runner and runner with every env on a thread in one "
        "process, each side's best round; target: runner >= 80% of direct"
    )
    record("runner_overhead", "Runner overhead", setup, table, rows)


if __name__ == "__main__":
    main()
