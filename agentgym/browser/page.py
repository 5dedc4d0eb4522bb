"""The browser layer shared by agentgym's web environments: Chromium driven by Playwright.

One :class:`BrowserPool` per Python process (:meth:`BrowserPool.shared`) runs async
Playwright on a background event-loop thread and keeps a few headless Chromium processes
(Debian's ``/usr/bin/chromium``, or ``$AGENTGYM_CHROMIUM``), each holding many browser
contexts. An environment holds one :class:`Tab` (a context with one page) for its whole life
and reuses it across episodes, so ``reset`` costs a script call, not a browser start.

Every operation on a tab runs under a hard timeout (Playwright's own, plus a watchdog on the
calling thread). When a page times out, hangs or crashes, the tab is recycled (its context
closed, a fresh one opened) and the caller gets a :class:`BrowserError` saying what
happened; a dead Chromium process is relaunched. Nothing waits forever.

The page is seen as text by :data:`SERIALISE_JS`: every visible element that has its own text
or can be interacted with is one line, ``[12] button "Submit"``, indented by nesting. The
number is the element's ``data-bid`` attribute, assigned once and kept while the element
lives, so ``click(12)`` finds it again. :func:`parse_command` and :func:`perform` implement
the action language (see :data:`ACTION_SYNTAX`).
"""

from __future__ import annotations

import ast
import asyncio
import atexit
import concurrent.futures
import contextlib
import io
import math
import os
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

T = TypeVar("T")

CHROMIUM = os.environ.get("AGENTGYM_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--metrics-recording-only",
    "--no-first-run",
    "--mute-audio",
]

ACTION_SYNTAX = (
    "Actions (one per reply, ids are the numbers in [brackets]):\n"
    "  click(id)                 click an element\n"
    '  type(id, "text")          replace the text of an input field\n'
    '  select(id, "option")      choose an option of a list (a list ["a", "b"] for a multiple choice)\n'
    '  press("Enter")            press a key (Enter, Tab, Backspace, ArrowDown, Control+a, ...)\n'
    "  scroll(up) / scroll(down) scroll the page\n"
    "  click_xy(x, y)            click at pixel x, y of the viewport"
)
GOTO_SYNTAX = '  goto("url")               open a URL'
TAB_SYNTAX = (
    "  new_tab()                 open a new, blank tab and show it\n"
    "  switch_tab(n)             show tab n (the tabs are listed above the page)\n"
    "  close_tab()               close the tab shown"
)
#: The commands that act on the tabs rather than on a page (:meth:`Tab.tab_command`).
TAB_COMMANDS = ("new_tab", "switch_tab", "close_tab")


class BrowserError(Exception):
    """A browser operation timed out, or the page or browser crashed; the tab was recycled."""


class ElementError(Exception):
    """An action named an element that is not (or no longer) on the page, or cannot take it."""


@dataclass(frozen=True)
class Command:
    """One parsed action: its name and arguments, e.g. ``Command("type", (12, "hello"))``."""

    name: str
    args: tuple[Any, ...]


#: Which commands an env offers: the element ids of the listed page (``click(12)``, today's default),
#: page-pixel coordinates (``click(320, 200)``), or both (``click`` with one argument is by id, with two
#: by coordinates; likewise ``type`` and ``scroll``).
ActionSpace = Literal["ids", "coordinates", "both"]
ACTION_SPACES: tuple[ActionSpace, ...] = ("ids", "coordinates", "both")

COORDINATE_SYNTAX = (
    "Actions (one per reply; x, y are pixels of the page's screenshot from its top-left corner):\n"
    "  click(x, y)               click at a point\n"
    "  double_click(x, y)        double click\n"
    "  right_click(x, y)         right click\n"
    "  move(x, y)                move the mouse pointer (hover)\n"
    "  drag(x1, y1, x2, y2)      press at (x1, y1), move to (x2, y2), release\n"
    "  scroll(x, y, dx, dy)      turn the mouse wheel at (x, y) by dx, dy notches of 100 pixels "
    "(dy > 0 down, dx > 0 right)\n"
    '  type("text")              type text at the keyboard focus\n'
    '  key("ctrl+a")             press a key or combination (enter, tab, backspace, escape, up, pagedown, '
    "ctrl+c, shift+tab, ...)"
)
#: Pixels the page scrolls per wheel notch of ``scroll(x, y, dx, dy)``.
WHEEL_NOTCH_PX = 100
MAX_WHEEL_NOTCHES = 50

_CALL = re.compile(r"^\s*([a-z_]+)\s*\((.*)\)\s*$", re.DOTALL)
#: The coordinate commands: user-facing name -> (the internal command name, argument types). Internal
#: names differ from the id commands' (``click_at``, not ``click``) so that code reading a parsed
#: ``click`` can rely on its first argument being an element id.
_COORDINATE_SIGNATURES: dict[str, tuple[str, tuple[type, ...]]] = {
    "click": ("click_at", (float, float)),
    "double_click": ("double_click_at", (float, float)),
    "right_click": ("right_click_at", (float, float)),
    "move": ("move_to", (float, float)),
    "drag": ("drag", (float, float, float, float)),
    "scroll": ("scroll_at", (float, float, float, float)),
    "type": ("type_text", (str,)),
    "key": ("key", (str,)),
}
#: The internal names of the coordinate commands.
COORDINATE_COMMANDS = tuple(internal for internal, _ in _COORDINATE_SIGNATURES.values())
_SIGNATURES: dict[str, tuple[type, ...]] = {
    "click": (int,),
    "type": (int, str),
    "select": (int, (str, list)),
    "press": (str,),
    "scroll": (str,),
    "goto": (str,),
    "click_xy": (float, float),
    "new_tab": (),
    "switch_tab": (int,),
    "close_tab": (),
}
_BARE_WORD = re.compile(r"^[A-Za-z][\w+\-]*$")


def parse_command(
    text: str, *, allow_goto: bool = False, allow_tabs: bool = False, action_space: ActionSpace = "ids"
) -> Command:
    """Parse ``click(12)``, ``type(3, "hi")``, ... into a :class:`Command`; ``ValueError`` says why not.

    ``goto`` is a command only with ``allow_goto``, the tab commands only with ``allow_tabs``;
    ``action_space`` picks the id commands, the coordinate ones (:data:`COORDINATE_SYNTAX`) or both.
    """
    if action_space not in ACTION_SPACES:
        raise ValueError(f"action_space must be one of {ACTION_SPACES}, got {action_space!r}")
    match = _CALL.match(text)
    if not match:
        example = 'click(12) or type(4, "text")' if action_space != "coordinates" else "click(120, 48)"
        raise ValueError(f"expected a command like {example}")
    name, raw_args = match.groups()
    by_id = [
        command
        for command in _SIGNATURES
        if (allow_goto or command != "goto") and (allow_tabs or command not in TAB_COMMANDS)
    ]
    if action_space == "coordinates":  # what names no element stays: goto and the tab commands
        by_id = [command for command in by_id if command == "goto" or command in TAB_COMMANDS]
    by_point = list(_COORDINATE_SIGNATURES) if action_space != "ids" else []
    allowed = list(dict.fromkeys(by_id + by_point))
    if name not in allowed:
        raise ValueError(f"unknown command {name!r}; the commands are {', '.join(allowed)}")
    forms: list[tuple[str, tuple[type, ...]]] = []
    if name in by_id:
        forms.append((name, _SIGNATURES[name]))
    if name in by_point:
        forms.append(_COORDINATE_SIGNATURES[name])
    args = _arguments(name, raw_args, [signature for _, signature in forms])
    fitting = [(internal, signature) for internal, signature in forms if len(signature) == len(args)]
    if not fitting:
        counts = " or ".join(str(len(signature)) for _, signature in forms)
        raise ValueError(f"{name} takes {counts} argument(s), got {len(args)}")
    internal, signature = fitting[0]
    converted = _converted(name, args, signature)
    if internal == "scroll" and converted[0] not in ("up", "down"):
        raise ValueError("scroll takes up or down" + (", or x, y, dx, dy" if by_point else ""))
    if internal == "scroll_at" and not all(abs(notches) <= MAX_WHEEL_NOTCHES for notches in converted[2:]):
        raise ValueError(f"scroll: dx and dy are wheel notches from -{MAX_WHEEL_NOTCHES} to {MAX_WHEEL_NOTCHES}")
    if internal == "key":
        playwright_keys(converted[0])  # raises ValueError naming a key it does not know
    return Command(internal, tuple(converted))


def _arguments(name: str, raw_args: str, signatures: list[tuple[type, ...]]) -> tuple[Any, ...]:
    """The literal arguments of a call; a bare word for a one-string command (``press(Enter)``)."""
    if any(len(signature) == 1 and signature[0] is str for signature in signatures) and _BARE_WORD.match(
        raw_args.strip()
    ):
        return (raw_args.strip(),)
    try:
        parsed = ast.literal_eval(f"({raw_args},)") if raw_args.strip() else ()
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"cannot read the arguments of {name}(...); quote text with double quotes") from None
    return tuple(parsed)


def _converted(name: str, args: tuple[Any, ...], signature: tuple[type | tuple[type, ...], ...]) -> list[Any]:
    converted = []
    for value, kind in zip(args, signature):
        if isinstance(kind, tuple):  # select: one option, or a list for a multiple-choice list
            if not (isinstance(value, str) or isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ValueError(f"{name}: expected an option or a list of options, got {value!r}")
            converted.append(value)
            continue
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"{name}: coordinates must be finite numbers, got {value!r}")
        if kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{name}: expected {kind.__name__} arguments, got {value!r}"[:200])
        converted.append(value)
    return converted


#: Key names as the coordinate ``key`` command takes them (case-insensitive; the names computer-use
#: formats use, xdotool's and pyautogui's) -> Playwright's key names.
_PLAYWRIGHT_KEYS = {
    "enter": "Enter",
    "return": "Enter",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "Space",
    "backspace": "Backspace",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "PageUp",
    "page_up": "PageUp",
    "prior": "PageUp",
    "pagedown": "PageDown",
    "page_down": "PageDown",
    "next": "PageDown",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "ctrl": "Control",
    "control": "Control",
    "shift": "Shift",
    "alt": "Alt",
    "option": "Alt",
    "meta": "Meta",
    "super": "Meta",
    "win": "Meta",
    "cmd": "Meta",
    "command": "Meta",
    "plus": "+",
    "minus": "-",
}
_FUNCTION_KEY = re.compile(r"^f([1-9]|1[0-2])$")


def playwright_keys(combination: str) -> str:
    """Playwright's name of a key combination written ``ctrl+a``, ``Return`` or ``shift+Tab``; ``ValueError``
    for a key it does not know."""
    parts = combination.strip().split("+")
    if combination.strip().endswith("++"):  # "ctrl++": the plus key
        parts = [*combination.strip()[:-2].split("+"), "+"]
    if not combination.strip() or any(not part.strip() for part in parts):
        raise ValueError(f"key: malformed key combination {combination!r}"[:200])
    names = []
    for part in parts:
        part = part.strip()
        lowered = part.lower()
        if lowered in _PLAYWRIGHT_KEYS:
            names.append(_PLAYWRIGHT_KEYS[lowered])
        elif _FUNCTION_KEY.match(lowered):
            names.append(lowered.upper())
        elif len(part) == 1 and part.isprintable():
            names.append(part)
        else:
            raise ValueError(
                f"key: unknown key {part!r}; use names such as ctrl, shift, alt, enter, escape, tab, up, a, f2"[:200]
            )
    return "+".join(names)


#: Serialises the page (see the module docstring). Returns ``{text, elements}``: the text, and
#: for each listed element its bid, kind (``input``, ``select`` or ``click``), tag, own text,
#: value, checked state, whether it is interactive, and its box in viewport pixels.
SERIALISE_JS = r"""
({root, exclude, maxChars, renumber}) => {
  if (renumber || window.__agentgymBid === undefined) {
    document.querySelectorAll('[data-bid]').forEach(e => e.removeAttribute('data-bid'));
    window.__agentgymBid = 0;
  }
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE']);
  const clickable = new Set(['A', 'BUTTON', 'LABEL', 'SUMMARY', 'OPTION']);
  const excluded = new Set(exclude.flatMap(s => Array.from(document.querySelectorAll(s))));
  const lines = [], elements = [];
  let size = 0, truncated = false;
  const clean = s => s.replace(/\s+/g, ' ').trim();
  const quote = s => JSON.stringify(s.length > 300 ? s.slice(0, 300) + '…' : s);
  function ownText(el) {
    let text = '';
    for (const child of el.childNodes) if (child.nodeType === 3) text += ' ' + child.textContent;
    return clean(text);
  }
  function describe(el, text) {
    const tag = el.tagName.toLowerCase();
    const parts = [tag];
    const role = el.getAttribute('role');
    if (role) parts.push('role=' + role);
    if (tag === 'input') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      parts.push(type);
      if (type === 'checkbox' || type === 'radio') { if (el.checked) parts.push('checked'); }
      else if (type !== 'submit' && type !== 'button') parts.push('value=' + quote(el.value));
      else parts.push(quote(el.value));
      if (el.placeholder) parts.push('placeholder=' + quote(el.placeholder));
    } else if (tag === 'textarea') {
      parts.push('value=' + quote(el.value));
    } else if (tag === 'select') {
      const options = Array.from(el.options).map(o => clean(o.textContent));
      parts.push('value=' + quote(el.selectedIndex >= 0 ? options[el.selectedIndex] : ''));
      parts.push('options=' + quote(options.join(' | ')));
      return parts.join(' ');
    } else if (tag === 'img') {
      if (el.alt) parts.push('alt=' + quote(el.alt));
    } else if (tag === 'a' && el.getAttribute('href') && !el.getAttribute('href').startsWith('#')
               && !el.getAttribute('href').startsWith('javascript')) {
      parts.push('href=' + quote(el.getAttribute('href')));
    }
    if (el.disabled) parts.push('disabled');
    if (text) parts.push(quote(text));
    return parts.join(' ');
  }
  function kindOf(el) {
    const tag = el.tagName;
    if (tag === 'TEXTAREA' || el.isContentEditable) return 'input';
    if (tag === 'INPUT') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      return ['checkbox', 'radio', 'submit', 'button', 'reset', 'range', 'color'].includes(type) ? 'click' : 'input';
    }
    if (tag === 'SELECT') return 'select';
    return 'click';
  }
  function walk(el, depth) {
    if (truncated || skip.has(el.tagName) || excluded.has(el)) return;
    const style = getComputedStyle(el);
    if (style.display === 'none') return;
    const text = el.tagName === 'SELECT' || el.tagName === 'TEXTAREA' ? '' : ownText(el);
    const interactive = clickable.has(el.tagName) || ['INPUT', 'SELECT', 'TEXTAREA', 'IMG'].includes(el.tagName)
      || el.hasAttribute('onclick') || el.hasAttribute('role') || el.hasAttribute('tabindex') || el.isContentEditable;
    const box = el.getBoundingClientRect();
    const shown = style.visibility !== 'hidden' && (box.width > 0 && box.height > 0 || el.tagName === 'OPTION');
    let childDepth = depth;
    if (shown && (text || interactive) && el !== document.body) {
      if (!el.hasAttribute('data-bid')) el.setAttribute('data-bid', String(++window.__agentgymBid));
      const bid = el.getAttribute('data-bid');
      const line = '  '.repeat(depth) + '[' + bid + '] ' + describe(el, text);
      if (size + line.length > maxChars) { truncated = true; return; }
      lines.push(line); size += line.length + 1;
      elements.push({bid: Number(bid), kind: kindOf(el), tag: el.tagName.toLowerCase(), text: text,
                     value: el.value === undefined ? null : String(el.value), checked: !!el.checked,
                     interactive: interactive, left: box.left, top: box.top, width: box.width, height: box.height});
      childDepth = depth + 1;
    }
    if (el.tagName === 'SELECT') return;
    for (const child of el.children) walk(child, childDepth);
  }
  const start = root ? document.querySelector(root) : document.body;
  if (start) walk(start, 0);
  if (truncated) lines.push('… (the page is longer; only the first ' + maxChars + ' characters are shown)');
  return {text: lines.join('\n'), elements};
}
"""

_RECYCLE_TIMEOUT_S = 10.0


class BrowserPool:
    """Chromium processes with many contexts each, driven from one background event loop.

    ``contexts_per_browser`` contexts share a Chromium process; a new process starts when all
    are full, up to ``max_browsers`` (then contexts are spread over the least loaded). A process
    left without contexts for ``idle_close_s`` seconds is closed, but for the last one: a server's
    pool shrinks back after a peak instead of keeping every process it ever started.
    """

    _shared: BrowserPool | None = None
    _shared_lock = threading.Lock()

    def __init__(
        self,
        *,
        executable_path: str = CHROMIUM,
        contexts_per_browser: int = 16,
        max_browsers: int = 8,
        launch_timeout_s: float = 60.0,
        idle_close_s: float = 60.0,
    ) -> None:
        self.executable_path = executable_path
        self.contexts_per_browser = contexts_per_browser
        self.max_browsers = max_browsers
        self.launch_timeout_s = launch_timeout_s
        self.idle_close_s = idle_close_s
        self.pid = os.getpid()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentgym-browser", daemon=True)
        self._thread.start()
        self._playwright: Any = None
        self._browsers: dict[Any, int] = {}  # browser -> open contexts
        self._contexts: dict[Any, Any] = {}  # open context -> its browser
        self._start_lock: asyncio.Lock | None = None
        self.closed = False

    @classmethod
    def shared(cls) -> BrowserPool:
        """The pool of this process (a forked child gets its own)."""
        with cls._shared_lock:
            if cls._shared is None or cls._shared.closed or cls._shared.pid != os.getpid():
                cls._shared = cls()
                atexit.register(cls._shared.close)
            return cls._shared

    # ---- running coroutines from synchronous code --------------------------------------

    def call(self, coroutine: Awaitable[T], timeout_s: float) -> T:
        """Run ``coroutine`` on the pool's loop; ``TimeoutError`` after ``timeout_s`` (it is cancelled)."""
        if self.closed:
            raise BrowserError("the browser pool is closed")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)  # type: ignore[arg-type]
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer from the browser in {timeout_s:g} s") from None

    # ---- contexts -------------------------------------------------------------------------

    async def _launch(self) -> Any:
        if self._playwright is None:
            from playwright.async_api import async_playwright

            self._playwright = await async_playwright().start()
        browser = await self._playwright.chromium.launch(
            executable_path=self.executable_path, headless=True, args=LAUNCH_ARGS, timeout=self.launch_timeout_s * 1000
        )
        browser.on("disconnected", self._disconnected)
        self._browsers[browser] = 0
        return browser

    async def new_context(self, **options: Any) -> Any:
        """A fresh browser context on the least loaded live Chromium (launching one if needed)."""
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            live = {browser: count for browser, count in self._browsers.items() if browser.is_connected()}
            roomy = [browser for browser, count in live.items() if count < self.contexts_per_browser]
            if roomy:
                browser = min(roomy, key=lambda b: live[b])
            elif len(live) < self.max_browsers:
                browser = await self._launch()
            else:
                browser = min(live, key=lambda b: live[b])
            self._browsers[browser] = self._browsers.get(browser, 0) + 1
        try:
            context = await browser.new_context(**options)
        except Exception:
            self._release(browser)
            raise
        self._contexts[context] = browser
        context.on("close", self._forget)
        return context

    def drop(self, context: Any) -> None:
        """Stop counting ``context`` against its browser, from any thread: it would not close and is given up."""
        self._loop.call_soon_threadsafe(self._forget, context)

    def _forget(self, context: Any) -> None:
        """``context`` closed or was given up: its browser has one context less (idempotent)."""
        browser = self._contexts.pop(context, None)
        if browser is not None:
            self._release(browser)

    def _disconnected(self, browser: Any) -> None:
        self._browsers.pop(browser, None)
        for context in [context for context, owner in self._contexts.items() if owner is browser]:
            del self._contexts[context]

    def _release(self, browser: Any) -> None:
        if browser in self._browsers:
            self._browsers[browser] = max(0, self._browsers[browser] - 1)
            if self._browsers[browser] == 0:
                self._loop.call_later(self.idle_close_s, self._close_if_idle, browser)

    def _close_if_idle(self, browser: Any) -> None:
        """Close ``browser`` if it still has no context and another live browser remains."""
        live = [other for other in self._browsers if other.is_connected()]
        if self._browsers.get(browser) == 0 and len(live) > 1 and browser in live:
            del self._browsers[browser]  # no new context picks it from here on
            self._loop.create_task(self._close_quietly(browser))

    @staticmethod
    async def _close_quietly(browser: Any) -> None:
        with contextlib.suppress(Exception):  # already gone
            await asyncio.wait_for(browser.close(), 30)

    def browser_count(self) -> int:
        """How many Chromium processes are running."""
        return sum(1 for browser in self._browsers if browser.is_connected())

    def close(self) -> None:
        """Close every browser and stop the loop (idempotent)."""
        if self.closed:
            return
        self.closed = True

        async def shutdown() -> None:
            for browser in list(self._browsers):
                with contextlib.suppress(Exception):  # a dead browser is already closed
                    await asyncio.wait_for(browser.close(), 10)
            if self._playwright is not None:
                await asyncio.wait_for(self._playwright.stop(), 10)

        with contextlib.suppress(Exception):  # shutting down at exit: nothing left to report to
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


class Tab:
    """One browser context with one page, used by one environment at a time.

    :meth:`run` executes ``operation(page)`` under a hard timeout; if it times out, the page
    crashed or the browser died, the tab is recycled and :class:`BrowserError` is raised.
    ``clock_start_ms`` installs Playwright's fake clock, paused: page time then moves only
    when :meth:`advance_clock` says so, which makes timers and timestamps deterministic.
    """

    def __init__(
        self,
        *,
        viewport: tuple[int, int] = (1280, 720),
        clock_start_ms: int | None = None,
        timeout_s: float = 10.0,
        pool: BrowserPool | None = None,
    ) -> None:
        self.pool = pool or BrowserPool.shared()
        self.viewport = viewport
        self.clock_start_ms = clock_start_ms
        self.timeout_s = timeout_s
        self.context: Any = None
        self.page: Any = None
        self.crashed = False
        #: How many times this tab was recycled after a failure.
        self.recycles = 0
        self._open()

    def _open(self) -> None:
        async def open_page() -> tuple[Any, Any]:
            width, height = self.viewport
            context = await self.pool.new_context(viewport={"width": width, "height": height})
            context.set_default_timeout(self.timeout_s * 1000)
            page = await context.new_page()
            self._watch(page)
            # A page the site opens (a link with target=_blank) is shown, as a browser shows it.
            context.on("page", self._show_opened)
            if self.clock_start_ms is not None:
                await page.clock.install(time=self.clock_start_ms)
                await page.clock.pause_at(self.clock_start_ms + 1000)
            return context, page

        self.context, self.page = self.pool.call(open_page(), self.pool.launch_timeout_s + self.timeout_s)
        self.crashed = False

    def _watch(self, page: Any) -> None:
        page.on("crash", lambda page: setattr(self, "crashed", True))

    def _show_opened(self, page: Any) -> None:
        self._watch(page)
        self.page = page

    async def tab_command(self, command: Command) -> str:
        """Run a tab command (:data:`TAB_COMMANDS`) in this context; :class:`ElementError` if it cannot be done."""
        pages = self.context.pages
        if command.name == "new_tab":
            self.page = await self.context.new_page()  # _show_opened also records it
            return f"Opened tab {len(self.context.pages) - 1} (blank: goto a URL in it)."
        if command.name == "switch_tab":
            index = command.args[0]
            if not 0 <= index < len(pages):
                raise ElementError(f"there is no tab {index}; the tabs are 0 to {len(pages) - 1}")
            self.page = pages[index]
            await self.page.bring_to_front()
            return f"Switched to tab {index}."
        if len(pages) == 1:
            raise ElementError("this is the only tab: it cannot be closed")
        index = pages.index(self.page)
        await self.page.close()
        self.page = self.context.pages[max(0, index - 1)]
        await self.page.bring_to_front()
        return f"Closed tab {index}; tab {self.context.pages.index(self.page)} is shown."

    async def tab_titles(self) -> list[tuple[str, str, bool]]:
        """Each open tab's title, URL, and whether it is the one shown."""
        return [(await page.title(), page.url, page is self.page) for page in self.context.pages]

    def run(self, operation: Callable[[Any], Awaitable[T]], timeout_s: float | None = None) -> T:
        """``await operation(page)`` with a hard timeout; on failure recycle the tab and raise :class:`BrowserError`."""
        limit = timeout_s or self.timeout_s
        if self.page is None or self.crashed:
            self.recycle()
        try:
            return self.pool.call(operation(self.page), limit + 2.0)
        except (ElementError, ValueError):
            raise
        except Exception as error:
            reason = self._failure(error, limit)
            self.recycle()
            raise BrowserError(reason) from None

    def _failure(self, error: Exception, limit: float) -> str:
        if self.crashed:
            return "the page crashed"
        name = type(error).__name__
        if isinstance(error, TimeoutError):  # the watchdog's
            return f"the page did not answer within {limit:g} s"
        if "Timeout" in name:  # Playwright's own, with the operation and its limit ("Timeout 5000ms exceeded")
            return f"the page did not answer in time ({_first_line(error)})"
        return f"the browser failed ({name}: {_first_line(error)})"

    def recycle(self) -> None:
        """Close this tab's context (if it still answers) and open a fresh one."""
        self.recycles += 1
        self._close_context()
        self._open()

    def _close_context(self) -> None:
        context, self.context, self.page = self.context, None, None
        if context is not None and not self.pool.closed:
            try:
                self.pool.call(context.close(), _RECYCLE_TIMEOUT_S)
            except Exception:  # a crashed context may refuse to close; it is dropped, and no longer counted
                self.pool.drop(context)

    def advance_clock(self, milliseconds: int) -> None:
        """Let ``milliseconds`` of page time pass, firing the timers due (fake clock only)."""
        if self.clock_start_ms is not None and milliseconds > 0:
            self.run(lambda page: page.clock.run_for(milliseconds))

    def screenshot(self) -> np.ndarray:
        """The viewport as a uint8 array of shape (height, width, 3)."""
        from PIL import Image

        png = self.run(lambda page: page.screenshot(type="png", timeout=self.timeout_s * 1000))
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.uint8)

    def close(self) -> None:
        """Close the context; the pool's browsers stay up for other tabs."""
        self._close_context()


def _first_line(error: Exception) -> str:
    """The first line of ``error``'s message (its type's name when it has none), at most 200 characters."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


@dataclass(frozen=True)
class Element:
    """One listed element of a serialised page."""

    bid: int
    kind: str  # "input", "select" or "click"
    tag: str
    text: str
    value: str | None
    checked: bool
    #: Whether the element takes actions (a link, button, form field, or an element with a handler or
    #: role), as opposed to one listed for its text; the set-of-marks draws the interactive ones.
    interactive: bool = False
    #: Its bounding box in viewport pixels when the page was read (left, top, width, height).
    left: float = 0.0
    top: float = 0.0
    width: float = 0.0
    height: float = 0.0

    @property
    def centre(self) -> tuple[float, float]:
        """The centre of its box in viewport pixels."""
        return self.left + self.width / 2, self.top + self.height / 2


#: Playwright's error for a script whose page navigated away while it ran (a form submitted, a redirect):
#: the page is fine, the read came at the wrong moment.
NAVIGATED_AWAY = "Execution context was destroyed"


async def settled_evaluate(page: Any, expression: str, arg: Any = None, attempts: int = 3) -> Any:
    """``page.evaluate`` for read-only scripts, read again once the page has loaded when a navigation
    (an earlier action's form submission or redirect, still under way) destroyed its context mid-read."""
    from playwright.async_api import Error as PlaywrightError

    for attempt in range(attempts):
        try:
            return await page.evaluate(expression, arg)
        except PlaywrightError as error:
            if NAVIGATED_AWAY not in str(error) or attempt == attempts - 1:
                raise
            await page.wait_for_load_state()


#: Resolves (to how many it waited for) once the page's images that are still loading, the CSS images
#: (``content``/``background-image``) its elements show and its web fonts have loaded or failed: until
#: then an image has no size, so whether it is listed would depend on how fast the machine is.
#: Lazy images (``loading="lazy"``) load when scrolled to and are not waited for. Bounded from Python,
#: since a page on the fake clock has no timer that runs.
_RESOURCES_JS = r"""() => {
  const pending = [];
  const settled = target => new Promise(done => {
    target.addEventListener('load', done, {once: true});
    target.addEventListener('error', done, {once: true});
  });
  for (const image of document.images) if (!image.complete && image.loading !== 'lazy') pending.push(settled(image));
  const urls = new Set();
  for (const el of document.querySelectorAll('body *')) {
    const style = getComputedStyle(el);
    for (const value of [style.content, style.backgroundImage]) {
      if (!value || !value.includes('url(')) continue;
      for (const match of value.matchAll(/url\("?([^")]+)"?\)/g)) urls.add(match[1]);
    }
  }
  for (const url of urls) {
    const image = new Image();
    image.src = url;
    if (!image.complete) pending.push(settled(image));
  }
  if (document.fonts && document.fonts.status !== 'loaded') pending.push(document.fonts.ready);
  return Promise.all(pending).then(() => pending.length);
}"""
#: How long a read waits for the page's images and fonts before it reads the page as it is.
RESOURCES_TIMEOUT_S = 10.0


async def wait_for_resources(page: Any, timeout_s: float = RESOURCES_TIMEOUT_S) -> bool:
    """Wait until the page's loading images and fonts have loaded or failed (see :data:`_RESOURCES_JS`);
    ``False`` if they had not after ``timeout_s`` (the page is then read as it is)."""
    try:
        await asyncio.wait_for(settled_evaluate(page, _RESOURCES_JS), timeout_s)
    except asyncio.TimeoutError:
        return False
    return True


async def serialise(
    page: Any,
    *,
    root: str | None = None,
    exclude: tuple[str, ...] = (),
    max_chars: int = 20_000,
    renumber: bool = False,
) -> tuple[str, list[Element]]:
    """The page as text and its listed elements; ``renumber`` restarts the ids at 1.

    It first waits for the page's images and fonts (:func:`wait_for_resources`): an image still loading
    has no size and would be missing from the list, so a loaded machine would see another page."""
    await wait_for_resources(page)
    result = await settled_evaluate(
        page, SERIALISE_JS, {"root": root, "exclude": list(exclude), "maxChars": max_chars, "renumber": renumber}
    )
    return result["text"], [Element(**element) for element in result["elements"]]


#: Whether a real mouse click at the element's centre (after scrolling it into view) reaches it.
_REACHABLE_JS = """e => {
  e.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const box = e.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) return false;
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return hit !== null && (hit === e || e.contains(hit) || (hit.tagName === 'LABEL' && hit.control === e));
}"""


#: Whether an element can take an action now: shown, enabled and, for typing (the argument), editable.
_ACTIONABLE_JS = """(e, typing) => {
  const box = e.getBoundingClientRect();
  if (box.width === 0 || box.height === 0 || getComputedStyle(e).visibility === 'hidden') return false;
  if (e.disabled || e.closest('fieldset[disabled]') !== null) return false;
  return !typing || e.isContentEditable || (['INPUT', 'TEXTAREA'].includes(e.tagName) && !e.readOnly);
}"""


#: Playwright's log lines once an action may have reached the page: a pointer action sent, a key press begun.
_PERFORMED = re.compile(r"performing \w+ action|elementHandle\.press\(")


async def _patiently(
    attempt: Callable[[float], Awaitable[Any]],
    element: Any,
    *,
    typing: bool,
    timeout_ms: float,
    retry_timeout_ms: float,
) -> None:
    """``await attempt(timeout_ms)``, Playwright's action on ``element`` with that timeout.

    Its actionability wait measures wall time, so on a loaded machine it can run out while the page is
    ready (the timeout's log then ends at "waiting for locator"). A timeout while the element is actionable
    now is the machine's, not the agent's: the action is tried once more with ``retry_timeout_ms``. A
    timeout after Playwright sent the action (waiting for a navigation it started) is the action done: it is
    not sent twice. An element that is gone from the page (a script replaced it) is reported at once, not
    waited for.
    """
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await attempt(timeout_ms)
        return
    except PlaywrightTimeout as error:
        if _PERFORMED.search(str(error)):  # the pointer went to the page; the wait after it is the page's
            return
        if await element.count() == 0:  # it vanished (a script re-rendered it): the agent must look again
            raise
        if not await element.evaluate(_ACTIONABLE_JS, typing, timeout=retry_timeout_ms):
            raise
    await attempt(retry_timeout_ms)


async def perform(page: Any, command: Command, *, timeout_ms: float = 5000, retry_timeout_ms: float = 30_000) -> str:
    """Execute ``command`` on ``page`` and return a short feedback line.

    Raises :class:`ElementError` when the element is missing or refuses the action
    (Playwright's actionability checks time out after ``timeout_ms``; an element actionable when that
    happens gets one more try with ``retry_timeout_ms``, see :func:`_patiently`; ``goto``, a page load,
    has the tab's page timeout).
    """
    from playwright.async_api import Error as PlaywrightError

    name, args = command.name, command.args
    timeouts = {"timeout_ms": timeout_ms, "retry_timeout_ms": retry_timeout_ms}
    if name in ("click", "type", "select"):
        locator = page.locator(f'[data-bid="{args[0]}"]')
        if await locator.count() == 0:
            raise ElementError(f"there is no element [{args[0]}] on the page (it may have vanished)")
        element = locator.first
        try:
            if name == "click":
                if await element.evaluate(_REACHABLE_JS):
                    await _patiently(lambda limit: element.click(timeout=limit), element, typing=False, **timeouts)
                    return f"Clicked [{args[0]}]."
                await element.evaluate("e => e.click()")  # as MiniWoB's own element click does
                return f"Clicked [{args[0]}] (another element covers it: the click went to it directly)."
            if name == "type":
                await _patiently(lambda limit: element.fill(args[1], timeout=limit), element, typing=True, **timeouts)
                return f"Typed {args[1]!r} into [{args[0]}]."
            wanted = [args[1]] if isinstance(args[1], str) else args[1]
            options = await element.evaluate(
                "e => e.options ? Array.from(e.options).map(o => [o.textContent.trim(), o.value]) : null"
            )
            if options is None:
                raise ElementError(f"[{args[0]}] is not a drop-down list")
            values = [next((v for label, v in options if wanted_one in (label, v)), None) for wanted_one in wanted]
            if None in values:
                raise ElementError(f"[{args[0]}] has no option {wanted[values.index(None)]!r}")
            await _patiently(
                lambda limit: element.select_option(value=values, timeout=limit), element, typing=False, **timeouts
            )
            return f"Selected {args[1]!r} in [{args[0]}]."
        except PlaywrightError as error:
            lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
            detail = lines[0] + (f" ({lines[-1]})" if len(lines) > 1 else "")
            raise ElementError(f"[{args[0]}] cannot be used this way: {detail[:300]}") from None
    if name == "press":
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        try:
            focused = page.locator("*:focus")
            if await focused.count() == 1:  # a locator's press waits for a navigation it starts
                await _patiently(lambda limit: focused.press(args[0], timeout=limit), focused, typing=False, **timeouts)
            else:
                await page.keyboard.press(args[0])
        except PlaywrightTimeout as error:
            raise ElementError(f"the focused element did not take {args[0]!r}: {_first_line(error)}") from None
        except PlaywrightError:
            raise ElementError(f"unknown key {args[0]!r}") from None
        return f"Pressed {args[0]}."
    if name == "scroll":
        sign = -1 if args[0] == "up" else 1
        await page.evaluate("sign => window.scrollBy(0, sign * Math.round(window.innerHeight * 0.8))", sign)
        return f"Scrolled {args[0]}."
    if name == "click_xy":
        x, y = _inside_viewport(page, args)
        await page.mouse.click(x, y)
        return f"Clicked at ({x:g}, {y:g})."
    if name in COORDINATE_COMMANDS:
        return await _perform_at(page, command)
    if name == "goto":  # a page load, not an actionability check: the tab's page timeout applies
        await page.goto(args[0])
        return f"Opened {args[0]}."
    raise ElementError(f"unknown command {name!r}")


def _inside_viewport(page: Any, points: tuple[float, ...]) -> tuple[float, ...]:
    """``points`` (x, y, x, y, ...) if each lies in the viewport, else :class:`ElementError` saying which does not."""
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    for x, y in zip(points[::2], points[1::2]):
        if not (0 <= x < width and 0 <= y < height):
            raise ElementError(
                f"({x:g}, {y:g}) is outside the {width}x{height} page: x must be from 0 to {width - 1}, "
                f"y from 0 to {height - 1}"
            )
    return points


async def _perform_at(page: Any, command: Command) -> str:
    """A coordinate command (:data:`COORDINATE_COMMANDS`) with Playwright's mouse and keyboard."""
    from playwright.async_api import Error as PlaywrightError

    name, args = command.name, command.args
    if name == "type_text":
        await page.keyboard.type(args[0])
        return f"Typed {args[0]!r}."
    if name == "key":
        keys = playwright_keys(args[0])
        try:
            await page.keyboard.press(keys)
        except PlaywrightError:
            raise ElementError(f"key: the browser does not know the key {args[0]!r}") from None
        return f"Pressed {args[0]}."
    if name == "scroll_at":
        x, y = _inside_viewport(page, args[:2])
        await page.mouse.move(x, y)
        await page.mouse.wheel(args[2] * WHEEL_NOTCH_PX, args[3] * WHEEL_NOTCH_PX)
        return f"Scrolled by ({args[2]:g}, {args[3]:g}) notches at ({x:g}, {y:g})."
    if name == "drag":
        x1, y1, x2, y2 = _inside_viewport(page, args)
        await page.mouse.move(x1, y1)
        await page.mouse.down()
        await page.mouse.move((x1 + x2) / 2, (y1 + y2) / 2)
        await page.mouse.move(x2, y2)
        await page.mouse.up()
        return f"Dragged from ({x1:g}, {y1:g}) to ({x2:g}, {y2:g})."
    x, y = _inside_viewport(page, args)
    if name == "move_to":
        await page.mouse.move(x, y)
        return f"Moved the pointer to ({x:g}, {y:g})."
    # A real mouse click at (x, y), made through the element there so that, as for click(id), Playwright
    # waits for a navigation the click starts (page.mouse.click does not; the next read would race it).
    # force: no actionability checks, the click goes to the point whatever is there.
    target = await page.evaluate_handle("([x, y]) => document.elementFromPoint(x, y)", [x, y])
    element = target.as_element()
    box = await element.bounding_box() if element is not None else None
    button = "right" if name == "right_click_at" else "left"
    if element is None or box is None:
        await (page.mouse.dblclick(x, y) if name == "double_click_at" else page.mouse.click(x, y, button=button))
    else:
        position = {"x": x - box["x"], "y": y - box["y"]}
        try:
            if name == "double_click_at":
                await element.dblclick(position=position, force=True)
            else:
                await element.click(position=position, button=button, force=True)
        except PlaywrightError as error:
            lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
            raise ElementError(f"the click at ({x:g}, {y:g}) failed: {lines[0][:200] if lines else error}") from None
    words = {"double_click_at": "Double clicked", "right_click_at": "Right clicked"}.get(name, "Clicked")
    return f"{words} at ({x:g}, {y:g})."
