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
calls are :mod:`agentgym.serving.calls`, shared with the Ray backend's actor. FastAPI and
uvicorn are imported only by :func:`create_app` and :func:`serve`, so that the
command-line options load without them (and this module does without ``from __future__
import annotations``: FastAPI reads the handlers' annotations at run time).
"""

import argparse
import asyncio
import concurrent.futures
import contextlib
import ctypes
import fnmatch
import functools
import gc
import json
import logging
import os
import re
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import orjson

from agentgym.registry import (
    inline_safe,
    known_ids_hint,
    limit_key,
    list_envs,
    max_concurrency,
    parse_limits,
    prepare_env,
)
from agentgym.serving.auth import (
    CLIENT,
    ApiKeys,
    Guard,
    Refusal,
    SessionQuotas,
    add_key_arguments,
    add_quota_arguments,
    check_exposure,
    keys_from_args,
    quotas_from_args,
    retry_after,
)
from agentgym.serving.calls import CALLS, ProtocolError, body_field
from agentgym.serving.wire import CHANNEL_SESSION_GONE, describe_env, encode_answer, encode_json
from agentgym.utils.sockets import listening_socket, unix_socket

if TYPE_CHECKING:
    from fastapi import FastAPI

logger = logging.getLogger("agentgym.serving.server")

DEFAULT_MAX_SESSIONS = 1024
DEFAULT_SESSION_TTL_S = 600.0
DEFAULT_MAX_BODY_BYTES = 8 * 2**20
DEFAULT_MAX_MESSAGE_BYTES = 8 * 2**20
#: What ``agentgym serve`` does, in one line.
SERVE_HELP = "serve agentgym envs over HTTP: sessions for RemoteEnv and the process and docker backends"
_MISSING: Any = object()


@dataclass(eq=False)
class Session:
    """One env and where its calls run: inline (``executor`` None) or on its own thread."""

    id: str
    env_id: str
    kwargs: dict[str, Any]
    env: gym.Env
    executor: concurrent.futures.ThreadPoolExecutor | None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    episodes: int = 0
    steps: int = 0
    #: Who opened it: ``"key N"``, or ``"address HOST"`` on a server without keys (:mod:`agentgym.serving.auth`).
    client: str = ""
    #: Closes each open WebSocket channel to this session (called when the session closes).
    channel_closers: set[Callable[[], Any]] = field(default_factory=set)

    async def run(self, function: Callable[[], Any]) -> Any:
        if self.executor is None:
            return function()
        return await asyncio.get_running_loop().run_in_executor(self.executor, function)

    def summary(self, now: float) -> dict[str, Any]:
        return {
            "session_id": self.id,
            "env_id": self.env_id,
            "kwargs": self.kwargs,
            "age_s": now - self.created,
            "idle_s": now - self.last_used,
            "episodes": self.episodes,
            "steps": self.steps,
        }


class EnvServer:
    """The sessions of one server and what it counts; the HTTP layer is :func:`create_app`."""

    def __init__(
        self,
        env_ids: Sequence[str],
        *,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        session_ttl_s: float = DEFAULT_SESSION_TTL_S,
        inline: bool = True,
        family_concurrency: Mapping[str, int] | None = None,
        quotas: SessionQuotas | None = None,
    ) -> None:
        self.env_ids = resolve_env_ids(env_ids)
        #: Each client's session quotas.
        self.quotas = quotas or SessionQuotas()
        self._opening_for: Counter[str] = Counter()
        #: The user's per-family (or per-id) session limits, over the families' declared ``max_concurrency``.
        self.family_concurrency = dict(family_concurrency or {})
        self._opening_by: Counter[str] = Counter()
        # Resolving the classes here imports every served env's module before the first request.
        self.inline = {env_id: inline and inline_safe(env_id) for env_id in self.env_ids}
        self.max_sessions = max_sessions
        self.session_ttl_s = session_ttl_s
        self.sessions: dict[str, Session] = {}
        self._opening = 0
        self.started = time.monotonic()
        self.counts: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()

    async def create(self, body: dict[str, Any], client: str = "") -> dict[str, Any]:
        """Open a session for ``client`` (within its quotas); answers its id and the env's description."""
        env_id = body_field(body, "env_id", str)
        kwargs = body_field(body, "kwargs", dict, None) or {}
        max_episode_steps = body_field(body, "max_episode_steps", int, None)
        if env_id not in self.inline:
            raise ProtocolError(
                404, "UnknownEnv", f"env {env_id!r} is not served here; served: {', '.join(self.env_ids)}"
            )
        if kwargs.get("backend", "local") != "local":
            raise ProtocolError(422, "InvalidArgument", "the server runs envs itself: backend must be 'local'")
        if max_episode_steps is not None and max_episode_steps < 1 and max_episode_steps != -1:
            raise ProtocolError(422, "InvalidRequest", "max_episode_steps must be positive, -1 (no limit) or null")
        if len(self.sessions) + self._opening >= self.max_sessions:
            raise ProtocolError(429, "TooManySessions", f"the server holds its maximum of {self.max_sessions} sessions")
        key = limit_key(env_id, self.family_concurrency)
        limit = max_concurrency(env_id, self.family_concurrency)
        if limit is not None:
            held = self._opening_by[key] + sum(
                limit_key(other.env_id, self.family_concurrency) == key for other in self.sessions.values()
            )
            if held >= limit:
                raise ProtocolError(
                    429,
                    "TooManySessions",
                    f"{key} holds at most {limit} sessions on this machine (its family's max_concurrency; "
                    f"`agentgym serve --family-concurrency {key}=N` overrides)",
                )
        held = self._opening_for[client] + sum(other.client == client for other in self.sessions.values())
        self.quotas.admit(client, held)
        self._opening += 1
        self._opening_by[key] += 1
        self._opening_for[client] += 1
        executor = None if self.inline[env_id] else concurrent.futures.ThreadPoolExecutor(1, "agentgym-session")
        session = Session(secrets.token_hex(12), env_id, kwargs, env=None, executor=executor, client=client)  # type: ignore[arg-type]
        try:
            session.env = await session.run(lambda: _make(env_id, max_episode_steps, kwargs))
            description = describe_env(session.env, env_id, kwargs)
        except (TypeError, ValueError, gym.error.Error) as error:
            await self._discard(session)
            raise ProtocolError(422, "InvalidArgument", str(error), exception=type(error).__name__) from None
        except NotImplementedError as error:
            await self._discard(session)
            raise ProtocolError(501, "NotImplemented", str(error)) from None
        except Exception as error:
            logger.exception("making %s with %s failed", env_id, kwargs)
            await self._discard(session)
            raise ProtocolError(500, "EnvError", f"making {env_id} raised {type(error).__name__}: {error}") from None
        finally:
            self._opening -= 1
            self._opening_by[key] -= 1
            self._opening_for[client] -= 1
            if not self._opening_for[client]:
                del self._opening_for[client]
        self.sessions[session.id] = session
        self.counts["sessions_created"] += 1
        return {"session_id": session.id, "env": description}

    def get(self, session_id: str) -> Session:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise ProtocolError(
                404, "UnknownSession", f"no session {session_id!r} (closed, reaped after idling, or never opened)"
            ) from None

    async def call(self, session_id: str, name: str, body: dict[str, Any]) -> bytes:
        """Run ``CALLS[name]`` on a session's env; JSON of the result."""
        if name not in CALLS:
            raise ProtocolError(404, "NotFound", f"no session call {name!r}; calls: {', '.join(CALLS)}")
        session = self.get(session_id)
        function = CALLS[name](session.env, body)
        # A bad task id or option is the client's mistake; anything else an env raises is the env's.
        argument_errors = (TypeError, ValueError) if name == "reset" else ()
        async with session.lock:
            if self.sessions.get(session_id) is not session:  # closed while this call waited
                self.get(session_id)
            if name != "reset" and session.episodes == 0:
                raise ProtocolError(409, "ResetNeeded", f"call reset before {name}")
            session.last_used = time.monotonic()
            try:
                # Encoded where the call ran: compressing a screenshot stays off the event loop.
                payload = encode_json(await session.run(lambda: encode_answer(function())))
            except gym.error.ResetNeeded as error:
                raise ProtocolError(409, "ResetNeeded", str(error)) from None
            except NotImplementedError as error:
                raise ProtocolError(501, "NotImplemented", f"{name}: {error}") from None
            except argument_errors as error:
                raise ProtocolError(422, "InvalidArgument", str(error), exception=type(error).__name__) from None
            except Exception as error:
                logger.exception("%s of session %s (%s) failed", name, session_id, session.env_id)
                await self._close(session, "sessions_failed")
                message = f"{name} raised {type(error).__name__}: {error}"
                raise ProtocolError(500, "EnvError", message, session_closed=True) from None
            finally:
                session.last_used = time.monotonic()
        self.counts[f"{name}_calls"] += 1
        if name == "reset":
            session.episodes += 1
        elif name == "step":
            session.steps += 1
        return payload

    async def close(self, session_id: str) -> None:
        """Close a session (after any call in progress)."""
        session = self.get(session_id)
        async with session.lock:
            if self.sessions.get(session_id) is session:
                await self._close(session, "sessions_closed")

    async def reap(self) -> int:
        """Close the sessions idle for longer than the TTL; how many."""
        cutoff = time.monotonic() - self.session_ttl_s
        idle = [s for s in self.sessions.values() if s.last_used < cutoff and not s.lock.locked()]
        for session in idle:
            await self._close(session, "sessions_reaped")
        return len(idle)

    async def close_all(self) -> None:
        for session in list(self.sessions.values()):
            await self._close(session, "sessions_closed")

    async def _close(self, session: Session, counter: str) -> None:
        if self.sessions.pop(session.id, None) is not None:
            self.counts[counter] += 1
        for close_channel in list(session.channel_closers):
            close_channel()
        await self._discard(session)

    async def channel_message(self, session_id: str, message: str | bytes, max_bytes: int) -> tuple[str, int | None]:
        """Answer one message of a session's WebSocket channel: the reply, and the code to close the channel
        with after it (1000 after a ``close`` call, :data:`CHANNEL_SESSION_GONE` when the session is gone), or None.

        A message is ``{"call": NAME, "body": {...}, "id": ANY}`` (``body`` and ``id`` optional;
        ``call`` a session call or ``"close"``); the reply ``{"status": 200, "answer": {...}}`` or
        ``{"status": 4xx/5xx, "error": {...}}``, with the message's ``id`` when it had one.
        """
        request_id = None
        try:
            request = _channel_request(message, max_bytes)
            request_id = request.get("id")
        except ProtocolError as error:
            return self.channel_error(error).decode(), None
        reply, closed, gone = await self.answer_call(session_id, request)
        return _channel_reply(request_id, reply).decode(), 1000 if closed else CHANNEL_SESSION_GONE if gone else None

    async def batch_message(self, message: str | bytes, max_bytes: int) -> str:
        """Answer one message of the batch channel: ``{"calls": [{"session_id", "call", "body"}, ...], "id"}``
        with ``{"answers": [...], "id"}``, one channel reply per call, in order.

        The calls run together (one session's calls in order); each answers for itself, so a call to a
        closed session or a bad call leaves the others' answers as they would be alone.
        """
        request: dict[str, Any] = {}
        try:
            request = _channel_request(message, max_bytes)
            calls = body_field(request, "calls", list)
            if not all(isinstance(call, dict) for call in calls):
                raise ProtocolError(422, "InvalidRequest", "each of calls is an object {session_id, call, body}")
            replies = await asyncio.gather(*(self._batch_call(call) for call in calls))
            reply = b'{"answers":[%s]}' % b",".join(replies)
        except ProtocolError as error:
            reply = self.channel_error(error)
        return _channel_reply(request.get("id"), reply).decode()

    async def _batch_call(self, call: dict[str, Any]) -> bytes:
        try:
            session_id = body_field(call, "session_id", str)
        except ProtocolError as error:
            return self.channel_error(error)
        return (await self.answer_call(session_id, call))[0]

    async def answer_call(self, session_id: str, request: dict[str, Any]) -> tuple[bytes, bool, bool]:
        """Run one channel call ``{"call", "body"}`` of ``session_id``: its reply (``{"status", "answer"}`` or
        ``{"status", "error"}``), whether it was a ``close``, and whether the session is gone."""
        try:
            name = body_field(request, "call", str)
            body = body_field(request, "body", dict, None) or {}
            if name == "close":
                await self.close(session_id)
                return b'{"status":200,"answer":{"closed":%s}}' % encode_json(session_id), True, True
            payload = await self.call(session_id, name, body)
        except ProtocolError as error:
            gone = error.type == "UnknownSession" or error.details.get("session_closed", False)
            return self.channel_error(error), False, gone
        return b'{"status":200,"answer":%s}' % payload, False, False

    def channel_error(self, error: ProtocolError) -> bytes:
        """A channel's error reply ``{"status", "error"}`` (counted like an HTTP error answer)."""
        self.errors[error.type] += 1
        return b'{"status":%d,%s' % (error.status, error.body()[1:])

    async def _discard(self, session: Session) -> None:
        """Close the env where it runs and release its thread; never raises."""
        env, session.env = session.env, None  # type: ignore[assignment]
        try:
            if env is not None:
                await session.run(env.close)
        except Exception:
            logger.exception("closing a %s env failed", session.env_id)
        finally:
            if session.executor is not None:
                session.executor.shutdown(wait=False)

    def metrics(self) -> dict[str, Any]:
        return {
            "sessions": len(self.sessions),
            "max_sessions": self.max_sessions,
            "session_ttl_s": self.session_ttl_s,
            "sessions_by_env": dict(Counter(session.env_id for session in self.sessions.values())),
            **{key: self.counts[key] for key in ("sessions_created", "sessions_closed", "sessions_reaped")},
            "sessions_failed": self.counts["sessions_failed"],  # closed because their env raised
            "memory_releases": self.counts["memory_releases"],
            "calls": {name: self.counts[f"{name}_calls"] for name in CALLS},
            "steps": self.counts["step_calls"],
            "errors": sum(self.errors.values()),
            "errors_by_type": dict(self.errors),
            "rss_bytes": rss_bytes(),
            "uptime_s": time.monotonic() - self.started,
        }


def _channel_request(message: str | bytes, max_bytes: int) -> dict[str, Any]:
    """A channel message read as a JSON object; :class:`ProtocolError` when it is too large or not one."""
    if len(message) > max_bytes:
        raise ProtocolError(413, "PayloadTooLarge", f"the message exceeds {max_bytes} bytes (--max-message-bytes)")
    try:
        request = _loads(message)
    except ValueError as error:
        raise ProtocolError(400, "InvalidJSON", f"the message is not valid JSON: {error}") from None
    if not isinstance(request, dict):
        raise ProtocolError(422, "InvalidRequest", "a channel message is a JSON object")
    return request


def _loads(message: str | bytes) -> Any:
    """JSON text read by orjson, or by ``json`` where orjson refuses what ``json`` reads (lone surrogates,
    NaN, integers past 64 bits): the same values, three times quicker for a channel's small messages."""
    try:
        return orjson.loads(message)
    except orjson.JSONDecodeError:
        return json.loads(message)


def _channel_reply(request_id: Any, reply: bytes) -> bytes:
    """A channel reply carrying the request's ``id`` when it had one."""
    if request_id is not None:
        reply = b'{"id":%s,%s' % (encode_json(request_id), reply[1:])
    return reply


def _make(env_id: str, max_episode_steps: int | None, kwargs: dict[str, Any]) -> gym.Env:
    """``gym.make`` without the passive checker: checking is the client's ``gym.make``'s job, and
    Gymnasium's checker breaks an env whose first ``reset`` raised (a bad task id must not)."""
    return gym.make(env_id, max_episode_steps=max_episode_steps, disable_env_checker=True, **kwargs)


def resolve_env_ids(patterns: Sequence[str]) -> list[str]:
    """The registered ids that ``patterns`` (ids or shell-style patterns such as ``Sokoban-*``) name."""
    known = [info.id for info in list_envs()]
    resolved: list[str] = []
    for pattern in patterns:
        matches = fnmatch.filter(known, pattern.removeprefix("agentgym:"))
        if not matches:
            raise ValueError(f"no registered env id matches {pattern!r}; {known_ids_hint(pattern)}")
        resolved += [env_id for env_id in matches if env_id not in resolved]
    return resolved


def rss_bytes() -> int | None:
    """This process's resident memory (Linux; ``None`` elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (all arenas summed), its fields in order."""

    _FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    _fields_ = [(name, ctypes.c_size_t) for name in (*_FIELDS, "keepcost")]


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    if hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _MallInfo2
    return libc


def malloc_bytes() -> dict[str, int] | None:
    """glibc malloc's heap: bytes held from the system, in use by the program, free inside it.

    ``None`` without glibc 2.33 or later.

    Resident memory that grows while ``in_use`` stays flat is the allocator keeping freed memory (fragmentation),
    not a leak."""
    try:
        mallinfo2 = _libc().mallinfo2
    except (AttributeError, OSError):
        return None
    info = mallinfo2()
    return {
        "held": info.arena + info.hblkhd,
        "in_use": info.uordblks + info.hblkhd,
        "free": info.fordblks,
        "releasable": info.keepcost,
    }


def release_free_memory() -> bool:
    """Return the free memory inside glibc malloc's arenas to the system (``malloc_trim(0)``); whether it did.

    A server's envs live on many threads, each allocating from its own malloc arena; what a closed env freed
    stays in those arenas as free space that malloc keeps resident. In the 256-session soak this took about
    80 MiB off the server's RSS at rest (benchmarks/results/soak_untrimmed.md, soak_trimmed.md); with the arenas
    capped as well (:func:`limit_malloc_arenas`), the 2-hour soak's RSS at rest stayed flat (results/soak.md)."""
    try:
        return bool(_libc().malloc_trim(0))
    except (AttributeError, OSError):
        return False


#: glibc's ``mallopt`` parameter for the most malloc arenas a process makes (``M_ARENA_MAX``).
_M_ARENA_MAX = -8
#: The server's malloc arenas (glibc's default is eight per core). Each thread that allocates gets an arena
#: until there are this many; with one thread per session, hundreds of sessions otherwise spread their memory
#: over the default's 16 arenas on two cores, each keeping its own free space.
SERVER_MALLOC_ARENAS = 2


def limit_malloc_arenas(count: int = SERVER_MALLOC_ARENAS) -> bool:
    """Cap glibc malloc's arenas at ``count`` (``mallopt(M_ARENA_MAX)``) unless ``MALLOC_ARENA_MAX`` is set
    (the user's choice, which glibc reads itself); whether the cap was set. For the start of a process, before
    its threads allocate."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        return bool(_libc().mallopt(_M_ARENA_MAX, count))
    except (AttributeError, OSError):
        return False


def memory_report(top: int = 20) -> dict[str, Any]:
    """Where this process's memory is: resident bytes, glibc malloc's heap, Python's allocated blocks and
    garbage-collected objects by type (the ``top`` most numerous). Walks every object: for a process at rest."""
    objects = gc.get_objects()
    by_type = Counter(type(obj).__qualname__ for obj in objects)
    return {
        "rss_bytes": rss_bytes(),
        "malloc": malloc_bytes(),
        "python_blocks": sys.getallocatedblocks(),
        "gc_objects": len(objects),
        "objects_by_type": dict(by_type.most_common(top)),
        "threads": threading.active_count(),
    }


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
) -> "FastAPI":
    """The server app for ``env_ids`` (ids or patterns); ``app.state.server`` is its :class:`EnvServer`.

    ``session_ttl_s`` 0 never reaps; ``inline=False`` runs every env call on a session
    thread, even for envs whose metadata sets ``inline_safe``. A family that declares
    ``max_concurrency`` holds at most that many sessions (``family_concurrency`` overrides, by
    family or id); more get HTTP 429 like sessions over ``max_sessions``. With ``api_keys``, every
    route and channel but ``/health`` needs one; ``quotas`` are each client's (default
    :class:`~agentgym.serving.auth.SessionQuotas`'s); channel messages over ``max_message_bytes`` get 413.
    """
    from fastapi import FastAPI, Request, Response
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException
    from starlette.routing import WebSocketRoute

    from agentgym import __version__
    from agentgym.integrations import LazyMount  # OpenEnv's routes: docs/integrations.md
    from agentgym.serving import api

    server = EnvServer(
        env_ids,
        max_sessions=max_sessions,
        session_ttl_s=session_ttl_s,
        inline=inline,
        family_concurrency=family_concurrency,
        quotas=quotas,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        housekeeping = asyncio.create_task(_keep_house(server))
        try:
            yield
        finally:
            housekeeping.cancel()
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
        """Counters, open sessions and resident memory."""
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


class BodyLimit:
    """ASGI middleware: request bodies over ``max_body_bytes`` get 413 PayloadTooLarge, with or without a length.

    A declared ``Content-Length`` over the limit is answered at once; a chunked body is
    counted as the app reads it, and the read raises 413 when it passes the limit.
    """

    def __init__(self, app: Any, max_body_bytes: int, refuse: Callable[[ProtocolError], Any]) -> None:
        self.app, self.max_body_bytes, self.refuse = app, max_body_bytes, refuse

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.exceptions import HTTPException

        message = f"the body exceeds {self.max_body_bytes} bytes"
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            return await self.refuse(ProtocolError(413, "PayloadTooLarge", message))(scope, receive, send)
        size = 0

        async def counted() -> dict[str, Any]:
            nonlocal size
            event = await receive()
            size += len(event.get("body", b""))
            if size > self.max_body_bytes:
                raise HTTPException(413, message)
            return event

        await self.app(scope, counted, send)


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
) -> None:
    """Serve ``env_ids`` until interrupted (SIGINT/SIGTERM close every session first).

    Port 0 picks a free port; the URL is printed once the socket listens. ``fd`` serves
    on an inherited listening socket instead of binding ``host:port``, ``uds`` on a Unix
    socket at that path (the ``docker`` backend's way into a container without a network);
    with ``exit_with_fd``, the server exits when that pipe is closed (the ``process``
    backend passes ``fd`` and ``exit_with_fd``, the ``docker`` backend ``uds`` and
    ``exit_with_fd``). With ``prepare``, each served env's one-time preparation (site installs...)
    runs before the socket listens, so that no session pays for it. ``api_keys``, ``quotas`` and
    ``max_message_bytes`` are :func:`create_app`'s; without keys, a ``host`` beyond loopback is refused
    (``ValueError``) unless ``allow_unauthenticated`` (:func:`~agentgym.serving.auth.check_exposure`).
    """
    import uvicorn

    warning = None if uds is not None or fd is not None else check_exposure(host, api_keys, allow_unauthenticated)
    limit_malloc_arenas()
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
        where = f"http://[{bound_host}]:{bound_port}" if ":" in bound_host else f"http://{bound_host}:{bound_port}"
    if warning:
        print(f"agentgym serve: {warning}", file=sys.stderr, flush=True)
    print(f"agentgym serve: {', '.join(app.state.server.env_ids)} on {where}", flush=True)
    server.run(sockets=[sock])


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
