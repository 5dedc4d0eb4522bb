"""Preparing envs (per task, while episodes play), and how many copies of each family run at once.

**Preparation.** A family whose first use is slow (sites to install, an index to build, screenshots
to render) declares a ``prepare`` hook in its registration (see :func:`agentgym.contract.registry.prepare_env`);
a hook that takes ``task_ids`` prepares only what those tasks need. :func:`prepare_items` prepares
a run's envs one after the other (``agentgym prepare``); :class:`Preparations` does it in the
background of ``agentgym eval``: at most ``parallel`` preparations at once, the longest first (the
family's ``prepare_s``; the items' order among equals), while the episodes of ids already ready play
(the runner's workers take those first, and an id's own in their planned place once it is ready:
:meth:`Preparations.ready`), and an episode of an id still preparing waits for it
(:meth:`Preparations.wait`) outside every episode's timeout. A preparation that fails is reported; the
episodes of its id are then recorded as errors that say so, never played on an env that is not ready.

**Concurrency.** A family may declare ``max_concurrency``: how many copies one machine holds
at once. :func:`family_limits` resolves the limits of a run's envs (the user's overrides,
keyed by family or id, come first); the runner keeps each family under its limit whatever
``concurrency`` says, and :func:`interleave` orders the episodes so that the workers waiting
for a busy family do not hold up the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from agentgym.contract.registry import env_info, limit_key, max_concurrency, prepare_env

#: Where an env runs on this machine, so that preparing it here helps: the other backends
#: (docker, ray) run it in a container or on other nodes, which prepare themselves.
LOCAL_BACKENDS = ("local", "process")


class Preparable(Protocol):
    """What :func:`prepare_items` needs of an eval item."""

    env: str
    kwargs: dict[str, Any]

    @property
    def label(self) -> str: ...


def needs_preparation(item: Preparable, backend: str | None = None) -> bool:
    """Whether ``item``'s env declares a preparation and runs on this machine (see :data:`LOCAL_BACKENDS`)."""
    where = backend or item.kwargs.get("backend", "local")
    return where in LOCAL_BACKENDS and env_info(item.env).prepare is not None


def prepare_one(item: Preparable, report: Callable[[str], None], task_ids: Collection[int] | None = None) -> str | None:
    """Prepare ``item``'s env (for ``task_ids`` only, where its hook prepares per task); ``None``, or why it failed."""
    kwargs = {key: value for key, value in item.kwargs.items() if key != "backend"}
    report(f"preparing {item.label} ...")
    started = time.perf_counter()
    try:
        prepare_env(item.env, kwargs, lambda line: report(f"  {item.label}: {line}"), task_ids)
    except Exception as error:  # reported; the item's episodes are recorded as errors that say so
        reason = f"{type(error).__name__}: {error}"
        report(f"preparing {item.label} failed: {reason}")
        return reason
    report(f"{item.label} ready in {time.perf_counter() - started:.1f} s")
    return None


def prepare_items(
    items: Iterable[Preparable],
    backend: str | None = None,
    report: Callable[[str], None] = lambda line: None,
    tasks: Mapping[str, Collection[int]] | None = None,
) -> dict[str, str | None]:
    """Prepare every env of ``items`` that runs on this machine, once per env (id and kwargs), one after the other.

    ``tasks`` (label -> task ids) limits an env's preparation to those tasks (all where it has no entry).
    Returns label -> ``None`` (prepared, or nothing to prepare) or the reason it failed;
    ``report(line)`` gets one line per env, and the family's own progress lines.
    """
    outcome: dict[str, str | None] = {}
    for item in items:
        if item.label not in outcome:
            needed = needs_preparation(item, backend)
            outcome[item.label] = prepare_one(item, report, (tasks or {}).get(item.label)) if needed else None
    return outcome


#: Envs prepared at once by a run: two, so that a long one (building an index) does not hold back another that
#: waits on other processes more than it computes (installing a site).
DEFAULT_PREPARE_CONCURRENCY = 2


class Preparations:
    """A run's preparations in the background, at most ``parallel`` at once, the longest first (the registry's
    ``prepare_s``; otherwise in the items' order: a long one started last would be what the last episodes wait
    for), and never two with the same hook at once (two ids of a family, e.g. Search-v0 and Search-Attack-v0,
    build the same world: the second would only hold a place waiting for the first's lock while another family
    could prepare).

    Each runs in a thread (:func:`prepare_one`); :meth:`wait` is how an episode waits for its env.
    ``on_change()`` is called (on the event loop) whenever one starts or ends: :attr:`done`,
    :attr:`total`, :attr:`running` and :attr:`failed` say where they stand (a progress display).
    Make it on the running event loop.
    """

    def __init__(
        self,
        items: Iterable[Preparable],
        backend: str | None,
        report: Callable[[str], None],
        tasks: Mapping[str, Collection[int]] | None = None,
        parallel: int = 1,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        if parallel < 1:
            raise ValueError(f"parallel must be at least 1, got {parallel}")
        needed = [item for item in items if needs_preparation(item, backend)]
        needed.sort(key=lambda item: -(env_info(item.env).prepare_s or 0.0))
        self._items = {item.label: item for item in needed}
        self._tasks = dict(tasks or {})
        self._report = report
        self._on_change = on_change
        self._ended: dict[str, asyncio.Future[str | None]] = {
            label: asyncio.get_running_loop().create_future() for label in self._items
        }
        self._parallel = parallel
        self._hooks = {label: env_info(item.env).prepare for label, item in self._items.items()}
        self._turn = asyncio.Condition()
        self._waiting: list[str] = []  #: labels not started yet, in their order
        self._jobs: list[asyncio.Task[None]] = []
        self.running: list[str] = []  #: labels being prepared now
        self.failed: dict[str, str] = {}  #: label -> why its preparation failed

    @property
    def labels(self) -> list[str]:
        """The labels that are prepared, in the order they start."""
        return list(self._items)

    @property
    def total(self) -> int:
        """Preparations of the run."""
        return len(self._items)

    @property
    def done(self) -> int:
        """Preparations ended (failed ones included)."""
        return sum(future.done() for future in self._ended.values())

    def start(self) -> None:
        """Start every preparation (each waits for its turn)."""
        self._waiting = list(self._items)
        self._jobs = [asyncio.create_task(self._prepare(label)) for label in self._items]

    def _may_start(self, label: str) -> bool:
        """Whether ``label`` is the first waiting one that may start: a place is free and no preparation with its
        hook runs."""
        if len(self.running) >= self._parallel:
            return False
        busy = {self._hooks[running] for running in self.running}
        return next((waiting for waiting in self._waiting if self._hooks[waiting] not in busy), None) == label

    async def _prepare(self, label: str) -> None:
        async with self._turn:
            await self._turn.wait_for(lambda: self._may_start(label))
            self._waiting.remove(label)
            self.running.append(label)
        self._on_change()
        reason = None
        try:
            reason = await asyncio.to_thread(prepare_one, self._items[label], self._report, self._tasks.get(label))
        except BaseException as error:  # cancelled: the run is over
            reason = f"not prepared: {type(error).__name__}"
            raise
        finally:
            self.running.remove(label)
            if reason is not None:
                self.failed[label] = reason
            self._ended[label].set_result(reason)
            self._on_change()
            async with self._turn:
                self._turn.notify_all()

    def ready(self, label: str) -> bool:
        """Whether ``label``'s preparation has ended (or it has none): its episodes need not wait."""
        ended = self._ended.get(label)
        return ended is None or ended.done()

    async def wait(self, label: str) -> str | None:
        """Wait until ``label``'s env is prepared; ``None`` (ready, or nothing to prepare) or why it failed."""
        ended = self._ended.get(label)
        return None if ended is None else await asyncio.shield(ended)

    async def aclose(self) -> None:
        """Cancel what has not started; a preparation running in its thread is left to end by itself."""
        for job in self._jobs:
            job.cancel()
        await asyncio.gather(*self._jobs, return_exceptions=True)


def family_limits(env_ids: Iterable[str], overrides: Mapping[str, int] | None = None) -> dict[str, int]:
    """:func:`~agentgym.contract.registry.limit_key` -> how many of its episodes may be in flight (limited
    ``env_ids`` only)."""
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
