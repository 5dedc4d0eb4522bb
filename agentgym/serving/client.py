"""Envs whose episodes run elsewhere: :class:`ProxyEnv`, their base, and :class:`RemoteEnv`,
a Gymnasium env whose episodes run on an agentgym env server (``agentgym serve``).

Every proxy (a server session here, a Ray actor in :mod:`agentgym.serving.backends.ray`)
rebuilds the env's interface from its wire description (:func:`~agentgym.serving.wire.describe_env`)
and plays it through the session calls of :mod:`agentgym.serving.calls`, answered in the wire
format; a subclass only says how a call travels.

``RemoteEnv(url, env_id, **kwargs)`` opens a session of ``env_id`` made with ``kwargs`` on
the server at ``url`` and is then interchangeable with the local env: the same spaces,
and for the same task, seed and actions the same observations, rewards, ``terminated``,
``truncated`` and ``info``. Values travel as JSON: tuples arrive as lists, numpy numbers
as plain ones, and a surrogate pair held as two code points as the one character it
encodes (lone surrogates survive); dict observations come back as dicts, their numpy
arrays (a screenshot) with the local dtype and shape. Truncation comes from the server's ``TimeLimit``
(``max_episode_steps`` as in ``gym.make``). Like a :class:`~agentgym.contract.core.TextEnv` it has
``oracle_action()``, ``random_action(rng)`` (the server draws from ``rng``'s state and
hands it back advanced, so the draws match the local env's), ``available_actions()``,
``splits``, ``task_id`` and ``split``, so the scripted baselines and the eval runner work
on it. ``gym.make(ID, backend="process")`` and ``backend="docker"`` return one (see
:mod:`agentgym.serving.backends`); the docker backend's reaches its server through a Unix socket
(``uds=``).

Errors: what the server reports as a bad argument, a missing reset or an unsupported
baseline raises what the local env raises (``TypeError``/``ValueError``,
``gymnasium.error.ResetNeeded``, ``NotImplementedError``); other server errors raise
:class:`RemoteEnvError` (an env that raised is ``type == "EnvError"``; its session is
gone, and the next ``reset`` opens a new one, as it does after a session expired on the
server). A server that cannot be reached, or a connection that breaks during a call,
raises :class:`ServerUnavailableError` (a ``ConnectionError`` naming the URL).

Keys: a server started with API keys (docs/security.md) needs one: ``api_key=``, else
``$AGENTGYM_API_KEY``. It travels as ``Authorization: Bearer KEY`` on every request and when a
channel opens, and is never put in the env's spec. A refused key raises :class:`RemoteEnvError`
of type ``"Unauthorized"`` (status 401).

Retries: failed connection attempts are retried with backoff (nothing was sent), and so
is opening a session (a duplicate session is reclaimed by the server's TTL; after a 429, no
sooner than the server's ``Retry-After``). A call that
may have reached the server (a step above all) is never re-sent.

One HTTP connection, kept alive; proxy environment variables are ignored. Not
thread-safe, like an env.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import json
import os
import random
import ssl
import time
from typing import Any, Protocol

import gymnasium as gym
import httpx
from gymnasium.envs.registration import EnvSpec

from agentgym.contract.core import TaskSplits
from agentgym.serving.wire import (
    CHANNEL_SESSION_GONE,
    decode_observation,
    encode_json,
    rng_state,
    set_rng_state,
    space_from_description,
)

#: First wait before retrying to open a session; doubled on each retry.
BACKOFF_S = 0.2
#: The environment variable of the key a client sends when it is given none.
API_KEY_ENV = "AGENTGYM_API_KEY"


class RemoteEnvError(RuntimeError):
    """An error the server answered; ``type`` is its error type (``"EnvError"``, ``"UnknownSession"``, ...);
    ``retry_after_s`` how long a 429 asks to wait, where it says."""

    def __init__(self, message: str, *, type: str, status: int, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.type, self.status, self.retry_after_s = type, status, retry_after_s


class ServerUnavailableError(ConnectionError):
    """The env server cannot be reached, or the connection broke or timed out during a call."""


class ServerHandle(Protocol):
    """A server a remote backend started: where it listens, and how to stop it."""

    url: str
    #: The key the server takes (None: it takes none).
    api_key: str | None

    def stop(self) -> None:
        """Stop the server and release what it holds; safe to call twice."""


class ProxyEnv(gym.Env[Any, str], abc.ABC):
    """An env whose episodes run elsewhere; a subclass says how a session call travels (:meth:`_call`).

    Like a :class:`~agentgym.contract.core.TextEnv` it has ``oracle_action()``, ``random_action(rng)``,
    ``available_actions()``, ``tools()``, ``splits``, ``task_id`` and ``split``.
    """

    env_id: str
    task_id: int | None = None
    split: str | None = None

    def _adopt(self, description: dict[str, Any], entry_point: str, spec_kwargs: dict[str, Any]) -> None:
        """Take the env's interface from its wire description."""
        self.observation_space = space_from_description(description["observation_space"])
        self.action_space = space_from_description(description["action_space"])
        self._tools = description.get("tools")
        # Calls wait on another process: never run them on an event loop.
        self._metadata = {**description["metadata"], "inline_safe": False}
        self.render_mode = description["render_mode"]
        self.splits = TaskSplits(**description["splits"]) if description["splits"] else None
        self.spec = EnvSpec(
            id=self.env_id,
            entry_point=entry_point,
            max_episode_steps=description["max_episode_steps"],
            kwargs=spec_kwargs,
        )

    @abc.abstractmethod
    def _call(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Run the session call ``name`` with ``body`` where the env is; its answer."""

    @property
    def metadata(self) -> dict[str, Any]:  # type: ignore[override]
        """The env's metadata (a property: ``gym.make`` then leaves render modes to the far side)."""
        return self._metadata

    def _started(self, answer: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The observation and info of a ``reset`` answer, noting the episode's task."""
        info = answer["info"]
        self.task_id, self.split = info.get("task_id"), info.get("split")
        return decode_observation(answer["observation"]), info

    def step(self, action: str | dict[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Play one action: a text reply, or a tool call or assistant message (a dict)."""
        return stepped(self._call("step", {"action": wire_action(action)}))

    def render(self) -> Any:
        return self._call("render", {})["render"]

    def oracle_action(self) -> str:
        """The command the env's solver plays now."""
        return self._call("oracle_action", {})["action"]

    def random_action(self, rng: random.Random) -> str:
        """A random legal command drawn from ``rng``, advanced as the local env would advance it."""
        answer = self._call("random_action", {"rng_state": rng_state(rng)})
        set_rng_state(rng, answer["rng_state"])
        return answer["action"]

    def available_actions(self) -> list[str] | None:
        """The legal commands now, or None where the action set is not enumerable."""
        return self._call("available_actions", {})["actions"]

    def tools(self) -> list[dict[str, Any]] | None:
        """The env's actions as OpenAI function tools (see docs/tool-calls.md)."""
        return self._tools


def tls_context() -> ssl.SSLContext:
    """The TLS context of the clients of agentgym's env servers, made once per process: the one httpx would make
    (``$SSL_CERT_FILE``, else ``$SSL_CERT_DIR``, else certifi's CA bundle), which httpx otherwise makes for every
    client, reading the CA bundle each time (about 50 ms of CPU per :class:`RemoteEnv`, even on plain HTTP)."""
    return _tls_context(os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


@functools.cache
def _tls_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    if cafile:
        return ssl.create_default_context(cafile=cafile)
    if capath:
        return ssl.create_default_context(capath=capath)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class RemoteEnv(ProxyEnv):
    """An env session on an agentgym server; see the module docstring.

    ``max_episode_steps`` is the server-side ``TimeLimit`` (None: the registered one;
    -1: none). ``uds``: reach the server through the Unix socket at this path (``agentgym
    serve --uds PATH``; ``url`` then only names it in messages and the ``Host`` header).
    ``timeout_s`` bounds each call, ``connect_timeout_s`` each connection attempt,
    ``retries`` the retries of connection attempts and of opening the session.
    ``websocket=True`` makes the session's calls over its WebSocket channel (one persistent
    connection, the fastest way: ``benchmarks/server_throughput.py``); opening and closing
    the session stay HTTP. ``api_key``: the server's key (default ``$AGENTGYM_API_KEY``; none without
    it). Every other keyword argument goes to the env's constructor on the server.
    """

    def __init__(
        self,
        url: str,
        env_id: str,
        *,
        max_episode_steps: int | None = None,
        uds: str | None = None,
        timeout_s: float = 300.0,
        connect_timeout_s: float = 10.0,
        retries: int = 2,
        websocket: bool = False,
        api_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.url = url.rstrip("/")
        api_key = api_key or os.environ.get(API_KEY_ENV)
        self._auth_headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.websocket = websocket
        self._channel: Any = None  # the session's WebSocket channel (websockets' sync connection), once open
        self._channel_session: str | None = None
        self._timeouts = (timeout_s, connect_timeout_s)
        self.uds = uds
        self.env_id = env_id
        self.kwargs = kwargs
        self.max_episode_steps = max_episode_steps
        self.retries = retries
        #: A server this env started and stops when it closes (set by the process and docker backends).
        self.owned_server: ServerHandle | None = None
        self.session_id: str | None = None
        self._client = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            transport=httpx.HTTPTransport(retries=retries, uds=uds, verify=tls_context()),
            headers={"content-type": "application/json", **self._auth_headers},
            trust_env=False,
        )
        try:
            description = self._open()
        except BaseException:
            self._client.close()
            raise
        spec_kwargs = {"url": self.url, "env_id": env_id, **({"uds": uds} if uds else {}), **kwargs}
        if websocket:
            spec_kwargs["websocket"] = True
        self._adopt(description, "agentgym.serving.client:RemoteEnv", spec_kwargs)

    # ---- the Gymnasium API ----------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on the server (opening a new session if the last one is gone)."""
        super().reset(seed=seed)
        body = {"seed": seed, "options": options}
        if self.session_id is None:
            self._open()
        try:
            answer = self._call("reset", body)
        except RemoteEnvError as error:
            if error.type != "UnknownSession":
                raise
            self._open()  # expired or lost in a server restart: a fresh session replays nothing
            answer = self._call("reset", body)
        return self._started(answer)

    def close(self) -> None:
        """Close the session (and stop an owned server); safe to call twice."""
        session_id, self.session_id = self.session_id, None
        self._close_channel()
        try:
            if session_id is not None and not self._client.is_closed:
                with contextlib.suppress(ServerUnavailableError, RemoteEnvError):
                    self._request("DELETE", f"/sessions/{session_id}")
        finally:
            self._client.close()
            if self.owned_server is not None:
                self.owned_server.stop()

    @property
    def address(self) -> str:
        """Where the server is, for messages: its URL, or its Unix socket."""
        return self.url if self.uds is None else f"{self.url} (unix socket {self.uds})"

    # ---- HTTP -------------------------------------------------------------------------

    def _open(self) -> dict[str, Any]:
        """Open a session, retrying while the server is unreachable or full; its env description."""
        body = {"env_id": self.env_id, "kwargs": self.kwargs, "max_episode_steps": self.max_episode_steps}
        for attempt in range(self.retries + 1):
            try:
                answer = self._request("POST", "/sessions", body)
                break
            except (ServerUnavailableError, RemoteEnvError) as error:
                retry = isinstance(error, ServerUnavailableError) or error.status in (429, 503)
                if not retry or attempt == self.retries:
                    raise
                time.sleep(max(BACKOFF_S * 2**attempt, getattr(error, "retry_after_s", None) or 0))
        self.session_id = answer["session_id"]
        self._close_channel()
        return answer["env"]

    def _call(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.session_id is None:
            raise gym.error.ResetNeeded(f"no open session on {self.address}: call reset()")
        try:
            if self.websocket:
                return self._channel_call(name, body)
            return self._request("POST", f"/sessions/{self.session_id}/{name}", body)
        except RemoteEnvError as error:
            if error.type in ("EnvError", "UnknownSession"):
                self.session_id = None  # the server no longer holds it
            raise

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        content = None if body is None else encode_json(body)
        where = f"the agentgym server at {self.address} ({method} {path})"
        try:
            response = self._client.request(method, path, content=content)
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            raise ServerUnavailableError(f"cannot reach {where}: {error}") from error
        except httpx.TimeoutException as error:
            raise ServerUnavailableError(f"timed out waiting for {where}; the call may have been applied") from error
        except httpx.TransportError as error:
            raise ServerUnavailableError(
                f"lost the connection to {where}: {type(error).__name__}: {error}; the call may have been applied"
            ) from error
        if response.is_success:
            return response.json()
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            error = None
        raise _error_from(response.status_code, error, response.text, where)

    # ---- the WebSocket channel ------------------------------------------------------

    def _channel_call(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """One session call over the session's channel (opened on first use)."""
        from websockets.exceptions import WebSocketException

        where = f"the agentgym server at {self.address} ({name} over the session's channel)"
        channel = self._open_channel(where)
        try:
            channel.send(encode_json({"call": name, "body": body}).decode())
            reply = json.loads(channel.recv(timeout=self._timeouts[0]))
        except (OSError, TimeoutError, WebSocketException) as error:
            self._close_channel()
            received = getattr(error, "rcvd", None)
            if received is not None and received.code == CHANNEL_SESSION_GONE:
                message = f"UnknownSession from {where}: the session is gone ({received.reason or 'closed'})"
                raise RemoteEnvError(message, type="UnknownSession", status=404) from error
            raise ServerUnavailableError(
                f"lost the channel to {where}: {type(error).__name__}: {error}; the call may have been applied"
            ) from error
        if reply.get("status") == 200:
            return reply["answer"]
        raise _error_from(reply.get("status", 0), reply.get("error"), str(reply)[:500], where)

    def _open_channel(self, where: str) -> Any:
        if self._channel is not None and self._channel_session == self.session_id:
            return self._channel
        self._close_channel()
        url = f"ws{self.url.removeprefix('http')}/sessions/{self.session_id}/channel"
        self._channel = connect_websocket(url, self.uds, self._timeouts[1], self.retries, where, self._auth_headers)
        self._channel_session = self.session_id
        return self._channel

    def _close_channel(self) -> None:
        channel, self._channel, self._channel_session = self._channel, None, None
        if channel is not None:
            with contextlib.suppress(Exception):
                channel.close()


def wire_action(action: Any) -> str | dict[str, Any]:
    """An action as a ``step`` call carries it: a text reply or a dict as it is, anything else read as
    ``TextEnv.step`` reads it."""
    if isinstance(action, (str, dict)):
        return action
    return action.decode("utf-8", "replace") if isinstance(action, bytes) else str(action)


def stepped(answer: dict[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    """A ``step`` answer as ``step`` returns it: observation, reward, terminated, truncated, info."""
    return (
        decode_observation(answer["observation"]),
        answer["reward"],
        answer["terminated"],
        answer["truncated"],
        answer["info"],
    )


def connect_websocket(
    url: str, uds: str | None, open_timeout_s: float, retries: int, where: str, headers: dict[str, str]
) -> Any:
    """An open WebSocket (websockets' sync client) to ``url`` (through the Unix socket ``uds`` when given) sending
    ``headers``, its attempts retried with backoff; :class:`ServerUnavailableError` naming ``where`` when none opens."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect, unix_connect

    options = {"open_timeout": open_timeout_s, "compression": None, "max_size": None, "proxy": None}
    options["additional_headers"] = headers
    for attempt in range(retries + 1):
        try:
            opening = unix_connect(uds, url, **options) if uds is not None else connect(url, **options)
            with contextlib.ExitStack() as stack:  # kept open past the block: the caller closes it
                channel = stack.enter_context(opening)
                stack.pop_all()
            return channel
        except (OSError, TimeoutError, WebSocketException) as error:
            if attempt == retries:
                raise ServerUnavailableError(f"cannot open the channel to {where}: {error}") from error
            time.sleep(BACKOFF_S * 2**attempt)
    raise ValueError(f"retries must be at least 0, got {retries}")


def _error_from(status: int, error: Any, text: str, where: str) -> Exception:
    """The exception for a server's error answer: the local env's where there is one."""
    try:
        kind, message = error["type"], error["message"]
    except (KeyError, TypeError):
        error, kind, message = {}, "HTTPError", f"HTTP {status}: {text[:500]}"
    if kind == "InvalidArgument":
        return (TypeError if error.get("exception") == "TypeError" else ValueError)(message)
    if kind == "ResetNeeded":
        return gym.error.ResetNeeded(message)
    if kind == "NotImplemented":
        return NotImplementedError(message)
    return RemoteEnvError(
        f"{kind} from {where}: {message}", type=kind, status=status, retry_after_s=error.get("retry_after_s")
    )


def open_remote_env(server: ServerHandle, env_id: str, kwargs: dict[str, Any], **options: Any) -> RemoteEnv:
    """A :class:`RemoteEnv` on ``server`` (with its key) that stops the server when it closes (or fails to open)."""
    try:
        env = RemoteEnv(server.url, env_id, **options, api_key=server.api_key, **kwargs)
    except BaseException:
        server.stop()
        raise
    env.owned_server = server
    return env
