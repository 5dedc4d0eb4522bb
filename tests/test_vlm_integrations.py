"""Screenshots through the integrations: MCP results carry a screen env's screenshot as image content
(the SDK's own client, over streamable HTTP), OpenEnv observations carry it as a PNG data URL; text
envs' results carry no image."""

from __future__ import annotations

import asyncio
import base64
import io

import numpy as np
import pytest

pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.images import decode_image  # noqa: E402

ENV_ID = "MiniWoB-click-button-v0"


def test_mcp_results_carry_the_screenshot_as_image_content() -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from asgi import serving_in_thread
    from mcp.client import Client

    from agentgym.integrations.mcp import EnvMCPServer

    screen_server, text_server = EnvMCPServer(ENV_ID, {"screenshot": True}), EnvMCPServer("Sokoban-v0")

    async def first_results(url: str) -> list:
        async with Client(url) as client:
            reset = await client.call_tool("reset", {"task_id": 0})
            tools = {tool.name for tool in (await client.list_tools()).tools}
            step = await client.call_tool("scroll", {"direction": "down"}) if "scroll" in tools else None
            return [reset, step]

    with serving_in_thread(screen_server.http_app()) as base:
        reset, step = asyncio.run(first_results(f"{base}/mcp"))
    for result in (reset, step):
        assert result is not None and [part.type for part in result.content] == ["text", "image"]
        image = result.content[1]
        assert image.mime_type == "image/png"
        pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.data))))
        assert pixels.shape == (400, 500, 3) and pixels.std() > 0  # the whole page, full size
    with serving_in_thread(text_server.http_app()) as base:
        reset, _ = asyncio.run(first_results(f"{base}/mcp"))
    assert [part.type for part in reset.content] == ["text"]


def test_openenv_observations_carry_the_screenshot() -> None:
    pytest.importorskip("openenv", reason="the openenv extra is not installed")
    from agentgym.integrations.openenv import AgentGymAction, AgentGymEnvironment

    env = AgentGymEnvironment(ENV_ID, {"screenshot": True})
    try:
        first = env.reset(task_id=0)
        after = env.step(AgentGymAction(text="scroll(down)"))
    finally:
        env.close()
    for observation in (first, after):
        assert observation.image is not None and decode_image(observation.image).size == (500, 400)
    text_env = AgentGymEnvironment("Sokoban-v0")
    try:
        assert text_env.reset(task_id=0).image is None
    finally:
        text_env.close()
