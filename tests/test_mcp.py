"""``agentgym mcp``: an env served to the official MCP SDK's own client, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'agentgym[mcp]')")

from asgi import serving_in_thread  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.contract.tools import command_to_tool_call  # noqa: E402
from agentgym.integrations.mcp import EPISODE_URI, EnvMCPServer, parse_kwargs  # noqa: E402

ENV_ID = "Sokoban-v0"
TASK_ID = 3


async def play_oracle_episode(client: Client, task_id: int = TASK_ID) -> list[dict[str, Any]]:
    """Play the oracle's commands, mapped onto the env's tools, through ``client``; check each
    result against a local env stepped in lockstep. Returns the structured results."""
    local = gym.make(ENV_ID)
    observation, _ = local.reset(options={"task_id": task_id})
    first = await client.call_tool("reset", {"task_id": task_id})
    assert not first.is_error and first.content[0].text == observation
    results = [first.structured_content]
    for _ in range(100):
        command = local.unwrapped.oracle_action()
        call = command_to_tool_call(local.unwrapped.tool_specs(), command)
        assert call is not None, f"the oracle's {command!r} maps onto no tool"
        answer = await client.call_tool(call.name, call.arguments)
        observation, reward, terminated, truncated, info = local.step(command)
        result = answer.structured_content
        assert answer.content[0].text == result["observation"] == observation
        assert (result["reward"], result["terminated"], result["truncated"]) == (reward, terminated, truncated)
        assert result["score"] == info["score"] and not answer.is_error
        results.append(result)
        if terminated or truncated:
            break
    local.close()
    return results


def test_stdio_full_episode_malformed_call_and_score() -> None:
    async def scenario() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "agentgym.cli", "mcp", ENV_ID])
        async with Client(stdio_client(params)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"reset", "move"}
            assert tools["move"].input_schema["properties"]["direction"]["enum"] == ["up", "down", "left", "right"]
            before = json.loads((await client.read_resource(EPISODE_URI)).contents[0].text)
            assert before["started"] is False
            early = await client.call_tool("move", {"direction": "up"})
            assert early.is_error and "reset" in early.content[0].text

            await client.call_tool("reset", {"task_id": TASK_ID})
            bad = await client.call_tool("move", {"direction": "sideways"})
            assert bad.is_error and bad.structured_content["invalid_action"]
            assert "up" in bad.content[0].text and bad.structured_content["reward"] == 0.0
            with pytest.raises(MCPError, match="unknown tool"):
                await client.call_tool("fly", {})
            bad_reset = await client.call_tool("reset", {"task_id": 10**9})
            assert bad_reset.is_error and "task_id" in bad_reset.content[0].text

            results = await play_oracle_episode(client)
            assert results[-1]["success"] and results[-1]["score"] == 1.0 and results[-1]["terminated"]
            episode = json.loads((await client.read_resource(EPISODE_URI)).contents[0].text)
            assert episode == {
                "env_id": ENV_ID,
                "started": True,
                "task_id": TASK_ID,
                "split": "train",
                "steps": results[-1]["steps"],
                "score": 1.0,
                "success": True,
                "terminated": True,
                "truncated": False,
            }

    asyncio.run(scenario())


def test_http_concurrent_sessions_are_isolated_and_closed() -> None:
    server = EnvMCPServer(ENV_ID)
    closed: list[int] = []

    async def scenario(url: str) -> None:
        async with Client(url) as first, Client(url) as second:
            one = await first.call_tool("reset", {"task_id": 1})
            two = await second.call_tool("reset", {"task_id": 2})
            assert one.structured_content["task_id"] == 1 and two.structured_content["task_id"] == 2
            await first.call_tool("move", {"direction": "up"})
            states = [json.loads((await c.read_resource(EPISODE_URI)).contents[0].text) for c in (first, second)]
            assert [(s["task_id"], s["steps"]) for s in states] == [(1, 1), (2, 0)]
            # Both sessions play full episodes at once, each on its own env.
            results = await asyncio.gather(play_oracle_episode(first, 4), play_oracle_episode(second, 5))
            assert all(r[-1]["success"] for r in results)

    original_close = agentgym.integrations._session.EnvSession.close

    async def counting_close(self: Any) -> None:
        closed.append(id(self))
        await original_close(self)

    agentgym.integrations._session.EnvSession.close = counting_close  # type: ignore[method-assign]
    try:
        with serving_in_thread(server.http_app()) as base:
            asyncio.run(scenario(f"{base}/mcp"))
            # The clients delete their sessions on exit; the server closes their envs.
            for _ in range(200):
                if len(closed) == 2:
                    break
                asyncio.run(asyncio.sleep(0.01))
    finally:
        agentgym.integrations._session.EnvSession.close = original_close  # type: ignore[method-assign]
    assert len(set(closed)) == 2


def test_kwargs_and_bad_ids() -> None:
    assert parse_kwargs(["size=7", "name=box", 'opts={"a": 1}']) == {"size": 7, "name": "box", "opts": {"a": 1}}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_kwargs(["size"])
    from agentgym.integrations.mcp import main

    assert main(["No-Such-Env-v0"]) == 2
