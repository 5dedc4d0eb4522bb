"""Sandbox cost: start-to-exit latency, HumanEval attempt latency, and concurrent throughput.

1. Start-to-exit latency of ``true`` and ``python3 -c pass``: a plain subprocess (no isolation,
   the same /usr/bin/python3), the bwrap backend, and the docker backend (when dockerd and the
   base image exist). Median and p99 over many runs; ratios to the plain subprocess.
2. HumanEval-v0 latency per attempt (one ``env.step``: extract, sandbox run of the harness, the
   verdict): the canonical solution of each of the 164 problems, and a wrong one (``return
   None``) of each, one env, one at a time.
3. Throughput on this machine's cores: ``python3 -c pass`` runs per second with 1 and with 32
   sandboxes running concurrently (one thread and one :class:`Sandbox` each), and HumanEval
   attempts per second with 1 and 32 concurrent envs.

    python benchmarks/sandbox_latency.py                  # writes results/sandbox_latency.{md,json}
    python benchmarks/sandbox_latency.py --runs 50 --no-write
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
from recording import record

import agentgym  # noqa: F401  (registers HumanEval-v0)
from agentgym.environments.code.humaneval import fenced
from agentgym.sandbox import Sandbox, available

COMMANDS = {"true": ["true"], "python3 -c pass": ["python3", "-c", "pass"]}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(function: Callable[[], object], runs: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    return {"median_ms": statistics.median(samples) * 1e3, "p99_ms": percentile(samples, 0.99) * 1e3, "n": len(samples)}


def start_to_exit(runs: int, docker_runs: int) -> list[dict]:
    rows = []
    boxes = {"bwrap": Sandbox()}
    if available("docker") is None:
        boxes["docker"] = Sandbox(backend="docker")
    try:
        for label, argv in COMMANDS.items():
            plain_argv = ["/usr/bin/python3", *argv[1:]] if argv[0] == "python3" else ["/usr/bin/true"]
            plain = summary(timed(lambda argv=plain_argv: subprocess.run(argv, check=True), runs))
            rows.append({"command": label, "how": "plain subprocess", **plain, "vs_plain": 1.0})
            for backend, box in boxes.items():
                count = runs if backend == "bwrap" else docker_runs

                def run(box: Sandbox = box, argv: list[str] = argv) -> None:
                    assert box.run(argv).ok

                stats = summary(timed(run, count, warmup=1))
                rows.append(
                    {
                        "command": label,
                        "how": f"Sandbox(backend={backend!r})",
                        **stats,
                        "vs_plain": stats["median_ms"] / plain["median_ms"],
                    }
                )
    finally:
        for box in boxes.values():
            box.close()
    return rows


def humaneval_attempts() -> dict[str, dict[str, float]]:
    env = gym.make("HumanEval-v0")
    base = env.unwrapped
    samples: dict[str, list[float]] = {"passing (canonical solution)": [], "failing (return None)": []}
    for task_id in range(164):
        for label in samples:
            env.reset(options={"task_id": task_id})
            reply = (
                base.oracle_action() if label.startswith("passing") else fenced(base.problem.prompt + "    return None")
            )
            start = time.perf_counter()
            _, _, _, _, info = env.step(reply)
            samples[label].append(time.perf_counter() - start)
            assert info["success"] == label.startswith("passing"), (task_id, info["test_output"])
    env.close()
    return {label: summary(values) for label, values in samples.items()}


def throughput(workers: int, jobs: int, make_worker: Callable[[], Callable[[int], None]]) -> float:
    """Jobs per second with ``workers`` threads, each with its own worker state."""
    local = threading.local()
    workers_made: list[Callable[[int], None]] = []

    def job(index: int) -> None:
        if not hasattr(local, "work"):
            local.work = make_worker()
            workers_made.append(local.work)
        local.work(index)

    with ThreadPoolExecutor(workers) as pool:  # warm up: every thread makes its worker
        list(pool.map(job, range(workers)))
        start = time.perf_counter()
        list(pool.map(job, range(jobs)))
        elapsed = time.perf_counter() - start
    for work in workers_made:
        getattr(work, "close", lambda: None)()
    return jobs / elapsed


class SandboxWorker:
    def __init__(self) -> None:
        self.box = Sandbox()

    def __call__(self, index: int) -> None:
        assert self.box.run(["python3", "-c", "pass"]).ok

    def close(self) -> None:
        self.box.close()


class HumanEvalWorker:
    def __init__(self) -> None:
        self.env = gym.make("HumanEval-v0")

    def __call__(self, index: int) -> None:
        self.env.reset(options={"task_id": index % 164})
        assert self.env.step(self.env.unwrapped.oracle_action())[4]["success"]

    def close(self) -> None:
        self.env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=300, help="timed runs per command (plain and bwrap)")
    parser.add_argument("--docker-runs", type=int, default=40, help="timed runs per command on docker")
    parser.add_argument("--jobs", type=int, default=640, help="jobs per throughput measurement")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    load = os.getloadavg()[0]  # other work on the machine skews every number: say how much there was
    latency = start_to_exit(args.runs, args.docker_runs)
    attempts = humaneval_attempts()
    rates = {
        "python3 -c pass runs/s, 1 sandbox": throughput(1, args.jobs // 4, SandboxWorker),
        "python3 -c pass runs/s, 32 concurrent sandboxes": throughput(32, args.jobs, SandboxWorker),
        "HumanEval attempts/s (canonical solutions), 1 env": throughput(1, 164, HumanEvalWorker),
        "HumanEval attempts/s (canonical solutions), 32 concurrent envs": throughput(32, 328, HumanEvalWorker),
    }

    lines = ["| command | how | median ms | p99 ms | runs | median ÷ plain |", "|---|---|---|---|---|---|"]
    for row in latency:
        lines.append(
            f"| `{row['command']}` | {row['how']} | {row['median_ms']:.1f} | {row['p99_ms']:.1f} | {row['n']} "
            f"| {row['vs_plain']:.1f} |"
        )
    lines += ["", "| HumanEval-v0 attempt (one `step`) | median ms | p99 ms | attempts |", "|---|---|---|---|"]
    for label, stats in attempts.items():
        lines.append(f"| {label} | {stats['median_ms']:.1f} | {stats['p99_ms']:.1f} | {stats['n']} |")
    lines += ["", f"| throughput on {os.cpu_count()} cores | per second |", "|---|---|"]
    for label, rate in rates.items():
        lines.append(f"| {label} | {rate:,.1f} |")
    single, concurrent = (
        rates["python3 -c pass runs/s, 1 sandbox"],
        rates["python3 -c pass runs/s, 32 concurrent sandboxes"],
    )
    lines.append(f"| 32 concurrent ÷ 1 (sandbox runs) | {concurrent / single:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return
    setup = (
        f"{args.runs} runs per command (docker {args.docker_runs}), 164 problems x 2 attempts, {args.jobs} jobs "
        f"per throughput row; {os.cpu_count()} cores; 1-minute load average {load:.1f} at the start"
    )
    data = {"start_to_exit": latency, "humaneval_attempts": attempts, "throughput_per_s": rates}
    record("sandbox_latency", "Sandbox latency and throughput", setup, table, data)


if __name__ == "__main__":
    main()
