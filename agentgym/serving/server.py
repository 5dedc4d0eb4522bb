"""The env server: many sessions of agentgym envs over HTTP (``agentgym serve ENV_ID ...``).

One generic server for every family; :class:`~agentgym.serving.client.RemoteEnv` is its client,
and the ``process`` and ``docker`` backends run it. JSON in, JSON out:

* ``POST /sessions`` ``{"env_id", "kwargs": {}, "max_episode_steps": null}`` makes an env
  with ``gym.make`` (``TimeLimit`` and ``OrderEnforcing`` applied here, the passive
  checker left to the client; ``max_episode_steps`` as in ``gym.make``: null for the
  registered limit, -1 for none) and answers 201 ``{"session_id", "env": {...}}``: id,
  kwargs, max_episode_steps, spaces, metadata, render_mode and splits, enough to rebuild
  the env's interface on the client.
* ``POST /sessions/{id}/reset`` ``{"seed", "options"}`` → ``{"observation", "info"}``;
  ``POST /sessions/{id}/step`` ``{"action"}`` (a text reply, or a tool call / assistant
  message object: docs/tool-calls.md) → ``{"observation", "reward", "terminated",
  "truncated", "info"}`` (a dict observation's numpy arrays, such as a screenshot, travel as
  ``{"__ndarray__": base64 of zlib-compressed bytes, "dtype", "shape"}``, see
  :func:`~agentgym.serving.wire.encode_observation`);
  ``.../render`` → ``{"render"}``; the baselines' calls
  ``.../oracle_action`` → ``{"action"}``, ``.../random_action`` ``{"seed"}`` or
  ``{"rng_state"}`` (a ``random.Random`` state, returned advanced) → ``{"action",
  "rng_state"}``, and ``.../available_actions`` → ``{"actions"}``. The env description
  holds ``tools``, the env's function tools (docs/tool-calls.md).
* ``DELETE /sessions/{id}`` closes the env; ``GET /sessions`` lists the open sessions.
* ``/sessions/{id}/channel`` is the session's WebSocket: each message ``{"call", "body", "id"}``
  is one session call (or ``close``), answered in order with ``{"status", "answer"}`` or
  ``{"status", "error"}`` (:meth:`EnvServer.channel_message`); when the session is gone the
  channel closes with code 4404.
* ``/batch`` is a WebSocket for calls of many sessions at once: each message ``{"calls":
  [{"session_id", "call", "body"}, ...], "id"}`` is answered with ``{"answers": [...], "id"}``,
  a channel reply per call, in order (:meth:`EnvServer.batch_message`); a vector env steps all
  its sessions in one round trip (:class:`~agentgym.serving.vector_client.RemoteVectorEnv`).
* ``GET /health`` (liveness and the served ids) and ``GET /metrics`` (sessions, calls,
  steps, errors by type, resident memory); ``GET /memory`` says where the memory is (Python's
  object count by type, glibc malloc's bytes in use and free): slower, for a leak hunt at rest.

Every error is JSON ``{"error": {"type", "message"}}``, never a traceback. Client
mistakes are 4xx: ``InvalidJSON`` 400, ``NotFound`` and ``UnknownEnv`` and
``UnknownSession`` 404, ``ResetNeeded`` 409 (a call before the first reset),
``PayloadTooLarge`` 413, ``Unauthorized`` 401 (a server with API keys, a request without a valid one),
``InvalidRequest`` 422 (a body that does not fit its model:
missing fields, wrong types), ``InvalidArgument`` 422 (a ``TypeError``/``ValueError`` from
the env's constructor or ``reset``, or an ``rng_state`` that is no state; ``"exception"``
names which), ``MethodNotAllowed`` 405 (with ``Allow``), ``TooManySessions`` and ``SessionRateLimited`` 429
(with ``Retry-After``). A session stays usable
after any of them. An env that raises anything else (or returns something JSON cannot
carry) gets ``EnvError`` 500 with ``"session_closed": true``: its session is closed
(``env.close()`` called) and removed, and the client may open a new one.
``NotImplemented`` 501 answers a baseline call the env does not support.

Each session has a lock, so its calls run one at a time. Env calls run on the event loop
for envs whose class metadata sets ``inline_safe`` (the puzzles; measured faster than a
thread hop, see ``benchmarks/server_throughput.py``), otherwise on a thread of the
session's own, so that envs bound to one thread (browsers) stay on it. A background task
closes sessions idle longer than the TTL. Values JSON cannot carry natively are
converted: numpy scalars and arrays to numbers and lists, tuples to lists.

Keys and per-client quotas (:mod:`agentgym.serving.auth`, docs/security.md): with API keys, every route and
channel but ``/health`` needs ``Authorization: Bearer KEY``, checked once per request or channel connection;
each client (its key, or its address without keys) opens sessions at a limited rate and may hold a limited
number. The server refuses to listen beyond loopback without a key unless allowed.

Every route's request and response bodies and error answers are pydantic models in
:mod:`agentgym.serving.api`, so the OpenAPI document (``GET /openapi.json``; ``agentgym
serve --openapi``; ``docs/openapi.json``) is complete; docs/serving.md is the reference.

The wire format is :mod:`agentgym.serving.wire`, shared with the clients, and the session
calls are :mod:`agentgym.serving.calls`, shared with the Ray backend's actor. The server is four
modules by concern below this one: the sessions (:mod:`agentgym.serving.sessions`), the memory
probes (:mod:`agentgym.serving.memory`), the FastAPI app and its routes (:mod:`agentgym.serving.app`)
and the raw WebSocket channels (:mod:`agentgym.serving.channels`); this module is the command line
(:func:`serve`, ``agentgym serve``, ``python -m agentgym.serving.server``) and keeps their public
names importable from here. FastAPI and uvicorn are imported only by :func:`create_app` and
:func:`serve`, so that the command-line options load without them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.contract.registry import parse_limits, prepare_env
from agentgym.serving.app import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_MESSAGE_BYTES, BodyLimit, create_app
from agentgym.serving.auth import (
    SessionQuotas,
    add_key_arguments,
    add_quota_arguments,
    check_exposure,
    keys_from_args,
    quotas_from_args,
)
from agentgym.serving.channels import BatchChannel, ChannelsFirst, SessionChannel
from agentgym.serving.memory import (
    SERVER_MALLOC_ARENAS,
    limit_malloc_arenas,
    malloc_bytes,
    memory_report,
    release_free_memory,
    rss_bytes,
)
from agentgym.serving.monitor import MetricsListener
from agentgym.serving.sessions import (
    DEFAULT_ENV_NICE,
    DEFAULT_MAX_PYTHON_CALLS,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_TTL_S,
    EnvServer,
    Session,
    resolve_env_ids,
)
from agentgym.utils.processes import forbid_raising_priority
from agentgym.utils.sockets import http_url, listening_socket, unix_socket

__all__ = [
    "DEFAULT_ENV_NICE",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_PYTHON_CALLS",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_TTL_S",
    "SERVER_MALLOC_ARENAS",
    "SERVER_SWITCH_INTERVAL_S",
    "SERVE_HELP",
    "BatchChannel",
    "BodyLimit",
    "ChannelsFirst",
    "EnvServer",
    "Session",
    "SessionChannel",
    "add_arguments",
    "create_app",
    "limit_malloc_arenas",
    "main",
    "malloc_bytes",
    "memory_report",
    "release_free_memory",
    "resolve_env_ids",
    "rss_bytes",
    "serve",
    "serve_from_args",
]

#: The server process's GIL switch interval (Python's default is 5 ms): a thread that wants the GIL asks its holder
#: to hand it over after this long, so the event loop waits less behind the sessions' threads.
SERVER_SWITCH_INTERVAL_S = 0.001

#: What ``agentgym serve`` does, in one line.
SERVE_HELP = "serve agentgym envs over HTTP: sessions for RemoteEnv and the process and docker backends"


def serve(
    env_ids: Sequence[str],
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_ttl_s: float = DEFAULT_SESSION_TTL_S,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    inline: bool = True,
    log_level: str = "info",
    fd: int | None = None,
    exit_with_fd: int | None = None,
    uds: str | None = None,
    family_concurrency: Mapping[str, int] | None = None,
    prepare: bool = True,
    api_keys: Sequence[str] = (),
    allow_unauthenticated: bool = False,
    quotas: SessionQuotas | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    env_nice: int = DEFAULT_ENV_NICE,
    max_python_calls: int | None = DEFAULT_MAX_PYTHON_CALLS,
    metrics_port: int | None = None,
) -> None:
    """Serve ``env_ids`` until interrupted (SIGINT/SIGTERM close every session first).

    Port 0 picks a free port; the URL is printed once the socket listens. ``fd`` serves
    on an inherited listening socket instead of binding ``host:port``, ``uds`` on a Unix
    socket at that path (the ``docker`` backend's way into a container without a network);
    with ``exit_with_fd``, the server exits when that pipe is closed (the ``process``
    backend passes ``fd`` and ``exit_with_fd``, the ``docker`` backend ``uds`` and
    ``exit_with_fd``). With ``prepare``, each served env's one-time preparation (site installs...)
    runs before the socket listens, so that no session pays for it. ``api_keys``, ``quotas``,
    ``max_message_bytes``, ``env_nice`` and ``max_python_calls`` are :func:`create_app`'s; without keys, a
    ``host`` beyond loopback is refused (``ValueError``) unless ``allow_unauthenticated``
    (:func:`~agentgym.serving.auth.check_exposure`). With ``metrics_port``, ``GET /metrics`` is also answered on
    that port of ``host`` (0: a free one) off the event loop (:class:`~agentgym.serving.monitor.MetricsListener`).
    """
    import uvicorn

    warning = None if uds is not None or fd is not None else check_exposure(host, api_keys, allow_unauthenticated)
    limit_malloc_arenas()
    sys.setswitchinterval(SERVER_SWITCH_INTERVAL_S)
    forbid_raising_priority()  # Chromium, as root, would put its threads ahead of the event loop
    app = create_app(
        env_ids,
        max_sessions=max_sessions,
        session_ttl_s=session_ttl_s,
        max_body_bytes=max_body_bytes,
        inline=inline,
        family_concurrency=family_concurrency,
        api_keys=api_keys,
        quotas=quotas,
        max_message_bytes=max_message_bytes,
        env_nice=env_nice,
        max_python_calls=max_python_calls,
    )
    if prepare:
        for env_id in app.state.server.env_ids:
            prepare_env(env_id, report=lambda line, env_id=env_id: print(f"preparing {env_id}: {line}", flush=True))
    sock = unix_socket(uds) if uds is not None else listening_socket(host, port, fd)
    # Keep-alive as long as an agent may think between steps: a RemoteEnv holds one connection. A channel
    # message over twice the limit is refused by the WebSocket layer (close 1009) before it is buffered whole.
    config = uvicorn.Config(
        ChannelsFirst(app),
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=600,
        ws_max_size=2 * max_message_bytes,
    )
    server = uvicorn.Server(config)
    if exit_with_fd is not None:
        threading.Thread(target=_exit_at_eof, args=(exit_with_fd, server), daemon=True).start()
    if uds is not None:
        where = f"unix:{uds}"
    else:
        bound_host, bound_port = sock.getsockname()[:2]
        where = http_url(bound_host, bound_port)
    if warning:
        print(f"agentgym serve: {warning}", file=sys.stderr, flush=True)
    listener = None
    if metrics_port is not None:
        listener = MetricsListener(app.state.server, host, metrics_port, api_keys or ()).start()
        print(f"agentgym serve: /metrics off the event loop on {listener.url}", flush=True)
    print(f"agentgym serve: {', '.join(app.state.server.env_ids)} on {where}", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        if listener is not None:
            listener.close()


def _exit_at_eof(fd: int, server: Any) -> None:
    while os.read(fd, 1024):
        pass
    server.should_exit = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``agentgym serve`` (shared with ``python -m agentgym.serving.server``)."""
    parser.add_argument("env_ids", nargs="+", metavar="ENV_ID", help="env ids to serve; patterns like 'Sokoban-*'")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 in a container)")
    parser.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one (the URL is printed)")
    parser.add_argument(
        "--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, help="open sessions at most; more get HTTP 429"
    )
    parser.add_argument(
        "--session-ttl",
        type=float,
        default=DEFAULT_SESSION_TTL_S,
        metavar="SECONDS",
        help="close sessions idle this long (0: never)",
    )
    parser.add_argument(
        "--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, help="larger request bodies get HTTP 413"
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="larger channel messages get a 413 error reply (over twice this: the channel closes with 1009)",
    )
    add_key_arguments(parser)
    add_quota_arguments(parser)
    parser.add_argument(
        "--no-inline", action="store_true", help="run every env call on a thread, even for inline_safe envs"
    )
    parser.add_argument(
        "--env-nice",
        type=int,
        default=DEFAULT_ENV_NICE,
        metavar="STEPS",
        help="run the processes the envs start this many nice steps below the server (Linux; 0: as started), so "
        "that accepting connections and answering never wait behind env work",
    )
    parser.add_argument(
        "--max-python-calls",
        type=int,
        default=DEFAULT_MAX_PYTHON_CALLS,
        metavar="N",
        help="run at most N session calls that run Python in the server at once (others wait their turn; 0: no "
        "limit): calls that wait on a browser, a JVM or a sandbox are not counted",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="also answer GET /metrics on this port of --host (0: a free one), from a process of its own: a scrape "
        "answered at once while the event loop is busy (the server's keys apply)",
    )
    parser.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    parser.add_argument("--fd", type=int, help="serve on this inherited listening socket instead of --host/--port")
    parser.add_argument("--exit-with-fd", type=int, metavar="FD", help="exit when this inherited pipe closes")
    parser.add_argument("--uds", metavar="PATH", help="listen on a Unix socket at PATH instead of --host/--port")
    parser.add_argument(
        "--family-concurrency",
        action="append",
        metavar="FAMILY=N",
        help="at most N sessions of a family (or ENV_ID=N) at once, over the family's own max_concurrency; repeatable",
    )
    parser.add_argument(
        "--no-prepare", action="store_true", help="skip the envs' one-time preparation (site installs...) at start"
    )
    parser.add_argument("--openapi", action="store_true", help="print the OpenAPI document (JSON) and exit")


def serve_from_args(args: argparse.Namespace) -> int:
    """Run ``serve`` with parsed :func:`add_arguments` options (or print the OpenAPI document)."""
    if args.openapi:
        print(json.dumps(create_app(args.env_ids).openapi(), indent=2))
        return 0
    serve(
        args.env_ids,
        args.host,
        args.port,
        max_sessions=args.max_sessions,
        family_concurrency=parse_limits(args.family_concurrency),
        prepare=not args.no_prepare,
        session_ttl_s=args.session_ttl,
        max_body_bytes=args.max_body_bytes,
        inline=not args.no_inline,
        log_level=args.log_level,
        fd=args.fd,
        exit_with_fd=args.exit_with_fd,
        uds=args.uds,
        api_keys=keys_from_args(args),
        allow_unauthenticated=args.allow_unauthenticated,
        quotas=quotas_from_args(args),
        max_message_bytes=args.max_message_bytes,
        env_nice=args.env_nice,
        max_python_calls=args.max_python_calls or None,
        metrics_port=args.metrics_port,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentgym.serving.server``: the same as ``agentgym serve``."""
    parser = argparse.ArgumentParser(prog="python -m agentgym.serving.server", description=SERVE_HELP)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return serve_from_args(args)
    except ValueError as error:
        print(f"agentgym serve: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
