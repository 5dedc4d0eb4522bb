"""MiniWoB++ in headless Chromium: the benchmark's own task pages, reward and seeds.

One env per task (``MiniWoB-click-button-v0``, ...). Task ``task_id`` is the page's problem
generated after ``Math.seedrandom(task_id)``, so an id always gives the same instance (with
``page_seeds="browsergym"``, after BrowserGym's seeding: its task seed ``task_id`` draws the page's
seed as ``numpy.random.RandomState(task_id).randint(0, 1_000_000)``, so BrowserGym's MiniWoB benchmark
seeds give BrowserGym's instances; the ``browsergym-miniwob`` suite plays them). The
page runs on a paused fake clock: each executed command lets ``ms_per_action`` milliseconds
of page time pass (invalid commands none), so animations, delays, the page's own time limit
(``core.EPISODE_MAX_TIME``, 7-30 s) and MiniWoB's time-decayed reward are deterministic.

Observation: ``{"text": ...}`` (+ ``"screenshot"`` with ``screenshot=True``): the utterance,
the action syntax, the feedback, then the page (without the query and MiniWoB's score board) with
element ids. Actions: :data:`~agentgym.browser.commands.ACTION_SYNTAX`.

Reward: MiniWoB ends an episode with a raw reward in [-1, 1] (``WOB_RAW_REWARD_GLOBAL``; -1
for a wrong answer or the time limit) and the time-decayed one (``WOB_REWARD_GLOBAL``, raw x
(1 - elapsed / limit) for the tasks that decay). agentgym's ``score`` is ``max(0, raw)`` and
``success`` is ``raw > 0``; ``info["raw_reward"]`` and ``info["miniwob_reward"]`` (decayed)
hold the originals, ``info["reason"]`` MiniWoB's reason where it gives one.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy

from agentgym.browser.env import BrowserEnv
from agentgym.browser.page import BrowserError, Command
from agentgym.contract.core import TaskSplits
from agentgym.environments.miniwob import SPLITS, TASK_TIME_LIMITS_MS
from agentgym.environments.miniwob.oracles import ORACLES, OracleView

_START_JS = """seed => {
  Math.seedrandom(seed);
  core.setDataMode('default');
  core.startEpisodeReal();
  return typeof WOB_TASK_READY === 'undefined' || WOB_TASK_READY;
}"""
# The natural-language email tasks return {utterance, fields} outside MiniWoB's test data mode.
#: How a task id becomes the page's seed: itself, or BrowserGym's draw from it.
PAGE_SEEDS = ("task_id", "browsergym")
_UTTERANCE_JS = "() => { const u = core.getUtterance(); return typeof u === 'string' ? u : (u && u.utterance) || ''; }"
_STATE_JS = "() => [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_GLOBAL, WOB_REWARD_REASON]"


def miniwob_html_dir() -> Path:
    """The folder of MiniWoB++'s task pages: ``$MINIWOB_HTML_DIR`` or the ``miniwob`` package's."""
    if os.environ.get("MINIWOB_HTML_DIR"):
        return Path(os.environ["MINIWOB_HTML_DIR"])
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("MiniWoB++ needs the miniwob package (pip install 'agentgym[web]')")
    return Path(next(iter(spec.submodule_search_locations))) / "html" / "miniwob"


class MiniWoBEnv(BrowserEnv):
    """One MiniWoB++ task in a browser tab (see the module docstring)."""

    splits: ClassVar[TaskSplits] = SPLITS
    page_exclude: ClassVar[tuple[str, ...]] = ("#query", "#reward-display", "#sync-task-cover", "#click-canvas")

    def __init__(
        self,
        task: str,
        *,
        ms_per_action: int = 500,
        base_url: str | None = None,
        viewport: tuple[int, int] = (500, 400),
        page_seeds: str = "task_id",
        **kwargs: Any,
    ) -> None:
        if task not in TASK_TIME_LIMITS_MS:
            raise ValueError(f"unknown MiniWoB++ task {task!r}")
        if page_seeds not in PAGE_SEEDS:
            raise ValueError(f"page_seeds must be one of {PAGE_SEEDS}, not {page_seeds!r}")
        self.page_seeds = page_seeds
        kwargs.setdefault("action_timeout_s", 2.0)  # page time is frozen: what is not ready now never will be
        super().__init__(viewport=viewport, fake_clock=True, **kwargs)
        self.task = task
        self.has_oracle = task in ORACLES
        self.ms_per_action = ms_per_action
        base = base_url or os.environ.get("MINIWOB_URL") or miniwob_html_dir().as_uri()
        self.url = f"{base.rstrip('/')}/{task}.html"
        self.raw_reward = 0.0
        self.miniwob_reward = 0.0
        self.reason: str | None = None

    # ---- episode ------------------------------------------------------------------------

    def _generate(self, task_id: int) -> str:
        self.raw_reward, self.miniwob_reward, self.reason = 0.0, 0.0, None
        try:
            return self.tab.run(lambda page: self._start(page, task_id))
        except BrowserError as error:
            self._fail(error)
            return f"MiniWoB++ {self.task} (the page could not be opened)"

    async def _start(self, page: Any, task_id: int) -> str:
        # A fresh load per episode: some pages keep state outside the task area across
        # core.startEpisodeReal() (jQuery UI's autocomplete menu, stock-market's ticker), so an
        # episode on a reused page would depend on the one before it.
        await page.goto(self.url)
        for _ in range(50):
            if await page.evaluate(_START_JS, self.page_seed(task_id)):
                break
            await page.clock.run_for(100)
        else:
            raise TimeoutError("the task page never became ready")
        await page.evaluate("window.scrollTo(0, 0)")
        utterance = await page.evaluate(_UTTERANCE_JS)
        return utterance or f"Solve the MiniWoB++ task {self.task}."

    def page_seed(self, task_id: int) -> int:
        """The seed ``Math.seedrandom`` gets for task ``task_id`` (see the module docstring)."""
        if self.page_seeds == "browsergym":  # BrowserGym's AbstractMiniwobTask.setup draws it so
            return int(numpy.random.RandomState(task_id).randint(0, 1_000_000))
        return task_id

    def _describe(self) -> str:
        return f"MiniWoB++ {self.task}, instance {self.task_id}. " + super()._describe()

    async def _after_action(self, page: Any, command: Command) -> str:
        await page.clock.run_for(self.ms_per_action)
        done, raw, decayed, reason = await page.evaluate(_STATE_JS)
        if not done:
            return ""
        self.raw_reward, self.miniwob_reward, self.reason = float(raw), float(decayed), reason
        self.terminated = True
        self.success = self.raw_reward > 0
        self.score = max(0.0, min(1.0, self.raw_reward))
        return f" The episode is over: reward {self.raw_reward:g}" + (f" ({reason})." if reason else ".")

    def oracle_action(self) -> str:
        solver = ORACLES.get(self.task)
        if solver is None or self.terminated:
            return "scroll(down)"
        try:
            return solver(OracleView(self))
        except (AssertionError, AttributeError, IndexError, StopIteration, TypeError, ValueError):
            return "scroll(down)"  # a state the solver does not handle (e.g. after random clicks)

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info.update(raw_reward=self.raw_reward, miniwob_reward=self.miniwob_reward, reason=self.reason)
        info["has_oracle"] = self.has_oracle
        return info
