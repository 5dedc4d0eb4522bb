"""Round-trip latency per step: MCP (streamable HTTP) and OpenEnv (WebSocket) vs our RemoteEnv.

One run, one env (Sokoban-v0 by default), all on loopback in this process's machine:
an ``agentgym serve`` app (our HTTP API, and OpenEnv's routes at ``/openenv/ENV_ID``)
and an ``agentgym mcp`` streamable-HTTP app, each served by uvicorn on a thread. Each
client plays the same steps (the oracle's commands of a few tasks, replayed; ``move``
tool calls for MCP and OpenEnv, text for RemoteEnv, so the env does the same work):

* ``local``: ``gym.make(ID).step`` in-process (the floor);
* ``RemoteEnv``: our client (httpx, one keep-alive connection, JSON);
* ``OpenEnv``: openenv-core's ``EnvClient`` (our :class:`AgentGymEnvClient`) over its WebSocket;
* ``MCP``: the mcp SDK's ``Client`` calling the env's tool over a streamable-HTTP session.

Reported: median and mean microseconds per step, and each protocol's median over
RemoteEnv's (ratios; absolute times depend on the machine and its load).

    python benchmarks/protocol_latency.py            # writes results/protocol_latency.{md,json}
    python benchmarks/protocol_latency.py --steps 200 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
from recording import record

import agentgym  # noqa: F401
from agentgym.contract.tools import command_to_tool_call
from agentgym.integrations.mcp import EnvMCPServer
from agentgym.integrations.openenv import AgentGymEnvClient
from agentgym.serving.client import RemoteEnv
from agentgym.serving.server import create_app

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from asgi import serving_in_thread  # noqa: E402


def oracle_steps(env_id: str, count: int) -> list[tuple[int, list[str]]]:
    """(task id, the oracle's commands) for tasks 0, 1, ... until ``count`` steps in all."""
    env, plan, total, task_id = gym.make(env_id), [], 0, 0
    while total < count:
        env.reset(options={"task_id": task_id})
        commands, done = [], False
        while not done:
            command = env.unwrapped.oracle_action()
            commands.append(command)
            *_, terminated, truncated, _ = env.step(command)
            done = terminated or truncated
        plan.append((task_id, commands))
        total, task_id = total + len(commands), task_id + 1
    env.close()
    return plan


def tool_call(env: gym.Env, command: str) -> dict[str, Any]:
    call = command_to_tool_call(env.unwrapped.tool_specs(), command)
    assert call is not None
    return {"name": call.name, "arguments": call.arguments}


def time_steps(env: gym.Env, plan: list) -> list[float]:
    """Seconds per ``env.step`` over the plan's episodes (a local env or a RemoteEnv); closes ``env``."""
    times = []
    for task_id, commands in plan:
        env.reset(options={"task_id": task_id})
        for command in commands:
            start = time.perf_counter()
            env.step(command)
            times.append(time.perf_counter() - start)
    env.close()
    return times


async def time_openenv(url: str, env_id: str, plan: list, calls: dict[str, dict]) -> list[float]:
    times = []
    async with AgentGymEnvClient(url, env_id=env_id) as client:
        for task_id, commands in plan:
            await client.reset(task_id=task_id)
            for command in commands:
                start = time.perf_counter()
                result = await client.step(calls[command])
                times.append(time.perf_counter() - start)
            assert result.observation.success
    return times


async def time_mcp(url: str, plan: list, calls: dict[str, dict]) -> list[float]:
    from mcp.client import Client

    times = []
    async with Client(url) as client:
        for task_id, commands in plan:
            await client.call_tool("reset", {"task_id": task_id})
            for command in commands:
                call = calls[command]
                start = time.perf_counter()
                result = await client.call_tool(call["name"], call["arguments"])
                times.append(time.perf_counter() - start)
            assert result.structured_content["success"]
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Sokoban-v0")
    parser.add_argument("--steps", type=int, default=500, help="steps per protocol (whole oracle episodes)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    plan = oracle_steps(args.env, args.steps)
    probe = gym.make(args.env)
    calls = {command: tool_call(probe, command) for _, commands in plan for command in commands}
    probe.close()
    warmup = plan[:1]
    times: dict[str, list[float]] = {}
    with (
        serving_in_thread(create_app([args.env])) as serve_url,
        serving_in_thread(EnvMCPServer(args.env).http_app()) as mcp_base,
    ):
        mcp_url = f"{mcp_base}/mcp"
        time_steps(gym.make(args.env), warmup), time_steps(RemoteEnv(serve_url, args.env), warmup)
        asyncio.run(time_openenv(serve_url, args.env, warmup, calls)), asyncio.run(time_mcp(mcp_url, warmup, calls))
        times["local"] = time_steps(gym.make(args.env), plan)
        times["RemoteEnv"] = time_steps(RemoteEnv(serve_url, args.env), plan)
        times["OpenEnv"] = asyncio.run(time_openenv(serve_url, args.env, plan, calls))
        times["MCP"] = asyncio.run(time_mcp(mcp_url, plan, calls))

    base = statistics.median(times["RemoteEnv"])
    rows, data = [], {"env": args.env, "steps": len(times["local"]), "protocols": {}}
    for name, values in times.items():
        median, mean = statistics.median(values), statistics.fmean(values)
        data["protocols"][name] = {"median_us": median * 1e6, "mean_us": mean * 1e6, "vs_remote_env": median / base}
        rows.append(f"| {name} | {median * 1e6:,.0f} | {mean * 1e6:,.0f} | {median / base:.2f} |")
    table = "\n".join(
        [
            f"Round trip per step on {args.env}, {len(times['local'])} steps per protocol (oracle episodes).",
            "",
            "| protocol | median µs | mean µs | median / RemoteEnv |",
            "|---|---:|---:|---:|",
            *rows,
        ]
    )
    print(table)
    if not args.no_write:
        record(
            "protocol_latency",
            "Protocol round-trip latency per step: MCP and OpenEnv vs RemoteEnv",
            "servers on loopback in threads of one process, one client at a time",
            table,
            data,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
