"""Docker-backend overhead: per-step latency against the local and process backends, and cold start.

* Per step: the same oracle episodes stepped through ``gym.make(ID)``,
  ``gym.make(ID, backend="process")`` and ``gym.make(ID, backend="docker")`` (only ``step``
  timed; trajectories checked equal to local), in rounds that alternate the backends so that
  the machine's load falls on all three alike; medians over the rounds.
* Cold start: ``gym.make`` plus the first ``reset``, median of several, for the process and
  docker backends; and ``close`` (the docker backend removes its container there).

Needs the ``agentgym/core`` image (``bash containers/build.sh``).

    python benchmarks/docker_backend.py                  # writes results/docker_backend.{md,json}
    python benchmarks/docker_backend.py --episodes 50 --no-write
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import gymnasium as gym
from recording import record
from server_throughput import oracle_plans, timed_steps

BACKENDS = ("local", "process", "docker")


def step_latency(env_id: str, episodes: int, rounds: int) -> dict[str, Any]:
    """Median seconds per ``step`` on each backend over ``rounds`` alternating rounds."""
    plans = oracle_plans(env_id, episodes)
    envs = {backend: gym.make(env_id, backend=backend) for backend in BACKENDS}
    seconds: dict[str, list[float]] = {backend: [] for backend in BACKENDS}
    try:
        for _ in range(rounds):
            transitions = {}
            for backend, env in envs.items():
                step_s, transitions[backend] = timed_steps(env, plans)
                seconds[backend].append(step_s)
            assert transitions["process"] == transitions["local"] and transitions["docker"] == transitions["local"]
    finally:
        for env in envs.values():
            env.close()
    medians = {backend: statistics.median(values) for backend, values in seconds.items()}
    return {
        "steps": sum(len(actions) for _, actions in plans),
        **{f"{backend}_step_us": medians[backend] * 1e6 for backend in BACKENDS},
        "process_vs_local": medians["process"] / medians["local"],
        "docker_vs_local": medians["docker"] / medians["local"],
        "docker_vs_process": medians["docker"] / medians["process"],
        "rounds_s": seconds,
    }


def cold_start(env_id: str, backend: str, times: int) -> dict[str, Any]:
    """Median seconds of ``gym.make`` plus the first ``reset``, and of ``close``."""
    starts, closes = [], []
    for _ in range(times):
        clock = time.perf_counter()
        env = gym.make(env_id, backend=backend)
        env.reset(options={"task_id": 0})
        starts.append(time.perf_counter() - clock)
        clock = time.perf_counter()
        env.close()
        closes.append(time.perf_counter() - clock)
    return {"start_s": statistics.median(starts), "close_s": statistics.median(closes), "starts": starts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Sokoban-v0", help="an env with an oracle")
    parser.add_argument("--episodes", type=int, default=200, help="oracle episodes per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the three backends")
    parser.add_argument("--starts", type=int, default=5, help="cold starts per backend")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    load = os.getloadavg()[0]
    latency = step_latency(args.env, args.episodes, args.rounds)
    starts = {backend: cold_start(args.env, backend, args.starts) for backend in ("process", "docker")}
    data = {"env": args.env, "load_average_at_start": load, "step": latency, "cold_start": starts}
    table = "\n".join(
        [
            f"| measure ({args.env}) | value |",
            "|---|---|",
            f"| `step` latency, local | {latency['local_step_us']:,.1f} µs |",
            f"| `step` latency, process backend | {latency['process_step_us']:,.1f} µs |",
            f"| `step` latency, docker backend | {latency['docker_step_us']:,.1f} µs |",
            f"| process ÷ local, per step | {latency['process_vs_local']:,.0f}× |",
            f"| docker ÷ local, per step | {latency['docker_vs_local']:,.0f}× |",
            f"| docker ÷ process, per step | {latency['docker_vs_process']:.2f} |",
            f"| process backend cold start (make + first reset, median of {args.starts}) | "
            f"{starts['process']['start_s']:.2f} s |",
            f"| docker backend cold start (make + first reset, median of {args.starts}) | "
            f"{starts['docker']['start_s']:.2f} s |",
            f"| docker ÷ process, cold start | {starts['docker']['start_s'] / starts['process']['start_s']:.2f} |",
            f"| docker backend `close` (container removed) | {starts['docker']['close_s'] * 1e3:.0f} ms |",
        ]
    )
    print(table)
    if args.no_write:
        return
    setup = (
        f"{latency['steps']} oracle steps per backend per round, {args.rounds} rounds alternating the backends "
        f"(medians); docker: agentgym/core on agentgym/base:bookworm, --network none, Unix socket, default limits "
        f"(1 CPU, 2 GiB, 256 pids); 1-minute load average {load:.1f} at start"
    )
    record("docker_backend", "Docker-backend overhead and cold start", setup, table, data)


if __name__ == "__main__":
    main()
