"""Adapters that put agentgym envs on other frameworks' and protocols' paths.

One module per protocol, each importing its library (install the matching extra):

* :mod:`agentgym.integrations.mcp` - ``agentgym mcp ENV_ID``: an env as an MCP server
  (``pip install 'agentgym[mcp]'``);
* :mod:`agentgym.integrations.openenv` - OpenEnv's routes on ``agentgym serve`` and an
  OpenEnv client class (``agentgym[openenv]``);
* :mod:`agentgym.integrations.verifiers` - ``load_environment(env_id, ...)`` for
  Prime Intellect's verifiers (``agentgym[verifiers]``);
* :mod:`agentgym.integrations.skyrl` - every id as a skyrl-gym text env, ``agentgym:<ID>`` in
  its registry (``agentgym[skyrl]``; docs/train-with-skyrl.md);
* :mod:`agentgym.integrations.openrlhf` - ``AgentGymExecutor``, OpenRLHF's multi-turn agent
  executor (``--train.agent_func_path``; docs/train-with-openrlhf.md).
* :mod:`agentgym.integrations.verl` - ``AgentGymAgentLoop``, verl's agent loop ``"agentgym"``
  (verl installs apart: docs/train-with-verl.md, :mod:`agentgym.integrations.venvs`).

``import agentgym`` imports none of them. See docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from typing import Any


class LazyMount:
    """An ASGI app built on its first request by ``factory(*args)`` (``"module:function"``).

    Mounted where a protocol's routes should not cost their imports at server start
    (``agentgym serve`` mounts OpenEnv's this way). If the factory's library is missing,
    HTTP requests get 501 with a JSON error naming the extra to install, and WebSockets
    are closed with that reason.
    """

    def __init__(self, factory: str, *args: Any, extra: str = "openenv") -> None:
        self.factory, self.args, self.extra = factory, args, extra
        self.app: Any = None
        self.error: str | None = None
        self._building: asyncio.Lock | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return
        if self.app is None and self.error is None:
            self._building = self._building or asyncio.Lock()
            async with self._building:  # imports run on a thread: other routes keep being served
                if self.app is None and self.error is None:
                    try:
                        self.app = await asyncio.to_thread(self._build)
                    except ImportError as error:
                        self.error = f"{error}; install it with: pip install 'agentgym[{self.extra}]'"
        if self.app is not None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1011, "reason": self.error[:120]})
        else:
            body = json.dumps({"error": {"type": "NotImplemented", "message": self.error}}).encode()
            await send({"type": "http.response.start", "status": 501, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})

    def _build(self) -> Any:
        module, _, function = self.factory.partition(":")
        return getattr(importlib.import_module(module), function)(*self.args)
