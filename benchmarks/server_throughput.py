"""Env server throughput, process-backend overhead and server memory over many sessions.

* HTTP steps/s with 64 concurrent clients on loopback: an ``agentgym serve`` subprocess
  hosting a puzzle env, 64 keep-alive connections each playing episodes with random legal
  actions; with env calls on the event loop (the puzzles' ``inline_safe``, the default)
  and on session threads (``--no-inline``), alternately, three rounds each (medians). The
  load generator is a minimal asyncio HTTP/1.1 client, cheaper than the server, so that
  the number is the server's; the server's CPU use is reported beside it.
* Per-step overhead of the process backend: the same oracle episodes stepped through
  ``gym.make(ID)`` and ``gym.make(ID, backend="process")`` in this run (only ``step``
  timed; trajectories checked equal), and the process backend's cold start.
* Server memory: resident set size after a warm-up of 1,000 sessions and after 10,000
  more sessions created, reset, stepped and closed.

    python benchmarks/server_throughput.py                   # writes results/server_throughput.{md,json}
    python benchmarks/server_throughput.py --env Maze-v0 --seconds 3 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
from recording import record

import agentgym
from agentgym.serving.backends.process import ServerProcess


class Connection:
    """A keep-alive HTTP/1.1 JSON connection on asyncio streams: the least client work per request."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> Connection:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        payload = b"" if body is None else json.dumps(body).encode()
        head = f"{method} {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
        self.writer.write(f"{head}content-length: {len(payload)}\r\n\r\n".encode() + payload)
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
        length = next(int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length:"))
        answer = json.loads(await self.reader.readexactly(length))
        if int(lines[0].split()[1]) >= 400:
            raise RuntimeError(f"{method} {path}: {answer}")
        return answer

    def close(self) -> None:
        self.writer.close()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def play_for(url: str, env_id: str, clients: int, seconds: float) -> tuple[int, int, float]:
    """Steps and resets that ``clients`` connections play in ``seconds``; and the elapsed time."""
    tasks = agentgym.env_info(env_id).splits.total
    counts = {"steps": 0, "resets": 0}
    connections = [await Connection.open(url) for _ in range(clients)]
    started = time.perf_counter()
    deadline = started + seconds

    async def client(connection: Connection, rng: random.Random) -> None:
        session = (await connection.request("POST", "/sessions", {"env_id": env_id}))["session_id"]
        calls = f"/sessions/{session}"
        while time.perf_counter() < deadline:
            answer = await connection.request("POST", f"{calls}/reset", {"options": {"task_id": rng.randrange(tasks)}})
            counts["resets"] += 1
            done = False
            while not done and time.perf_counter() < deadline:
                action = rng.choice(answer["info"]["available_actions"])
                answer = await connection.request("POST", f"{calls}/step", {"action": action})
                counts["steps"] += 1
                done = answer["terminated"] or answer["truncated"]
        await connection.request("DELETE", calls)
        connection.close()

    await asyncio.gather(*(client(connection, random.Random(i)) for i, connection in enumerate(connections)))
    return counts["steps"], counts["resets"], time.perf_counter() - started


def throughput(env_id: str, clients: int, seconds: float, rounds: int) -> dict[str, dict[str, Any]]:
    """Steps/s and server CPU with env calls inline and on threads, alternating; medians over ``rounds``."""
    servers = {
        "inline": ServerProcess([env_id], max_sessions=clients * 2),
        "threads": ServerProcess([env_id], max_sessions=clients * 2, server_args=["--no-inline"]),
    }
    runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in servers}
    try:
        for server in servers.values():
            asyncio.run(play_for(server.url, env_id, clients, 1.0))  # warm-up
        for _ in range(rounds):
            for mode, server in servers.items():
                cpu = cpu_seconds(server.pid)
                steps, _, elapsed = asyncio.run(play_for(server.url, env_id, clients, seconds))
                runs[mode].append((steps / elapsed, (cpu_seconds(server.pid) - cpu) / elapsed))
    finally:
        for server in servers.values():
            server.stop()
    return {
        mode: {
            "steps_per_s": statistics.median(rate for rate, _ in results),
            "server_cpu": statistics.median(cpu for _, cpu in results),
            "rounds": results,
        }
        for mode, results in runs.items()
    }


def oracle_plans(env_id: str, episodes: int) -> list[tuple[int, list[str]]]:
    """Task ids and the oracle's actions for ``episodes`` dev tasks."""
    env, plans = gym.make(env_id), []
    for task_id in agentgym.env_info(env_id).splits.ids("dev")[:episodes]:
        env.reset(options={"task_id": task_id})
        actions, done = [], False
        while not done:
            actions.append(env.unwrapped.oracle_action())
            _, _, terminated, truncated, _ = env.step(actions[-1])
            done = terminated or truncated
        plans.append((task_id, actions))
    return plans


def timed_steps(env: gym.Env, plans: list[tuple[int, list[str]]]) -> tuple[float, list[Any]]:
    """Mean seconds per ``step`` over the plans, and every transition."""
    total, transitions, clock = 0.0, [], time.perf_counter
    for task_id, actions in plans:
        transitions.append(env.reset(options={"task_id": task_id}))
        for action in actions:
            started = clock()
            transitions.append(env.step(action))
            total += clock() - started
    return total / sum(len(actions) for _, actions in plans), transitions


def process_overhead(env_id: str, episodes: int) -> dict[str, Any]:
    plans = oracle_plans(env_id, episodes)
    local_s, local_transitions = timed_steps(gym.make(env_id), plans)
    remote = gym.make(env_id, backend="process")
    try:
        process_s, process_transitions = timed_steps(remote, plans)
    finally:
        remote.close()
    assert process_transitions == local_transitions
    starts = []
    for _ in range(5):
        clock = time.perf_counter()
        env = gym.make(env_id, backend="process")
        env.reset(options={"task_id": 0})
        starts.append(time.perf_counter() - clock)
        env.close()
    return {
        "steps": sum(len(actions) for _, actions in plans),
        "local_step_us": local_s * 1e6,
        "process_step_us": process_s * 1e6,
        "ratio": process_s / local_s,
        "cold_start_s": statistics.median(starts),
    }


async def cycle_sessions(url: str, env_id: str, count: int, concurrency: int = 16) -> None:
    """Create, reset, step and close ``count`` sessions, ``concurrency`` at a time."""

    async def worker(first: int) -> None:
        connection = await Connection.open(url)
        for index in range(first, count, concurrency):
            session = (await connection.request("POST", "/sessions", {"env_id": env_id}))["session_id"]
            answer = await connection.request("POST", f"/sessions/{session}/reset", {"options": {"task_id": index}})
            action = answer["info"].get("available_actions", ["?"])[0]
            await connection.request("POST", f"/sessions/{session}/step", {"action": action})
            await connection.request("DELETE", f"/sessions/{session}")
        connection.close()

    await asyncio.gather(*(worker(first) for first in range(concurrency)))


def memory(env_id: str, warm_up: int, sessions: int) -> dict[str, Any]:
    """Server RSS after ``warm_up`` sessions and after ``sessions`` more."""
    server = ServerProcess([env_id], max_sessions=64)
    try:
        asyncio.run(cycle_sessions(server.url, env_id, warm_up))
        before = asyncio.run(_rss(server.url))
        clock = time.perf_counter()
        asyncio.run(cycle_sessions(server.url, env_id, sessions))
        elapsed = time.perf_counter() - clock
        after = asyncio.run(_rss(server.url))
    finally:
        server.stop()
    return {"sessions": sessions, "rss_before_mib": before / 2**20, "rss_after_mib": after / 2**20, "wall_s": elapsed}


async def _rss(url: str) -> int:
    """The server's resident memory, from ``/metrics``."""
    connection = await Connection.open(url)
    try:
        return (await connection.request("GET", "/metrics"))["rss_bytes"]
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Sokoban-v0", help="a puzzle env with available_actions")
    parser.add_argument("--clients", type=int, default=64, help="concurrent HTTP clients")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per throughput run")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs per mode")
    parser.add_argument("--episodes", type=int, default=200, help="oracle episodes for the overhead measurement")
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions for the memory measurement")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    load = os.getloadavg()[0]
    modes = throughput(args.env, args.clients, args.seconds, args.rounds)
    inline, threads = modes["inline"], modes["threads"]
    overhead = process_overhead(args.env, args.episodes)
    rss = memory(args.env, 1_000, args.sessions)
    data = {
        "env": args.env,
        "clients": args.clients,
        "load_average_at_start": load,
        "inline": inline,
        "threads": threads,
        "process_backend": overhead,
        "memory": rss,
    }
    table = "\n".join(
        [
            f"| measure ({args.env}) | value |",
            "|---|---|",
            f"| HTTP steps/s, {args.clients} clients, env calls on the event loop (default) | "
            f"{inline['steps_per_s']:,.0f} (server CPU {inline['server_cpu']:.0%}) |",
            f"| HTTP steps/s, {args.clients} clients, env calls on session threads (`--no-inline`) | "
            f"{threads['steps_per_s']:,.0f} (server CPU {threads['server_cpu']:.0%}) |",
            f"| inline ÷ threads | {inline['steps_per_s'] / threads['steps_per_s']:.2f} |",
            f"| `step` latency, local | {overhead['local_step_us']:,.1f} µs |",
            f"| `step` latency, process backend | {overhead['process_step_us']:,.1f} µs |",
            f"| process ÷ local, per step | {overhead['ratio']:,.0f}× |",
            f"| process backend cold start (make + first reset, median of 5) | {overhead['cold_start_s']:.2f} s |",
            f"| server RSS after 1,000 warm-up sessions | {rss['rss_before_mib']:.1f} MiB |",
            f"| server RSS after {args.sessions:,} more sessions (create, reset, step, close) | "
            f"{rss['rss_after_mib']:.1f} MiB |",
        ]
    )
    print(table)
    if args.no_write:
        return
    setup = (
        f"{args.clients} keep-alive clients on loopback, random legal actions, {args.rounds} rounds of "
        f"{args.seconds:g} s per mode (medians); 1-minute load average {load:.1f} at start; "
        f"{overhead['steps']} oracle steps for the overhead; {args.sessions:,} sessions for memory"
    )
    record("server_throughput", "Env server throughput and process-backend overhead", setup, table, data)


if __name__ == "__main__":
    main()
