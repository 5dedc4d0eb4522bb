"""Before episodes start: each env's one-time preparation, and how many copies of each family run at once.

**Preparation.** A family whose first use is slow (sites to install, an index to build, games
to pregenerate) declares a ``prepare`` hook in its registration (see
:func:`agentgym.registry.prepare_env`). :func:`prepare_items` calls it once per env of a run,
before any episode, outside every episode's timeout, reporting progress; ``agentgym eval`` does
so up front and ``agentgym prepare SUITE`` does it alone. A preparation that fails is reported
and the run goes on: the env's episodes then fail (and are retried) with the env's own error.

**Concurrency.** A family may declare ``max_concurrency``: how many copies one machine holds
at once. :func:`family_limits` resolves the limits of a run's envs (the user's overrides,
keyed by family or id, come first); the runner keeps each family under its limit whatever
``concurrency`` says, and :func:`interleave` orders the episodes so that the workers waiting
for a busy family do not hold up the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from agentgym.registry import env_info, limit_key, max_concurrency, prepare_env

#: Where an env runs on this machine, so that preparing it here helps: the other backends
#: (docker, ray) run it in a container or on other nodes, which prepare themselves.
LOCAL_BACKENDS = ("local", "process")


class Preparable(Protocol):
    """What :func:`prepare_items` needs of an eval item."""

    env: str
    kwargs: dict[str, Any]

    @property
    def label(self) -> str: ...


def prepare_items(
    items: Iterable[Preparable], backend: str | None = None, report: Callable[[str], None] = lambda line: None
) -> dict[str, str | None]:
    """Prepare every env of ``items`` that runs on this machine, once per env (id and kwargs).

    Returns label -> ``None`` (prepared, or nothing to prepare) or the reason it failed;
    ``report(line)`` gets one line per env, and the family's own progress lines.
    """
    outcome: dict[str, str | None] = {}
    for item in items:
        if item.label in outcome:
            continue
        where = backend or item.kwargs.get("backend", "local")
        if where not in LOCAL_BACKENDS or env_info(item.env).prepare is None:
            outcome[item.label] = None
            continue
        kwargs = {key: value for key, value in item.kwargs.items() if key != "backend"}
        report(f"preparing {item.label} ...")
        started = time.perf_counter()
        try:
            prepare_env(item.env, kwargs, lambda line, label=item.label: report(f"  {label}: {line}"))
        except Exception as error:  # reported; the episodes then meet the env's own error
            outcome[item.label] = f"{type(error).__name__}: {error}"
            report(f"preparing {item.label} failed: {outcome[item.label]}")
            continue
        outcome[item.label] = None
        report(f"{item.label} ready in {time.perf_counter() - started:.1f} s")
    return outcome


def family_limits(env_ids: Iterable[str], overrides: Mapping[str, int] | None = None) -> dict[str, int]:
    """:func:`~agentgym.registry.limit_key` -> how many of its episodes may be in flight (limited ``env_ids`` only)."""
    limits = {}
    for env_id in env_ids:
        limit = max_concurrency(env_id, overrides)
        if limit is not None:
            if limit < 1:
                raise ValueError(f"a concurrency limit must be at least 1, got {limit} for {env_id}")
            limits[limit_key(env_id, overrides)] = limit
    return limits


T = TypeVar("T")


def interleave(planned: Sequence[T], key: Callable[[T], str]) -> list[T]:
    """``planned`` reordered round-robin over ``key`` (each key's order kept), so that a family
    capped at a few episodes in flight does not fill the queue's head."""
    queues: dict[str, list[T]] = {}
    for episode in planned:
        queues.setdefault(key(episode), []).append(episode)
    ordered: list[T] = []
    for index in range(max((len(queue) for queue in queues.values()), default=0)):
        ordered.extend(queue[index] for queue in queues.values() if index < len(queue))
    return ordered
