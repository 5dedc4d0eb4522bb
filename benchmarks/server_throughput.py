"""Env server throughput (against OpenEnv's server), remote-env latency and server memory over many sessions.

* Steps/s with 256 concurrent sessions on loopback, five ways, taking turns, three rounds
  each (medians): ``agentgym serve`` over plain HTTP (env calls on the event loop, the
  puzzles' ``inline_safe``, the default; and on session threads, ``--no-inline``), over
  each session's WebSocket channel, over the batch channel (the sessions shared among
  :data:`BATCH_CHANNELS` channels, each message stepping all of a channel's sessions, as a
  vector env's step does: ``RemoteVectorEnv``), and OpenEnv's own server (``HTTPEnvServer``
  from openenv-core) serving the same env over its WebSocket. Every session plays episodes of
  random moves; the load generators are minimal asyncio HTTP/1.1 and WebSocket clients,
  cheaper than any server, so that the number is the server's; each server's CPU use is
  reported beside it.
* Per-step latency of a remote env: the same oracle episodes stepped through ``gym.make(ID)``,
  ``gym.make(ID, backend="process")`` (RemoteEnv over HTTP) and RemoteEnv over the
  WebSocket channel in this run (only ``step`` timed; trajectories checked equal), and the
  process backend's cold start.
* Server memory: resident set size after a warm-up of 1,000 sessions and after 10,000
  more sessions created, reset, stepped and closed.

    python benchmarks/server_throughput.py                   # writes results/server_throughput.{md,json}
    python benchmarks/server_throughput.py --clients 64 --seconds 2 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
from recording import record

import agentgym
from agentgym.serving.backends.process import ServerProcess
from agentgym.serving.client import RemoteEnv


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


class WebSocket:
    """A minimal WebSocket client on asyncio streams (text frames of JSON), as cheap as :class:`Connection`.

    Frames are masked with the all-zero key, which RFC 6455 allows the server to read like any
    other key, so that the client spends no time masking; pings are answered.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str, path: str) -> WebSocket:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET {path} HTTP/1.1\r\nhost: bench\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
            f"sec-websocket-key: {key}\r\nsec-websocket-version: 13\r\n\r\n".encode()
        )
        status = (await reader.readuntil(b"\r\n\r\n")).split(b" ", 2)[1]
        if status != b"101":
            raise RuntimeError(f"GET {path}: HTTP {status.decode()} instead of a WebSocket")
        return cls(reader, writer)

    async def ask(self, message: Any) -> Any:
        """Send one JSON message; the JSON reply."""
        payload = json.dumps(message).encode()
        size = len(payload)
        if size < 126:
            head = bytes((0x81, 0x80 | size))
        elif size < 65536:
            head = bytes((0x81, 0xFE)) + size.to_bytes(2, "big")
        else:
            head = bytes((0x81, 0xFF)) + size.to_bytes(8, "big")
        self.writer.write(head + b"\0\0\0\0" + payload)
        while True:
            first, second = await self.reader.readexactly(2)
            size = second & 0x7F
            if size >= 126:
                size = int.from_bytes(await self.reader.readexactly(2 if size == 126 else 8), "big")
            data = await self.reader.readexactly(size)
            opcode = first & 0x0F
            if opcode == 0x9:  # a ping: answer it and read on
                self.writer.write(bytes((0x8A, 0x80 | len(data))) + b"\0\0\0\0" + data)
            elif opcode == 0x8:
                raise RuntimeError(f"the server closed the WebSocket: {data[:2].hex()} {data[2:]!r}")
            else:
                return json.loads(data)

    def close(self) -> None:
        self.writer.close()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: The moves every throughput client draws from, the same on every server (Sokoban's commands).
MOVES = ("up", "down", "left", "right")


class Counts:
    """Steps and resets the clients of one run played."""

    def __init__(self, seconds: float) -> None:
        self.steps = self.resets = 0
        self.started = time.perf_counter()
        self.deadline = self.started + seconds


async def http_client(url: str, env_id: str, counts: Counts, rng: random.Random, tasks: int) -> None:
    """One client of ``agentgym serve`` over plain HTTP: a session, episodes of random moves until the deadline."""
    connection = await Connection.open(url)
    calls = f"/sessions/{(await connection.request('POST', '/sessions', {'env_id': env_id}))['session_id']}"
    while time.perf_counter() < counts.deadline:
        answer = await connection.request("POST", f"{calls}/reset", {"options": {"task_id": rng.randrange(tasks)}})
        counts.resets += 1
        while time.perf_counter() < counts.deadline:
            answer = await connection.request("POST", f"{calls}/step", {"action": rng.choice(MOVES)})
            counts.steps += 1
            if answer["terminated"] or answer["truncated"]:
                break
    await connection.request("DELETE", calls)
    connection.close()


async def channel_client(url: str, env_id: str, counts: Counts, rng: random.Random, tasks: int) -> None:
    """The same over the session's WebSocket channel (the session opened and closed over HTTP)."""
    connection = await Connection.open(url)
    session = (await connection.request("POST", "/sessions", {"env_id": env_id}))["session_id"]
    channel = await WebSocket.open(url, f"/sessions/{session}/channel")
    while time.perf_counter() < counts.deadline:
        reset = {"call": "reset", "body": {"options": {"task_id": rng.randrange(tasks)}}}
        assert (await channel.ask(reset))["status"] == 200
        counts.resets += 1
        while time.perf_counter() < counts.deadline:
            answer = (await channel.ask({"call": "step", "body": {"action": rng.choice(MOVES)}}))["answer"]
            counts.steps += 1
            if answer["terminated"] or answer["truncated"]:
                break
    channel.close()
    await connection.request("DELETE", f"/sessions/{session}")
    connection.close()


async def batch_client(url: str, env_id: str, counts: Counts, rngs: list[random.Random], tasks: int) -> None:
    """Sessions of ``agentgym serve`` played through one batch channel, a session per generator in ``rngs``:
    each message steps every session (resets those whose episode ended), as a vector env's step does."""
    connection = await Connection.open(url)
    sessions = [(await connection.request("POST", "/sessions", {"env_id": env_id}))["session_id"] for _ in rngs]
    channel = await WebSocket.open(url, "/batch")
    ended = [True] * len(sessions)
    while time.perf_counter() < counts.deadline:
        calls = [
            {"session_id": session, "call": "reset", "body": {"options": {"task_id": rng.randrange(tasks)}}}
            if done
            else {"session_id": session, "call": "step", "body": {"action": rng.choice(MOVES)}}
            for session, done, rng in zip(sessions, ended, rngs, strict=True)
        ]
        for index, answer in enumerate((await channel.ask({"calls": calls}))["answers"]):
            assert answer["status"] == 200, answer
            if ended[index]:
                counts.resets += 1
                ended[index] = False
            else:
                counts.steps += 1
                ended[index] = answer["answer"]["terminated"] or answer["answer"]["truncated"]
    channel.close()
    for session in sessions:
        await connection.request("DELETE", f"/sessions/{session}")
    connection.close()


async def openenv_client(url: str, env_id: str, counts: Counts, rng: random.Random, tasks: int) -> None:
    """The same on OpenEnv's own server, over its WebSocket (``/ws``: one env per connection)."""
    channel = await WebSocket.open(url, "/ws")
    while time.perf_counter() < counts.deadline:
        answer = await channel.ask({"type": "reset", "data": {"task_id": rng.randrange(tasks)}})
        assert answer["type"] == "observation", answer
        counts.resets += 1
        while time.perf_counter() < counts.deadline:
            answer = await channel.ask({"type": "step", "data": {"text": rng.choice(MOVES)}})
            counts.steps += 1
            if answer["data"]["done"]:
                break
    channel.close()


#: The batch channels the ``batch`` mode shares its sessions among (each a vector env's round trips).
BATCH_CHANNELS = 4


async def play_for(client: Any, url: str, env_id: str, clients: int, seconds: float) -> tuple[int, int, float]:
    """Steps and resets that ``clients`` concurrent sessions of ``client`` play in ``seconds``; and the elapsed
    time. Each session is a client of its own, but for :func:`batch_client`, which plays a share of them."""
    tasks = agentgym.env_info(env_id).splits.total
    counts = Counts(seconds)
    rngs = [random.Random(i) for i in range(clients)]
    if client is batch_client:
        shares = [rngs[first::BATCH_CHANNELS] for first in range(min(BATCH_CHANNELS, clients))]
        await asyncio.gather(*(batch_client(url, env_id, counts, share, tasks) for share in shares))
    else:
        await asyncio.gather(*(client(url, env_id, counts, rng, tasks) for rng in rngs))
    return counts.steps, counts.resets, time.perf_counter() - counts.started


class OpenEnvServer:
    """OpenEnv's own server (``HTTPEnvServer`` from openenv-core) serving ``env_id`` in a uvicorn subprocess."""

    def __init__(self, env_id: str, max_sessions: int) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        code = (
            "import uvicorn; from agentgym.integrations.openenv import create_app; "
            f"uvicorn.run(create_app({env_id!r}, max_sessions={max_sessions}), host='127.0.0.1', port={port}, "
            "log_level='warning', ws_per_message_deflate=False)"
        )
        self.process = subprocess.Popen([sys.executable, "-c", code])
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{self.url}/health", timeout=5).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("OpenEnv's server did not start") from None
                time.sleep(0.2)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


#: The throughput modes: which server, and which client plays on it.
MODES = {
    "http": ("agentgym serve, plain HTTP", http_client),
    "http-threads": ("agentgym serve --no-inline (env calls on session threads), plain HTTP", http_client),
    "websocket": ("agentgym serve, the session's WebSocket channel", channel_client),
    "batch": (
        f"agentgym serve, the batch channel ({BATCH_CHANNELS} channels, each stepping its sessions at once)",
        batch_client,
    ),
    "openenv": ("OpenEnv's server (openenv-core), its WebSocket", openenv_client),
}


def throughput(env_id: str, clients: int, seconds: float, rounds: int) -> dict[str, dict[str, Any]]:
    """Steps/s and server CPU of every mode, the modes taking turns; medians over ``rounds``."""
    servers = {
        "http": ServerProcess([env_id], max_sessions=clients * 2),
        "http-threads": ServerProcess([env_id], max_sessions=clients * 2, server_args=["--no-inline"]),
        "websocket": ServerProcess([env_id], max_sessions=clients * 2),
        "batch": ServerProcess([env_id], max_sessions=clients * 2),
        "openenv": OpenEnvServer(env_id, clients * 2),
    }
    runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in servers}
    try:
        for mode, server in servers.items():
            asyncio.run(play_for(MODES[mode][1], server.url, env_id, clients, 1.0))  # warm-up
        for _ in range(rounds):
            for mode, server in servers.items():
                cpu = cpu_seconds(server.pid)
                steps, _, elapsed = asyncio.run(play_for(MODES[mode][1], server.url, env_id, clients, seconds))
                runs[mode].append((steps / elapsed, (cpu_seconds(server.pid) - cpu) / elapsed))
    finally:
        for server in servers.values():
            server.stop()
    return {
        mode: {
            "server": MODES[mode][0],
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
        key = remote.unwrapped.owned_server.api_key
        channel = RemoteEnv(remote.unwrapped.url, env_id, websocket=True, max_episode_steps=-1, api_key=key)
        channel_s, channel_transitions = timed_steps(
            gym.wrappers.TimeLimit(channel, remote.spec.max_episode_steps), plans
        )
        channel.close()
    finally:
        remote.close()
    assert process_transitions == local_transitions == channel_transitions
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
        "websocket_step_us": channel_s * 1e6,
        "websocket_ratio": channel_s / local_s,
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
    parser.add_argument("--env", default="Sokoban-v0", help="a puzzle env whose commands are up/down/left/right")
    parser.add_argument("--clients", type=int, default=256, help="concurrent clients, each with its session")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per throughput run")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs per mode")
    parser.add_argument("--episodes", type=int, default=200, help="oracle episodes for the overhead measurement")
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions for the memory measurement")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    load = os.getloadavg()[0]
    modes = throughput(args.env, args.clients, args.seconds, args.rounds)
    overhead = process_overhead(args.env, args.episodes)
    rss = memory(args.env, 1_000, args.sessions)
    data = {
        "env": args.env,
        "clients": args.clients,
        "cores": os.cpu_count(),
        "load_average_at_start": load,
        "throughput": modes,
        "process_backend": overhead,
        "memory": rss,
    }
    openenv = modes["openenv"]["steps_per_s"]
    rows = [
        f"| {mode['server']} | {mode['steps_per_s']:,.0f} | {mode['server_cpu']:.0%} | "
        f"{mode['steps_per_s'] / openenv:.1f}× |"
        for mode in modes.values()
    ]
    table = "\n".join(
        [
            f"Steps/s with {args.clients} concurrent sessions ({args.env}, random moves; the load generator "
            "shares the machine's cores with the server):",
            "",
            "| server and channel | steps/s | server CPU | ÷ OpenEnv |",
            "|---|---|---|---|",
            *rows,
            "",
            f"| measure ({args.env}) | value |",
            "|---|---|",
            f"| `step` latency, local | {overhead['local_step_us']:,.1f} µs |",
            f"| `step` latency, process backend (RemoteEnv over HTTP) | {overhead['process_step_us']:,.1f} µs |",
            f"| `step` latency, RemoteEnv over the WebSocket channel | {overhead['websocket_step_us']:,.1f} µs |",
            f"| process ÷ local, per step (HTTP; WebSocket) | {overhead['ratio']:,.0f}×; "
            f"{overhead['websocket_ratio']:,.0f}× |",
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
        f"{args.clients} sessions on loopback, random moves, {args.rounds} rounds of {args.seconds:g} s per mode, "
        f"the modes taking turns (medians); 1-minute load average {load:.1f} at start; "
        f"{overhead['steps']} oracle steps for the latencies; {args.sessions:,} sessions for memory"
    )
    record("server_throughput", "Env server throughput: HTTP, WebSocket, OpenEnv side by side", setup, table, data)


if __name__ == "__main__":
    main()
