"""The pixel command language, read once for every env that takes it (the desktop, a browser's coordinate actions):
``click(120, 40)``, ``drag(1, 2, 30, 40)``, ``scroll(x, y, dx, dy)``, ``type("text")``, ``key("ctrl+s")``, ...

:func:`read_call` reads ``name(arguments)`` into a name and literal arguments (a lone bare word is a string:
``key(Enter)``; with ``pyautogui``, pyautogui's names and keywords too: ``pyautogui.doubleClick(x=5, y=6)``);
:func:`pixel_action` checks a pixel command's arguments into a :class:`~agentgym.computer_use.screen.PixelAction`.
Both raise ``ValueError`` with a message for the agent.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from agentgym.computer_use.keys import Backend, playwright_keys, xdotool_keys
from agentgym.computer_use.screen import PIXEL_ACTIONS, PixelAction

MAX_COMMAND_CHARS = 10_000
MAX_TYPE_CHARS = 500
MAX_WAIT_S = 10.0
#: Wheel notches one scroll may turn, each way.
MAX_NOTCHES = 50
MAX_KEYS = 50
#: The argument counts of each command of :data:`PIXEL_ACTIONS` (a scroll at the pointer, or at a point).
ARITY: dict[str, tuple[int, ...]] = {
    "click": (2,),
    "double_click": (2,),
    "right_click": (2,),
    "move": (2,),
    "drag": (4,),
    "scroll": (2, 4),
    "type": (1,),
    "key": (1,),
    "wait": (1,),
    "done": (0,),
}
assert tuple(ARITY) == PIXEL_ACTIONS
#: pyautogui's names of the commands (``read_call(..., pyautogui=True)``).
PYAUTOGUI_NAMES = {
    "doubleclick": "double_click",
    "rightclick": "right_click",
    "moveto": "move",
    "typewrite": "type",
    "write": "type",
    "press": "key",
    "hotkey": "key",
    "sleep": "wait",
    "dragto": "drag",
}
_POINTER = ("click", "double_click", "right_click", "move", "drag")
_CALL = re.compile(r"(pyautogui\.)?([A-Za-z_]+)\s*\((.*)\)", re.DOTALL)
_BARE_WORD = re.compile(r"^[A-Za-z][\w+\-]*$")


def read_call(text: str, *, pyautogui: bool = False, example: str = "click(100, 200)") -> tuple[str, tuple[Any, ...]]:
    """The name (lower case) and literal arguments of ``name(arguments)``; ``example`` is shown when it is none."""
    text = text.strip()
    if not text:
        raise ValueError(f"the reply holds no action; expected a call such as {example}")
    if len(text) > MAX_COMMAND_CHARS:
        raise ValueError(f"the action is longer than {MAX_COMMAND_CHARS} characters")
    match = _CALL.fullmatch(text)
    if match is None or (match.group(1) and not pyautogui):
        raise ValueError(f"expected a call such as {example}")
    name, raw = match.group(2).lower(), match.group(3)
    if pyautogui:
        name = PYAUTOGUI_NAMES.get(name, name)
    if _BARE_WORD.match(raw.strip()):
        return name, (raw.strip(),)
    try:
        call = ast.parse(f"f({raw})", mode="eval").body
        assert isinstance(call, ast.Call)
        return name, tuple(ast.literal_eval(node) for node in [*call.args, *(kw.value for kw in call.keywords)])
    except (AssertionError, SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        raise ValueError(
            f'cannot read the arguments of {name}(...): they must be literal numbers or "quoted" text'
        ) from None


def pixel_action(
    name: str, args: tuple[Any, ...], *, keys: Backend, screen: tuple[int, int] | None = None
) -> PixelAction:
    """``name(*args)`` checked: with ``screen`` (width, height) coordinates and notches are whole and points on it,
    without it they are finite numbers (the env checks its bounds); keys are ``keys``'s names, space-separated
    combinations."""
    if name not in ARITY:
        raise ValueError(f"unknown action {name!r}; actions: " + ", ".join(f"{known}(...)" for known in ARITY))
    if len(args) not in ARITY[name]:
        counts = " or ".join(str(count) for count in ARITY[name])
        raise ValueError(f"{name} takes {counts} argument(s), got {len(args)}")
    if name in _POINTER or name == "scroll" and len(args) == 4:
        points = args if name in _POINTER else args[:2]
        converted = tuple(_coordinate(name, value, index, screen) for index, value in enumerate(points))
        return PixelAction(name, converted + _notches(args[2:], screen) if name == "scroll" else converted)
    if name == "scroll":
        return PixelAction(name, _notches(args, screen))
    if name == "type":
        return PixelAction(name, (_text(args[0]),))
    if name == "key":
        return PixelAction(name, (_keys(args[0], keys),))
    if name == "wait":
        seconds = args[0]
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= MAX_WAIT_S:
            raise ValueError(f"wait takes a number of seconds from 0 to {MAX_WAIT_S:g}")
        return PixelAction(name, (float(seconds),))
    return PixelAction(name)


def _number(name: str, value: Any, whole: bool) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}: expected numbers, got {value!r}"[:200])
    if not math.isfinite(value):
        raise ValueError(f"{name}: coordinates must be finite numbers, got {value!r}")
    if not whole:
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{name}: expected whole numbers, got {value!r}")
    return int(value)


def _coordinate(name: str, value: Any, index: int, screen: tuple[int, int] | None) -> float | int:
    if screen is None:
        return _number(name, value, whole=False)
    axis, limit = ("x", screen[0]) if index % 2 == 0 else ("y", screen[1])
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= limit - 1:
        raise ValueError(f"{axis} coordinate must be an integer from 0 to {limit - 1}, got {value!r}"[:200])
    return _number(name, value, whole=True)


def _notches(values: tuple[Any, ...], screen: tuple[int, int] | None) -> tuple[float | int, ...]:
    notches = tuple(_number("scroll", value, whole=screen is not None) for value in values)
    if not all(abs(notch) <= MAX_NOTCHES for notch in notches):
        raise ValueError(f"scroll: dx and dy are wheel notches from -{MAX_NOTCHES} to {MAX_NOTCHES}")
    return notches


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError('type takes a string, e.g. type("hello")')
    if len(value) > MAX_TYPE_CHARS:
        raise ValueError(f"type takes at most {MAX_TYPE_CHARS} characters at a time")
    bad = sorted(
        {repr(char) for char in value if (ord(char) < 32 and char not in "\n\t") or 0xD800 <= ord(char) < 0xE000}
    )
    if bad:
        raise ValueError(f"type cannot type control characters {', '.join(bad[:5])}")
    return value


def _keys(value: Any, backend: Backend) -> str:
    """``backend``'s names of ``"ctrl+s"`` or ``"Down Down Return"`` (combinations pressed one after another)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError('key takes a string such as "ctrl+s" or "Return"')
    combinations = value.split()
    if len(combinations) > MAX_KEYS:
        raise ValueError(f"key takes at most {MAX_KEYS} keys at a time")
    name = playwright_keys if backend == "playwright" else xdotool_keys
    return " ".join(name(combination) for combination in combinations)
