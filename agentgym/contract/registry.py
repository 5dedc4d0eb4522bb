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

import contextlib
import difflib
import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from agentgym.contract.core import TaskSplits


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
    #: How many copies of the family one machine holds at once (None: no limit); runners, the
    #: server and the Ray backend keep to it unless the user overrides it.
    max_concurrency: int | None = None
    #: ``"module:function"`` that does the family's slow one-time preparation (installs, index
    #: builds, image pulls) for ``function(env_id, kwargs, report)``, or per task for
    #: ``function(env_id, kwargs, report, task_ids=None)``; see :func:`prepare_env`.
    prepare: str | None = None
    #: About how many seconds ``prepare`` takes the first time on a 2-core machine (None: a few): a run starts
    #: the longest preparations first, so that the slowest is not the one the last episodes wait for.
    prepare_s: float | None = None
    #: The plugin distribution that registered the id (None: a family shipped with agentgym).
    plugin: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable view (splits as counts)."""
        data = asdict(self)
        data["splits"] = self.splits.counts()
        return data


class UnknownEnvError(KeyError):
    """An env id that is not registered."""


class PluginWarning(UserWarning):
    """A plugin that could not register (it failed to import, or claims an id already taken)."""


_ENVS: dict[str, EnvInfo] = {}
#: The plugin whose registration module is being imported (see :mod:`agentgym.contract.plugins`).
_LOADING_PLUGIN: str | None = None


@contextlib.contextmanager
def registering_plugin(name: str) -> Iterator[None]:
    """While a plugin registers: its ids are marked as the plugin's, and duplicates are skipped."""
    global _LOADING_PLUGIN
    _LOADING_PLUGIN = name
    try:
        yield
    finally:
        _LOADING_PLUGIN = None


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
    max_concurrency: int | None = None,
    prepare: str | None = None,
    prepare_s: float | None = None,
) -> None:
    """Register ``env_id`` with Gymnasium (``gym.make`` works, with ``backend=``) and record its metadata.

    ``max_concurrency``: how many copies of the family this machine holds at once (say so where
    more would overload a shared site, browser or engine). ``prepare``: ``"module:function"`` of
    the family's one-time preparation (see :func:`prepare_env`); ``prepare_s``: about how many seconds it
    takes the first time (runs start the longest first). While a plugin registers
    (:mod:`agentgym.contract.plugins`), an id that is already registered is skipped with a warning.
    """
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"{env_id}: max_concurrency must be at least 1, got {max_concurrency}")
    if _LOADING_PLUGIN is not None and env_id in _ENVS:
        owner = _ENVS[env_id].plugin or "agentgym"
        warnings.warn(
            f"agentgym plugin {_LOADING_PLUGIN!r}: env id {env_id!r} is already registered by {owner!r}; "
            "the plugin's registration is skipped",
            PluginWarning,
            stacklevel=2,
        )
        return
    info = EnvInfo(
        id=env_id,
        family=family,
        entry_point=entry_point,
        description=description,
        splits=splits,
        max_episode_steps=max_episode_steps,
        observation=observation,
        kwargs=dict(kwargs or {}),
        max_concurrency=max_concurrency,
        prepare=prepare,
        prepare_s=prepare_s,
        plugin=_LOADING_PLUGIN,
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


def max_concurrency(env_id: str, overrides: Mapping[str, int] | None = None) -> int | None:
    """How many copies of ``env_id``'s family may run at once on one machine: the user's
    ``overrides`` (keyed by family or by id) first, else the family's declared limit (None: no limit)."""
    info = env_info(env_id)
    overrides = overrides or {}
    for key in (info.id, info.family):
        if key in overrides:
            return overrides[key]
    return info.max_concurrency


def parse_limits(specs: Sequence[str] | None) -> dict[str, int]:
    """``["webapps=8", "Sokoban-v0=2"]`` (``--family-concurrency``) as ``{"webapps": 8, "Sokoban-v0": 2}``."""
    limits = {}
    for spec in specs or ():
        name, _, number = spec.partition("=")
        if not name.strip() or not number.strip().isdigit() or int(number) < 1:
            raise ValueError(f"--family-concurrency takes FAMILY=N or ENV_ID=N with N >= 1, got {spec!r}")
        limits[name.strip()] = int(number)
    return limits


def limit_key(env_id: str, overrides: Mapping[str, int] | None = None) -> str:
    """What ``env_id``'s concurrency limit is counted under: its id where the user limited the id, else its family."""
    info = env_info(env_id)
    return info.id if overrides and info.id in overrides else info.family


def prepare_env(
    env_id: str,
    kwargs: Mapping[str, Any] | None = None,
    report: Callable[[str], None] = lambda line: None,
    task_ids: Collection[int] | None = None,
) -> bool:
    """Do ``env_id``'s one-time preparation (site installs, index builds...) if its family declares one.

    ``task_ids``: only what these tasks need (a hook that takes a ``task_ids`` keyword prepares
    just that: one repository's venv, one site, a few screenshots; other hooks prepare the whole
    id); ``None`` prepares every task. Idempotent and safe to call from several processes (each
    family's hook makes it so); it returns quickly when there is nothing left to do.
    ``report(line)`` receives progress lines. Returns whether the family declares a preparation.
    """
    info = env_info(env_id)
    if info.prepare is None:
        return False
    hook = load_env_creator(info.prepare)
    by_task = {"task_ids": sorted(task_ids)} if task_ids is not None and takes_task_ids(hook) else {}
    hook(info.id, {**info.kwargs, **(kwargs or {})}, report, **by_task)
    return True


def takes_task_ids(hook: Callable[..., Any]) -> bool:
    """Whether a preparation hook prepares per task (it has a ``task_ids`` parameter)."""
    return "task_ids" in inspect.signature(hook).parameters


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
