"""Browser environments: a page in headless Chromium, seen as text (and pixels), driven by text commands.

:class:`BrowserEnv` is the base of every browser family (MiniWoB++, WebShop-Browser, live
sites). Observation: a dict with ``"text"`` (the instruction and action syntax on reset, the
feedback of the last command, then the page serialised with element ids, see
:mod:`.browser`) and, with ``screenshot=True``, ``"screenshot"`` (uint8, height x width x 3).
Action: one command of :data:`~.browser.ACTION_SYNTAX`, e.g. ``click(12)`` or
``type(4, "hello")``; a command that cannot be parsed, or names an element that is not on
the page, is invalid (feedback, reward 0). ``info`` adds ``url`` and ``browser_error``: when
the page times out, hangs or crashes, the tab is recycled, ``browser_error`` says what
happened and the episode ends unsuccessfully (it cannot go on faithfully); ``info["infra_error"]``
says the same, so that the evaluation runner plays the episode again instead of scoring it.

Two options change what the agent sees and does (docs/computer-use.md); their defaults keep the
text observation and the id commands:

* ``actions``: ``"ids"`` (the commands on element ids, the default), ``"coordinates"``
  (:data:`~.browser.COORDINATE_SYNTAX`: ``click(x, y)``, ``double_click``, ``right_click``, ``move``,
  ``drag``, ``scroll(x, y, dx, dy)``, ``type("text")``, ``key("ctrl+a")`` on page pixels; a point off
  the page or a malformed call is an invalid action that says why) or ``"both"``.
* ``marks=True``: the screenshot (turned on by it) is a set-of-marks: every interactive element of the
  element list that shows in the viewport has a numbered box drawn on it, the number its id in the
  list and in ``click(id)`` (:mod:`agentgym.utils.marks`).

:class:`LiveSiteEnv` points the browser at a user-given URL with a task text and an optional
checker (for self-hosted WebArena-style sites); it is not registered (no task set).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from agentgym.browser.commands import (
    ACTION_SPACES,
    ACTION_SYNTAX,
    COORDINATE_SYNTAX,
    GOTO_SYNTAX,
    TAB_COMMANDS,
    TAB_SYNTAX,
    ActionSpace,
    Command,
    ElementError,
    parse_command,
    perform,
)
from agentgym.browser.page import BrowserError, Element, Tab, serialise, settled_evaluate
from agentgym.computer_use import INPUT_ACTIONS
from agentgym.contract.core import INFRA_ERROR_KEY, InvalidAction, TaskSplits, TextEnv, UnicodeText
from agentgym.utils.marks import Mark, draw_marks, visible_marks

#: Whether the element with this id (or at this point [x, y]) is (in) a link that opens a new tab.
_OPENS_TAB_JS = """target => {
  const element = Array.isArray(target) ? document.elementFromPoint(target[0], target[1])
    : document.querySelector(`[data-bid="${target}"]`);
  const link = element && element.closest('a[href]');
  return !!link && link.target === '_blank';
}"""
_RANDOM_WORDS = ("hello", "42", "Alice", "test", "yes", "blue")
#: How long one page operation (opening a page, an action with the load it causes, a read) may take before
#: the page counts as failed (``page_timeout_s``'s default). Sized for a loaded 2-core machine: a test run's
#: load (two pytest workers, Chromium, image and data builds: load average 8-24, and over 90 seen) stretched
#: operations that take under a second on an idle machine past the former 30 s, which ended the episode as
#: failed (issue #27). A slow machine must slow an episode, not end it; a page that hangs is still
#: reported, later. Below the evaluation runner's 120 s per env call, so that the env, not the runner's
#: watchdog, reports a slow page (both are infrastructure failures that the runner retries).
PAGE_TIMEOUT_S = 90.0


class BrowserEnv(TextEnv):
    """A :class:`TextEnv` whose world is a browser tab (see the module docstring).

    Subclasses implement ``_generate`` (open or reset the page for a task, return the
    instruction), ``oracle_action``, and may override :meth:`_after_action` (read the
    outcome of an action from the page, in the same browser round trip) and the
    serialisation settings ``page_root`` / ``page_exclude``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    #: Where the page's element list starts in the text: a VLM shown the screenshot alone
    #: (``ImageOptions(mode="screenshot")``) gets the text before it (instruction, feedback, tabs).
    element_list_heading: ClassVar[str] = "Page:\n"
    #: The browser commands as tools, beside this module (a family's own ``tools.yaml`` is for its text envs).
    tool_file: ClassVar[str] = "browser_tools.yaml"
    max_observation_chars: ClassVar[int] = 40_000
    #: CSS selector of the element to serialise (``None``: the whole body) and ones to leave out.
    page_root: ClassVar[str | None] = None
    page_exclude: ClassVar[tuple[str, ...]] = ()
    #: The defaults of the instance settings (so that a class read without __init__ has its tools).
    actions: ActionSpace = "ids"
    _toolset: str = "default"

    def __init__(
        self,
        *,
        screenshot: bool = False,
        viewport: tuple[int, int] = (1280, 720),
        max_page_chars: int = 20_000,
        action_timeout_s: float = 5.0,
        page_timeout_s: float = PAGE_TIMEOUT_S,
        allow_goto: bool = False,
        allow_tabs: bool = False,
        fake_clock: bool = False,
        actions: ActionSpace = "ids",
        marks: bool = False,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode=render_mode)
        if actions not in ACTION_SPACES:
            raise ValueError(f"actions must be one of {ACTION_SPACES}, got {actions!r}")
        #: Which commands the agent has: on element ids, on page coordinates, or both.
        self.actions: ActionSpace = actions
        #: Whether the screenshot carries the set-of-marks (numbered boxes on the interactive elements).
        self.marks = marks
        screenshot = screenshot or marks
        self.screenshot = screenshot
        self.viewport = tuple(viewport)
        self.max_page_chars = max_page_chars
        self.action_timeout_s = action_timeout_s
        self.page_timeout_s = page_timeout_s
        self.allow_goto = allow_goto
        self.allow_tabs = allow_tabs
        self.toolset = "with_goto" if allow_goto else "default"  # in browser_tools.yaml
        self.fake_clock = fake_clock
        width, height = self.viewport
        entries: dict[str, spaces.Space] = {"text": UnicodeText(self.max_observation_chars)}
        if screenshot:
            entries["screenshot"] = spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict(entries)
        self._tab: Tab | None = None
        self.browser_error: str | None = None
        self._page: tuple[str, list[Element]] | None = None
        self._pixels: np.ndarray | None = None
        #: The commands executed so far in this episode (invalid ones are not).
        self.history: list[str] = []

    # ---- action spaces ----------------------------------------------------------------------

    @property
    def toolset(self) -> str:  # type: ignore[override]
        """The toolset of ``browser_tools.yaml``: the env's own (``default``, ``with_goto``,
        ``site_tasks``), with ``+coordinates`` or ``+both`` for those action spaces."""
        return self._toolset if self.actions == "ids" else f"{self._toolset}+{self.actions}"

    @toolset.setter
    def toolset(self, name: str) -> None:
        self._toolset = name

    @property
    def pixel_actions(self) -> tuple[str, ...]:
        """The pointer and keyboard commands this env takes on screen pixels (none with ``actions="ids"``)."""
        return () if self.actions == "ids" else INPUT_ACTIONS

    @property
    def screen_size(self) -> tuple[int, int]:
        """The viewport's (width, height): the screenshot's size and the range of page coordinates."""
        return int(self.viewport[0]), int(self.viewport[1])

    def set_of_marks(self) -> list[Mark]:
        """The marks of the current page: each interactive listed element that shows in the viewport,
        numbered with its id."""
        width, height = self.viewport
        marks = (
            Mark(element.bid, element.left, element.top, element.width, element.height)
            for element in self.page()[1]
            if element.interactive
        )
        return visible_marks(marks, width, height)

    # ---- the tab ------------------------------------------------------------------------

    @property
    def tab(self) -> Tab:
        """This env's browser tab, opened on first use and reused across episodes."""
        if self._tab is None:
            self._tab = Tab(
                viewport=self.viewport,  # type: ignore[arg-type]
                clock_start_ms=1_700_000_000_000 if self.fake_clock else None,
                timeout_s=max(self.page_timeout_s, self.action_timeout_s * 2),
            )
        return self._tab

    def _page_changed(self) -> None:
        self._page, self._pixels = None, None

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        """Evaluate a JavaScript function or expression on the page (for oracles and checkers)."""
        return self.tab.run(lambda page: settled_evaluate(page, expression, arg))

    def _fail(self, error: BrowserError) -> str:
        """End the episode after a browser failure and say so."""
        self.browser_error = str(error)
        self.terminated, self.success = True, False
        self._page_changed()
        return f"The browser failed: {error}. The page was reopened; the episode is over."

    # ---- TextEnv ------------------------------------------------------------------------

    @property
    def action_syntax(self) -> str:
        if self.actions == "coordinates":
            commands = COORDINATE_SYNTAX
        elif self.actions == "both":
            by_point = COORDINATE_SYNTAX.split("\n", 1)[1]
            heading = "And at points (x, y: pixels of the page's screenshot from its top-left):"
            commands = f"{ACTION_SYNTAX}\n{heading}\n{by_point}"
        else:
            commands = ACTION_SYNTAX
        return (
            commands + ("\n" + GOTO_SYNTAX if self.allow_goto else "") + ("\n" + TAB_SYNTAX if self.allow_tabs else "")
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self.browser_error = None
        self.history = []
        self._page_changed()
        return super().reset(seed=seed, options=options)

    def page(self) -> tuple[str, list[Element]]:
        """The current page as text and its listed elements (cached until the next action)."""
        if self._page is None:
            renumber = self.steps == 0
            try:
                self._page = self.tab.run(
                    lambda page: serialise(
                        page,
                        root=self.page_root,
                        exclude=self.page_exclude,
                        max_chars=self.max_page_chars,
                        renumber=renumber,
                    )
                )
            except BrowserError as error:
                self._fail(error)
                self._page = (f"(the page could not be read: {error})", [])
        return self._page

    def _describe(self) -> str:
        return self._tab_list() + "Page:\n" + (self.page()[0] or "(empty page)")

    def _tab_list(self) -> str:
        """``Tabs: [0] title | [1] title (shown)`` and a newline when more than one tab is open, else ``""``."""
        if not self.allow_tabs or self._tab is None or self._tab.context is None or len(self._tab.context.pages) < 2:
            return ""
        try:
            tabs = self.tab.run(lambda page: self.tab.tab_titles())
        except BrowserError as error:
            return f"Tabs: (could not be listed: {error})\n"
        listed = [
            f"[{index}] {title or url}" + (" (shown)" if shown else "")
            for index, (title, url, shown) in enumerate(tabs)
        ]
        return "Tabs: " + " | ".join(listed) + "\n"

    def _execute(self, command: str) -> str:
        try:
            parsed = parse_command(
                command, allow_goto=self.allow_goto, allow_tabs=self.allow_tabs, action_space=self.actions
            )
        except ValueError as error:
            raise InvalidAction(str(error)) from None
        timeout_ms = self.action_timeout_s * 1000
        timeouts = {"timeout_ms": timeout_ms, "retry_timeout_ms": self.page_timeout_s * 1000 / 2}

        async def act(page: Any) -> str:
            if parsed.name in TAB_COMMANDS:  # acts on the tabs, not on the page
                return await self.tab.tab_command(parsed)
            target: Any = None  # what a click names: an element id, or a point
            if parsed.name in ("click", "click_at"):
                target = parsed.args[0] if parsed.name == "click" else list(parsed.args)
            if self.allow_tabs and target is not None and await settled_evaluate(page, _OPENS_TAB_JS, target):
                from playwright.async_api import TimeoutError as PlaywrightTimeout

                feedback = ""
                try:
                    async with page.context.expect_page(timeout=timeout_ms) as opened:
                        feedback = await perform(page, parsed, **timeouts)
                    tab = await opened.value  # the tab is shown (Tab records pages a site opens)
                    await tab.wait_for_load_state()
                    return feedback + " It opened in a new tab."
                except PlaywrightTimeout:  # the page kept the click to itself
                    return feedback or ("Clicked." if parsed.name == "click_at" else f"Clicked [{parsed.args[0]}].")
            feedback = await perform(page, parsed, **timeouts)
            return feedback + await self._after_action(page, parsed)

        try:
            feedback = self.tab.run(act)
        except ElementError as error:
            raise InvalidAction(str(error)) from None
        except BrowserError as error:
            return self._fail(error)
        finally:
            self._page_changed()
        self.history.append(command)
        return feedback

    async def _after_action(self, page: Any, command: Command) -> str:
        """Read the outcome of ``command`` (update score, success, terminated); extra feedback or ``""``."""
        return ""

    def random_action(self, rng: random.Random) -> str:
        if self.actions == "coordinates":
            return self._random_pixel_action(rng)
        elements = self.page()[1]
        if not elements or rng.random() < 0.1:
            return f"scroll({rng.choice(['up', 'down'])})"
        element = rng.choice(elements)
        if element.kind == "input":
            return f'type({element.bid}, "{rng.choice(_RANDOM_WORDS)}")'
        return f"click({element.bid})"

    def _random_pixel_action(self, rng: random.Random) -> str:
        """A click at a random point (at a marked element's centre half of the time), a wheel turn, or a word."""
        width, height = self.viewport
        marks = self.set_of_marks()
        roll = rng.random()
        if roll < 0.1:
            return f"scroll({width // 2}, {height // 2}, 0, {rng.choice([-3, 3])})"
        if roll < 0.2:
            return f'type("{rng.choice(_RANDOM_WORDS)}")'
        if marks and roll < 0.6:
            x, y = rng.choice(marks).centre
            return f"click({min(int(x), width - 1)}, {min(int(y), height - 1)})"
        return f"click({rng.randrange(width)}, {rng.randrange(height)})"

    def _observation(self, text: str) -> dict[str, Any]:
        observation: dict[str, Any] = {"text": text[: self.max_observation_chars]}
        if self.screenshot:
            pixels = self.pixels()
            observation["screenshot"] = draw_marks(pixels, self.set_of_marks()) if self.marks else pixels.copy()
        return observation

    def pixels(self) -> np.ndarray:
        """A screenshot of the viewport (black if the page cannot be captured)."""
        if self._pixels is None:
            try:
                self._pixels = self.tab.screenshot()
            except BrowserError as error:
                self._fail(error)
                width, height = self.viewport
                self._pixels = np.zeros((height, width, 3), dtype=np.uint8)
        return self._pixels

    def render(self) -> Any:
        if self.render_mode == "rgb_array" and self.task_id is not None:
            return self.pixels()
        return super().render()

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info["browser_error"] = self.browser_error
        if self.browser_error:  # the page or browser failed, not the agent: runners retry the episode
            info[INFRA_ERROR_KEY] = f"browser: {self.browser_error}"
        return info

    def close(self) -> None:
        if self._tab is not None:
            self._tab.close()
            self._tab = None
        super().close()


Checker = Callable[[Any], float | bool]


class LiveSiteEnv(BrowserEnv):
    """A browser pointed at ``url`` with a ``task`` text; ``checker(page)`` scores the episode.

    ``checker`` is an async function of the Playwright page returning a score in [0, 1]
    (or a bool); it runs after every action, and a score of 1 ends the episode as a success.
    Without a checker the episode never ends by itself (score 0; use it to collect
    trajectories, or judge them afterwards). ``goto`` is allowed, to URLs starting with one
    of ``allowed_prefixes`` (default: ``url``'s origin).
    """

    splits: ClassVar[TaskSplits] = TaskSplits(1, 1, 1)

    def __init__(
        self,
        url: str,
        task: str,
        *,
        checker: Checker | None = None,
        allowed_prefixes: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(allow_goto=True, **kwargs)
        self.url, self.task, self.checker = url, task, checker
        if allowed_prefixes is None:
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            allowed_prefixes = (f"{parts.scheme}://{parts.netloc}/",)
        self.allowed_prefixes = allowed_prefixes

    def _generate(self, task_id: int) -> str:
        try:
            self.tab.run(lambda page: page.goto(self.url))  # the tab's page timeout
        except BrowserError as error:
            self._fail(error)
        return self.task

    def _describe(self) -> str:
        url = "" if self._tab is None or self._tab.page is None else self._tab.page.url
        return f"URL: {url}\n{super()._describe()}"

    def _execute(self, command: str) -> str:
        if command.startswith("goto"):
            try:
                target = parse_command(command, allow_goto=True).args[0]
            except ValueError as error:
                raise InvalidAction(str(error)) from None
            if not str(target).startswith(self.allowed_prefixes):
                raise InvalidAction(f"goto is limited to {', '.join(self.allowed_prefixes)}")
        return super()._execute(command)

    async def _after_action(self, page: Any, command: Command) -> str:
        if self.checker is None:
            return ""
        result = await self.checker(page)
        self.score = float(min(1.0, max(0.0, float(result))))
        if self.score >= 1.0:
            self.success, self.terminated = True, True
            return " The task is complete."
        return ""

    def oracle_action(self) -> str:
        raise NotImplementedError("a live site has no scripted solver")

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info["url"] = "" if self._tab is None or self._tab.page is None else self._tab.page.url
        return info
