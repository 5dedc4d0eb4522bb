"""An agentgym env as an MCP server: ``agentgym mcp ENV_ID [--transport stdio|http]``.

Built on the official ``mcp`` SDK's low-level server (``pip install 'agentgym[mcp]'``).
Every MCP session plays its own env (made on the session's first request, closed when
the session ends: the stdio process exits, the HTTP client deletes its session, or the
session idles past ``--session-ttl``). The server offers:

* **tools**: ``reset(task_id?, split?, seed?)`` starts an episode; the env's own
  function tools (``TextEnv.tools()``, e.g. Sokoban's ``move(direction)``) play one step
  each. Every result is the observation as text content (and, for a screen env, its
  screenshot as PNG image content: ``agentgym mcp MiniWoB-click-button-v0 screenshot=true``,
  or Desktop-v0) plus structured content
  ``{"observation", "reward", "terminated", "truncated", "score", "success",
  "invalid_action", "task_id", "steps"}`` (the tools' ``outputSchema``). A call the env
  cannot execute (arguments that miss the schema, an illegal move) is a result with
  ``isError: true`` whose text says why, as the env's observation does, and the episode
  goes on. A tool the env does not have is a protocol error (invalid params).
* **resource** ``agentgym://episode``: the episode's state as JSON (env id, task id,
  split, steps, score, success, terminated, truncated), for harnesses that score episodes.

Sessions need a connection that lasts: over HTTP, the SDK's stateful streamable-HTTP
sessions (``Mcp-Session-Id``). The 2026-07-28 protocol serves each HTTP request on its
own, so over HTTP this server answers ``server/discover`` with the handshake versions
only, and a client in ``mode="auto"`` (the SDK's default) falls back to the
``initialize`` handshake; a client pinned to the stateless protocol is told so. Over
stdio both eras work (the process is the session).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from agentgym.contract.core import SPLIT_NAMES
from agentgym.contract.registry import env_info
from agentgym.images import ImageOptions, encode_screenshot
from agentgym.integrations._session import STEP_RESULT_SCHEMA, EnvSession, make_env

#: The resource that holds the session's episode state.
EPISODE_URI = "agentgym://episode"
RESET_TOOL = "reset"
_STATE_KEY = "agentgym.session"

RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task_id": {"type": "integer", "minimum": 0, "description": "play this task (default: one drawn from split)"},
        "split": {"type": "string", "enum": list(SPLIT_NAMES), "description": "draw a task of this split (train)"},
        "seed": {"type": "integer", "description": "seed of the env's generator (draws of tasks and randomness)"},
    },
    "additionalProperties": False,
}


class EnvMCPServer:
    """The MCP server of one env id: ``server`` is the SDK's low-level :class:`~mcp.server.lowlevel.Server`.

    ``env_kwargs`` go to every session's ``gym.make``; ``max_episode_steps`` overrides the
    registered limit. Serve it with :meth:`run_stdio` or :meth:`http_app`.
    """

    def __init__(
        self, env_id: str, env_kwargs: dict[str, Any] | None = None, *, max_episode_steps: int | None = None
    ) -> None:
        info = env_info(env_id)
        self.env_id, self.env_kwargs, self.max_episode_steps = info.id, dict(env_kwargs or {}), max_episode_steps
        probe = make_env(self.env_id, self.env_kwargs, max_episode_steps)  # fails early on bad kwargs
        try:
            declared = getattr(probe.unwrapped, "tools", None)
            self.env_tools = declared() if callable(declared) else []
        finally:
            probe.close()
        self.tool_names = {tool["function"]["name"] for tool in self.env_tools}
        self._process_session: EnvSession | None = None
        if RESET_TOOL in self.tool_names:
            raise ValueError(f"{self.env_id} declares a tool named {RESET_TOOL!r}, which this server reserves")
        self.server: Server[Any] = Server(
            "agentgym",
            version=_version(),
            title=f"agentgym {self.env_id}",
            instructions=(
                f"The agentgym environment {self.env_id} ({info.description}). Call `reset` to start an episode "
                "(optionally with task_id, split or seed); its result holds the task and how to act. Then call the "
                "environment's tools, one per step: each result holds the next observation, the step's reward, "
                "whether the episode terminated or was truncated, and the score so far (in [0, 1]). "
                f"The resource {EPISODE_URI} holds the episode's state."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )

    # ---- handlers ----------------------------------------------------------------------

    async def _discover(self, ctx: Any, params: types.RequestParams) -> types.DiscoverResult:
        # Handshake versions only: episodes live in a session, which the stateless era has not.
        return types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(),
            instructions=self.server.instructions,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        reset = types.Tool(
            name=RESET_TOOL,
            description="Start a new episode and return its first observation (the task and how to act).",
            input_schema=RESET_SCHEMA,
            output_schema=STEP_RESULT_SCHEMA,
        )
        tools = [
            types.Tool(
                name=tool["function"]["name"],
                description=tool["function"].get("description") or None,
                input_schema=tool["function"].get("parameters") or {"type": "object", "properties": {}},
                output_schema=STEP_RESULT_SCHEMA,
            )
            for tool in self.env_tools
        ]
        return types.ListToolsResult(tools=[reset, *tools])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != RESET_TOOL and params.name not in self.tool_names:
            names = ", ".join([RESET_TOOL, *sorted(self.tool_names)])
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}; the tools are {names}")
        session = self._session(ctx)
        arguments = params.arguments or {}
        async with session.lock:
            if params.name == RESET_TOOL:
                return await self._reset(session, arguments)
            if session.last is None:
                return _error("No episode is running: call the `reset` tool first.")
            result = await session.step({"name": params.name, "arguments": arguments})
        return types.CallToolResult(
            content=_content(session, result), structured_content=result, is_error=result["invalid_action"]
        )

    async def _reset(self, session: EnvSession, arguments: dict[str, Any]) -> types.CallToolResult:
        unknown = set(arguments) - set(RESET_SCHEMA["properties"])
        if unknown:
            return _error(f"reset takes task_id, split and seed; unexpected: {', '.join(sorted(unknown))}")
        task_id, split, seed = arguments.get("task_id"), arguments.get("split"), arguments.get("seed")
        for name, value in (("task_id", task_id), ("seed", seed)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                return _error(f"reset: {name} must be an integer, got {json.dumps(value)}")
        if split is not None and split not in SPLIT_NAMES:
            return _error(f"reset: split must be one of {', '.join(SPLIT_NAMES)}, got {json.dumps(split)}")
        try:
            result = await session.reset(seed=seed, task_id=task_id, split=split)
        except (TypeError, ValueError) as error:  # a task id out of range
            return _error(f"reset: {error}")
        return types.CallToolResult(content=_content(session, result), structured_content=result)

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=EPISODE_URI,
                    name="episode",
                    description="This session's episode: env id, task id, split, steps, score, success, "
                    "terminated, truncated (started false before the first reset).",
                    mime_type="application/json",
                )
            ]
        )

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if str(params.uri) != EPISODE_URI:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri}; this server has {EPISODE_URI}")
        session = self._session(ctx)
        last = session.last or {}
        state = {
            "env_id": self.env_id,
            "started": session.last is not None,
            **{key: last.get(key) for key in ("task_id", "steps", "score", "success", "terminated", "truncated")},
        }
        if session.env is not None and session.last is not None:
            state["split"] = getattr(session.env.unwrapped, "split", None)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=EPISODE_URI, mime_type="application/json", text=json.dumps(state))]
        )

    def _session(self, ctx: Any) -> EnvSession:
        """The env session of the MCP connection ``ctx`` belongs to (made on its first request)."""
        if self._process_session is not None:  # stdio: the process serves one client
            return self._process_session
        # The SDK keeps per-connection state and teardown on its Connection, which the
        # low-level handlers reach only through the request's session object.
        connection = getattr(ctx.session, "_connection", None)
        if connection is None:
            raise RuntimeError("this version of the mcp SDK does not expose the connection to handlers")
        if connection.session_id is None and not connection.has_standalone_channel:
            raise MCPError(
                types.INVALID_REQUEST,
                "this server keeps one episode per MCP session; connect with the initialize handshake "
                "(a stateful streamable-HTTP session) instead of stateless 2026-07-28 requests",
            )
        session = connection.state.get(_STATE_KEY)
        if session is None:
            session = EnvSession(self.env_id, self.env_kwargs, self.max_episode_steps)
            connection.state[_STATE_KEY] = session
            connection.exit_stack.push_async_callback(session.close)
        return session

    # ---- transports ---------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it disconnects."""
        from mcp.server.stdio import stdio_server

        # One env for the process: the 2026-07-28 era builds a connection per request even on stdio.
        self._process_session = EnvSession(self.env_id, self.env_kwargs, self.max_episode_steps)
        try:
            async with stdio_server() as (read_stream, write_stream):
                await self.server.run(read_stream, write_stream, self.server.create_initialization_options())
        finally:
            session, self._process_session = self._process_session, None
            await session.close()

    def http_app(self, *, host: str = "127.0.0.1", session_ttl_s: float | None = 600.0, path: str = "/mcp") -> Any:
        """A Starlette app serving streamable HTTP at ``path``; sessions idle ``session_ttl_s`` are closed.

        On a loopback ``host`` the SDK's DNS-rebinding protection admits loopback hosts only.
        """
        from starlette.applications import Starlette
        from starlette.routing import Route

        security = None
        if host in ("127.0.0.1", "localhost", "::1"):
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
            )
        # Over HTTP the 2026-07-28 era serves each request alone: steer clients to sessions.
        self.server.add_request_handler("server/discover", types.RequestParams, self._discover)
        manager = StreamableHTTPSessionManager(
            app=self.server, security_settings=security, session_idle_timeout=session_ttl_s or None
        )
        return Starlette(
            routes=[Route(path, endpoint=StreamableHTTPASGIApp(manager))], lifespan=lambda _: manager.run()
        )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _version() -> str:
    from agentgym import __version__

    return __version__


def _content(session: EnvSession, result: dict[str, Any]) -> list[Any]:
    """A result's content: the observation's text, then its screenshot as a PNG image where it has one."""
    content: list[Any] = [types.TextContent(type="text", text=result["observation"])]
    if session.screenshot is not None:
        url, _ = encode_screenshot(session.screenshot, ImageOptions("screenshot", max_pixels=None))
        content.append(types.ImageContent(type="image", data=url.partition(",")[2], mime_type="image/png"))
    return content


def parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as env kwargs; a value is read as JSON when it parses (``size=7`` is an int)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"env kwargs are KEY=VALUE, got {pair!r}")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentgym mcp", description="serve an agentgym env to MCP clients (one env per MCP session)"
    )
    parser.add_argument("env_id", metavar="ENV_ID")
    parser.add_argument("kwargs", nargs="*", metavar="KEY=VALUE", help="env kwargs (values read as JSON if they parse)")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: interface to listen on")
    parser.add_argument("--port", type=int, default=8000, help="HTTP: port; 0 picks a free one (printed)")
    parser.add_argument("--path", default="/mcp", help="HTTP: the endpoint's path")
    parser.add_argument("--max-episode-steps", type=int, help="step limit (default: the registered one)")
    parser.add_argument(
        "--session-ttl",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="HTTP: close sessions idle this long (0: never)",
    )
    parser.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``agentgym mcp``."""
    args = build_parser().parse_args(argv)
    try:
        server = EnvMCPServer(args.env_id, parse_kwargs(args.kwargs), max_episode_steps=args.max_episode_steps)
    except (ValueError, TypeError, KeyError) as error:
        print(f"agentgym mcp: {error}", file=sys.stderr)
        return 2
    if args.transport == "stdio":
        anyio.run(server.run_stdio)
        return 0
    import uvicorn

    from agentgym.utils.sockets import listening_socket

    app = server.http_app(host=args.host, session_ttl_s=args.session_ttl, path=args.path)
    sock = listening_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    print(f"agentgym mcp: {server.env_id} on http://{host}:{port}{args.path}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level=args.log_level, access_log=False)).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
