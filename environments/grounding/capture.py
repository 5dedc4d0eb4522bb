"""Pages of the envs agentgym already runs, read as screenshots and elements with exact boxes.

A source (``sources.yaml``) names env ids; :class:`PageSource` makes them through the registry (``gym.make``
by string id: this family imports no other family), plays an episode's first page (after the actions of
one of the source's ``views``, where it has some) and, with ``oracle_steps``, the pages the env's oracle
leads to, and reads each page: its key, which ``page_group`` turns into the group that decides its split,
then (when that group is still wanted) the screenshot (the env's own ``pixels()``) and the elements and
their boxes. Two readers, by the source's ``reader``:

* ``dom`` (the browser envs): the key is the page's URL, or what the source's ``page_key`` script answers;
  the elements come from the page's DOM (``elements.js``, run by the browser env's ``evaluate``), after the
  source's ``freeze`` rules (``freeze.js``) made the page's time-dependent text the same on any day.
* ``accessibility`` (the desktop env): the env's ``accessible_screen()`` gives the screen's top window in
  words (the key) and the accessibility tree's nodes with their screen boxes and whether a click anywhere in
  the box reaches them; :func:`accessible_elements` turns them into elements by the source's ``roles``.

:meth:`PageSource.rendered` renders several envs at once, each in its own env (its own browser
context) on a worker thread, and hands their pages back in the order of the ids: the build consumes
them exactly as if they had been rendered one after the other, so its output does not depend on the
number of workers. The time goes to Chromium (loading the page, rasterising it), which runs in its own
processes, so threads over the shared browser pool use the machine's cores.
"""

from __future__ import annotations

import re
import time
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
_FREEZE_JS = Path(__file__).with_name("freeze.js")
#: The selector of the elements a source's ``freeze`` rules rewrote (``freeze.js``): never targets.
FROZEN = "[data-agentgym-frozen]"
_URL_JS = "() => location.href"
#: How a source's pages are read (see the module docstring).
READERS = ("dom", "accessibility")
#: Reads of a desktop page until its tree and screen are read the same twice in a row.
STABLE_READS = 5


@cache
def elements_script() -> str:
    """The DOM reader (``elements.js``)."""
    return _ELEMENTS_JS.read_text()


@cache
def freeze_script() -> str:
    """What makes a page the same on any day before it is read (``freeze.js``: a source's ``freeze`` rules)."""
    return _FREEZE_JS.read_text()


def accessible_elements(
    nodes: Sequence[Mapping[str, Any]],
    roles: Mapping[str, str],
    label_roles: Sequence[str],
    min_char_px: float = 0.0,
) -> list[Element]:
    """The elements of an accessibility tree's nodes (``accessible_screen()["nodes"]``): a node whose role
    ``roles`` maps (AT-SPI's ``push button`` to ``button``, ``label`` to ``text``, ...) and that has a box is an
    element of that role, a target where it is ``reachable``; its name is the text it shows, unless it shows a
    picture instead (``icon``), its role is one of ``label_roles`` (a text field's name is not its content) or
    its box is too narrow to show it (under ``min_char_px`` pixels a character: an arrow button named "Up
    Path"): then its name is its label. A top-level window's title is a text that is never a target (a
    dialog's title bar shows it), so that it counts against ambiguity."""
    elements = []
    for node in nodes:
        box, name = node.get("box"), str(node.get("name") or "")
        if not box:
            continue
        parent = node["parent"]
        if parent >= 0 and nodes[parent]["parent"] == -1:  # a top-level window
            if name:
                elements.append(Element("text", name, "", tuple(box), hit=False, target=False))  # type: ignore[arg-type]
            continue
        role = roles.get(node["role"])
        if role is None:
            continue
        fits = len(name) * min_char_px <= box[2]
        shows_name = not node.get("icon") and role not in label_roles and fits
        elements.append(
            Element(
                role=role,
                text=name if shows_name else "",
                label="" if shows_name else name,
                box=tuple(float(value) for value in box),  # type: ignore[arg-type]
                hit=bool(node.get("reachable")),
                target=True,
            )
        )
    return elements


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


class SourceEnv(gym.Wrapper):
    """A source's env, named as the source names it (``id``, or ``id[variant]`` for a variant), so that its
    pages' keys (``Desktop-v0[editor]/3/0``) say how to make it again."""

    def __init__(self, env: gym.Env, source_id: str) -> None:
        super().__init__(env)
        self.source_id = source_id


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
        #: How a page is read: ``dom`` (a browser env's page) or ``accessibility`` (a desktop's tree).
        self.reader = str(spec.get("reader", "dom"))
        if self.reader not in READERS:
            raise ValueError(f"grounding source {name}: reader must be one of {READERS}, got {self.reader!r}")
        #: Action lists: task ``t`` plays ``views[t % len(views)]`` after its reset, before its first page is read
        #: (a variant's own ``views`` replace them for its envs).
        self.views = [list(view) for view in spec.get("views") or []]
        #: Variants of every env id, each made with its own extra arguments: ``{name: {make_kwargs, views}}``.
        self.variants: dict[str, dict[str, Any]] = dict(spec.get("variants") or {})
        self.roles = dict(spec.get("roles") or {})
        self.label_roles = list(spec.get("label_roles") or [])
        self.min_char_px = float(spec.get("min_char_px", 0.0))
        #: Rules rewriting a page's time-dependent text before it is read (``freeze.js``); a variant's own replace them.
        self.freeze = [dict(rule) for rule in spec.get("freeze") or []]
        #: Text that depends on the day: a page still showing it once frozen is an error (its tasks would change).
        self.volatile = re.compile(spec["volatile"]) if spec.get("volatile") else None

    def env_ids(self) -> list[str]:
        """The source's env ids, in a fixed order; with ``variants``, each id once per variant, as ``id[variant]``."""
        envs = self.spec["envs"]
        ids = list(envs["ids"]) if "ids" in envs else [info.id for info in agentgym.list_envs(family=envs["family"])]
        skip = [re.compile(pattern) for pattern in envs.get("skip", [])]
        kept = sorted(env_id for env_id in ids if not any(pattern.search(env_id) for pattern in skip))
        return [f"{env_id}[{variant}]" for env_id in kept for variant in self.variants] if self.variants else kept

    def _variant(self, env_id: str) -> tuple[str, dict[str, Any]]:
        """The registered id of ``env_id`` (``id`` or ``id[variant]``) and its variant's entry (empty without)."""
        match = re.fullmatch(r"(.+)\[(.+)\]", env_id)
        if match is None:
            return env_id, {}
        if match.group(2) not in self.variants:
            raise ValueError(f"grounding source {self.name} has no variant {match.group(2)!r} ({env_id})")
        return match.group(1), dict(self.variants[match.group(2)])

    def make(self, env_id: str) -> gym.Env:
        """The source env ``env_id`` (``id`` or ``id[variant]``; screenshots are taken on demand, by :meth:`read`)."""
        registered, variant = self._variant(env_id)
        return SourceEnv(gym.make(registered, **{**self.make_kwargs, **(variant.get("make_kwargs") or {})}), env_id)

    def views_of(self, env_id: str) -> list[list[str]]:
        """The views env ``env_id`` plays (its variant's, else the source's)."""
        return [list(view) for view in self._variant(env_id)[1].get("views") or self.views]

    def freeze_of(self, env_id: str) -> list[dict[str, Any]]:
        """The ``freeze`` rules of env ``env_id``'s pages (its variant's, else the source's)."""
        return [dict(rule) for rule in self._variant(env_id)[1].get("freeze") or self.freeze]

    def pages(
        self, env: gym.Env, task_id: int, wanted: Callable[[str], bool] = lambda group: True, step: int | None = None
    ) -> Iterator[Page]:
        """The pages of task ``task_id``'s episode: the first one, then one after each oracle step; a page
        whose group ``wanted`` refuses is not captured (see :class:`Page`). With ``step``, only the page
        after that many oracle steps is read (the steps before it are played, not read)."""
        env_id = env.source_id if isinstance(env, SourceEnv) else env.spec.id
        env.reset(seed=task_id, options={"task_id": task_id})
        views = self.views_of(env_id)
        for action in views[task_id % len(views)] if views else ():
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated or info.get("invalid_action"):
                raise RuntimeError(
                    f"grounding source {self.name}: view action {action!r} of {env_id} task {task_id} failed"
                )
        if step in (None, 0):
            yield self.read(env, f"{env_id}/{task_id}/0", wanted)
        for played in range(1, (self.oracle_steps if step is None else step) + 1):
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            if terminated or truncated or info.get("invalid_action"):
                return
            if step in (None, played):
                yield self.read(env, f"{env_id}/{task_id}/{played}", wanted)

    def page(self, env: gym.Env, key: str) -> Page:
        """Page ``key`` (``env_id/task_id/step``, as :meth:`pages` names it) read again in ``env`` (made by
        :meth:`make` for that env id): what a screenshot rendered on first use shows."""
        _, task_id, step = key.rsplit("/", 2)
        for page in self.pages(env, int(task_id), step=int(step)):
            return page
        raise RuntimeError(f"grounding source {self.name}: page {key} could not be reached (its episode ended)")

    def read(self, env: gym.Env, key: str, wanted: Callable[[str], bool] = lambda group: True) -> Page:
        """The page ``env`` shows now: its group, then, if ``wanted(group)``, its screenshot and elements."""
        base = env.unwrapped
        if self.reader == "accessibility":
            screen = base.accessible_screen()
            group = page_group(str(screen["window"]), self.rules)
            if not wanted(group):
                return Page(key, group, None, [])
            pixels = np.asarray(base.pixels())
            for _ in range(STABLE_READS):  # an app that is still drawing (a loaded machine) is read again
                again, again_pixels = base.accessible_screen(), np.asarray(base.pixels())
                if again == screen and np.array_equal(again_pixels, pixels):
                    break
                screen, pixels = again, again_pixels
            else:
                raise RuntimeError(f"grounding source {self.name}: page {key} kept changing while it was read")
            group = page_group(str(screen["window"]), self.rules)
            elements = accessible_elements(screen["nodes"], self.roles, self.label_roles, self.min_char_px)
            return Page(key, group, pixels, elements)
        group = page_group(str(base.evaluate(self.page_key_script)), self.rules)
        if not wanted(group):
            return Page(key, group, None, [])
        exclude = list(getattr(base, "page_exclude", ()))
        freeze = self.freeze_of(env.source_id) if isinstance(env, SourceEnv) else self.freeze
        if freeze:
            exclude.append(FROZEN)
        for attempt in range(STABLE_READS):
            # A page's script may still be drawing (a loaded machine): what it adds after a freeze is frozen on
            # the next read, and text that still depends on the day after the last one is a missing rule.
            if freeze:
                base.evaluate(freeze_script(), {"rules": freeze})
            pixels = np.asarray(base.pixels())
            elements = [Element.from_dict(e) for e in base.evaluate(elements_script(), {"exclude": exclude})]
            shows_the_day = [e.text for e in elements if self.volatile is not None and self.volatile.search(e.text)]
            if not shows_the_day:
                return Page(key, group, pixels, elements)
            time.sleep(0.5 * (attempt + 1))
        raise RuntimeError(
            f"grounding source {self.name}: page {key} shows {shows_the_day[0]!r}, text that depends on the day: "
            "add a freeze rule for it in sources.yaml"
        )

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
