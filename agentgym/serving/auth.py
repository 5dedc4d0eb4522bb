"""API keys and per-client quotas of agentgym's servers: ``agentgym serve`` and ``agentgym serve-model``
(docs/security.md).

* **Keys**: ``--api-key KEY`` (repeatable), ``--api-key-file PATH`` (one key a line) and
  ``$AGENTGYM_API_KEYS`` (comma-separated), all taken together (:func:`keys_from_args`). With any
  key, :class:`Guard` refuses every HTTP request and WebSocket but ``GET /health`` that does not
  carry one as ``Authorization: Bearer KEY``: 401 with ``WWW-Authenticate: Bearer`` and a JSON
  error, or a WebSocket accepted, sent the error and closed with code 1008 (policy violation).
  Keys are compared in constant time (:func:`hmac.compare_digest`), once per HTTP request or
  WebSocket connection, never per channel message.
* **Exposure**: :func:`check_exposure` refuses to listen beyond loopback without a key, unless
  the user allows it (``--allow-unauthenticated``), and then warns.
* **Quotas** (the env server's sessions): :class:`SessionQuotas` caps each client's open sessions
  and the rate at which it opens them (a token bucket); :class:`RequestQuotas` caps the model server's
  requests in flight and their rate per client. A client is its key, or its address when
  the server has no keys (:class:`Guard` puts it in the ASGI scope under :data:`CLIENT`).

Nothing here imports a web framework: :class:`Guard` is a raw ASGI middleware, so that the command
line loads without FastAPI and the session channel keeps its path.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import json
import math
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.serving.calls import ProtocolError

#: The environment variable of a server's keys (comma-separated).
API_KEYS_ENV = "AGENTGYM_API_KEYS"
#: The ASGI scope entry naming the request's client: ``"key N"`` (the N-th key) or ``"address HOST"``.
CLIENT = "agentgym.client"
#: The WebSocket close code of a connection refused for its key (RFC 6455: policy violation).
POLICY_VIOLATION = 1008
#: Sessions a client may open per second, sustained, and at once (the token bucket's rate and size).
DEFAULT_SESSION_RATE = 20.0
DEFAULT_SESSION_BURST = 1024
#: The paths served without a key (liveness probes).
OPEN_PATHS = frozenset({"/health"})


@dataclass(frozen=True)
class Refusal:
    """A request refused before it reached the app: status, error type, message and extra headers."""

    status: int
    type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)


class ApiKeys:
    """A server's keys, each named ``key N`` (its place in the list) so that no key is ever shown."""

    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("ApiKeys needs at least one key")
        self._keys = [(key.encode(), f"key {index}") for index, key in enumerate(keys, 1)]

    def __len__(self) -> int:
        return len(self._keys)

    def identify(self, headers: Iterable[tuple[bytes, bytes]]) -> str | Refusal:
        """The client's name for the ``Authorization: Bearer`` key in ``headers``, or why it is refused."""
        presented = next((value for name, value in headers if name == b"authorization"), None)
        scheme, _, token = (presented or b"").partition(b" ")
        if presented is None or scheme.lower() != b"bearer":
            return Refusal(
                401,
                "Unauthorized",
                "this server needs an API key: send the header 'Authorization: Bearer KEY'",
                {"WWW-Authenticate": 'Bearer realm="agentgym"'},
            )
        found = None
        for key, name in self._keys:  # every key compared: the time does not say which one matched
            if hmac.compare_digest(token.strip(), key):
                found = name
        if found is None:
            return Refusal(
                401,
                "Unauthorized",
                "the API key is not valid",
                {"WWW-Authenticate": 'Bearer realm="agentgym", error="invalid_token"'},
            )
        return found


class Guard:
    """ASGI middleware: requests and WebSockets need a key (when there are ``keys``), ``/health`` excepted.

    Admitted ones go on with their client's name in ``scope[CLIENT]``. ``render`` writes a refusal's
    JSON body in the server's own error shape.
    """

    def __init__(self, app: Any, *, keys: ApiKeys | None, render: Callable[[Refusal], bytes]) -> None:
        self.app, self.keys, self.render = app, keys, render

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if self.keys is None:
            client = scope.get("client")
            scope[CLIENT] = f"address {client[0] if client else 'local'}"
            return await self.app(scope, receive, send)
        if scope["path"] in OPEN_PATHS:
            return await self.app(scope, receive, send)
        client = self.keys.identify(scope["headers"])
        if not isinstance(client, Refusal):
            scope[CLIENT] = client
            return await self.app(scope, receive, send)
        body = self.render(client)
        if scope["type"] == "http":
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            headers += [(name.lower().encode(), value.encode()) for name, value in client.headers.items()]
            await send({"type": "http.response.start", "status": client.status, "headers": headers})
            return await send({"type": "http.response.body", "body": body})
        if (await receive())["type"] != "websocket.connect":
            return
        # Accepted only to say why: a refusal before accepting reaches the client as a bare HTTP 403.
        await send({"type": "websocket.accept"})
        # The error with its status, as the channels' replies carry one, and in OpenEnv's shape
        # (``type``/``data``), so that an OpenEnv client that reads it before the close raises it too.
        reply = json.loads(body) | {
            "status": client.status,
            "type": "error",
            "data": {"message": client.message, "code": client.type},
        }
        await send({"type": "websocket.send", "text": json.dumps(reply)})
        await send({"type": "websocket.close", "code": POLICY_VIOLATION, "reason": client.message[:120]})


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


class TokenBuckets:
    """A token bucket per client: ``rate`` tokens a second, ``burst`` at most (rate 0: no limit)."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate < 0 or burst < 1:
            raise ValueError("quotas: the rate must be >= 0 and the burst >= 1")
        self.rate, self.burst, self.clock = rate, burst, clock
        #: Per client: (tokens, when they were counted).
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, client: str) -> float:
        """Take one of ``client``'s tokens: 0 when taken, else the seconds until one is due (none is taken)."""
        if self.rate == 0:
            return 0.0
        now = self.clock()
        tokens, counted = self._buckets.get(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - counted) * self.rate)
        if tokens < 1:
            return (1 - tokens) / self.rate
        if client not in self._buckets and len(self._buckets) >= 10_000:
            self._forget_full_buckets(now)
        self._buckets[client] = (tokens - 1, now)
        return 0.0

    def _forget_full_buckets(self, now: float) -> None:
        """Drop the buckets that have refilled (their clients are as new): addresses come and go."""
        refill_s = self.burst / self.rate
        self._buckets = {c: (t, at) for c, (t, at) in self._buckets.items() if now - at < refill_s}


class SessionQuotas:
    """Each client's open sessions (``per_client`` at most; None: no cap of its own) and a token bucket
    of session openings (``rate`` per second, ``burst`` at once; rate 0: none)."""

    def __init__(
        self,
        per_client: int | None = None,
        rate: float = DEFAULT_SESSION_RATE,
        burst: int = DEFAULT_SESSION_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_client is not None and per_client < 1:
            raise ValueError("session quotas: the sessions per client must be >= 1")
        self.per_client = per_client
        self.buckets = TokenBuckets(rate, burst, clock)

    def admit(self, client: str, held: int) -> None:
        """Let ``client``, which holds ``held`` sessions (open or opening), open one more; else raise 429."""
        if self.per_client is not None and held >= self.per_client:
            raise ProtocolError(
                429,
                "TooManySessions",
                f"this client ({client}) holds its maximum of {self.per_client} sessions (--max-sessions-per-client); "
                "retry after one of them closes",
                retry_after_s=1,
            )
        if wait := self.buckets.take(client):
            raise ProtocolError(
                429,
                "SessionRateLimited",
                f"this client ({client}) opens at most {self.buckets.rate:g} sessions a second and "
                f"{self.buckets.burst} at once (--session-rate, --session-burst); retry in {wait:.2f} s",
                retry_after_s=round(wait, 3),
            )


class RequestQuotas:
    """Each client's requests in flight (``per_client`` at most; None: no cap) and a token bucket of requests
    (``rate`` per second, ``burst`` at once; rate 0: none): ``agentgym serve-model``'s quotas."""

    def __init__(
        self,
        per_client: int | None = None,
        rate: float = 0.0,
        burst: int = DEFAULT_SESSION_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_client is not None and per_client < 1:
            raise ValueError("request quotas: the requests per client must be >= 1")
        self.per_client = per_client
        self.buckets = TokenBuckets(rate, burst, clock)
        #: Per client: its requests in flight.
        self.in_flight: dict[str, int] = {}

    def admit(self, client: str) -> None:
        """Count one more of ``client``'s requests in flight (:meth:`release` it when answered); raise a 429
        ``ProtocolError`` when the client already has ``per_client`` in flight or has used up its rate."""
        held = self.in_flight.get(client, 0)
        if self.per_client is not None and held >= self.per_client:
            raise ProtocolError(
                429,
                "TooManyRequests",
                f"this client ({client}) has its maximum of {self.per_client} requests in flight "
                "(--max-requests-per-client); retry when one is answered",
                retry_after_s=1,
            )
        if wait := self.buckets.take(client):
            raise ProtocolError(
                429,
                "RequestRateLimited",
                f"this client ({client}) sends at most {self.buckets.rate:g} requests a second and "
                f"{self.buckets.burst} at once (--request-rate, --request-burst); retry in {wait:.2f} s",
                retry_after_s=round(wait, 3),
            )
        self.in_flight[client] = held + 1

    def release(self, client: str) -> None:
        """One of ``client``'s admitted requests was answered."""
        self.in_flight[client] -= 1
        if not self.in_flight[client]:
            del self.in_flight[client]


class RequestLimits:
    """ASGI middleware: every HTTP request but ``/health`` counts against its client's :class:`RequestQuotas`
    while it is served (a streamed reply until its last chunk); a refused one gets its 429, with ``Retry-After``,
    as ``render`` writes it. Goes inside :class:`Guard`, which names the client."""

    def __init__(self, app: Any, *, quotas: RequestQuotas, render: Callable[[Refusal], bytes]) -> None:
        self.app, self.quotas, self.render = app, quotas, render

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            return await self.app(scope, receive, send)
        client = scope.get(CLIENT) or "address local"
        try:
            self.quotas.admit(client)
        except ProtocolError as error:
            body = self.render(Refusal(error.status, error.type, error.message))
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            headers.append((b"retry-after", retry_after(error).encode()))
            await send({"type": "http.response.start", "status": error.status, "headers": headers})
            return await send({"type": "http.response.body", "body": body})
        try:
            await self.app(scope, receive, send)
        finally:
            self.quotas.release(client)


def retry_after(error: ProtocolError) -> str:
    """The ``Retry-After`` header of a 429: whole seconds, at least 1."""
    return str(max(1, math.ceil(error.details.get("retry_after_s", 1))))


def load_api_keys(
    keys: Sequence[str] = (), key_file: str | None = None, environ: Mapping[str, str] = os.environ
) -> list[str]:
    """The keys given as arguments, in ``key_file`` (one a line; blank lines and ``#`` comments skipped) and in
    ``$AGENTGYM_API_KEYS`` (comma-separated), each once, in that order."""
    found = [key.strip() for key in keys]
    if key_file is not None:
        lines = Path(key_file).read_text(encoding="utf-8").splitlines()
        found += [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    found += [key.strip() for key in environ.get(API_KEYS_ENV, "").split(",") if key.strip()]
    for key in found:
        if not key or any(character.isspace() or not character.isprintable() for character in key):
            raise ValueError("an API key must be non-empty printable text without spaces")
    return list(dict.fromkeys(found))


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (``127.0.0.1``, ``::1``, ``localhost``)."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(addresses) and all(ipaddress.ip_address(address.split("%")[0]).is_loopback for address in addresses)


def check_exposure(
    host: str,
    keys: Sequence[str],
    allow_unauthenticated: bool,
    exposes: str = "open sessions and play them (run commands in code sandboxes, drive browsers)",
) -> str | None:
    """Refuse (``ValueError``) to listen on ``host`` beyond loopback without a key unless ``allow_unauthenticated``;
    the warning to print when it is allowed, else None. ``exposes`` says what a stranger could do there."""
    if keys or is_loopback(host):
        return None
    risk = f"anyone who reaches {host!r} could {exposes}"
    if not allow_unauthenticated:
        raise ValueError(
            f"refusing to listen on {host!r} without an API key: {risk}. Give keys with --api-key-file, "
            f"${API_KEYS_ENV} or --api-key (docs/security.md), or pass --allow-unauthenticated on a trusted network"
        )
    return f"WARNING: listening on {host!r} without an API key (--allow-unauthenticated): {risk}."


def add_key_arguments(parser: argparse.ArgumentParser) -> None:
    """The key options of ``agentgym serve`` and ``agentgym serve-model``."""
    parser.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="KEY",
        help=f"accept this key (repeatable; other users may see it in the process list: prefer ${API_KEYS_ENV} "
        "or --api-key-file); with any key, every request but /health needs 'Authorization: Bearer KEY'",
    )
    parser.add_argument("--api-key-file", metavar="PATH", help="accept the keys in this file, one a line")
    parser.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="listen beyond loopback without a key (refused otherwise): only on a network you trust",
    )


def keys_from_args(args: argparse.Namespace) -> list[str]:
    """The keys of parsed :func:`add_key_arguments` options and of ``$AGENTGYM_API_KEYS``."""
    try:
        return load_api_keys(args.api_key, args.api_key_file)
    except OSError as error:
        raise ValueError(f"cannot read --api-key-file: {error}") from None


def add_quota_arguments(parser: argparse.ArgumentParser) -> None:
    """The per-client quota options of ``agentgym serve``."""
    parser.add_argument(
        "--max-sessions-per-client",
        type=int,
        metavar="N",
        help="open sessions per key (per address without keys) at most; more get HTTP 429 (default: --max-sessions)",
    )
    parser.add_argument(
        "--session-rate",
        type=float,
        default=DEFAULT_SESSION_RATE,
        metavar="PER_SECOND",
        help="sessions a key (an address without keys) may open per second, sustained; more get HTTP 429 "
        "with Retry-After (0: no limit)",
    )
    parser.add_argument(
        "--session-burst",
        type=int,
        default=DEFAULT_SESSION_BURST,
        metavar="N",
        help="sessions a key (an address) may open at once before --session-rate applies",
    )


def add_request_quota_arguments(parser: argparse.ArgumentParser) -> None:
    """The per-client quota options of ``agentgym serve-model``."""
    parser.add_argument(
        "--max-requests-per-client",
        type=int,
        metavar="N",
        help="requests in flight per key (per address without keys) at most; more get HTTP 429 (default: no cap)",
    )
    parser.add_argument(
        "--request-rate",
        type=float,
        default=0.0,
        metavar="PER_SECOND",
        help="requests a key (an address without keys) may send per second, sustained; more get HTTP 429 with "
        "Retry-After (default 0: no limit)",
    )
    parser.add_argument(
        "--request-burst",
        type=int,
        default=DEFAULT_SESSION_BURST,
        metavar="N",
        help="requests a key (an address) may send at once before --request-rate applies",
    )


def request_quotas_from_args(args: argparse.Namespace) -> RequestQuotas:
    """The quotas of parsed :func:`add_request_quota_arguments` options."""
    return RequestQuotas(args.max_requests_per_client, args.request_rate, args.request_burst)


def quotas_from_args(args: argparse.Namespace) -> SessionQuotas:
    """The quotas of parsed :func:`add_quota_arguments` options."""
    return SessionQuotas(args.max_sessions_per_client, args.session_rate, args.session_burst)
