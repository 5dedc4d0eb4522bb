"""Listening sockets for agentgym's servers (the env server, WebShop's site, MCP over HTTP)."""

from __future__ import annotations

import os
import socket
import stat


def listening_socket(host: str, port: int, fd: int | None = None) -> socket.socket:
    """A socket listening on ``host:port`` (or the inherited one ``fd``), with ``TCP_NODELAY``.

    Accepted connections inherit the option. Without it, uvicorn's separate writes of a
    response's head and body can wait for the client's delayed ACK: 40 ms per request.
    """
    if fd is not None:
        sock = socket.socket(fileno=fd)
    else:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def unix_socket(path: str) -> socket.socket:
    """A socket listening at the Unix socket path ``path`` (a stale socket file there is replaced)."""
    if os.path.exists(path) and stat.S_ISSOCK(os.stat(path).st_mode):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    sock.listen(2048)
    return sock


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on now (for a server started next, which binds it itself)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def http_url(host: str, port: int, path: str = "") -> str:
    """``http://host:port`` + ``path``, an IPv6 host in brackets."""
    return f"http://[{host}]:{port}{path}" if ":" in host else f"http://{host}:{port}{path}"
