"""Where an env runs: ``gym.make(ENV_ID, backend="local" | "process" | "docker" | "ray", **kwargs)``.

* ``local`` (default): the family's class in this process; ``env.unwrapped`` is its
  :class:`~agentgym.core.TextEnv`.
* ``process``: the env runs in an ``agentgym serve`` subprocess on a loopback port, and
  ``gym.make`` returns a :class:`~agentgym.remote.RemoteEnv` that owns it. The subprocess is
  stopped when the env is closed or garbage-collected, at interpreter exit, and also when
  this process dies without cleaning up (``kill -9``): it watches a pipe whose write end
  only this process holds, and exits when the pipe closes.
* ``docker``: the same server in a container of the family's image, reached through a Unix
  socket, with no network and resource limits; see :mod:`agentgym.docker_backend`.
* ``ray``: the env in a Ray actor on a node of a Ray cluster that has the resources its
  family needs, behind the same interface; see :mod:`agentgym.ray_backend` (needs the
  ``ray`` extra).

Every agentgym id is registered with Gymnasium under the entry point
``agentgym.backends:<ENV_ID>``, which resolves (through this module's ``__getattr__``) to an
:class:`EnvMaker` for that id. The maker takes ``backend=`` out of the kwargs and builds
the env there; its ``metadata`` is the real class's, so Gymnasium's ``render_mode`` handling
is the same as with the class itself, and the spec stays JSON-serialisable.
:attr:`agentgym.EnvInfo.entry_point` keeps the family's real entry point.

``gym.make`` applies ``TimeLimit`` and its checkers on the caller's side for every backend,
so a remote env's server runs without a step limit and truncation happens where it does
locally, including with ``gym.make(..., max_episode_steps=N)``.

A backend is a function ``(env_id, kwargs) -> gym.Env`` in :data:`BACKENDS`. A remote one
starts a server (any :class:`ServerHandle`: a URL and a ``stop()``) and returns
:func:`remote_env` on it, which stops the server when the env closes.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Protocol

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentgym.registry import UnknownEnvError, env_info

if TYPE_CHECKING:
    from agentgym.remote import RemoteEnv

#: How long a server subprocess may take to start answering ``/health``.
STARTUP_TIMEOUT_S = 60.0
#: How long ``stop()`` waits for a server subprocess to exit before killing it.
STOP_TIMEOUT_S = 10.0


class ServerHandle(Protocol):
    """A server a remote backend started: where it listens, and how to stop it."""

    url: str

    def stop(self) -> None:
        """Stop the server and release what it holds; safe to call twice."""


class EnvMaker:
    """Gymnasium's entry point for one agentgym id: builds the env on the backend ``backend=`` names."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id

    @property
    def metadata(self) -> dict[str, Any]:
        """The real class's metadata; ``AttributeError`` where its module does not import here.

        ``gym.make`` reads it with ``hasattr``: a family whose dependencies exist only in
        its container can still be made with a remote backend.
        """
        try:
            return env_class(self.env_id).metadata
        except ImportError as error:
            raise AttributeError(f"metadata of {self.env_id} is unavailable: {error}") from error

    def __call__(self, backend: str = "local", **kwargs: Any) -> gym.Env:
        try:
            make = BACKENDS[backend]
        except KeyError:
            raise ValueError(f"unknown backend {backend!r}; known backends: {', '.join(BACKENDS)}") from None
        return make(self.env_id, kwargs)

    def __repr__(self) -> str:
        return f"EnvMaker({self.env_id!r})"


def __getattr__(name: str) -> EnvMaker:
    """``agentgym.backends.<ENV_ID>``: the maker of a registered id (how Gymnasium finds it)."""
    try:
        return EnvMaker(env_info(name).id)
    except UnknownEnvError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def env_class(env_id: str) -> Callable[..., gym.Env]:
    """The family's real entry point of an agentgym id (importing its module)."""
    return load_env_creator(env_info(env_id).entry_point)


def inline_safe(env_id: str, kwargs: Mapping[str, Any] | None = None) -> bool:
    """Whether ``gym.make(env_id, **kwargs)``'s calls may run on an event loop.

    True for local envs whose class sets ``metadata["inline_safe"]``; remote backends do
    network I/O, so never.
    """
    if (kwargs or {}).get("backend", "local") != "local":
        return False
    entry_point = gym.spec(env_id).entry_point
    creator = entry_point if callable(entry_point) else load_env_creator(entry_point)
    return bool(getattr(creator, "metadata", {}).get("inline_safe"))


def make_local(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """The env in this process."""
    return env_class(env_id)(**kwargs)


def make_process(env_id: str, kwargs: dict[str, Any]) -> RemoteEnv:
    """The env in a new ``agentgym serve`` subprocess (see the module docstring)."""
    if not all(importlib.util.find_spec(module) for module in ("fastapi", "uvicorn")):
        raise ImportError("the process backend runs `agentgym serve`, which needs: pip install 'agentgym[server]'")
    # No step limit on the server: gym.make applies TimeLimit on this side.
    return remote_env(ServerProcess([env_id], session_ttl_s=0.0), env_id, kwargs, max_episode_steps=-1)


def remote_env(server: ServerHandle, env_id: str, kwargs: dict[str, Any], **options: Any) -> RemoteEnv:
    """A ``RemoteEnv`` on ``server`` that stops the server when it closes (or fails to open)."""
    from agentgym.remote import RemoteEnv

    try:
        env = RemoteEnv(server.url, env_id, **options, **kwargs)
    except BaseException:
        server.stop()
        raise
    env.owned_server = server
    return env


def make_docker(env_id: str, kwargs: dict[str, Any]) -> RemoteEnv:
    """The env in a new container (:mod:`agentgym.docker_backend`, imported only here)."""
    from agentgym.docker_backend import make_docker

    return make_docker(env_id, kwargs)


def make_ray(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """The env in a new Ray actor (:mod:`agentgym.ray_backend`, imported only here)."""
    from agentgym.ray_backend import make_ray

    return make_ray(env_id, kwargs)


#: Backend name -> function making ``env_id`` with ``kwargs`` there.
BACKENDS: dict[str, Callable[[str, dict[str, Any]], gym.Env]] = {
    "local": make_local,
    "process": make_process,
    "docker": make_docker,
    "ray": make_ray,
}


class ServerProcess:
    """An ``agentgym serve`` subprocess serving ``env_ids`` on a free loopback port.

    This process binds the listening socket and hands it to the child, so the port is
    known at once; the constructor returns when ``/health`` answers. The child also gets
    the read end of a pipe (the "lifeline") and exits when it closes, i.e. when
    :meth:`stop` runs or this process dies. ``stop`` also runs when the object is
    garbage-collected and at interpreter exit.
    """

    def __init__(
        self,
        env_ids: Sequence[str],
        *,
        max_sessions: int = 16,
        session_ttl_s: float = 0.0,
        server_args: Sequence[str] = (),
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
    ) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        lifeline_read, lifeline_write = os.pipe()
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        self._log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115  (open while the server runs)
        command = [
            *(sys.executable, "-m", "agentgym.server", *env_ids),
            *("--fd", str(listener.fileno()), "--exit-with-fd", str(lifeline_read)),
            *("--max-sessions", str(max_sessions), "--session-ttl", str(session_ttl_s), "--log-level", "warning"),
            *server_args,
        ]
        try:
            self.process = subprocess.Popen(
                command,
                pass_fds=(listener.fileno(), lifeline_read),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
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
            httpx.get(f"{self.url}/health", timeout=timeout_s).raise_for_status()
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
