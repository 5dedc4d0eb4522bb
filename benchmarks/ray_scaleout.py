"""Ray scale-out: eval throughput vs the number of env actors, and the per-step cost of an actor.

Starts a single-node Ray instance on this machine (``agentgym.serving.backends.ray.connect("local")``).

* **Throughput**: ``run_eval`` with ``backend="ray"`` and ``concurrency`` = N env actors
  (N = 1, 2, 4, 8; each actor asks for 0.1 CPU so that all fit on a small machine), the
  oracle policy, on a puzzle (Sokoban-v0) and on WebShop-v0. Two policies: the bare oracle
  (the env is all the work) and the oracle behind a simulated model endpoint that takes
  ``--model-latency-ms`` per reply (what an eval against an LLM server looks like: actors
  wait on the model, so more of them keep it busier). Episodes/s and the speed-up over one
  actor; the local backend at the same concurrency for comparison.
* **Per-step overhead**: the same steps on a local env and on a ray env in a plain loop;
  microseconds per step and the difference (the actor round trip: pickling, a local RPC,
  the reply).

    python benchmarks/ray_scaleout.py                   # writes results/ray_scaleout.{md,json}
    python benchmarks/ray_scaleout.py --episodes 16 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from typing import Any

import gymnasium as gym
from recording import record

from agentgym.evaluation.records import EpisodeRecord
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy
from agentgym.llm.policies.base import Episode, Message, Reply
from agentgym.serving.backends.ray import connect

ACTORS = (1, 2, 4, 8)
#: Small enough that eight actors fit on two cores.
RAY_OPTIONS = {"ray_options": {"num_cpus": 0.1}}


class SlowOracle(OraclePolicy):
    """The oracle behind a model endpoint that takes ``latency_s`` per reply."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        await asyncio.sleep(self.latency_s)
        return await super().act(messages, episode)


def throughput(env_id: str, episodes: int, actors: int, latency_s: float, backend: str) -> dict[str, Any]:
    """Episodes and steps per second of one eval, once its envs are made.

    Counted from the end of the ``actors``-th episode (by then every env exists: starting
    an actor takes seconds, which a long eval amortises) to the end of the last.
    """
    kwargs = RAY_OPTIONS if backend == "ray" else {}
    item = EvalItem(env_id, episodes + actors, split="train", kwargs=kwargs)
    policy = SlowOracle(latency_s) if latency_s else OraclePolicy()
    finished: list[tuple[float, int]] = []

    def on_episode(record: EpisodeRecord) -> None:
        finished.append((time.perf_counter(), record.steps))

    with tempfile.TemporaryDirectory() as out:
        stats = asyncio.run(
            run_eval(
                "oracle",
                policy,
                [item],
                out,
                concurrency=actors,
                backend=backend if backend == "ray" else None,
                on_episode=on_episode,
            )
        )
    assert stats.errored == 0, f"{stats.errored} episodes errored"
    counted = finished[actors:]
    seconds = counted[-1][0] - finished[actors - 1][0]
    return {"episodes_per_s": len(counted) / seconds, "steps_per_s": sum(steps for _, steps in counted) / seconds}


def step_cost(env_id: str, steps: int) -> dict[str, float]:
    """Microseconds per oracle step on a local env and on a ray env (the oracle's own call not counted)."""
    costs = {}
    for backend in ("local", "ray"):
        env = gym.make(env_id, backend=backend, **(RAY_OPTIONS if backend == "ray" else {}))
        base, spent, done, task_id = env.unwrapped, 0.0, 0, 0
        while done < steps:
            env.reset(seed=0, options={"task_id": task_id})
            task_id += 1
            terminated = truncated = False
            while not (terminated or truncated) and done < steps:
                action = base.oracle_action()
                clock = time.perf_counter()
                _, _, terminated, truncated, _ = env.step(action)
                spent += time.perf_counter() - clock
                done += 1
        env.close()
        costs[backend] = spent / steps * 1e6
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=48, help="episodes per eval")
    parser.add_argument("--model-latency-ms", type=float, default=50.0, help="simulated model latency per reply")
    parser.add_argument("--steps", type=int, default=500, help="steps for the per-step overhead")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()
    connect("local")
    latency_s = args.model_latency_ms / 1000

    rows = []
    for env_id in ("Sokoban-v0", "WebShop-v0"):
        throughput(env_id, 4, 2, 0.0, "ray")  # warm: imports and catalogs in the worker processes
        for actors in ACTORS:
            row: dict[str, Any] = {"env": env_id, "actors": actors}
            for label, latency in (("oracle", 0.0), ("model", latency_s)):
                row[f"{label}_ray"] = throughput(env_id, args.episodes, actors, latency, "ray")
                row[f"{label}_local"] = throughput(env_id, args.episodes, actors, latency, "local")
            rows.append(row)
            print(row, flush=True)
    overhead = [{"env": env_id, **step_cost(env_id, args.steps)} for env_id in ("Sokoban-v0", "WebShop-v0")]
    print(overhead)

    base = {
        (row["env"], label): row[f"{label}_ray"]["episodes_per_s"]
        for row in rows
        if row["actors"] == 1
        for label in ("oracle", "model")
    }
    lines = [
        f"Eval throughput (episodes/s over {args.episodes} oracle episodes of the train split, after the first "
        "N episodes, so that starting the actors is not counted; "
        f"'model': the oracle behind a simulated endpoint with {args.model_latency_ms:g} ms per reply):",
        "",
        "| env | env actors | oracle: ray | speed-up vs 1 actor | oracle: local, same concurrency "
        "| model: ray | speed-up vs 1 actor | model: local, same concurrency |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = []
        for label in ("oracle", "model"):
            ray_rate = row[f"{label}_ray"]["episodes_per_s"]
            cells += [
                f"{ray_rate:.2f}",
                f"{ray_rate / base[row['env'], label]:.2f}×",
                f"{row[f'{label}_local']['episodes_per_s']:.2f}",
            ]
        lines.append(f"| {row['env']} | {row['actors']} | {' | '.join(cells)} |")
    lines += [
        "",
        f"Per-step cost of a Ray actor ({args.steps} oracle steps in a plain loop, one env):",
        "",
        "| env | local µs/step | ray µs/step | overhead µs/step | ray ÷ local |",
        "|---|---|---|---|---|",
    ]
    for row in overhead:
        lines.append(
            f"| {row['env']} | {row['local']:,.0f} | {row['ray']:,.0f} | {row['ray'] - row['local']:,.0f} | "
            f"{row['ray'] / row['local']:.1f}× |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        setup = (
            f"one single-node Ray instance on this machine, env actors of 0.1 CPU, {args.episodes} episodes per eval"
        )
        record(
            "ray_scaleout",
            "Ray scale-out: eval throughput vs env actors, per-step actor overhead",
            setup,
            table,
            {"throughput": rows, "step_overhead_us": overhead},
        )


if __name__ == "__main__":
    main()
