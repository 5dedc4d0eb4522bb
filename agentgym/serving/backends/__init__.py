"""Where an env runs: ``gym.make(ENV_ID, backend="local" | "process" | "docker" | "ray", **kwargs)``.

* ``local`` (default): the family's class in this process; ``env.unwrapped`` is its
  :class:`~agentgym.contract.core.TextEnv`.
* ``process``: the env runs in an ``agentgym serve`` subprocess on a loopback port, and
  ``gym.make`` returns a the :class:`~agentgym.serving.client.RemoteEnv` that owns it. The subprocess is
  stopped when the env is closed or garbage-collected, at interpreter exit, and also when
  this process dies without cleaning up (``kill -9``): it watches a pipe whose write end
  only this process holds, and exits when the pipe closes.
* ``docker``: the same server in a container of the family's image, reached through a Unix
  socket, with no network and resource limits; see :mod:`agentgym.serving.backends.docker`.
* ``ray``: the env in a Ray actor on a node of a Ray cluster that has the resources its
  family needs, behind the same interface; see :mod:`agentgym.serving.backends.ray` (needs the
  ``ray`` extra).

Every agentgym id is registered with Gymnasium under the entry point
``agentgym.serving.backends:<ENV_ID>``, which resolves (through this module's ``__getattr__``) to an
:class:`EnvMaker` for that id. The maker takes ``backend=`` out of the kwargs and builds
the env there; its ``metadata`` is the real class's, so Gymnasium's ``render_mode`` handling
is the same as with the class itself, and the spec stays JSON-serialisable.
:attr:`agentgym.EnvInfo.entry_point` keeps the family's real entry point.

``gym.make`` applies ``TimeLimit`` and its checkers on the caller's side for every backend,
so a remote env's server runs without a step limit and truncation happens where it does
locally, including with ``gym.make(..., max_episode_steps=N)``.

A backend is a function ``(env_id, kwargs) -> gym.Env``, named in :data:`BACKENDS` and
living in a module of this package (``local``, ``process``, ``docker``, ``ray``) that is
imported when the backend is first used and never imports this table back. A remote one
starts a server (any :class:`~agentgym.serving.client.ServerHandle`: a URL and a ``stop()``)
and returns :func:`~agentgym.serving.client.open_remote_env` on it, which stops the server
when the env closes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from agentgym.contract.registry import UnknownEnvError, env_info
from agentgym.serving.backends.local import env_class

#: Backend name -> ``"module:function"`` making ``env_id`` with ``kwargs`` there.
BACKENDS: dict[str, str] = {
    "local": "agentgym.serving.backends.local:make_local",
    "process": "agentgym.serving.backends.process:make_process",
    "docker": "agentgym.serving.backends.docker:make_docker",
    "ray": "agentgym.serving.backends.ray:make_ray",
}


def backend_maker(name: str) -> Callable[[str, dict[str, Any]], gym.Env]:
    """The function of backend ``name`` (importing its module)."""
    try:
        module, function = BACKENDS[name].split(":")
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}") from None
    return getattr(importlib.import_module(module), function)


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
        return backend_maker(backend)(self.env_id, kwargs)

    def __repr__(self) -> str:
        return f"EnvMaker({self.env_id!r})"


def __getattr__(name: str) -> EnvMaker:
    """``agentgym.serving.backends.<ENV_ID>``: the maker of a registered id (how Gymnasium finds it)."""
    try:
        return EnvMaker(env_info(name).id)
    except UnknownEnvError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
