"""``/metrics`` off the event loop: a listener of its own for monitors (``agentgym serve --metrics-port``).

Under full load the server's event loop runs late (its lag is in ``/metrics`` itself: about a second at the median
with 256 sessions on two cores, benchmarks/results/soak.md), and every route it serves waits that long, ``/metrics``
too. :class:`MetricsListener` answers ``GET /metrics`` from a thread of its own on a port of its own, reading the
:class:`~agentgym.serving.sessions.EnvServer`'s counters directly (:meth:`EnvServer.metrics` takes snapshots that
are safe from another thread), so that a scrape is answered while the loop is busy. The server's keys guard it
(``Authorization: Bearer KEY``; 401 without one) and the body is the loop's ``/metrics`` JSON.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentgym.serving.auth import ApiKeys, Refusal
from agentgym.serving.calls import ProtocolError
from agentgym.serving.wire import encode_json
from agentgym.utils.sockets import http_url

if TYPE_CHECKING:
    from agentgym.serving.sessions import EnvServer

#: How long the listener waits for a request's bytes before it drops the connection (it serves one at a time).
READ_TIMEOUT_S = 5.0


class MetricsListener:
    """Serves ``GET /metrics`` of ``server`` on ``host:port`` (0: a free port; :attr:`url` says which) from a daemon
    thread, once :meth:`start` ed and until :meth:`close`; with ``keys``, only to requests that carry one.

    One request at a time, each on a connection of its own (HTTP/1.0; a client that sends nothing for
    :data:`READ_TIMEOUT_S` is dropped): a scrape is short, and a thread started per request would wait, under load,
    for the kernel to run it (a first version did: 1 of 65 scrapes took 1.9 s in a 12-minute soak)."""

    def __init__(self, server: EnvServer, host: str, port: int, keys: ApiKeys | None = None) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        http_class = type("MetricsHTTPServer", (http.server.HTTPServer,), {"address_family": family})
        handler = type("MetricsHandler", (_MetricsHandler,), {"env_server": server, "keys": keys})
        self._http = http_class((host, port), handler)
        self._thread = threading.Thread(target=self._http.serve_forever, name="metrics-listener", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return http_url(str(host), port, "/metrics")

    def start(self) -> MetricsListener:
        self._thread.start()
        return self

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)


class _MetricsHandler(http.server.BaseHTTPRequestHandler):
    env_server: EnvServer
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
        self._answer(200, encode_json(self.env_server.metrics()))

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
