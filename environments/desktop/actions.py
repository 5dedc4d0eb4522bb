"""The action language: pyautogui-style calls such as ``click(120, 40)`` or ``key("ctrl+s")``.

Beside the commands of :data:`ACTION_SYNTAX`, ``scroll(x, y, dx, dy)`` moves the pointer to (x, y)
and scrolls there (the form the computer-use formats map their scrolls onto, agentgym.computer_use).

:func:`parse_command` turns one command into a :class:`Command` (name and checked
arguments) or raises :class:`~agentgym.core.InvalidAction` saying what is wrong;
:func:`xdotool_arguments` gives the ``xdotool`` invocation that performs it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from agentgym.computer_use.keys import xdotool_keys
from agentgym.core import InvalidAction

ACTION_SYNTAX = """Actions (one per reply, pyautogui style; coordinates are screen pixels from the top-left):
  click(x, y)              left click
  double_click(x, y)       double click
  right_click(x, y)        right click
  move(x, y)               move the mouse pointer
  drag(x1, y1, x2, y2)     press at (x1, y1), move to (x2, y2), release
  type("text")             type text ("\\n" presses Enter, "\\t" Tab)
  key("ctrl+s")            press a key or combination; several separated by spaces: key("Down Down Return")
  scroll(dx, dy)           scroll at the pointer: dy > 0 down, dy < 0 up, dx > 0 right (in notches)
  wait(seconds)            wait (at most 10 seconds)
  done()                   finish the episode; the result is checked then
Reply with the action alone or end your reply with a line "Action: <action>"."""

MAX_COMMAND_CHARS = 10_000
MAX_TYPE_CHARS = 500
MAX_WAIT_S = 10.0
MAX_SCROLL = 50
MAX_KEYS = 50

#: Argument counts of each command.
ARITY = {
    "click": 2,
    "double_click": 2,
    "right_click": 2,
    "move": 2,
    "drag": 4,
    "type": 1,
    "key": 1,
    "scroll": 2,
    "wait": 1,
    "done": 0,
}
ALIASES = {
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


@dataclass(frozen=True)
class Command:
    """A parsed action: its name and arguments (ints for coordinates, str for text and keys)."""

    name: str
    arguments: tuple


def parse_command(text: str, width: int, height: int) -> Command:
    """Parse one action for a ``width`` x ``height`` screen; raises :class:`InvalidAction`."""
    text = text.strip()
    if not text:
        raise InvalidAction("the reply holds no action; " + _usage())
    if len(text) > MAX_COMMAND_CHARS:
        raise InvalidAction(f"the action is longer than {MAX_COMMAND_CHARS} characters")
    match = re.fullmatch(r"(?:pyautogui\.)?([A-Za-z_]+)\s*\((.*)\)", text, re.DOTALL)
    if match is None:
        raise InvalidAction("expected a call such as click(100, 200); " + _usage())
    name = match.group(1).lower()
    name = ALIASES.get(name, name)
    if name not in ARITY:
        raise InvalidAction(f"unknown action {name!r}; " + _usage())
    arguments = _literal_arguments(text[match.start(2) - 1 : match.end(2) + 1])
    if name == "scroll" and len(arguments) == 4:  # scroll(x, y, dx, dy): at a point
        point = tuple(_coordinate(value, index, width, height) for index, value in enumerate(arguments[:2]))
        notches = tuple(_integer(value, "scroll", -MAX_SCROLL, MAX_SCROLL) for value in arguments[2:])
        return Command(name, point + notches)
    if len(arguments) != ARITY[name]:
        counts = "2 or 4" if name == "scroll" else str(ARITY[name])
        raise InvalidAction(f"{name} takes {counts} argument(s), got {len(arguments)}")
    if name in ("click", "double_click", "right_click", "move", "drag"):
        return Command(name, tuple(_coordinate(value, index, width, height) for index, value in enumerate(arguments)))
    if name == "type":
        return Command(name, (_text(arguments[0]),))
    if name == "key":
        return Command(name, (_keys(arguments[0]),))
    if name == "scroll":
        return Command(name, tuple(_integer(value, "scroll", -MAX_SCROLL, MAX_SCROLL) for value in arguments))
    if name == "wait":
        seconds = arguments[0]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_WAIT_S:
            raise InvalidAction(f"wait takes a number of seconds from 0 to {MAX_WAIT_S:g}")
        return Command(name, (float(seconds),))
    return Command(name, ())


def _usage() -> str:
    return "actions: " + ", ".join(f"{name}(...)" if arity else f"{name}()" for name, arity in ARITY.items())


def _literal_arguments(parenthesised: str) -> tuple:
    """The positional (and keyword, in order) literal arguments of ``(a, b, key=c)``."""
    try:
        call = ast.parse("f" + parenthesised, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise InvalidAction('the arguments are not valid literals such as 10 or "text"') from None
    if not isinstance(call, ast.Call):
        raise InvalidAction('the arguments are not valid literals such as 10 or "text"')
    values = []
    for node in [*call.args, *(keyword.value for keyword in call.keywords)]:
        try:
            values.append(ast.literal_eval(node))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            raise InvalidAction("arguments must be literal numbers or strings") from None
    return tuple(values)


def _integer(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidAction(f"{what} must be an integer from {low} to {high}, got {value!r}"[:200])
    return value


def _coordinate(value: object, index: int, width: int, height: int) -> int:
    axis, limit = ("x", width) if index % 2 == 0 else ("y", height)
    return _integer(value, f"{axis} coordinate", 0, limit - 1)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidAction('type takes a string, e.g. type("hello")')
    if len(value) > MAX_TYPE_CHARS:
        raise InvalidAction(f"type takes at most {MAX_TYPE_CHARS} characters at a time")
    bad = sorted(
        {repr(char) for char in value if (ord(char) < 32 and char not in "\n\t") or 0xD800 <= ord(char) < 0xE000}
    )
    if bad:
        raise InvalidAction(f"type cannot type control characters {', '.join(bad[:5])}")
    return value


def _keys(value: object) -> str:
    """xdotool key names for ``"ctrl+s"`` or ``"Down Down Return"``."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidAction('key takes a string such as "ctrl+s" or "Return"')
    combinations = value.split()
    if len(combinations) > MAX_KEYS:
        raise InvalidAction(f"key takes at most {MAX_KEYS} keys at a time")
    try:
        return " ".join(xdotool_keys(combination) for combination in combinations)
    except ValueError as error:
        raise InvalidAction(str(error)) from None


def xdotool_calls(command: Command) -> list[list[str]]:
    """The ``xdotool`` invocations that perform ``command`` (none for ``wait`` and ``done``).

    Text is typed in pieces with Return and Tab pressed as keys between them: ``xdotool
    type`` sends a newline as Linefeed, which only terminals read as Enter.
    """
    name, args = command.name, command.arguments
    if name in ("click", "double_click", "right_click", "move"):
        x, y = args
        clicks = {
            "click": ["click", "1"],
            "double_click": ["click", "--repeat", "2", "--delay", "80", "1"],
            "right_click": ["click", "3"],
            "move": [],
        }
        return [["mousemove", str(x), str(y), *clicks[name]]]
    if name == "drag":
        x1, y1, x2, y2 = args
        middle = [str((x1 + x2) // 2), str((y1 + y2) // 2)]
        return [
            ["mousemove", str(x1), str(y1), "mousedown", "1", "sleep", "0.05", "mousemove", *middle, "sleep", "0.05"]
            + ["mousemove", str(x2), str(y2), "sleep", "0.05", "mouseup", "1"]
        ]
    if name == "type":
        calls = []
        for piece in re.split(r"([\n\t])", args[0]):
            if piece in ("\n", "\t"):
                calls.append(["key", "Return" if piece == "\n" else "Tab"])
            elif piece:
                calls.append(["type", "--delay", "8", "--", piece])
        return calls
    if name == "key":
        return [["key", "--delay", "30", *args[0].split()]]
    if name == "scroll":
        dx, dy = args[-2:]
        arguments = ["mousemove", str(args[0]), str(args[1])] if len(args) == 4 else []
        for amount, negative, positive in ((dy, "4", "5"), (dx, "6", "7")):
            if amount:
                button = positive if amount > 0 else negative
                arguments += ["click", "--repeat", str(abs(amount)), "--delay", "20", button]
        return [arguments] if arguments else []
    return []
