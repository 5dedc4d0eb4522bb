"""Computer-use action formats: how GUI agents are trained to act, mapped onto an env's pixel actions.

A GUI model acts in the format it was trained on, and each format measures the screen its own way.
This module reads one action in any of these formats and turns it into the env's own command on
screen pixels (``click(412, 230)``, ``type("hello")``, ...):

========================  ==============================  ======================================================
format                    what the model emits            coordinates
========================  ==============================  ======================================================
``pyautogui``             OSWorld's pyautogui code        screen pixels
``qwen-computer``         Qwen2.5-VL ``computer_use``     pixels of the image the model saw, as Qwen's processor
                          function calls                  resizes it (:func:`smart_resize` of the sent image)
``qwen-mobile``           Qwen2.5-VL ``mobile_use`` calls the same
``ui-tars``               UI-TARS action strings          relative: 0-1000 across the screenshot
``anthropic``             Anthropic's computer tool       pixels of the sent image (its display size)
``openai``                OpenAI's computer-use actions   pixels of the sent image (its display size)
========================  ==============================  ======================================================

The *sent image* is the screenshot as the chat wrapper sends it: scaled down (aspect kept) to the
image budget ``max_pixels`` (:func:`agentgym.images.fit_pixels`). Conversions are exact
functions of the sizes (:class:`Geometry`); a point outside the format's coordinate range, a
malformed call or an action the env does not have raises :class:`FormatError`, whose message is
meant for the agent.

An env takes these formats when it declares ``pixel_actions``, the names of the commands it takes
on screen pixels, from :data:`PIXEL_ACTIONS` (in the syntax :meth:`PixelAction.command` writes):
Desktop-v0 takes all of them, the browser envs with ``actions="coordinates"`` or ``"both"`` the
pointer and keyboard ones, a grounding env ``click``. The wrapper
:class:`agentgym.wrappers.computer_use.ComputerUseWrapper` (and ``ChatWrapper(action_format=...)``,
``agentgym eval --action-format``) applies a format to an env. The formats' instructions and tool
declarations are data: ``computer_use.yaml`` beside this module. See docs/computer-use.md.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml

from agentgym.images import fit_pixels
from agentgym.reply_text import strip_thinking
from agentgym.tool_parsing import parse_tool_calls
from agentgym.tools import ToolCallError, check_arguments, read_action

#: The computer-use formats, as ``--action-format`` names them.
FORMATS: tuple[str, ...] = ("pyautogui", "qwen-computer", "qwen-mobile", "ui-tars", "anthropic", "openai")
#: The formats whose actions are function tool calls (the others are text replies).
TOOL_FORMATS: tuple[str, ...] = ("qwen-computer", "qwen-mobile", "anthropic", "openai")
Scale = Literal["screen", "image", "qwen", "relative"]
#: The relative scale's range (UI-TARS): 0 at the top-left, 1000 at the bottom-right.
RELATIVE_RANGE = 1000
#: The pointer and keyboard commands among them (a browser's coordinate action space takes these).
INPUT_ACTIONS: tuple[str, ...] = ("click", "double_click", "right_click", "move", "drag", "scroll", "type", "key")
#: The env commands a format maps onto, by name; an env declares the ones it takes (``pixel_actions``).
PIXEL_ACTIONS: tuple[str, ...] = (*INPUT_ACTIONS, "wait", "done")
#: Wheel notches of a UI-TARS scroll (its executor scrolls by five) and pixels per notch for the
#: pixel amounts of OpenAI's scroll (the browser's notch, :data:`agentgym.browser.commands.WHEEL_NOTCH_PX`).
UI_TARS_SCROLL_NOTCHES = 5
PIXELS_PER_NOTCH = 100
#: Qwen2.5-VL's image processor: sides are multiples of 28 pixels, the area within these bounds.
QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 4 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28


class FormatError(ValueError):
    """An action that cannot be read in its format or played on the env; the message is for the agent."""


@dataclass(frozen=True)
class PixelAction:
    """One env command on screen pixels: ``name`` (of :data:`PIXEL_ACTIONS`) and its arguments."""

    name: str
    args: tuple[Any, ...] = ()

    def command(self) -> str:
        """The env's text command: ``click(412, 230)``, ``scroll(10, 20, 0, 3)``, ``type("hi")``, ``done()``."""
        written = (json.dumps(arg, ensure_ascii=False) if isinstance(arg, str) else _number(arg) for arg in self.args)
        return f"{self.name}({', '.join(written)})"

    def point(self) -> tuple[int, int] | None:
        """Where the pointer is after it (None for keyboard actions and waits)."""
        if self.name in ("click", "double_click", "right_click", "move", "scroll"):
            return int(self.args[0]), int(self.args[1])
        if self.name == "drag":
            return int(self.args[2]), int(self.args[3])
        return None


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def smart_resize(
    width: int,
    height: int,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> tuple[int, int]:
    """The (width, height) Qwen2-VL / Qwen2.5-VL's image processor resizes an image to: both sides
    multiples of ``factor``, nearest to the original, the area within [min_pixels, max_pixels].

    >>> smart_resize(1280, 720)
    (1288, 728)
    """
    if max(width, height) / min(width, height) > 200:
        raise ValueError(f"Qwen's processor takes aspect ratios up to 200, got {width}x{height}")
    resized_height = max(factor, round(height / factor) * factor)
    resized_width = max(factor, round(width / factor) * factor)
    if resized_height * resized_width > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        resized_height = max(factor, math.floor(height / beta / factor) * factor)
        resized_width = max(factor, math.floor(width / beta / factor) * factor)
    elif resized_height * resized_width < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        resized_height = math.ceil(height * beta / factor) * factor
        resized_width = math.ceil(width * beta / factor) * factor
    return resized_width, resized_height


@dataclass(frozen=True)
class Geometry:
    """The sizes a format's coordinates are converted between: the env's screen and the image sent.

    ``image`` is the screenshot as the model is shown it (the screen scaled to the image budget).
    """

    screen: tuple[int, int]
    image: tuple[int, int]

    @classmethod
    def for_screen(cls, width: int, height: int, max_pixels: int | None) -> Geometry:
        """The geometry of a ``width`` x ``height`` screen sent under the image budget ``max_pixels``."""
        return cls((width, height), fit_pixels(width, height, max_pixels))

    def space(self, scale: Scale) -> tuple[int, int]:
        """The (width, height) of a scale's coordinate range."""
        if scale == "screen":
            return self.screen
        if scale == "image":
            return self.image
        if scale == "qwen":
            return smart_resize(*self.image)
        return RELATIVE_RANGE, RELATIVE_RANGE

    def to_screen(self, x: Any, y: Any, scale: Scale) -> tuple[int, int]:
        """The screen pixel a point of ``scale`` falls on; :class:`FormatError` if it is not a point in range.

        Pixel scales (screen, image, qwen) name a pixel by its index: the screen pixel is the one under
        that pixel's centre, ``floor((x + 0.5) * screen / space)``. The relative scale names a position,
        ``x / 1000`` of the way across: ``floor(x * screen / 1000)``, the right and bottom edges (1000)
        falling on the last pixel.
        """
        width, height = self.space(scale)
        point = []
        for value, size, screen, axis in ((x, width, self.screen[0], "x"), (y, height, self.screen[1], "y")):
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise FormatError(f"the {axis} coordinate must be a number, got {json.dumps(value, default=str)[:40]}")
            limit = size if scale == "relative" else size - 1
            if not 0 <= value <= limit:
                raise FormatError(
                    f"the {axis} coordinate {value:g} is outside the {_scale_words(scale, width, height)}: "
                    f"{axis} must be from 0 to {limit}"
                )
            exact = Fraction(value) if scale == "relative" else Fraction(value) + Fraction(1, 2)
            point.append(min(screen - 1, math.floor(exact * screen / size)))
        return point[0], point[1]

    def from_screen(self, x: float, y: float, scale: Scale) -> tuple[float, float]:
        """A point of ``scale`` that :meth:`to_screen` maps onto screen pixel (x, y) (for examples and tests)."""
        width, height = self.space(scale)
        if scale == "relative":
            return (x + 0.5) * width / self.screen[0], (y + 0.5) * height / self.screen[1]
        return (x + 0.5) * width / self.screen[0] - 0.5, (y + 0.5) * height / self.screen[1] - 0.5


def _scale_words(scale: Scale, width: int, height: int) -> str:
    if scale == "relative":
        return "relative 0-1000 range"
    what = {"screen": "screen", "image": "screenshot", "qwen": "screenshot"}[scale]
    return f"{width}x{height} {what}"


# ---- reading actions ------------------------------------------------------------------------


@dataclass
class Reading:
    """What a format reader gets besides the action: the geometry and where the pointer is (screen pixels)."""

    geometry: Geometry
    pointer: tuple[int, int]

    def at(self, x: Any, y: Any, scale: Scale) -> tuple[int, int]:
        return self.geometry.to_screen(x, y, scale)

    def pair(self, value: Any, scale: Scale, what: str = "coordinate") -> tuple[int, int]:
        """A ``[x, y]`` array argument as a screen point."""
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise FormatError(f"{what} must be [x, y], got {json.dumps(value, default=str)[:60]}")
        return self.at(value[0], value[1], scale)


@dataclass(frozen=True)
class ComputerUseFormat:
    """One format: its name, title, coordinate scale, instructions template and (tool formats) tool."""

    name: str
    title: str
    scale: Scale
    instructions_template: str
    tool_spec: Mapping[str, Any] | None
    reader: Callable[[Any, Reading], PixelAction]

    def space(self, geometry: Geometry) -> tuple[int, int]:
        """The (width, height) of this format's coordinate range for ``geometry``."""
        return geometry.space(self.scale)

    def _fill(self, text: str, geometry: Geometry) -> str:
        width, height = self.space(geometry)
        screen_width, screen_height = geometry.screen
        return (
            text.replace("{width}", str(width))
            .replace("{height}", str(height))
            .replace("{screen_width}", str(screen_width))
            .replace("{screen_height}", str(screen_height))
        )

    def instructions(self, geometry: Geometry) -> str:
        """How to act in this format, for the first observation."""
        return self._fill(self.instructions_template, geometry)

    def tools(self, geometry: Geometry) -> list[dict[str, Any]] | None:
        """The function tool to offer (OpenAI ``tools=[...]`` shape), or None for a text format."""
        if self.tool_spec is None:
            return None
        spec = self.tool_spec
        return [
            {
                "type": "function",
                "function": {
                    "name": spec["name"],
                    "description": self._fill(spec["description"], geometry),
                    "parameters": json.loads(json.dumps(spec["parameters"])),
                },
            }
        ]

    def read(self, action: Any, geometry: Geometry, pointer: tuple[int, int] | None = None) -> PixelAction:
        """The env command ``action`` asks for; :class:`FormatError` says why there is none.

        ``action`` is what the model produced: the reply text, an assistant message (with
        ``tool_calls``), one tool call, or (hosted formats) the provider's own block. ``pointer`` is
        where the mouse is (default: the screen's centre), for actions at the cursor.
        """
        centre = (geometry.screen[0] // 2, geometry.screen[1] // 2)
        return self.reader(action, Reading(geometry, pointer or centre))


def _tool_arguments(action: Any, name: str, spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments of the one call on tool ``name`` in ``action`` (checked against its schema)."""
    if isinstance(action, str):
        parsed = parse_tool_calls(strip_thinking(action))
        if not parsed.tool_calls:
            raise FormatError(f"expected a call of the {name} function (a <tool_call> block or a native tool call)")
        action = {"role": "assistant", "content": parsed.content, "tool_calls": parsed.tool_calls}
    if not isinstance(action, Mapping):
        raise FormatError(f"expected a call of the {name} function, got {type(action).__name__}")
    try:
        call = read_action(action)
    except ToolCallError as error:
        raise FormatError(str(error)) from None
    if isinstance(call, str):
        return _tool_arguments(call, name, spec) if "<tool_call>" in call else _no_call(name)
    if call.name != name:
        raise FormatError(f"there is no function {call.name!r}; call {name}")
    if spec is not None:
        try:
            check_arguments(spec["parameters"], call.arguments)
        except ToolCallError as error:
            raise FormatError(f"{name}: {error}") from None
    return call.arguments


def _no_call(name: str) -> dict[str, Any]:
    raise FormatError(f"the reply calls no function; act by calling {name}")


def _require(arguments: Mapping[str, Any], key: str, action: str) -> Any:
    if key not in arguments or arguments[key] is None:
        raise FormatError(f"{action} needs {key!r}")
    return arguments[key]


def _text_argument(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise FormatError(f"{what} must be a string, got {json.dumps(value, default=str)[:40]}")
    return value


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 10:
        raise FormatError("a wait takes 0 to 10 seconds")
    return float(value)


# ---- keys -----------------------------------------------------------------------------------

_KEY_ALIASES = {
    "return": "enter",
    "esc": "escape",
    "control": "ctrl",
    "option": "alt",
    "cmd": "super",
    "command": "super",
    "meta": "super",
    "win": "super",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "page_up": "pageup",
    "page_down": "pagedown",
    "prior": "pageup",
    "next": "pagedown",
    "del": "delete",
    "back_space": "backspace",
    " ": "space",
}


def key_combination(keys: Sequence[str]) -> str:
    """One combination as the env's ``key`` command takes it: names lowercased, joined by ``+``
    (``["CTRL", "A"]`` -> ``"ctrl+a"``; ``ArrowDown`` -> ``down``, ``Return`` -> ``enter``)."""
    if not keys or not all(isinstance(key, str) and key.strip(" ") or key == " " for key in keys):
        raise FormatError(f"expected key names such as ['ctrl', 'c'], got {json.dumps(list(keys), default=str)[:60]}")
    names = []
    for key in keys:
        lowered = key if key == " " else key.strip().lower()
        names.append(_KEY_ALIASES.get(lowered, lowered))
    return "+".join(names)


def _xdotool_keys(text: Any) -> str:
    """An xdotool-style key string (``ctrl+s``, ``Return``) as a combination."""
    text = _text_argument(text, "the keys")
    if not text.strip():
        raise FormatError("the keys are empty")
    combos = text.split()
    if len(combos) > 1:
        raise FormatError(f"press one key combination per action, got {len(combos)}: {text[:60]!r}")
    plus = combos[0].endswith("++")
    parts = [*combos[0][:-2].split("+"), "plus"] if plus else combos[0].split("+")
    return key_combination(parts)


# ---- OSWorld pyautogui -------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_SPECIAL = {"WAIT": PixelAction("wait", (1.0,)), "DONE": PixelAction("done"), "FAIL": PixelAction("done")}


def _read_pyautogui(action: Any, reading: Reading) -> PixelAction:
    if not isinstance(action, str):
        raise FormatError("expected pyautogui code as text")
    text = strip_thinking(action).strip()
    blocks = _FENCE.findall(text)
    code = blocks[-1].strip() if blocks else text
    if code.strip("` \n").upper() in _SPECIAL:
        return _SPECIAL[code.strip("` \n").upper()]
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        raise FormatError(f"the code is not valid Python ({error.msg}, line {error.lineno})") from None
    statements = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    calls = [node.value for node in statements if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
    if len(calls) != len(statements) or not calls:
        raise FormatError("expected one pyautogui call, e.g. pyautogui.click(100, 200), or WAIT, DONE or FAIL")
    if len(calls) > 1:
        raise FormatError(f"this environment plays one action per step; the code makes {len(calls)} calls")
    call = calls[0]
    name = ast.unparse(call.func)
    try:
        args = [ast.literal_eval(argument) for argument in call.args]
        kwargs = {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords if keyword.arg}
    except (ValueError, TypeError, SyntaxError, RecursionError):
        raise FormatError(f"{name}: the arguments must be literal numbers or strings") from None
    if name == "time.sleep":
        return PixelAction("wait", (_seconds(args[0] if args else kwargs.get("secs")),))
    if not name.startswith("pyautogui."):
        raise FormatError(f"{name}(...) is not a pyautogui call")
    function = name.removeprefix("pyautogui.")

    def point(x_key: str = "x", y_key: str = "y") -> tuple[int, int]:
        x = args[0] if len(args) > 0 else kwargs.get(x_key)
        y = args[1] if len(args) > 1 else kwargs.get(y_key)
        if x is None and y is None:
            return reading.pointer
        if isinstance(x, list | tuple) and len(x) == 2 and y is None:  # click((x, y))
            x, y = x
        return reading.at(x, y, "screen")

    if function in ("click", "leftClick"):
        button, clicks = kwargs.get("button", "left"), kwargs.get("clicks", 1)
        if button not in ("left", "right") or clicks not in (1, 2):
            raise FormatError("click takes button='left' or 'right' and clicks=1 or 2")
        name_ = "right_click" if button == "right" else "double_click" if clicks == 2 else "click"
        return PixelAction(name_, point())
    if function == "doubleClick":
        return PixelAction("double_click", point())
    if function == "rightClick":
        return PixelAction("right_click", point())
    if function in ("moveTo", "move"):
        if function == "move":  # relative
            dx, dy = (args + [kwargs.get("xOffset", 0), kwargs.get("yOffset", 0)])[:2]
            return PixelAction("move", reading.at(reading.pointer[0] + dx, reading.pointer[1] + dy, "screen"))
        return PixelAction("move", point())
    if function in ("dragTo", "drag"):
        if function == "drag":
            dx, dy = (args + [kwargs.get("xOffset", 0), kwargs.get("yOffset", 0)])[:2]
            end = reading.at(reading.pointer[0] + dx, reading.pointer[1] + dy, "screen")
        else:
            end = point()
        return PixelAction("drag", (*reading.pointer, *end))
    if function in ("scroll", "hscroll", "vscroll"):
        clicks = args[0] if args else kwargs.get("clicks")
        if isinstance(clicks, bool) or not isinstance(clicks, int):
            raise FormatError(f"{function} takes a whole number of clicks, e.g. {function}(-5)")
        where = (
            reading.pointer
            if len(args) < 3 and "x" not in kwargs
            else reading.at(
                args[1] if len(args) > 1 else kwargs.get("x"), args[2] if len(args) > 2 else kwargs.get("y"), "screen"
            )
        )
        delta = (clicks, 0) if function == "hscroll" else (0, -clicks)  # pyautogui: positive clicks scroll up
        return PixelAction("scroll", (*where, *delta))
    if function in ("write", "typewrite"):
        text = args[0] if args else kwargs.get("message")
        if isinstance(text, list):
            raise FormatError(f"{function} with a list of keys: use pyautogui.press for keys, write for text")
        return PixelAction("type", (_text_argument(text, f"{function}'s text"),))
    if function == "press":
        key = args[0] if args else kwargs.get("keys")
        if isinstance(key, list):
            raise FormatError("press one key per action (pyautogui.press('enter'))")
        return PixelAction("key", (key_combination([_text_argument(key, "the key")]),))
    if function == "hotkey":
        return PixelAction("key", (key_combination([_text_argument(key, "a key") for key in args]),))
    raise FormatError(
        f"pyautogui.{function} is not supported; use click, doubleClick, rightClick, moveTo, dragTo, scroll, "
        "hscroll, write, press or hotkey"
    )


# ---- Qwen2.5-VL computer_use / mobile_use ------------------------------------------------------


def _read_qwen_computer(action: Any, reading: Reading) -> PixelAction:
    spec = _format_specs()["qwen-computer"]["tool"]
    arguments = _tool_arguments(action, "computer_use", spec)
    kind = arguments["action"]

    def at() -> tuple[int, int]:
        return reading.pair(arguments["coordinate"], "qwen") if "coordinate" in arguments else reading.pointer

    if kind in ("left_click", "double_click", "right_click", "mouse_move"):
        name = {"left_click": "click", "mouse_move": "move"}.get(kind, kind)
        if kind == "mouse_move":
            _require(arguments, "coordinate", kind)
        return PixelAction(name, at())
    if kind == "left_click_drag":
        return PixelAction("drag", (*reading.pointer, *reading.pair(_require(arguments, "coordinate", kind), "qwen")))
    if kind == "type":
        return PixelAction("type", (_text_argument(_require(arguments, "text", kind), "text"),))
    if kind == "key":
        return PixelAction("key", (key_combination(_require(arguments, "keys", kind)),))
    if kind == "scroll":
        steps = _require(arguments, "pixels", kind)
        return PixelAction("scroll", (*at(), 0, -round(steps)))  # Qwen: positive scrolls up
    if kind == "wait":
        return PixelAction("wait", (_seconds(arguments.get("time", 1)),))
    if kind == "terminate":
        return PixelAction("done")
    raise FormatError(f"computer_use action {kind!r} has no counterpart in this environment")


def _read_qwen_mobile(action: Any, reading: Reading) -> PixelAction:
    spec = _format_specs()["qwen-mobile"]["tool"]
    arguments = _tool_arguments(action, "mobile_use", spec)
    kind = arguments["action"]
    if kind == "click":
        return PixelAction("click", reading.pair(_require(arguments, "coordinate", kind), "qwen"))
    if kind == "swipe":
        start = reading.pair(_require(arguments, "coordinate", kind), "qwen")
        end = reading.pair(_require(arguments, "coordinate2", kind), "qwen", "coordinate2")
        return PixelAction("drag", (*start, *end))
    if kind == "type":
        return PixelAction("type", (_text_argument(_require(arguments, "text", kind), "text"),))
    if kind == "key":
        return PixelAction("key", (key_combination([_text_argument(_require(arguments, "text", kind), "text")]),))
    if kind == "system_button":
        button = _require(arguments, "button", kind)
        if button == "Enter":
            return PixelAction("key", ("enter",))
        if button == "Back":
            return PixelAction("key", ("alt+left",))
        raise FormatError(f"the {button} button has no counterpart here; Back and Enter do")
    if kind == "wait":
        return PixelAction("wait", (_seconds(arguments.get("time", 1)),))
    if kind == "terminate":
        return PixelAction("done")
    raise FormatError(f"mobile_use action {kind!r} has no counterpart in this environment")


# ---- UI-TARS -------------------------------------------------------------------------------------

_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?")
_UI_TARS_ACTIONS = {
    "click": "click",
    "left_single": "click",
    "left_double": "double_click",
    "right_single": "right_click",
    "hover": "move",
}


def _ui_tars_box(value: Any, reading: Reading, what: str) -> tuple[int, int]:
    """A UI-TARS box argument (``(x,y)``, ``<|box_start|>(x,y)<|box_end|>``, ``[x1,y1,x2,y2]``,
    ``<point>x y</point>``) as a screen point: the point, or a box's centre."""
    if not isinstance(value, str):
        raise FormatError(f"{what} must be a string such as '(500,300)'")
    numbers = [float(number) for number in _NUMBERS.findall(value)]
    if len(numbers) == 2:
        return reading.at(numbers[0], numbers[1], "relative")
    if len(numbers) == 4:
        return reading.at((numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2, "relative")
    raise FormatError(f"{what} must hold a point (x,y) or a box [x1,y1,x2,y2], got {value[:60]!r}")


def _read_ui_tars(action: Any, reading: Reading) -> PixelAction:
    if not isinstance(action, str):
        raise FormatError("expected a UI-TARS reply as text: 'Thought: ...' then 'Action: click(start_box=...)'")
    text = strip_thinking(action)
    at = text.rfind("Action:")
    line = (text[at + len("Action:") :] if at >= 0 else text).strip().strip("`").strip()
    line = line.split("\n\n")[0].strip()
    try:
        call = ast.parse(line.replace("\n", "\\n"), mode="eval").body
    except SyntaxError:
        raise FormatError("the action is not a call such as click(start_box='(500,300)')") from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise FormatError("the action is not a call such as click(start_box='(500,300)')")
    try:
        kwargs = {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords if keyword.arg}
        args = [ast.literal_eval(argument) for argument in call.args]
    except (ValueError, SyntaxError, TypeError, RecursionError):
        raise FormatError("the action's arguments must be quoted strings") from None
    name = call.func.id
    first = args[0] if args else None
    if name in _UI_TARS_ACTIONS:
        box = kwargs.get("start_box", kwargs.get("point", first))
        return PixelAction(_UI_TARS_ACTIONS[name], _ui_tars_box(box, reading, "start_box"))
    if name in ("drag", "select"):
        start = _ui_tars_box(kwargs.get("start_box", kwargs.get("start_point")), reading, "start_box")
        end = _ui_tars_box(kwargs.get("end_box", kwargs.get("end_point")), reading, "end_box")
        return PixelAction("drag", (*start, *end))
    if name in ("hotkey", "press", "keydown"):
        keys = _text_argument(kwargs.get("key", kwargs.get("hotkey", first)), "key")
        return PixelAction("key", (key_combination(keys.split()),))
    if name == "type":
        return PixelAction("type", (_text_argument(kwargs.get("content", first), "content"),))
    if name == "scroll":
        where = (
            _ui_tars_box(kwargs["start_box"], reading, "start_box")
            if kwargs.get("start_box") or kwargs.get("point")
            else reading.pointer
        )
        direction = str(kwargs.get("direction", "")).lower()
        deltas = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}
        if direction not in deltas:
            raise FormatError("scroll's direction must be up, down, left or right")
        dx, dy = deltas[direction]
        return PixelAction("scroll", (*where, dx * UI_TARS_SCROLL_NOTCHES, dy * UI_TARS_SCROLL_NOTCHES))
    if name == "wait":
        return PixelAction("wait", (5.0,))
    if name == "finished":
        return PixelAction("done")
    raise FormatError(
        f"unknown UI-TARS action {name!r}; the actions are click, left_double, right_single, drag, hotkey, type, "
        "scroll, wait, finished"
    )


# ---- Anthropic's computer tool ---------------------------------------------------------------------


def _anthropic_input(action: Any) -> dict[str, Any]:
    """The ``input`` of a ``tool_use`` block (alone, or in an assistant message's content), else the
    arguments of a ``computer`` function call."""
    if isinstance(action, Mapping):
        blocks = action.get("content") if isinstance(action.get("content"), list) else [action]
        uses = [block for block in blocks if isinstance(block, Mapping) and block.get("type") == "tool_use"]
        if len(uses) > 1:
            raise FormatError(f"{len(uses)} tool uses in one turn; this environment plays one action per step")
        if uses:
            if uses[0].get("name") != "computer":
                raise FormatError(f"there is no tool {uses[0].get('name')!r}; use computer")
            tool_input = uses[0].get("input")
            if not isinstance(tool_input, Mapping):
                raise FormatError("the tool use's input must be an object")
            spec = _format_specs()["anthropic"]["tool"]
            try:
                check_arguments(spec["parameters"], dict(tool_input))
            except ToolCallError as error:
                raise FormatError(f"computer: {error}") from None
            return dict(tool_input)
    return _tool_arguments(action, "computer", _format_specs()["anthropic"]["tool"])


def _read_anthropic(action: Any, reading: Reading) -> PixelAction:
    arguments = _anthropic_input(action)
    kind = arguments["action"]

    def at() -> tuple[int, int]:
        return reading.pair(arguments["coordinate"], "image") if "coordinate" in arguments else reading.pointer

    if kind in ("left_click", "right_click", "double_click", "mouse_move"):
        if kind == "mouse_move":
            _require(arguments, "coordinate", kind)
        return PixelAction({"left_click": "click", "mouse_move": "move"}.get(kind, kind), at())
    if kind == "left_click_drag":
        start = (
            reading.pair(arguments["start_coordinate"], "image", "start_coordinate")
            if "start_coordinate" in arguments
            else reading.pointer
        )
        return PixelAction("drag", (*start, *reading.pair(_require(arguments, "coordinate", kind), "image")))
    if kind == "type":
        return PixelAction("type", (_text_argument(_require(arguments, "text", kind), "text"),))
    if kind == "key":
        return PixelAction("key", (_xdotool_keys(_require(arguments, "text", kind)),))
    if kind == "scroll":
        direction = _require(arguments, "scroll_direction", kind)
        amount = arguments.get("scroll_amount", 3)
        dx, dy = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}[direction]
        return PixelAction("scroll", (*at(), dx * amount, dy * amount))
    if kind == "wait":
        return PixelAction("wait", (_seconds(arguments.get("duration", 1)),))
    if kind == "screenshot":
        return PixelAction("wait", (0.0,))
    raise FormatError(f"the computer action {kind!r} has no counterpart in this environment")


# ---- OpenAI's computer-use actions -----------------------------------------------------------------


def _openai_action(action: Any) -> dict[str, Any]:
    """The ``action`` of a ``computer_call`` item, or of a ``computer`` function call."""
    if isinstance(action, Mapping) and action.get("type") == "computer_call":
        inner = action.get("action")
        actions = action.get("actions")
        if inner is None and isinstance(actions, list):
            if len(actions) != 1:
                raise FormatError(f"{len(actions)} actions in one call; this environment plays one per step")
            inner = actions[0]
    else:
        inner = _tool_arguments(action, "computer", _format_specs()["openai"]["tool"]).get("action")
    if not isinstance(inner, Mapping) or not isinstance(inner.get("type"), str):
        raise FormatError('the action must be an object with a "type", e.g. {"type": "click", "x": 10, "y": 20}')
    return dict(inner)


def _read_openai(action: Any, reading: Reading) -> PixelAction:
    inner = _openai_action(action)
    kind = inner["type"]

    def at() -> tuple[int, int]:
        return reading.at(_require(inner, "x", kind), _require(inner, "y", kind), "image")

    if kind == "click":
        button = inner.get("button", "left")
        if button not in ("left", "right"):
            raise FormatError(f"a {button} click has no counterpart here; left and right do")
        return PixelAction("right_click" if button == "right" else "click", at())
    if kind in ("double_click", "move"):
        return PixelAction(kind, at())
    if kind == "drag":
        path = inner.get("path")
        if not isinstance(path, list) or len(path) < 2 or not all(isinstance(point, Mapping) for point in path):
            raise FormatError('drag needs a path of at least two points [{"x": .., "y": ..}, ...]')
        start = reading.at(path[0].get("x"), path[0].get("y"), "image")
        end = reading.at(path[-1].get("x"), path[-1].get("y"), "image")
        return PixelAction("drag", (*start, *end))
    if kind == "scroll":
        notches = [_notches(inner.get(key, 0), key) for key in ("scroll_x", "scroll_y")]
        return PixelAction("scroll", (*at(), *notches))
    if kind == "type":
        return PixelAction("type", (_text_argument(_require(inner, "text", kind), "text"),))
    if kind == "keypress":
        return PixelAction("key", (key_combination(_require(inner, "keys", kind)),))
    if kind == "wait":
        return PixelAction("wait", (1.0,))
    if kind == "screenshot":
        return PixelAction("wait", (0.0,))
    raise FormatError(f"unknown action type {kind!r}")


def _notches(pixels: Any, what: str) -> int:
    """Scroll pixels as wheel notches of :data:`PIXELS_PER_NOTCH` (at least one where it is not zero)."""
    if isinstance(pixels, bool) or not isinstance(pixels, int | float) or not math.isfinite(pixels):
        raise FormatError(f"{what} must be a number of pixels")
    if pixels == 0:
        return 0
    return int(math.copysign(max(1, round(abs(pixels) / PIXELS_PER_NOTCH)), pixels))


# ---- the registry of formats -------------------------------------------------------------------------

_READERS: dict[str, Callable[[Any, Reading], PixelAction]] = {
    "pyautogui": _read_pyautogui,
    "qwen-computer": _read_qwen_computer,
    "qwen-mobile": _read_qwen_mobile,
    "ui-tars": _read_ui_tars,
    "anthropic": _read_anthropic,
    "openai": _read_openai,
}


@cache
def _format_specs() -> dict[str, Any]:
    text = resources.files("agentgym").joinpath("computer_use.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def get_format(name: str) -> ComputerUseFormat:
    """The format called ``name`` (one of :data:`FORMATS`)."""
    if name not in FORMATS:
        raise ValueError(f"unknown computer-use format {name!r}; the formats are {', '.join(FORMATS)}")
    spec = _format_specs()[name]
    return ComputerUseFormat(
        name=name,
        title=spec["title"],
        scale=spec["scale"],
        instructions_template=spec["instructions"],
        tool_spec=spec.get("tool"),
        reader=_READERS[name],
    )


def anthropic_tool(geometry: Geometry) -> dict[str, Any]:
    """Anthropic's own declaration of its computer tool for ``geometry`` (for the Messages API's ``tools``):
    the display is the image sent, whose pixels its coordinates are."""
    width, height = geometry.image
    return {"type": "computer_20250124", "name": "computer", "display_width_px": width, "display_height_px": height}


def openai_tool(geometry: Geometry, environment: str = "browser") -> dict[str, Any]:
    """OpenAI's own declaration of its computer-use tool for ``geometry`` (for the Responses API's ``tools``)."""
    width, height = geometry.image
    return {
        "type": "computer_use_preview",
        "display_width": width,
        "display_height": height,
        "environment": environment,
    }
