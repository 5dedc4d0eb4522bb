"""The browser layer shared by agentgym's web environments: Chromium driven by Playwright.

One :class:`BrowserPool` per Python process (:meth:`BrowserPool.shared`) runs async
Playwright on a background event-loop thread and keeps a few headless Chromium processes
(:data:`CHROMIUM`: Debian's headless shell, else its full browser, or ``$AGENTGYM_CHROMIUM``), each holding
many browser contexts. An environment holds one :class:`Tab` (a context with one page) for its whole life
and reuses it across episodes, so ``reset`` costs a script call, not a browser start.

Every operation on a tab runs under a hard timeout (Playwright's own, plus a watchdog on the
calling thread). When a page times out, hangs or crashes, the tab is recycled (its context
closed, a fresh one opened) and the caller gets a :class:`BrowserError` saying what
happened; a dead Chromium process is relaunched. Nothing waits forever.

The page is seen as text by :data:`SERIALISE_JS`: every visible element that has its own text
or can be interacted with is one line, ``[12] button "Submit"``, indented by nesting. The
number is the element's ``data-bid`` attribute, assigned once and kept while the element
lives, so ``click(12)`` finds it again. The action language (``click(12)``: its syntax, parsing and
performing) is :mod:`agentgym.browser.commands`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import io
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from agentgym.browser.commands import Command, ElementError, first_line

T = TypeVar("T")

#: Debian's Chromium builds, the first one installed being the default: the headless shell
#: (``apt-get install chromium-headless-shell``; what Playwright itself runs headless: Chromium without the desktop
#: browser's layers, about half the CPU a page load and screenshot takes in the full one), then the full browser.
CHROMIUM_BUILDS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")


def default_chromium() -> str:
    """The Chromium executable the browser envs launch: ``$AGENTGYM_CHROMIUM``, else the first of
    :data:`CHROMIUM_BUILDS` installed (the last one when none is, so that the launch error names it)."""
    configured = os.environ.get("AGENTGYM_CHROMIUM", "").strip()
    if configured:
        return configured
    return next((path for path in CHROMIUM_BUILDS if os.path.exists(path)), CHROMIUM_BUILDS[-1])


CHROMIUM = default_chromium()
#: Flags of every launch. ``--font-render-hinting=none``: text is laid out at its fractional widths, as the full
#: browser lays it out headless (the headless shell otherwise rounds each glyph's advance, which moves boxes by
#: up to a pixel a word), so that either build gives the same boxes (the grounding family's task indexes check
#: them within a pixel) and the same layout.
LAUNCH_ARGS = [
    "--font-render-hinting=none",
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


class BrowserError(Exception):
    """A browser operation timed out, or the page or browser crashed; the tab was recycled."""


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
#: What Chromium answers when it refuses a capture now and then (Page.captureScreenshot's protocol error).
REFUSED_CAPTURE = "Unable to capture screenshot"


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

    def discard(self, context: Any) -> None:
        """Stop counting ``context`` now and close it in the background (on the pool's loop: a tab that failed to
        open)."""
        self._forget(context)
        self._loop.create_task(self._close_quietly(context))

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
    async def _close_quietly(closable: Any) -> None:
        """Close a browser or a context, if it still answers."""
        with contextlib.suppress(Exception):  # already gone
            await asyncio.wait_for(closable.close(), 30)

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
            try:
                context.set_default_timeout(self.timeout_s * 1000)
                page = await context.new_page()
                self._watch(page)
                # A page the site opens (a link with target=_blank) is shown, as a browser shows it.
                context.on("page", self._show_opened)
                if self.clock_start_ms is not None:
                    await page.clock.install(time=self.clock_start_ms)
                    await page.clock.pause_at(self.clock_start_ms + 1000)
            except BaseException:  # failed or timed out half open: the context would hold its browser's room forever
                self.pool.discard(context)
                raise
            return context, page

        self.context, self.page = self.pool.call(open_page(), self.pool.launch_timeout_s + self.timeout_s)
        self.crashed = False

    def _watch(self, page: Any) -> None:
        page.on("crash", lambda page: setattr(self, "crashed", True))

    def _show_opened(self, page: Any) -> None:
        self._watch(page)
        self.page = page

    async def tab_command(self, command: Command) -> str:
        """Run a tab command (:data:`~agentgym.browser.commands.TAB_COMMANDS`) in this context; :class:`ElementError`
        if it cannot be done."""
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
            return f"the page did not answer in time ({first_line(error)})"
        return f"the browser failed ({name}: {first_line(error)})"

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

        png = self.run(lambda page: _capture(page, self.timeout_s * 1000))
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.uint8)

    def close(self) -> None:
        """Close the context; the pool's browsers stay up for other tabs."""
        self._close_context()


async def _capture(page: Any, timeout_ms: float) -> bytes:
    """The page's PNG; asked again once, a quarter of a second later, when Chromium refuses the capture outright
    ("Protocol error (Page.captureScreenshot): Unable to capture screenshot": it takes the same picture when asked
    again; seen on a loaded machine)."""
    try:
        return await page.screenshot(type="png", timeout=timeout_ms)
    except Exception as error:
        if REFUSED_CAPTURE not in str(error):
            raise
    await asyncio.sleep(0.25)
    return await page.screenshot(type="png", timeout=timeout_ms)


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
