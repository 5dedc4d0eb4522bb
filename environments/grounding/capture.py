"""Pages of the envs agentgym already runs, read as screenshots and elements with exact boxes.

A source (``sources.yaml``) names env ids; :class:`PageSource` makes them through the registry (``gym.make``
by string id: this family imports no other family), plays an episode's first page and, with ``oracle_steps``,
the pages the env's oracle leads to, and reads each page: its key (its URL, or what the source's ``page_key``
script answers), which ``page_group`` turns into the group that decides its split, then (when that group is
still wanted) the screenshot (the env's own, :meth:`~agentgym.browser.env.BrowserEnv.pixels`) and the elements
and their boxes from the page's DOM (``elements.js``, run by the browser env's ``evaluate``).

:meth:`PageSource.rendered` renders several envs at once, each in its own env (its own browser
context) on a worker thread, and hands their pages back in the order of the ids: the build consumes
them exactly as if they had been rendered one after the other, so its output does not depend on the
number of workers. The time goes to Chromium (loading the page, rasterising it), which runs in its own
processes, so threads over the shared browser pool use the machine's cores.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import agentgym
from agentgym.environments.grounding.describe import Element

_ELEMENTS_JS = Path(__file__).with_name("elements.js")
_URL_JS = "() => location.href"


@cache
def elements_script() -> str:
    """The DOM reader (``elements.js``)."""
    return _ELEMENTS_JS.read_text()


@dataclass
class Page:
    """One captured page: where it came from, its split group, its screenshot and its elements.

    A page whose group was not wanted (:meth:`PageSource.pages`) was not captured: ``pixels`` is ``None``
    and ``elements`` is empty.
    """

    key: str
    group: str
    pixels: np.ndarray | None
    elements: list[Element]

    @property
    def captured(self) -> bool:
        """Whether the screenshot and elements were read (the page's group was wanted)."""
        return self.pixels is not None


def page_group(url: str, rules: list[list[str]]) -> str:
    """The group of the page at ``url``: ``rules`` (``[pattern, replacement]`` pairs) applied in order."""
    group = url
    for pattern, replacement in rules:
        group = re.sub(pattern, replacement, group)
    return group


class PageSource:
    """The pages of one source of ``sources.yaml`` (see the module docstring)."""

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        self.name = name
        self.spec = spec
        self.make_kwargs = dict(spec.get("make_kwargs") or {})
        self.oracle_steps = int(spec.get("oracle_steps", 0))
        self.rules = [list(rule) for rule in spec.get("page_group") or []]
        #: The script whose answer ``page_group`` turns into the page's group (default: the page's URL).
        self.page_key_script = str(spec.get("page_key") or _URL_JS)

    def env_ids(self) -> list[str]:
        """The source's env ids, in a fixed order."""
        envs = self.spec["envs"]
        ids = list(envs["ids"]) if "ids" in envs else [info.id for info in agentgym.list_envs(family=envs["family"])]
        skip = [re.compile(pattern) for pattern in envs.get("skip", [])]
        return sorted(env_id for env_id in ids if not any(pattern.search(env_id) for pattern in skip))

    def make(self, env_id: str) -> gym.Env:
        """The source env ``env_id`` (its screenshots are taken on demand, by :meth:`read`)."""
        return gym.make(env_id, **self.make_kwargs)

    def pages(self, env: gym.Env, task_id: int, wanted: Callable[[str], bool] = lambda group: True) -> Iterator[Page]:
        """The pages of task ``task_id``'s episode: the first one, then one after each oracle step; a page
        whose group ``wanted`` refuses is not captured (see :class:`Page`)."""
        env.reset(seed=task_id, options={"task_id": task_id})
        yield self.read(env, f"{env.spec.id}/{task_id}/0", wanted)
        for step in range(1, self.oracle_steps + 1):
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            if terminated or truncated or info.get("invalid_action"):
                return
            yield self.read(env, f"{env.spec.id}/{task_id}/{step}", wanted)

    def read(self, env: gym.Env, key: str, wanted: Callable[[str], bool] = lambda group: True) -> Page:
        """The page ``env`` shows now: its group, then, if ``wanted(group)``, its screenshot and elements."""
        base = env.unwrapped
        group = page_group(str(base.evaluate(self.page_key_script)), self.rules)
        if not wanted(group):
            return Page(key, group, None, [])
        pixels = np.asarray(base.pixels())
        exclude = list(getattr(base, "page_exclude", ()))
        elements = [Element.from_dict(element) for element in base.evaluate(elements_script(), {"exclude": exclude})]
        return Page(key, group, pixels, elements)

    def env_pages(self, env_id: str, task_ids: Sequence[int], wanted: Callable[[str], bool]) -> list[Page]:
        """The pages of env ``env_id``'s episodes ``task_ids``, played in turn in one env (made and closed here)."""
        with self.make(env_id) as env:
            return [page for task_id in task_ids for page in self.pages(env, task_id, wanted)]

    def rendered(
        self,
        env_ids: Sequence[str],
        task_ids: Sequence[int],
        wanted: Callable[[str], bool] = lambda group: True,
        workers: int = 1,
        skip: Callable[[str], bool] = lambda env_id: False,
    ) -> Iterator[tuple[str, list[Page]]]:
        """Each env of ``env_ids`` with its pages of ``task_ids`` (:meth:`env_pages`), in the order of ``env_ids``,
        rendered by up to ``workers`` threads at once (at most ``workers`` envs ahead of the one handed back).

        ``wanted`` is called from the worker threads; it may only turn from true to false for a group (a split
        filling up while pages are rendered), so that a page it refused would have been refused when consumed.
        ``skip(env_id)``, asked when the env is due to render, makes an env come back with no pages, not played.
        """
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        tasks = list(task_ids)
        if workers == 1:
            for env_id in env_ids:
                yield env_id, [] if skip(env_id) else self.env_pages(env_id, tasks, wanted)
            return
        pending = deque(env_ids)
        in_flight: deque[tuple[str, Future[list[Page]] | None]] = deque()
        with ThreadPoolExecutor(workers, thread_name_prefix="grounding-render") as pool:
            try:
                while pending or in_flight:
                    while pending and sum(future is not None for _, future in in_flight) < workers:
                        env_id = pending.popleft()
                        played = None if skip(env_id) else pool.submit(self.env_pages, env_id, tasks, wanted)
                        in_flight.append((env_id, played))
                    env_id, future = in_flight.popleft()
                    yield env_id, [] if future is None else future.result()
            finally:
                for _, future in in_flight:
                    if future is not None:
                        future.cancel()
