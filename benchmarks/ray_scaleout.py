"""Ray scale-out: eval throughput vs the number of env actors, and the per-step cost of an actor.

Starts a single-node Ray instance on this machine (``agentgym.serving.backends.ray.connect("local")``).

* **Throughput**: ``run_eval`` with ``backend="ray"`` and ``concurrency`` = N env actors
  (N = 1, 2, 4, 8; each actor asks for 0.1 CPU so that all fit on a small machine), the
  oracle policy, on a puzzle (Sokoban-v0) and on WebShop-v0. Two policies: the bare oracle
  (the env is all the work) and the oracle behind a simulated model endpoint that takes
  ``--model-latency-ms`` per reply (what an eval against an LLM server looks like: actors
  wait on the model, so more of them keep it busier). Episodes/s and the speed-up over one
  actor; the local backend at the same concurrency for comparison.
* **Per-step overhead**: the same steps on a local env, on a ray env (one actor call per
  step) and on a :class:`~agentgym.serving.backends.ray.RayEnvBatch` of ``--batch`` envs (one
  actor call steps them all) in plain loops, measured side by side in one run; microseconds
  per step and the difference from local. Beside them Ray's floor: an empty actor method
  called and awaited (the round trip alone: a local RPC, scheduling, the reply).

    python benchmarks/ray_scaleout.py                   # writes results/ray_scaleout.{md,json}
    python benchmarks/ray_scaleout.py --episodes 16 --no-write
    python benchmarks/ray_scaleout.py --steps-only --no-write      # the per-step table alone
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

import gymnasium as gym
from recording import RESULTS, record

from agentgym.evaluation.records import EpisodeRecord
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy
from agentgym.llm.policies.base import Episode, Message, Reply
from agentgym.serving.backends.ray import RayEnvBatch, connect

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


def floor_us(calls: int) -> float:
    """Microseconds per call of an empty method of a Ray actor (0.1 CPU), called and awaited one at a time."""
    import ray

    @ray.remote(num_cpus=0.1)
    class Empty:
        def nothing(self) -> None:
            return None

    actor = Empty.remote()
    for _ in range(20):
        ray.get(actor.nothing.remote())
    clock = time.perf_counter()
    for _ in range(calls):
        ray.get(actor.nothing.remote())
    spent = time.perf_counter() - clock
    ray.kill(actor)
    return spent / calls * 1e6


def batch_step_cost(env_id: str, steps: int, size: int) -> float:
    """Microseconds per env step on a :class:`RayEnvBatch` of ``size`` envs playing oracle episodes
    (only the batch's step calls counted, as in :func:`step_cost`)."""
    batch = RayEnvBatch(env_id, size, options={"num_cpus": 0.1, "memory": 256 * 2**20})
    next_task = size
    batch.reset(seeds=[0] * size, options=[{"task_id": index} for index in range(size)])
    spent, done = 0.0, 0
    while done < steps:
        actions = batch.oracle_actions()
        clock = time.perf_counter()
        results = batch.step(actions)
        spent += time.perf_counter() - clock
        done += size
        ended = [result is not None and (result[2] or result[3]) for result in results]
        if any(ended):  # new episodes in the envs whose episode ended
            options = [{"task_id": next_task + index} for index in range(size)]
            next_task += size
            batch.reset(seeds=[0] * size, options=options, which=ended)
    batch.close()
    return spent / done * 1e6


def per_step_rows(env_ids: tuple[str, ...], steps: int, batch: int) -> list[dict[str, Any]]:
    """The per-step table's rows: local, ray, ray batch and Ray's floor, side by side for each env."""
    floor = floor_us(steps)
    return [
        {
            "env": env_id,
            **step_cost(env_id, steps),
            "ray_batch": batch_step_cost(env_id, steps, batch),
            "batch": batch,
            "floor": floor,
        }
        for env_id in env_ids
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=48, help="episodes per eval")
    parser.add_argument("--model-latency-ms", type=float, default=50.0, help="simulated model latency per reply")
    parser.add_argument("--steps", type=int, default=500, help="steps for the per-step overhead")
    parser.add_argument("--batch", type=int, default=16, help="envs per actor of the batched path")
    parser.add_argument("--steps-only", action="store_true", help="only the per-step table (keeps the recorded rest)")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()
    connect("local")
    latency_s = args.model_latency_ms / 1000

    rows = []
    if args.steps_only:
        previous = json.loads((RESULTS / "ray_scaleout.json").read_text())
        rows = previous["throughput"]
    for env_id in ("Sokoban-v0", "WebShop-v0") if not args.steps_only else ():
        throughput(env_id, 4, 2, 0.0, "ray")  # warm: imports and catalogs in the worker processes
        for actors in ACTORS:
            row: dict[str, Any] = {"env": env_id, "actors": actors}
            for label, latency in (("oracle", 0.0), ("model", latency_s)):
                row[f"{label}_ray"] = throughput(env_id, args.episodes, actors, latency, "ray")
                row[f"{label}_local"] = throughput(env_id, args.episodes, actors, latency, "local")
            rows.append(row)
            print(row, flush=True)
    overhead = per_step_rows(("Sokoban-v0", "WebShop-v0"), args.steps, args.batch)
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
        f"Per-step cost of a Ray actor ({args.steps} oracle steps in plain loops, side by side in one run: "
        f"one env per actor, one call per step; and a RayEnvBatch of {args.batch} envs in one actor, one call "
        f"per {args.batch} steps). Ray's floor, an empty actor method called and awaited: "
        f"{overhead[0]['floor']:,.0f} µs per call.",
        "",
        "| env | local µs/step | ray µs/step | added µs/step | ray batch µs/step | added µs/step (batch) |",
        "|---|---|---|---|---|---|",
    ]
    for row in overhead:
        lines.append(
            f"| {row['env']} | {row['local']:,.0f} | {row['ray']:,.0f} | {row['ray'] - row['local']:,.0f} | "
            f"{row['ray_batch']:,.0f} | {row['ray_batch'] - row['local']:,.0f} |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        setup = (
            f"one single-node Ray instance on this machine, env actors of 0.1 CPU, {args.episodes} episodes per eval"
        )
        if args.steps_only:
            setup += "; the throughput table is the last full run's, the per-step table this run's (--steps-only)"
        record(
            "ray_scaleout",
            "Ray scale-out: eval throughput vs env actors, per-step actor overhead",
            setup,
            table,
            {"throughput": rows, "step_overhead_us": overhead},
        )


if __name__ == "__main__":
    main()
