"""One registry: every agentgym id is a Gymnasium registration plus metadata.

Families call :func:`register` from their package ``__init__`` with a string entry point,
so registering loads no engine, catalog or browser; the env's module is imported only by
``gym.make``. Gymnasium's entry point for every id is ``agentgym.serving.backends:<ID>``, which
makes the family's class on the backend that ``gym.make(ID, backend=...)`` names (see
:mod:`agentgym.serving.backends`); :class:`EnvInfo` keeps the family's own entry point.
:func:`register_families` imports each family package under ``agentgym.environments``
(done once by ``import agentgym``).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentgym.core import TaskSplits


@dataclass(frozen=True)
class EnvInfo:
    """What ``agentgym.list_envs()`` tells about one env id."""

    id: str
    family: str
    entry_point: str
    description: str
    splits: TaskSplits
    max_episode_steps: int
    #: ``"text"`` for ``str`` observations, ``"text+screenshot"`` for dicts with both.
    observation: str = "text"
    kwargs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable view (splits as counts)."""
        data = asdict(self)
        data["splits"] = self.splits.counts()
        return data


class UnknownEnvError(KeyError):
    """An env id that is not registered."""


_ENVS: dict[str, EnvInfo] = {}


def register(
    env_id: str,
    *,
    entry_point: str,
    family: str,
    description: str,
    splits: TaskSplits,
    max_episode_steps: int,
    observation: str = "text",
    kwargs: dict[str, Any] | None = None,
) -> None:
    """Register ``env_id`` with Gymnasium (``gym.make`` works, with ``backend=``) and record its metadata."""
    info = EnvInfo(
        id=env_id,
        family=family,
        entry_point=entry_point,
        description=description,
        splits=splits,
        max_episode_steps=max_episode_steps,
        observation=observation,
        kwargs=dict(kwargs or {}),
    )
    gym.register(
        id=env_id,
        entry_point=f"agentgym.serving.backends:{env_id}",
        max_episode_steps=max_episode_steps,
        kwargs=dict(info.kwargs),
    )
    _ENVS[env_id] = info


@dataclass(frozen=True)
class Command:
    """A subcommand of ``agentgym`` that a family provides, e.g. ``agentgym webshop-site``."""

    name: str
    entry_point: str  # "module:function", a function(argv: list[str]) -> int
    help: str


_COMMANDS: dict[str, Command] = {}


def register_command(name: str, entry_point: str, help: str) -> None:
    """Add ``agentgym NAME ...``: its arguments go to ``entry_point`` (imported only when run)."""
    _COMMANDS[name] = Command(name, entry_point, help)


def list_commands() -> list[Command]:
    """The family-provided subcommands, sorted by name."""
    return sorted(_COMMANDS.values(), key=lambda command: command.name)


def unregister(env_id: str) -> None:
    """Remove an id registered with :func:`register` (from Gymnasium's registry too)."""
    del _ENVS[env_id]
    gym.registry.pop(env_id, None)


def register_families() -> None:
    """Import every family package under ``agentgym.environments`` so it registers."""
    import agentgym.environments as families

    for module in pkgutil.iter_modules(families.__path__):
        if module.ispkg:
            importlib.import_module(f"{families.__name__}.{module.name}")


def list_envs(family: str | None = None) -> list[EnvInfo]:
    """Every registered agentgym env (optionally of one family), sorted by id."""
    return sorted(
        (info for info in _ENVS.values() if family is None or info.family == family),
        key=lambda info: info.id,
    )


def env_info(env_id: str) -> EnvInfo:
    """Metadata of one registered id (``agentgym:`` prefix allowed).

    An unknown id raises :class:`UnknownEnvError` (a ``KeyError``) listing the known ones.
    """
    env_id = env_id.removeprefix("agentgym:")
    try:
        return _ENVS[env_id]
    except KeyError:
        raise UnknownEnvError(f"unknown env id {env_id!r}; {known_ids_hint(env_id)}") from None


def known_ids_hint(name: str) -> str:
    """What to say after an unknown id: the closest registered ids and where to see them all."""
    close = difflib.get_close_matches(name, list(_ENVS), n=5, cutoff=0.5)
    suggestion = f"did you mean {', '.join(close)}? " if close else ""
    return f"{suggestion}`agentgym list` shows all {len(_ENVS)} known ids"


def inline_safe(env: str | gym.Env, kwargs: Mapping[str, Any] | None = None) -> bool:
    """Whether an env's calls are pure Python in this process, so that they may run on an event
    loop (no thread is worth it): ``env`` made, or the id ``gym.make(env, **kwargs)`` would make.

    True for local envs whose class sets ``metadata["inline_safe"]``; remote backends do
    network I/O, so never (their envs' metadata says False).
    """
    if isinstance(env, gym.Env):
        return bool(env.metadata.get("inline_safe", False))
    env_id = env
    if (kwargs or {}).get("backend", "local") != "local":
        return False
    entry_point = gym.spec(env_id).entry_point
    creator = entry_point if callable(entry_point) else load_env_creator(entry_point)
    return bool(getattr(creator, "metadata", {}).get("inline_safe"))
