"""Grounding: click the element a phrase describes on a screenshot of a real page (ScreenSpot style).

Each task is one step. The first observation is ``{"text", "screenshot"}``: the text holds the
instruction (``Click the "Submit" button.``), the action syntax and the screenshot's size; the
screenshot (uint8, height x width x 3) is a page of an env agentgym already runs (MiniWoB++ task
pages, WebShop's website along the oracle's episodes, Desktop-v0's Mousepad and Gnumeric windows with
their menus and dialogs), rendered once, when a task of it is first used or prepared, then read from the cache
(:mod:`.dataset`).

Action: ``click(x, y)``, x and y pixels of the screenshot from its top-left corner (numbers; a
fraction is allowed), as text or as a call of the ``click`` function tool. Anything else, or a
point off the screenshot, is an invalid action: the observation says why and the episode goes on.

Reward: 1 when the click lands in the described element's box (``left <= x < left + width`` and
``top <= y < top + height``; the box is the element's exact box read from the page's DOM, or from the
accessibility tree for the desktop's windows), else
0. The first valid click ends the episode; ``info`` then holds ``box`` (the target's box) and
``hit``. Descriptions are never ambiguous: no other element of the page shows the same text, has
the same role (for a description by role) or stands in the same place (for a description relative
to another element; :mod:`.describe`).

Tasks: train, dev and test tasks come from pages of disjoint groups (for MiniWoB++, the task page
without its variant suffix, tasks whose pages look alike in one group; for WebShop, the search page, a
results page's products, an item page's product; for the desktop, the window kind: a main window, a menu
open, a dialog): no page of a test group is in train, and no test
screenshot has a near-duplicate in train (:mod:`.similarity`). Oracle: a click at the box's
centre. Random baseline (:meth:`GroundingEnv.random_action`): a click on a uniformly drawn pixel,
whose success probability is the box's share of the screen's pixels (:func:`pixel_share`).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from agentgym.contract.core import SPLIT_NAMES, InvalidAction, TaskSplits, TextEnv, UnicodeText
from agentgym.environments.grounding.dataset import (
    SourceData,
    build_workers,
    load_or_build,
    render_screens,
    screen_of,
    screen_size,
    source_splits,
)

_NUMBER = r"\s*([-+]?\d+(?:\.\d+)?)\s*"
_CLICK = re.compile(rf"^click\s*\({_NUMBER},{_NUMBER}\)$", re.IGNORECASE)


def combined_splits(sources: tuple[str, ...]) -> TaskSplits:
    """The task counts of ``sources`` together (task ids: each split's tasks source after source)."""
    parts = [source_splits(name) for name in sources]
    return TaskSplits(**{split: sum(getattr(part, split) for part in parts) for split in SPLIT_NAMES})


def in_box(x: float, y: float, box: list[float]) -> bool:
    """Whether the point (x, y) lies in ``box`` ([left, top, width, height]; right and bottom edges excluded)."""
    left, top, width, height = box
    return left <= x < left + width and top <= y < top + height


def pixel_share(box: list[float], width: int, height: int) -> float:
    """The share of the screen's pixels (x, y integers) that lie in ``box``: a random click's success chance."""
    left, top, box_width, box_height = box
    columns = max(0, min(width, math.ceil(left + box_width)) - max(0, math.ceil(left)))
    rows = max(0, min(height, math.ceil(top + box_height)) - max(0, math.ceil(top)))
    return columns * rows / (width * height)


class GroundingEnv(TextEnv):
    """One click on a cached screenshot (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4, "inline_safe": True}
    max_observation_chars: ClassVar[int] = 4_000
    max_action_chars: ClassVar[int] = 4_000
    #: The pixel command this env takes, for the computer-use formats (:mod:`agentgym.computer_use`).
    pixel_actions: ClassVar[tuple[str, ...]] = ("click",)

    def __init__(
        self,
        sources: tuple[str, ...] | list[str] = ("MiniWoB",),
        *,
        data_dir: str | Path | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode=render_mode)
        self.sources = tuple(sources)
        if not self.sources:
            raise ValueError("sources must name at least one grounding source")
        self.splits = combined_splits(self.sources)
        self.width, self.height = screen_size()
        #: Each source's tasks, loaded from its folder (built there first if missing).
        self.data: dict[str, SourceData] = {name: load_or_build(name, data_dir) for name in self.sources}
        self._tasks = {
            split: [(data, task) for data in self.data.values() for task in data.tasks[split]] for split in SPLIT_NAMES
        }
        self.observation_space = spaces.Dict(
            {
                "text": UnicodeText(self.max_observation_chars),
                "screenshot": spaces.Box(0, 255, shape=(self.height, self.width, 3), dtype=np.uint8),
            }
        )
        self.task: dict[str, Any] = {}
        self.hit: bool | None = None
        self._screen_key: tuple[Path, str] | None = None
        self._pixels = np.zeros((self.height, self.width, 3), dtype=np.uint8)

    # ---- tasks ------------------------------------------------------------------------

    def task_of(self, task_id: int) -> dict[str, Any]:
        """Task ``task_id`` as stored (``instruction``, ``box``, ``kind``, ``page``, ``screen``, ...)."""
        return self.source_task(task_id)[1]

    def source_task(self, task_id: int) -> tuple[SourceData, dict[str, Any]]:
        """Task ``task_id``'s source and the task as stored."""
        split = self.splits.split_of(task_id)
        return self._tasks[split][task_id - self.splits.ids(split).start]

    def _generate(self, task_id: int) -> str:
        data, self.task = self.source_task(task_id)
        key = (data.folder, self.task["screen"])
        if key != self._screen_key:  # a screenshot holds several tasks in a row: read it once
            self._pixels = screen_of(data, self.task)
            self._pixels.setflags(write=False)
            self._screen_key = key
        self.hit = None
        return self.task["instruction"]

    @property
    def action_syntax(self) -> str:
        return (
            "Action: click(x, y), where x and y are pixels of the screenshot "
            f"({self.width} x {self.height}) from its top-left corner. One click ends the task."
        )

    def _describe(self) -> str:
        if self.hit is None:
            return f"Screenshot: {self.width} x {self.height} pixels."
        return "The task is done."

    def _execute(self, command: str) -> str:
        match = _CLICK.match(command.strip())
        if match is None:
            raise InvalidAction("expected click(x, y) with x and y numbers, e.g. click(120, 48)")
        x, y = float(match.group(1)), float(match.group(2))
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise InvalidAction(
                f"({x:g}, {y:g}) is off the screenshot: x must be in 0..{self.width - 1}, y in 0..{self.height - 1}"
            )
        self.hit = in_box(x, y, self.task["box"])
        self.terminated, self.success = True, self.hit
        self.score = 1.0 if self.hit else 0.0
        outcome = "on the described element" if self.hit else "not on the described element"
        return f"You clicked at ({x:g}, {y:g}): {outcome}."

    def oracle_action(self) -> str:
        left, top, width, height = self.task["box"]
        return f"click({math.floor(left + width / 2)}, {math.floor(top + height / 2)})"

    def random_action(self, rng: random.Random) -> str:
        """A click on a uniformly drawn pixel of the screenshot."""
        return f"click({rng.randrange(self.width)}, {rng.randrange(self.height)})"

    # ---- observation and info -----------------------------------------------------------

    def _observation(self, text: str) -> dict[str, Any]:
        return {"text": text[: self.max_observation_chars], "screenshot": self._pixels.copy()}

    def render(self) -> Any:
        if self.render_mode == "rgb_array" and self.task_id is not None:
            return self._pixels.copy()
        return super().render()

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info["source"], info["page"], info["kind"] = self.task["source"], self.task["page"], self.task["kind"]
        if self.terminated:
            info["box"] = list(self.task["box"])
            info["hit"] = bool(self.hit)
        return info


def prepare(env_id: str, kwargs: dict[str, Any], report: Any, task_ids: Sequence[int] | None = None) -> None:
    """Render the screenshots of the id's tasks (of ``task_ids`` alone, where given) that the cache (or ``data_dir``)
    lacks, from the sources' task indexes (a source without one is built in full); file-locked."""
    sources = tuple(kwargs.get("sources", ("MiniWoB",)))
    for name in sources:  # a source without an index is built here, reporting its progress
        load_or_build(name, kwargs.get("data_dir"), report)
    env = GroundingEnv(sources, data_dir=kwargs.get("data_dir"))
    wanted: dict[str, list[dict[str, Any]]] = {name: [] for name in env.sources}
    for task_id in range(env.splits.total) if task_ids is None else task_ids:
        data, task = env.source_task(task_id)
        wanted[data.name].append(task)
    for name, tasks in wanted.items():
        if tasks:
            render_screens(env.data[name], tasks, report, build_workers())
            report(f"grounding {name}: {len(tasks)} tasks ready in {env.data[name].folder}")
