"""``/metrics`` off the event loop and out of the server's process: a listener for monitors
(``agentgym serve --metrics-port``).

Under full load the server's event loop runs late (its lag is in ``/metrics`` itself: about a second at the median
with 256 sessions on two cores, benchmarks/results/soak.md), and every route it serves waits that long, ``/metrics``
too. A listener on a thread of the server's own process answered at once while the loop stood still, but not
always under load: it shared the server's interpreter lock with every busy thread, and 2 of 565 scrapes in a 2-hour
soak took over a second. So :class:`MetricsListener` binds the port in the server's process and hands it to a
relay, a small process of its own (``python -m agentgym.serving.monitor``) that answers ``GET /metrics`` with the
newest snapshot of the server's counters. A thread of the server sends the relay a snapshot when the relay asks
for one (at each scrape, waiting at most :data:`FRESH_WAIT_S` for it) and every :data:`REFRESH_S` anyway, reading
the :class:`~agentgym.serving.sessions.EnvServer`'s counters directly (:meth:`EnvServer.metrics` takes copies that
are safe from another thread). A scrape that the server could not serve fresh in time gets the last snapshot; the
``Age`` header says how old it is, in whole seconds. The server's keys guard it (``Authorization: Bearer KEY``; 401
without one) and the body is the loop's ``/metrics`` JSON. A relay that dies is started again; one whose server
dies exits with it.
"""

from __future__ import annotations

import http.server
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from agentgym.serving.auth import ApiKeys, Refusal
from agentgym.serving.calls import ProtocolError
from agentgym.serving.wire import encode_json
from agentgym.utils.processes import exit_with_parent, parent_environment
from agentgym.utils.sockets import http_url

if TYPE_CHECKING:
    from agentgym.serving.sessions import EnvServer

#: How long the relay waits for a request's bytes before it drops the connection (it serves one at a time).
READ_TIMEOUT_S = 5.0
#: How long a scrape waits for a fresh snapshot before it is answered with the last one.
FRESH_WAIT_S = 0.3
#: How often the server sends a snapshot unasked (the oldest a scrape's answer is while the server keeps up).
REFRESH_S = 1.0
#: How long :meth:`MetricsListener.start` waits for the relay to serve.
START_TIMEOUT_S = 60.0
#: A snapshot's frame on the relay's stdin: its length, then its bytes (the first frame: the keys, as JSON).
_LENGTH = struct.Struct(">I")


class MetricsListener:
    """Serves ``GET /metrics`` of ``server`` on ``host:port`` (0: a free port; :attr:`url` says which) from a relay
    process, once :meth:`start` ed and until :meth:`close`; with ``api_keys``, only to requests that carry one.

    The relay answers one request at a time, each on a connection of its own (HTTP/1.0; a client that sends
    nothing for :data:`READ_TIMEOUT_S` is dropped): a scrape is short, and a thread started per request would
    wait, under load, for the kernel to run it (a first version did: 1 of 65 scrapes took 1.9 s in a 12-minute
    soak)."""

    def __init__(self, server: EnvServer, host: str, port: int, api_keys: Sequence[str] = ()) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.create_server((host, port), family=family, backlog=64)
        self._server = server
        self._keys = list(api_keys)
        self._relay: subprocess.Popen[bytes] | None = None
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._send_snapshots, name="metrics-snapshots", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return http_url(str(host), port, "/metrics")

    @property
    def relay_pid(self) -> int | None:
        """The relay process's pid (None before :meth:`start`)."""
        return None if self._relay is None else self._relay.pid

    def start(self) -> MetricsListener:
        """Start the relay, and return once it serves (it asks for its first snapshot then)."""
        self._relay = self._start_relay()
        assert self._relay.stdout is not None
        ready, _, _ = select.select([self._relay.stdout], [], [], START_TIMEOUT_S)
        if not ready or not os.read(self._relay.stdout.fileno(), 1):
            self._relay.kill()
            raise RuntimeError(f"the /metrics relay did not start within {START_TIMEOUT_S:g} s (its errors are above)")
        _write_frame(self._relay.stdin, encode_json(self._server.metrics()))  # type: ignore[arg-type]
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join(REFRESH_S + 5)  # it starts no relay once closing
        relay = self._relay
        if relay is not None:
            relay.stdin.close()  # type: ignore[union-attr]  # the relay exits at the end of its input
            try:
                relay.wait(5)
            except subprocess.TimeoutExpired:
                relay.kill()
                relay.wait()
            self._server.helper_pids.discard(relay.pid)
        self._socket.close()

    def _start_relay(self) -> subprocess.Popen[bytes]:
        fd = self._socket.fileno()
        relay = subprocess.Popen(
            [sys.executable, "-m", "agentgym.serving.monitor", str(fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(fd,),
            env={**os.environ, **parent_environment()},
        )
        _write_frame(relay.stdin, json.dumps(self._keys).encode())  # type: ignore[arg-type]
        self._server.helper_pids.add(relay.pid)  # left at the server's priority when it lowers its envs' processes
        return relay

    def _send_snapshots(self) -> None:
        """The server's side: a snapshot when the relay asks (a byte on its stdout) and every :data:`REFRESH_S`;
        a relay that died is started again (from this thread, whose life its own is tied to)."""
        while not self._closing.is_set():
            relay = self._relay
            assert relay is not None and relay.stdout is not None
            asked, _, _ = select.select([relay.stdout], [], [], REFRESH_S)
            if asked and not os.read(relay.stdout.fileno(), 4096):  # the relay is gone
                relay.wait()
                self._server.helper_pids.discard(relay.pid)
                if not self._closing.is_set():
                    self._relay = self._start_relay()
                continue
            try:
                _write_frame(relay.stdin, encode_json(self._server.metrics()))  # type: ignore[arg-type]
            except (BrokenPipeError, ValueError):  # it died or is being closed: its stdout says so next
                continue


def _write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame on ``stream``; None at its end."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    data = stream.read(length)
    return data if len(data) == length else None


class _Snapshots:
    """The relay's side: the newest snapshot from the server (read from stdin by a thread), and fresh ones asked
    for on stdout. The relay exits when its input ends (the server closed it, or died)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._latest: tuple[int, float, bytes] = (0, 0.0, b"")  # (count, when received, body)
        threading.Thread(target=self._receive, name="snapshots", daemon=True).start()

    def _receive(self) -> None:
        while (body := _read_frame(sys.stdin.buffer)) is not None:
            with self._changed:
                self._latest = (self._latest[0] + 1, time.monotonic(), body)
                self._changed.notify_all()
        os._exit(0)

    def ask(self) -> None:
        """Ask the server for a snapshot now."""
        sys.stdout.buffer.write(b"?")
        sys.stdout.buffer.flush()

    def fresh(self) -> tuple[bytes, float] | None:
        """A snapshot the server sent after this call began, or the last one after :data:`FRESH_WAIT_S`; the body
        and its age in seconds. None when the server has sent none within :data:`READ_TIMEOUT_S`."""
        with self._changed:
            seen = self._latest[0]
            self.ask()
            if not self._changed.wait_for(lambda: self._latest[0] > seen, FRESH_WAIT_S):
                self._changed.wait_for(lambda: self._latest[0] > 0, READ_TIMEOUT_S)
            count, received, body = self._latest
        return (body, time.monotonic() - received) if count else None


def relay(fd: int) -> None:
    """The relay process: serve ``GET /metrics`` on the listening socket ``fd`` from the server's snapshots."""
    exit_with_parent()
    keys = json.loads(_read_frame(sys.stdin.buffer) or b"[]")
    snapshots = _Snapshots()
    handler = type(
        "MetricsHandler", (_MetricsHandler,), {"keys": ApiKeys(keys) if keys else None, "snapshots": snapshots}
    )
    listening = socket.socket(fileno=fd)
    http_server = http.server.HTTPServer(listening.getsockname()[:2], handler, bind_and_activate=False)
    http_server.socket.close()
    http_server.socket = listening
    snapshots.ask()  # the first: the server waits for it to know that this relay serves
    http_server.serve_forever()


class _MetricsHandler(http.server.BaseHTTPRequestHandler):
    snapshots: _Snapshots
    keys: ApiKeys | None
    timeout = READ_TIMEOUT_S

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.split("?", 1)[0] != "/metrics":
            self._refuse(ProtocolError(404, "NotFound", f"this listener serves GET /metrics only, not {self.path}"))
            return
        if self.keys is not None:
            client = self.keys.identify((name.lower().encode(), value.encode()) for name, value in self.headers.items())
            if isinstance(client, Refusal):
                self._refuse(ProtocolError(client.status, client.type, client.message), client.headers)
                return
        snapshot = self.snapshots.fresh()
        if snapshot is None:
            self._refuse(
                ProtocolError(503, "ServiceUnavailable", "the server has sent no snapshot of its counters yet")
            )
            return
        self._answer(200, snapshot[0], {"Age": str(int(snapshot[1]))})

    def _refuse_method(self) -> None:
        self._refuse(ProtocolError(405, "MethodNotAllowed", "this listener serves GET /metrics only"), {"Allow": "GET"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse_method  # noqa: N815

    def _refuse(self, error: ProtocolError, headers: Mapping[str, str] | None = None) -> None:
        self._answer(error.status, error.body(), headers)

    def _answer(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        """Silent, as the server's access log is."""


if __name__ == "__main__":
    relay(int(sys.argv[1]))
