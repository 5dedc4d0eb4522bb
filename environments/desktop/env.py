"""Desktop-v0: do office tasks with real X11 applications, by mouse and keyboard.

Each env owns a :class:`~agentgym.environments.desktop.session.DesktopSession` (Xvfb,
openbox and the task's app: xterm, Mousepad, PCManFM or Gnumeric). The X server is kept
across resets; each reset kills the apps, makes a fresh home folder with the task's files
and starts the app the task needs.

**Observation**: a dict with ``"text"`` (the instruction and action syntax on reset, then
the feedback of the last action; the window list with titles and geometry; the pointer;
problems of the app such as a crash; with ``accessibility=True`` the AT-SPI tree),
``"screenshot"`` (uint8 ``(height, width, 3)``) and ``"cursor"`` (the pointer's x, y).
Paths under the home folder appear as ``~``.

**Action**: one pyautogui-style call (``click(x, y)``, ``type("text")``, ``key("ctrl+s")``,
... see :data:`~agentgym.environments.desktop.actions.ACTION_SYNTAX`), run with
``xdotool``; after it the env waits until the screen and the window list stop changing. The button
presses of two actions are kept :data:`CLICK_GAP_S` apart: two clicks are never one double click.
A malformed call is an invalid action with feedback.

**Reward**: ``done()`` ends the episode and runs the task's checker on the files (the
saved document, the renamed file, the spreadsheet's cells): 1 when it passes, else 0.

**Termination**: ``done()``; or the X server dying (the episode ends with score 0 and the
next reset starts a new desktop). An app that crashes or hangs is reported in the text
and the episode goes on.

Keyword arguments: ``width``/``height`` of the screen (default 1024x768), ``apps`` (the
task families to draw from: any of ``terminal``, ``editor``, ``files``, ``spreadsheet``;
task ids map onto the chosen templates), ``accessibility`` (start a D-Bus bus and list
the AT-SPI tree in the text; slower), ``marks`` (the set-of-marks: turns on ``accessibility``;
each interactive node of the tree that shows on screen is numbered, ``[12] push button "Save"``,
the screenshot has the numbered boxes drawn on it (:mod:`agentgym.utils.marks`), and
``click(12)``, ``double_click(12)``, ``right_click(12)`` and ``move(12)`` act at the centre of
node 12's box).
"""

from __future__ import annotations

import itertools
import random
import re
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from agentgym.computer_use import PIXEL_ACTIONS, PixelAction
from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv, UnicodeText
from agentgym.environments.desktop import SPLITS
from agentgym.environments.desktop.actions import ACTION_SYNTAX, parse_command, xdotool_calls
from agentgym.environments.desktop.onscreen import reachable, top_layer
from agentgym.environments.desktop.session import DesktopError, DesktopSession, XServerDied
from agentgym.environments.desktop.tasks import APPS, Task, set_up, templates_for
from agentgym.utils.marks import Mark, draw_marks, visible_marks

#: How each app is started and the window class it maps; ``{file}`` is the task's file.
LAUNCH: dict[str, tuple[list[str], str]] = {
    "terminal": (["xterm", "-title", "Terminal", "-fa", "DejaVu Sans Mono", "-fs", "11", "-e", "bash"], "xterm.XTerm"),
    "editor": (["mousepad", "{file}"], "mousepad.Mousepad"),
    "files": (["pcmanfm", "{home}"], "pcmanfm.Pcmanfm"),
    "spreadsheet": (["gnumeric", "--no-splash", "{file}"], "gnumeric.Gnumeric"),
}
RANDOM_KEYS = ("Escape", "Tab", "Up", "Down", "Left", "Right", "Home", "End")
MARKS_SYNTAX = (
    "With the numbered elements of the accessibility tree (the numbers drawn on the screenshot):\n"
    "  click(id) / double_click(id) / right_click(id) / move(id)   act at the centre of element [id]"
)
#: The actions that press a pointer button.
BUTTON_ACTIONS = frozenset({"click", "double_click", "right_click", "drag"})
#: Apps take two clicks closer than their double-click time (GTK's 400 ms, xterm's 250) as one double click; the
#: presses of two actions are kept at least this far apart, so an episode does not depend on how fast the agent answers.
CLICK_GAP_S = 0.5
#: A pointer command on a marked element: ``click(12)``.
_ON_MARK = re.compile(r"^\s*(click|double_click|right_click|move)\s*\(\s*(\d+)\s*\)\s*$")


class DesktopEnv(TextEnv):
    """Office tasks on a real X11 desktop (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    splits: ClassVar[TaskSplits] = SPLITS
    #: Its commands on screen pixels, in the names the computer-use formats map onto (agentgym.computer_use).
    pixel_actions: ClassVar[tuple[str, ...]] = PIXEL_ACTIONS  # all of them

    def __init__(
        self,
        render_mode: str | None = None,
        width: int = 1024,
        height: int = 768,
        apps: Sequence[str] = APPS,
        accessibility: bool = False,
        marks: bool = False,
    ) -> None:
        super().__init__(render_mode)
        unknown = sorted(set(apps) - set(APPS))
        if unknown or not apps:
            raise ValueError(f"apps must be a non-empty subset of {APPS}, got {list(apps)}")
        if not (64 <= width <= 4096 and 64 <= height <= 4096):
            raise ValueError(f"the screen must be 64..4096 pixels each way, got {width}x{height}")
        self.width, self.height = width, height
        self.apps = tuple(app for app in APPS if app in apps)
        self.marks = marks
        self.accessibility = accessibility or marks
        #: The numbered elements of the last observation (with ``marks``).
        self.set_of_marks: list[Mark] = []
        self.templates = templates_for(self.apps)
        self.observation_space = spaces.Dict(
            {
                "text": UnicodeText(self.max_observation_chars),
                "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
                "cursor": spaces.Box(np.array([0, 0]), np.array([width - 1, height - 1]), (2,), np.int64),
            }
        )
        self.session: DesktopSession | None = None
        self.task: Task | None = None
        self._oracle_index = 0
        self._last_press = float("-inf")  # when the last button action ended (time.monotonic)

    @property
    def screen_size(self) -> tuple[int, int]:
        """The screen's (width, height) in pixels."""
        return self.width, self.height

    # ---- TextEnv ------------------------------------------------------------------------

    @property
    def action_syntax(self) -> str:
        marks = f"\n{MARKS_SYNTAX}" if self.marks else ""
        return f"The screen is {self.width}x{self.height} pixels.\n{ACTION_SYNTAX}{marks}"

    def _generate(self, task_id: int) -> str:
        template = self.templates[task_id % len(self.templates)]
        rng = self.task_rng(task_id, self.apps)
        candidates = ((task.key(), task) for task in (template(rng) for _ in itertools.count()))
        self.task = SPLITS.first_in_split(task_id, candidates)  # Desktop-v0's, for the -Attack variant too
        self._oracle_index = 0
        try:
            self._start_task()
        except DesktopError:  # a dead or wedged desktop: one more try on a new X server
            self._session().restart()
            self._start_task()
        return self.task.instruction

    def _describe(self) -> str:
        session = self._session()
        if not session.alive():
            return "The X server is not running: the desktop is gone."
        try:
            windows = session.windows()
            active = session.active_window()
            x, y = session.cursor()
        except DesktopError as error:
            return f"The desktop does not answer: {error}"
        home = str(session.home)
        lines = ["Windows (title: x, y, width x height):"]
        for window in windows:
            title = window.title.replace(home, "~")
            focus = " [focused]" if window.id == active else ""
            lines.append(
                f'- "{title}" ({window.wm_class}): {window.x}, {window.y}, {window.width}x{window.height}{focus}'
            )
        if not windows:
            lines.append("- (none)")
        lines.append(f"Mouse pointer: ({x}, {y})")
        lines += session.app_states()
        tree = self._marked_tree(session) if self.marks else session.accessibility_tree()
        if tree is not None:
            lines += ["Accessibility tree:", tree or "(empty)"]
        return "\n".join(lines)

    def _marked_tree(self, session: DesktopSession) -> str:
        """The accessibility tree with its interactive on-screen nodes numbered; sets :attr:`set_of_marks`."""
        nodes = session.accessibility_nodes()
        self.set_of_marks = []
        if not isinstance(nodes, list):
            return nodes or ""
        lines = []
        for node in nodes:
            text = f'{node["role"]} "{node["name"]}"' if node["name"] else node["role"]
            box = node.get("box")
            if node.get("interactive") and box and visible_marks([Mark(0, *box)], self.width, self.height):
                mark = Mark(len(self.set_of_marks) + 1, *box)
                self.set_of_marks.append(mark)
                text = f"[{mark.id}] {text}"
            lines.append("  " * node["depth"] + text)
        return "\n".join(lines)

    def _execute(self, command: str) -> str:
        session = self._session()
        if not session.alive():
            self.terminated = True
            return "The X server died; the episode is over (reset starts a new desktop)."
        on_mark = _ON_MARK.match(command) if self.marks else None
        if on_mark is not None:
            command = self._at_mark(on_mark.group(1), int(on_mark.group(2)))
        parsed = parse_command(command, self.width, self.height)
        if parsed == parse_command(self.oracle_action(), self.width, self.height):  # the same action, however quoted
            self._oracle_index += 1
        if parsed.name == "done":
            return self._finish()
        try:
            if parsed.name == "wait":
                time.sleep(parsed.args[0])
            else:
                if parsed.name in BUTTON_ACTIONS:
                    time.sleep(max(0.0, self._last_press + CLICK_GAP_S - time.monotonic()))
                for arguments in xdotool_calls(parsed):
                    session.xdotool(*arguments)
                if parsed.name in BUTTON_ACTIONS:
                    self._last_press = time.monotonic()
            settled = session.settle()
        except XServerDied:
            self.terminated = True
            return "The X server died; the episode is over (reset starts a new desktop)."
        except DesktopError as error:
            raise InvalidAction(f"the desktop could not perform it: {error}") from None
        return _feedback(parsed) + ("" if settled else " The screen is still changing.")

    def _at_mark(self, name: str, mark_id: int) -> str:
        """``name(x, y)`` at the centre of marked element ``mark_id`` (its on-screen part)."""
        mark = next((mark for mark in self.set_of_marks if mark.id == mark_id), None)
        if mark is None:
            shown = f"1 to {len(self.set_of_marks)}" if self.set_of_marks else "none"
            raise InvalidAction(f"there is no element [{mark_id}] in the accessibility tree shown (ids: {shown})")
        x0, y0, x1, y1 = mark.clipped(self.width, self.height)  # type: ignore[misc]
        return f"{name}({(x0 + x1) // 2}, {(y0 + y1) // 2})"

    # ---- what is on the screen, for readers of exact boxes -----------------------------------

    def pixels(self) -> np.ndarray:
        """The screen now, as uint8 (height, width, 3), without marks."""
        return self._session().screenshot()

    def accessible_screen(self, max_nodes: int = 600) -> dict[str, Any]:
        """The accessibility tree now, for a reader that needs exact boxes (the grounding family):
        ``{"window": ..., "nodes": [...]}``. ``window`` names the screen's top layer in words,
        ``"<application>: <window title>"`` with ``" > <menu>"`` while a menu's popup shows; each node has
        ``role``, ``name`` (the home folder as ``~``), ``box`` (screen pixels ``[x, y, width, height]``, or
        None), ``parent`` (its index in the list, -1 for an application), ``interactive``, ``icon`` (it shows
        a picture, its name only as a tooltip) and ``reachable`` (a click anywhere in its box lands on it:
        :func:`~agentgym.environments.desktop.onscreen.reachable`). Raises :class:`DesktopError` where the tree
        cannot be read (the env needs ``accessibility=True``)."""
        nodes = self._session().accessibility_nodes(max_nodes)
        if not isinstance(nodes, list):
            raise DesktopError(nodes or "the env was made without accessibility=True: no accessibility tree")
        for node, reached in zip(nodes, reachable(nodes, self.width, self.height)):
            node["reachable"] = reached
        return {"window": top_layer(nodes)[1], "nodes": nodes}

    def oracle_action(self) -> str:
        if self.task is None or self._oracle_index >= len(self.task.oracle):
            return "done()"
        return self.task.oracle[self._oracle_index]

    def random_action(self, rng: random.Random) -> str:
        """A random click, scroll, harmless key, short word or wait (no double clicks that open apps)."""
        kind = rng.choice(["click", "scroll", "key", "type", "wait"])
        if kind == "click":
            return f"click({rng.randrange(self.width)}, {rng.randrange(self.height)})"
        if kind == "scroll":
            return f"scroll(0, {rng.choice([-3, -1, 1, 3])})"
        if kind == "key":
            return f'key("{rng.choice(RANDOM_KEYS)}")'
        if kind == "type":
            return f'type("{"".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 6)))}")'
        return "wait(0.1)"

    def _observation(self, text: str) -> dict[str, Any]:
        session = self._session()
        screenshot = session.screenshot()
        return {
            "text": text,
            "screenshot": draw_marks(screenshot, self.set_of_marks) if self.marks else screenshot,
            "cursor": np.array(session.cursor(), dtype=np.int64),
        }

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    # ---- internals ----------------------------------------------------------------------

    def _session(self) -> DesktopSession:
        if self.session is None or self.session.closed:
            self.session = DesktopSession(self.width, self.height, accessibility=self.accessibility)
        return self.session

    def _start_task(self) -> None:
        assert self.task is not None
        session = self._session()
        if not session.alive():
            session.restart()
        home = session.new_home()
        set_up(self.task, home)
        session.xdotool("mousemove", str(self.width // 2), str(self.height // 2))
        argv, wm_class = LAUNCH[self.task.app]
        file = str(home / (self.task.open or "book.gnumeric"))
        session.launch([part.format(file=file, home=home) for part in argv], wm_class)

    def _finish(self) -> str:
        assert self.task is not None
        self.terminated = True
        verdict = self.task.check(self._session().home)
        self.success = verdict is None
        self.score = 1.0 if self.success else 0.0
        return "Done: the task is complete." if self.success else f"Done, but the task is not complete: {verdict}."


def _feedback(command: PixelAction) -> str:
    """What an action did, in words."""
    args = command.args
    if command.name in ("click", "double_click", "right_click"):
        return f"{command.name.replace('_', ' ').capitalize()} at ({args[0]}, {args[1]})."
    if command.name == "move":
        return f"Moved the pointer to ({args[0]}, {args[1]})."
    if command.name == "drag":
        return f"Dragged from ({args[0]}, {args[1]}) to ({args[2]}, {args[3]})."
    if command.name == "type":
        return f"Typed {len(args[0])} character(s)."
    if command.name == "key":
        return f"Pressed {args[0]}."
    if command.name == "scroll":
        where = f" at ({args[0]}, {args[1]})" if len(args) == 4 else ""
        return f"Scrolled by ({args[-2]}, {args[-1]}){where}."
    return f"Waited {args[0]:g} s."
