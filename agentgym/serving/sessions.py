"""The server's sessions: :class:`EnvServer` holds them (limits, quotas, the TTL), runs the session calls on
each one's env and answers the channels' messages; :class:`Session` is one env and where its calls run.

Everything here is plain asyncio: the HTTP routes (:mod:`agentgym.serving.app`) and the raw WebSocket
channels (:mod:`agentgym.serving.channels`) end in :meth:`EnvServer.call` and :meth:`EnvServer.answer_call`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fnmatch
import json
import logging
import secrets
import time
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import orjson

from agentgym.contract.registry import inline_safe, known_ids_hint, limit_key, list_envs, max_concurrency
from agentgym.serving.auth import SessionQuotas
from agentgym.serving.calls import CALLS, ProtocolError, body_field
from agentgym.serving.memory import rss_bytes
from agentgym.serving.wire import CHANNEL_SESSION_GONE, describe_env, encode_answer, encode_json

logger = logging.getLogger("agentgym.serving.server")

DEFAULT_MAX_SESSIONS = 1024
DEFAULT_SESSION_TTL_S = 600.0
#: How many nice steps below the server's own CPU priority the processes its envs start run (Chromium, a JVM, a
#: sandbox): on a machine short of cores, the server (accepting connections, WebSocket handshakes, /health,
#: /metrics, every session's I/O) runs first.
DEFAULT_ENV_NICE = 10
#: How many session calls that run Python in the server (rather than wait on a browser, a JVM, a sandbox) run at
#: once; the others wait their turn on the event loop, so that the loop, wanting the GIL, queues behind a few
#: threads rather than behind every session's.
DEFAULT_MAX_PYTHON_CALLS = 8
#: A call whose thread ran Python for at least this share of its time counts as running Python: with
#: :data:`DEFAULT_MAX_PYTHON_CALLS` threads taking turns at the GIL, one of them gets about 1/8 of it.
PYTHON_SHARE = 0.05
#: A session whose calls wait elsewhere takes its turn at the gate every this many calls, to be measured again.
RECHECK_EVERY = 16
#: How many closed sessions' reasons the server keeps, to say in a later call's ``UnknownSession`` why it went.
GONE_REMEMBERED = 4096
#: Why a session went, by the counter its closing counts in (a reaped one says how long it had idled).
GONE_BECAUSE = {
    "sessions_closed": "closed by its client",
    "sessions_failed": "closed after its env raised",
    "sessions_reaped": "reaped after idling",
}


def thread_clock() -> tuple[float, float]:
    """This thread's CPU time and its time spent runnable but waiting for a core (Linux's schedstat; 0 where
    the kernel does not say), seconds."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as stats:
            ran, waited, _ = stats.read().split()
        return int(ran) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return time.thread_time(), 0.0


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
    #: The share of its recent timed calls' time its thread spent running (CPU time over the time it could have
    #: run, a moving average; None before its first call): high for an env in Python, low for one waiting on
    #: another process.
    python_share: float | None = None
    calls: int = 0

    async def run(self, function: Callable[[], Any], gate: PythonCalls | None = None) -> Any:
        """``function()`` where the session's calls run; through ``gate`` (and timed) when its calls run Python,
        and every :data:`RECHECK_EVERY`-th call of one that waits elsewhere, to measure it again with a turn."""
        if self.executor is None:
            return function()
        self.calls += 1
        loop = asyncio.get_running_loop()
        waits_elsewhere = self.python_share is not None and self.python_share < PYTHON_SHARE
        if gate is None or (waits_elsewhere and self.calls % RECHECK_EVERY):
            return await loop.run_in_executor(self.executor, function)  # timed only with a turn (14 us a read)
        async with gate.turn():
            return await loop.run_in_executor(self.executor, self._timed, function)

    def _timed(self, function: Callable[[], Any]) -> Any:
        wall, (cpu, queued) = time.perf_counter(), thread_clock()
        try:
            return function()
        finally:
            cpu_after, queued_after = thread_clock()
            # The time it could have run: waiting for a core (other processes' load) is not waiting elsewhere.
            runnable = time.perf_counter() - wall - (queued_after - queued)
            if runnable > 0:
                share = min(1.0, (cpu_after - cpu) / runnable)
                self.python_share = share if self.python_share is None else 0.3 * self.python_share + 0.7 * share

    async def start_thread(self) -> None:
        """Start the session's thread from a helper thread: ``Thread.start`` waits until the new thread runs,
        which on a loaded machine (a hundred threads wanting the GIL) took the event loop seconds."""
        if self.executor is not None:
            executor = self.executor
            await asyncio.to_thread(lambda: executor.submit(lambda: None).result())

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


class PythonCalls:
    """Turns for the session calls that run Python: at most ``limit`` at once (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._semaphore = asyncio.Semaphore(limit) if limit else None
        self.running = 0
        self.waiting = 0

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        self.waiting += 1
        try:
            if self._semaphore is not None:
                await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            if self._semaphore is not None:
                self._semaphore.release()

    def summary(self) -> dict[str, int | None]:
        return {"limit": self.limit, "running": self.running, "waiting": self.waiting}


@dataclass(eq=False)
class LoopLag:
    """How late the server's event loop wakes a timer set every ``period_s``: how long a request that has
    arrived waits before the loop reads it (a WebSocket handshake, ``/metrics``). :meth:`watch` measures."""

    period_s: float = 0.1
    window_s: float = 60.0
    last: float = 0.0
    worst: float = 0.0
    recent: deque[tuple[float, float]] = field(default_factory=deque)  # (when, lag) within the window

    def note(self, lag: float, now: float) -> None:
        self.last, self.worst = lag, max(self.worst, lag)
        self.recent.append((now, lag))
        while self.recent and self.recent[0][0] < now - self.window_s:
            self.recent.popleft()

    def summary(self) -> dict[str, float]:
        return {
            "last": round(self.last, 4),
            "max_last_minute": round(max((lag for _, lag in tuple(self.recent)), default=0.0), 4),
            "max": round(self.worst, 4),
        }

    async def watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(self.period_s)
            now = loop.time()
            self.note(max(0.0, now - asked - self.period_s), now)


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
        env_nice: int = 0,
        max_python_calls: int | None = DEFAULT_MAX_PYTHON_CALLS,
    ) -> None:
        self.env_ids = resolve_env_ids(env_ids)
        #: Nice steps below the server's priority for the processes below it (0: left as started; ``agentgym
        #: serve``: :data:`DEFAULT_ENV_NICE`).
        self.env_nice = env_nice
        #: The server's own helper processes (the ``/metrics`` relay), which keep its CPU priority.
        self.helper_pids: set[int] = set()
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
        #: Why each of the last :data:`GONE_REMEMBERED` closed sessions went, for the next call's error.
        self.gone: OrderedDict[str, str] = OrderedDict()
        self._opening = 0
        self.started = time.monotonic()
        self.counts: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        #: The event loop's lag, measured while the app runs (:func:`~agentgym.serving.app.create_app`).
        self.loop_lag = LoopLag()
        #: Turns for the calls that run Python in this process (``max_python_calls`` at once; None: no limit).
        self.python_calls = PythonCalls(max_python_calls)

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
        executor = None
        if not self.inline[env_id]:
            executor = concurrent.futures.ThreadPoolExecutor(1, "agentgym-session")
        session = Session(secrets.token_hex(12), env_id, kwargs, env=None, executor=executor, client=client)  # type: ignore[arg-type]
        try:
            await session.start_thread()
            session.env = await session.run(lambda: _make(env_id, max_episode_steps, kwargs), self.python_calls)
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
        session.last_used = time.monotonic()  # idle from when it is ready: making its env may take longer than the TTL
        self.sessions[session.id] = session
        self.counts["sessions_created"] += 1
        return {"session_id": session.id, "env": description}

    def get(self, session_id: str) -> Session:
        try:
            return self.sessions[session_id]
        except KeyError:
            why = self.gone.get(session_id, "closed, reaped after idling, or never opened")
            raise ProtocolError(404, "UnknownSession", f"no session {session_id!r} ({why})") from None

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
                payload = encode_json(await session.run(lambda: encode_answer(function()), self.python_calls))
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
        reaped = 0
        for session in list(self.sessions.values()):
            # Checked again at each: closing the one before awaited, and a call may have come meanwhile.
            idle_s = time.monotonic() - session.last_used
            if idle_s > self.session_ttl_s and not session.lock.locked() and session.id in self.sessions:
                why = f"reaped after idling {idle_s:.1f} s; the server's idle TTL is {self.session_ttl_s:g} s"
                await self._close(session, "sessions_reaped", why)
                reaped += 1
        return reaped

    async def close_all(self) -> None:
        for session in list(self.sessions.values()):
            await self._close(session, "sessions_closed", "closed as the server stopped")

    async def _close(self, session: Session, counter: str, why: str | None = None) -> None:
        if self.sessions.pop(session.id, None) is not None:
            self.counts[counter] += 1
            self.gone[session.id] = why or GONE_BECAUSE[counter]
            while len(self.gone) > GONE_REMEMBERED:
                self.gone.popitem(last=False)
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
        """The counters of ``/metrics``; safe from another thread (:mod:`agentgym.serving.monitor`): the loop's
        containers are copied each in one C call, which no other thread can interleave."""
        sessions, counts, errors = list(self.sessions.values()), self.counts.copy(), self.errors.copy()
        return {
            "sessions": len(sessions),
            "max_sessions": self.max_sessions,
            "session_ttl_s": self.session_ttl_s,
            "sessions_by_env": dict(Counter(session.env_id for session in sessions)),
            **{key: counts[key] for key in ("sessions_created", "sessions_closed", "sessions_reaped")},
            "sessions_failed": counts["sessions_failed"],  # closed because their env raised
            "memory_releases": counts["memory_releases"],
            "calls": {name: counts[f"{name}_calls"] for name in CALLS},
            "steps": counts["step_calls"],
            "errors": sum(errors.values()),
            "errors_by_type": dict(errors),
            "rss_bytes": rss_bytes(),
            "loop_lag_s": self.loop_lag.summary(),
            "python_calls": self.python_calls.summary(),
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
