"""The server's HTTP app: :func:`create_app` builds the FastAPI app of an :class:`~agentgym.serving.sessions.EnvServer`
(its routes, error answers, body limit, key check, OpenAPI document and channels) and runs its housekeeping.

FastAPI is imported only inside :func:`create_app`, so that ``agentgym serve``'s options load without it; this
module does without ``from __future__ import annotations``, as FastAPI reads the handlers' annotations at run time.
"""

import asyncio
import functools
import importlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agentgym.serving.auth import CLIENT, ApiKeys, BodyLimit, Guard, Refusal, SessionQuotas, retry_after
from agentgym.serving.calls import CALLS, ProtocolError
from agentgym.serving.channels import BatchChannel, SessionChannel
from agentgym.serving.memory import memory_report, release_free_memory
from agentgym.serving.sessions import DEFAULT_MAX_PYTHON_CALLS, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_TTL_S, EnvServer
from agentgym.serving.wire import encode_json
from agentgym.utils.processes import lower_descendants

if TYPE_CHECKING:
    from fastapi import FastAPI

DEFAULT_MAX_BODY_BYTES = 8 * 2**20
DEFAULT_MAX_MESSAGE_BYTES = 8 * 2**20


def create_app(
    env_ids: Sequence[str],
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_ttl_s: float = DEFAULT_SESSION_TTL_S,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    inline: bool = True,
    family_concurrency: Mapping[str, int] | None = None,
    api_keys: Sequence[str] = (),
    quotas: SessionQuotas | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    env_nice: int = 0,
    max_python_calls: int | None = DEFAULT_MAX_PYTHON_CALLS,
) -> "FastAPI":
    """The server app for ``env_ids`` (ids or patterns); ``app.state.server`` is its :class:`EnvServer`.

    ``session_ttl_s`` 0 never reaps; ``inline=False`` runs every env call on a session
    thread, even for envs whose metadata sets ``inline_safe``. A family that declares
    ``max_concurrency`` holds at most that many sessions (``family_concurrency`` overrides, by
    family or id); more get HTTP 429 like sessions over ``max_sessions``. With ``api_keys``, every
    route and channel but ``/health`` needs one; ``quotas`` are each client's (default
    :class:`~agentgym.serving.auth.SessionQuotas`'s); channel messages over ``max_message_bytes`` get 413. The
    processes below this one run ``env_nice`` nice steps below its priority (Linux, every 2 s; 0: as started): for
    a process that only serves, as ``agentgym serve`` (:data:`~agentgym.serving.sessions.DEFAULT_ENV_NICE`); an
    app run inside another program would lower that program's other children too. At most ``max_python_calls``
    session calls that run Python here (rather than wait on another process) run at once (None: no limit).
    """
    from fastapi import FastAPI, Request, Response
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException
    from starlette.routing import WebSocketRoute

    from agentgym import __version__
    from agentgym.serving import api

    server = EnvServer(
        env_ids,
        max_sessions=max_sessions,
        session_ttl_s=session_ttl_s,
        inline=inline,
        family_concurrency=family_concurrency,
        quotas=quotas,
        env_nice=env_nice,
        max_python_calls=max_python_calls,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        housekeeping = asyncio.create_task(_keep_house(server))
        lag_watch = asyncio.create_task(server.loop_lag.watch())
        renice = asyncio.create_task(_lower_env_processes(server))
        try:
            yield
        finally:
            for task in (housekeeping, lag_watch, renice):
                task.cancel()
            await server.close_all()

    # Bodies without a content type are read as JSON, as before the routes had models.
    app = FastAPI(
        title="agentgym env server",
        version=__version__,
        description=api.DESCRIPTION,
        lifespan=lifespan,
        strict_content_type=False,
    )
    app.state.server = server
    # OpenEnv's routes (docs/integrations.md), named, not imported: the integration sits above serving.
    openenv_routes = LazyMount("agentgym.integrations.openenv:create_router", server.env_ids, server.max_sessions)
    app.mount("/openenv", openenv_routes)

    def answer(payload: bytes, status: int = 200) -> Response:
        return Response(payload, status_code=status, media_type="application/json")

    def error_response(error: ProtocolError, headers: Mapping[str, str] | None = None) -> Response:
        server.errors[error.type] += 1
        headers = {**(headers or {}), **({"Retry-After": retry_after(error)} if error.status == 429 else {})}
        return Response(error.body(), status_code=error.status, media_type="application/json", headers=headers)

    @app.exception_handler(ProtocolError)
    async def server_error(_: Request, error: ProtocolError) -> Response:
        return error_response(error)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        kind = {404: "NotFound", 405: "MethodNotAllowed", 413: "PayloadTooLarge"}.get(error.status_code, "HTTPError")
        headers = dict(error.headers or {})
        methods = allowed_methods(app, request.url.path) if error.status_code == 405 else set()
        if methods:  # Starlette names the methods of one route; a path may have several
            headers["Allow"] = ", ".join(sorted(methods))
        return error_response(ProtocolError(error.status_code, kind, str(error.detail)), headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> Response:
        return error_response(request_error(error.errors()))

    @app.exception_handler(Exception)
    async def internal_error(_: Request, error: Exception) -> Response:
        return error_response(ProtocolError(500, "InternalError", f"{type(error).__name__}: {error}"))

    def refusal_body(refusal: Refusal) -> bytes:
        server.errors[refusal.type] += 1
        return ProtocolError(refusal.status, refusal.type, refusal.message).body()

    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes, refuse=error_response)
    # Outermost: a request without a key is refused before anything reads it. ChannelsFirst guards the channels.
    app.state.guard = functools.partial(Guard, keys=ApiKeys(api_keys) if api_keys else None, render=refusal_body)
    app.add_middleware(app.state.guard)
    generate_openapi = app.openapi
    app.openapi = lambda: app.openapi_schema or api.secure_openapi(api.tidy_openapi(generate_openapi()))  # type: ignore[method-assign]

    def body_of(model: Any) -> dict[str, Any]:
        """A validated request body as the JSON object the session calls read ({} for none)."""
        return {} if model is None else model.model_dump(mode="json", exclude_unset=True)

    @app.get("/health", response_model=api.Health, responses=api.errors(500), operation_id="health")
    async def health() -> Response:
        """200 while the server runs, with the served ids."""
        return answer(encode_json({"status": "ok", "envs": server.env_ids, "sessions": len(server.sessions)}))

    @app.get("/metrics", response_model=api.Metrics, responses=api.errors(500), operation_id="metrics")
    async def metrics() -> Response:
        """Counters, open sessions, resident memory and the event loop's lag."""
        return answer(encode_json(server.metrics()))

    @app.get("/memory", response_model=api.Memory, responses=api.errors(500), operation_id="memory")
    async def memory() -> Response:
        """Where the server's memory is: malloc's heap, Python's objects by type (walks every object)."""
        return answer(encode_json(memory_report()))

    @app.post(
        "/sessions",
        status_code=201,
        response_model=api.SessionCreated,
        responses={**api.errors(*api.BODY_ERRORS, 404, 429, 501), 201: {"links": api.SESSION_LINKS}},
        operation_id="create_session",
    )
    async def create_session(body: api.CreateSessionRequest, request: Request) -> Response:
        """Open a session: make the env (``gym.make``) and describe it."""
        return answer(encode_json(await server.create(body_of(body), request.scope.get(CLIENT, ""))), 201)

    @app.get("/sessions", response_model=api.SessionList, responses=api.errors(500), operation_id="list_sessions")
    async def list_sessions() -> Response:
        """The open sessions."""
        now = time.monotonic()
        return answer(encode_json({"sessions": [session.summary(now) for session in server.sessions.values()]}))

    @app.delete(
        "/sessions/{session_id}", response_model=api.SessionClosed, responses=api.errors(404, 500), operation_id="close"
    )
    async def close_session(session_id: str) -> Response:
        """Close a session and its env."""
        await server.close(session_id)
        return answer(encode_json({"closed": session_id}))

    for name in CALLS:  # a call without models in api.CALL_ROUTES takes and answers any object
        request_model, response_model, statuses, summary = api.CALL_ROUTES.get(name, api.UNTYPED_CALL)
        app.post(
            f"/sessions/{{session_id}}/{name}",
            response_model=response_model,
            responses=api.errors(*sorted({*statuses, *api.SESSION_ERRORS})),
            summary=summary,
            operation_id=name,
        )(session_call(server, name, request_model, body_of, answer))

    # A raw ASGI app, not a decorated function: each message skips Starlette's WebSocket wrapper.
    channel = SessionChannel(server, max_message_bytes)
    app.router.routes.append(WebSocketRoute("/sessions/{session_id}/channel", channel))
    app.router.routes.append(WebSocketRoute("/batch", BatchChannel(server, max_message_bytes)))
    return app


def session_call(server: EnvServer, name: str, request_model: Any, body_of: Callable, answer: Callable) -> Callable:
    """The route handler of session call ``name`` (FastAPI reads its body's model from the signature)."""
    if request_model is None:

        async def call(session_id: str) -> Any:
            return answer(await server.call(session_id, name, {}))

    elif any(field.is_required() for field in request_model.model_fields.values()):

        async def call(session_id: str, body: request_model) -> Any:  # type: ignore[valid-type]
            return answer(await server.call(session_id, name, body_of(body)))

    else:  # every field optional: so is the body

        async def call(session_id: str, body: request_model | None = None) -> Any:  # type: ignore[valid-type]
            return answer(await server.call(session_id, name, body_of(body)))

    call.__name__ = f"{name}_session"
    return call


def allowed_methods(app: Any, path: str) -> set[str]:
    """The methods of every route of ``app`` whose path matches ``path``."""
    return {
        method
        for route in app.routes
        if getattr(route, "methods", None) and route.path_regex.fullmatch(path)
        for method in route.methods
    }


def request_error(errors: Sequence[Any]) -> ProtocolError:
    """The error for a request body FastAPI refused: 400 when it is not JSON, else 422 naming each field."""
    if any(error.get("type") == "json_invalid" for error in errors):
        details = "; ".join(str(error.get("ctx", {}).get("error", "")) for error in errors)
        return ProtocolError(400, "InvalidJSON", f"the body is not valid JSON: {details}")
    problems: dict[str, list[str]] = {}
    for error in errors:
        # The location in the body, without pydantic's names of union members ("literal[-1]", "int", ...).
        where = ".".join(str(part) for part in error.get("loc", ())[1:] if not _UNION_MEMBER.search(str(part)))
        problems.setdefault(f"field {where!r}" if where else "the body", []).append(error.get("msg", "invalid"))
    message = "; ".join(f"{where}: {' or '.join(m)}" for where, m in problems.items())
    return ProtocolError(422, "InvalidRequest", message)


_UNION_MEMBER = re.compile(r"[\[\]()]|^(int|str|float|bool|dict|list|none|tuple)$")


async def _keep_house(server: EnvServer) -> None:
    """Every few seconds: reap the sessions idle past the TTL (when there is one), and once sessions have
    closed since the last time, hand the memory their envs freed back to the system (:func:`release_free_memory`)."""
    interval = min(server.session_ttl_s / 4, 10.0) if server.session_ttl_s > 0 else 10.0
    closed_before = 0
    while True:
        await asyncio.sleep(interval)
        if server.session_ttl_s > 0:
            await server.reap()
        closed = sum(server.counts[key] for key in ("sessions_closed", "sessions_reaped", "sessions_failed"))
        if closed != closed_before:
            closed_before = closed
            if await asyncio.to_thread(release_free_memory):
                server.counts["memory_releases"] += 1


#: How often the server lowers the priority of the processes its envs have started since (seconds).
RENICE_EVERY_S = 2.0


async def _lower_env_processes(server: EnvServer) -> None:
    """Every :data:`RENICE_EVERY_S`: the processes the envs have started (and their threads) ``env_nice`` steps
    below the server (:func:`~agentgym.utils.processes.lower_descendants`, in a thread: it walks ``/proc``); the
    server's own helpers (``server.helper_pids``) stay at its priority."""
    while server.env_nice > 0:
        await asyncio.to_thread(lower_descendants, server.env_nice, None, set(server.helper_pids))
        await asyncio.sleep(RENICE_EVERY_S)


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
            await send(
                {"type": "http.response.start", "status": 501, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})

    def _build(self) -> Any:
        module, _, function = self.factory.partition(":")
        return getattr(importlib.import_module(module), function)(*self.args)
