"""The browser envs' action language: what an agent may write (:data:`ACTION_SYNTAX`, the coordinate
commands of :data:`COORDINATE_SYNTAX`, the tab commands), :func:`parse_command` to read it into a
:class:`Command`, and :func:`perform` to carry a command out on a Playwright page.

Element ids are the numbers of the page's text (:mod:`agentgym.browser.page` serialises it); a command
that names an element that is gone, or one that cannot take the action, raises :class:`ElementError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from agentgym.computer_use.commands import ARITY, pixel_action, read_call

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

#: The coordinate commands (the pointer and keyboard commands of the pixel command language,
#: :mod:`agentgym.computer_use.commands`): user-facing name -> internal name. Internal names differ from the id
#: commands' (``click_at``, not ``click``) so that code reading a parsed ``click`` can rely on its first argument
#: being an element id.
_COORDINATE_NAMES = {
    "click": "click_at",
    "double_click": "double_click_at",
    "right_click": "right_click_at",
    "move": "move_to",
    "drag": "drag",
    "scroll": "scroll_at",
    "type": "type_text",
    "key": "key",
}
#: Their argument counts here: a page scrolls at a point (``scroll(up)`` is the id commands' scroll).
_COORDINATE_ARITY = ARITY | {"scroll": (4,)}
#: The internal names of the coordinate commands.
COORDINATE_COMMANDS = tuple(_COORDINATE_NAMES.values())
_SIGNATURES: dict[str, tuple[type | tuple[type, ...], ...]] = {
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


def parse_command(
    text: str, *, allow_goto: bool = False, allow_tabs: bool = False, action_space: ActionSpace = "ids"
) -> Command:
    """Parse ``click(12)``, ``type(3, "hi")``, ... into a :class:`Command`; ``ValueError`` says why not.

    ``goto`` is a command only with ``allow_goto``, the tab commands only with ``allow_tabs``;
    ``action_space`` picks the id commands, the coordinate ones (:data:`COORDINATE_SYNTAX`) or both.
    """
    if action_space not in ACTION_SPACES:
        raise ValueError(f"action_space must be one of {ACTION_SPACES}, got {action_space!r}")
    example = 'click(12) or type(4, "text")' if action_space != "coordinates" else "click(120, 48)"
    name, args = read_call(text, example=example)
    by_id = [
        command
        for command in _SIGNATURES
        if (allow_goto or command != "goto") and (allow_tabs or command not in TAB_COMMANDS)
    ]
    if action_space == "coordinates":  # what names no element stays: goto and the tab commands
        by_id = [command for command in by_id if command == "goto" or command in TAB_COMMANDS]
    by_point = list(_COORDINATE_NAMES) if action_space != "ids" else []
    allowed = list(dict.fromkeys(by_id + by_point))
    if name not in allowed:
        raise ValueError(f"unknown command {name!r}; the commands are {', '.join(allowed)}")
    if name in by_id and len(args) == len(_SIGNATURES[name]):
        converted = _converted(name, args, _SIGNATURES[name])
        if name == "scroll" and converted[0] not in ("up", "down"):
            raise ValueError("scroll takes up or down" + (", or x, y, dx, dy" if by_point else ""))
        return Command(name, tuple(converted))
    if name in by_point and len(args) in _COORDINATE_ARITY[name]:
        try:
            action = pixel_action(name, args, keys="playwright")
        except ValueError as error:
            message = str(error)
            raise ValueError(message if message.startswith(f"{name}") else f"{name}: {message}") from None
        return Command(_COORDINATE_NAMES[name], action.args)
    counts = [len(_SIGNATURES[name])] if name in by_id else []
    counts += list(_COORDINATE_ARITY[name]) if name in by_point else []
    raise ValueError(f"{name} takes {' or '.join(map(str, counts))} argument(s), got {len(args)}")


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


def first_line(error: Exception) -> str:
    """The first line of ``error``'s message (its type's name when it has none), at most 200 characters."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


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
#: A navigation cut short by another one the page started itself (Playwright's words for it).
_RACED = re.compile(r"interrupted by another navigation|net::ERR_ABORTED")
#: How often a goto is tried when the page's own navigations keep cutting it short.
GOTO_TRIES = 5


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
            raise ElementError(f"the focused element did not take {args[0]!r}: {first_line(error)}") from None
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
        await _goto(page, args[0])
        return f"Opened {args[0]}."
    raise ElementError(f"unknown command {name!r}")


async def _goto(page: Any, url: str) -> None:
    """Open ``url``. A navigation the page started itself (a form's redirect after Roundcube's Send, which a
    loaded machine may start seconds after the click) cuts a goto short, and may again on the next try: each
    such try waits for the page's own load and goes again, up to :data:`GOTO_TRIES` tries. A try reported cut
    short whose page has opened ``url`` all the same (Chromium may carry on with it, and then report each
    further try as cut short by that very navigation) is the goto done."""
    from playwright.async_api import Error as PlaywrightError

    for tries_left in reversed(range(GOTO_TRIES)):
        try:
            await page.goto(url)
            return
        except PlaywrightError as error:
            if not tries_left or not _RACED.search(str(error)):
                raise
            await page.wait_for_load_state()
            if page.url == url:
                return


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
        try:
            for combination in args[0].split():  # Playwright's names (pixel_action), one after another
                await page.keyboard.press(combination)
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
