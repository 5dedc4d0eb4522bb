"""The process backend: the env in an ``agentgym serve`` subprocess on a loopback port.

``gym.make(ENV_ID, backend="process")`` returns a :class:`~agentgym.serving.client.RemoteEnv`
that owns a :class:`ServerProcess`: the subprocess is stopped when the env is closed or
garbage-collected, at interpreter exit, and also when this process dies without cleaning up
(``kill -9``): it watches a pipe whose write end only this process holds, and exits when the
pipe closes. Each such server takes a key of its own (the other users of this machine reach its
loopback port too): the child reads it from ``$AGENTGYM_API_KEYS``, never from its command line.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from typing import IO, Any

from agentgym.serving.auth import API_KEYS_ENV
from agentgym.serving.client import RemoteEnv, open_remote_env, tls_context

#: How long a server subprocess may take to start answering ``/health``.
STARTUP_TIMEOUT_S = 60.0
#: How long ``stop()`` waits for a server subprocess to exit before killing it.
STOP_TIMEOUT_S = 10.0


def make_process(env_id: str, kwargs: dict[str, Any]) -> RemoteEnv:
    """The env in a new ``agentgym serve`` subprocess (see the module docstring)."""
    if not all(importlib.util.find_spec(module) for module in ("fastapi", "uvicorn")):
        raise ImportError("the process backend runs `agentgym serve`, which needs: pip install 'agentgym[server]'")
    # No step limit on the server: gym.make applies TimeLimit on this side.
    server = ServerProcess([env_id], session_ttl_s=0.0, api_key=secrets.token_urlsafe(32))
    return open_remote_env(server, env_id, kwargs, max_episode_steps=-1)


class ServerProcess:
    """An ``agentgym serve`` subprocess serving ``env_ids`` on a free loopback port.

    This process binds the listening socket and hands it to the child, so the port is
    known at once; the constructor returns when ``/health`` answers. The child also gets
    the read end of a pipe (the "lifeline") and exits when it closes, i.e. when
    :meth:`stop` runs or this process dies. ``stop`` also runs when the object is
    garbage-collected and at interpreter exit. With ``api_key``, the server takes that key alone
    (else none). The server is this process's own: its clients open sessions at no limited rate.
    """

    def __init__(
        self,
        env_ids: Sequence[str],
        *,
        max_sessions: int = 16,
        session_ttl_s: float = 0.0,
        server_args: Sequence[str] = (),
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        api_key: str | None = None,
    ) -> None:
        self.api_key = api_key
        listener = socket.create_server(("127.0.0.1", 0))
        lifeline_read, lifeline_write = os.pipe()
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        self._log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115  (open while the server runs)
        command = [
            *(sys.executable, "-m", "agentgym.serving.server", *env_ids),
            *("--fd", str(listener.fileno()), "--exit-with-fd", str(lifeline_read)),
            "--no-prepare",  # answer within the startup timeout; `agentgym eval` prepared this machine already
            *("--max-sessions", str(max_sessions), "--session-ttl", str(session_ttl_s), "--log-level", "warning"),
            *("--session-rate", "0"),
            *server_args,
        ]
        environment = {key: value for key, value in os.environ.items() if key != API_KEYS_ENV}
        if api_key is not None:
            environment[API_KEYS_ENV] = api_key
        try:
            self.process = subprocess.Popen(
                command,
                pass_fds=(listener.fileno(), lifeline_read),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,  # a Ctrl-C in the terminal reaches only this process, which cleans up
            )
        except BaseException:
            os.close(lifeline_write)
            raise
        finally:
            listener.close()
            os.close(lifeline_read)
        self._stopper = weakref.finalize(self, _stop_process, self.process, lifeline_write, self._log)
        try:
            self._wait_until_healthy(startup_timeout_s)
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        """Close the lifeline and wait for the server to exit (killing it after a timeout)."""
        self._stopper()

    def _wait_until_healthy(self, timeout_s: float) -> None:
        import httpx

        try:
            httpx.get(f"{self.url}/health", timeout=timeout_s, verify=tls_context()).raise_for_status()
        except httpx.HTTPError as error:
            try:
                code = self.process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"agentgym server at {self.url} did not become healthy: {error}") from error
            self._log.seek(0)
            output = self._log.read().decode(errors="replace")[-4000:]
            raise RuntimeError(f"agentgym server exited with code {code} while starting:\n{output}") from error


def _stop_process(process: subprocess.Popen, lifeline: int, log: IO[bytes]) -> None:
    os.close(lifeline)  # the server sees end-of-file and shuts down gracefully
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()
