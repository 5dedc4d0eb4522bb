"""The action language: pyautogui-style calls such as ``click(120, 40)`` or ``key("ctrl+s")``.

Beside the commands of :data:`ACTION_SYNTAX`, ``scroll(x, y, dx, dy)`` moves the pointer to (x, y)
and scrolls there (the form the computer-use formats map their scrolls onto, agentgym.computer_use).

:func:`parse_command` reads one command with the pixel command language's one reader
(:mod:`agentgym.computer_use.commands`) into a :class:`~agentgym.computer_use.screen.PixelAction` or raises
:class:`~agentgym.contract.core.InvalidAction` saying what is wrong; :func:`xdotool_calls` gives the ``xdotool``
invocations that perform it.
"""

from __future__ import annotations

import re

from agentgym.computer_use.commands import pixel_action, read_call
from agentgym.computer_use.screen import PixelAction
from agentgym.contract.core import InvalidAction

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


def parse_command(text: str, width: int, height: int) -> PixelAction:
    """Parse one action for a ``width`` x ``height`` screen (:mod:`agentgym.computer_use.commands`, pyautogui's
    names too); keys become xdotool's names. Raises :class:`InvalidAction` saying what is wrong."""
    try:
        name, arguments = read_call(text, pyautogui=True)
        return pixel_action(name, arguments, keys="xdotool", screen=(width, height))
    except ValueError as error:
        raise InvalidAction(str(error)) from None


def xdotool_calls(command: PixelAction) -> list[list[str]]:
    """The ``xdotool`` invocations that perform ``command`` (none for ``wait`` and ``done``).

    Text is typed in pieces with Return and Tab pressed as keys between them: ``xdotool
    type`` sends a newline as Linefeed, which only terminals read as Enter.
    """
    name, args = command.name, command.args
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
