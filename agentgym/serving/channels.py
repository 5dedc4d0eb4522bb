"""The server's WebSocket channels as raw ASGI apps: a session's channel (:class:`SessionChannel`), the batch
channel (:class:`BatchChannel`), and :class:`ChannelsFirst`, which hands a channel connection straight to its
endpoint, past the app's middleware. Each message ends in :meth:`~agentgym.serving.sessions.EnvServer.answer_call`
(docs/serving.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from agentgym.serving.calls import ProtocolError
from agentgym.serving.sessions import EnvServer
from agentgym.serving.wire import CHANNEL_SESSION_GONE


class ChannelsFirst:
    """The server app as ``agentgym serve`` runs it: a WebSocket connection to a channel route goes
    straight to its endpoint, everything else through the app.

    A channel's messages then skip FastAPI's middleware stack, whose layers each wrapped every
    ``send`` and were passed through at every resume of the channel's task (about 12% of the
    session channel's server time per step, ``benchmarks/server_throughput.py``). The routes are the
    app's own (its WebSocket routes, matched by Starlette), so the app alone serves the same; each is
    behind the app's key check (``app.state.guard``), which runs once, when the channel opens.
    """

    def __init__(self, app: Any) -> None:
        from starlette.routing import Match, WebSocketRoute

        self.app = app
        routes = [route for route in app.router.routes if isinstance(route, WebSocketRoute)]
        self.channels = [(route, app.state.guard(route.app)) for route in routes]
        self._full_match = Match.FULL

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] == "websocket":
            for route, guarded in self.channels:
                match, child_scope = route.matches(scope)
                if match is self._full_match:
                    return await guarded({**scope, **child_scope}, receive, send)
        await self.app(scope, receive, send)


class BatchChannel:
    """The ASGI app of the batch channel: each message calls of many sessions, answered in order (docs/serving.md)."""

    def __init__(self, server: EnvServer, max_message_bytes: int) -> None:
        self.server, self.max_message_bytes = server, max_message_bytes

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        with contextlib.suppress(OSError):  # the client left mid-reply (uvicorn raises ClientDisconnected)
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":  # websocket.disconnect
                    return
                data = message.get("text")
                data = data if data is not None else message.get("bytes") or b""
                reply = await self.server.batch_message(data, self.max_message_bytes)
                await send({"type": "websocket.send", "text": reply})


class SessionChannel:
    """The ASGI app of a session's WebSocket channel: each message one call, answered in order (docs/serving.md)."""

    def __init__(self, server: EnvServer, max_message_bytes: int) -> None:
        self.server, self.max_message_bytes = server, max_message_bytes

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        server, session_id = self.server, scope["path_params"]["session_id"]
        if (await receive())["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        try:
            session = server.get(session_id)
        except ProtocolError as error:
            await send({"type": "websocket.send", "text": server.channel_error(error).decode()})
            return await send({"type": "websocket.close", "code": CHANNEL_SESSION_GONE, "reason": "no such session"})
        busy = False

        def close_channel() -> None:  # the session closed: end an idle channel now, a busy one after its reply
            if not busy:
                asyncio.ensure_future(_close_quietly(send, CHANNEL_SESSION_GONE, "session closed"))

        session.channel_closers.add(close_channel)
        try:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":  # websocket.disconnect
                    return
                busy = True
                data = message.get("text")
                reply, close_code = await server.channel_message(
                    session_id, data if data is not None else message.get("bytes") or b"", self.max_message_bytes
                )
                await send({"type": "websocket.send", "text": reply})
                if close_code is None and server.sessions.get(session_id) is not session:
                    close_code = CHANNEL_SESSION_GONE
                if close_code is not None:
                    return await send({"type": "websocket.close", "code": close_code, "reason": ""})
                busy = False
        except OSError:  # the client left mid-reply (uvicorn raises ClientDisconnected, an OSError)
            return
        finally:
            session.channel_closers.discard(close_channel)


async def _close_quietly(send: Callable, code: int, reason: str) -> None:
    with contextlib.suppress(Exception):  # the channel is closed or gone already
        await send({"type": "websocket.close", "code": code, "reason": reason})
