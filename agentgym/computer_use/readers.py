"""The formats' readers: each turns what a model produced in its format (a reply, a tool call, a provider's block)
into a :class:`~agentgym.computer_use.screen.PixelAction`, or a :class:`~agentgym.computer_use.screen.FormatError`
that says why not. :mod:`agentgym.computer_use` names them in its registry of formats.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import yaml

from agentgym.computer_use.keys import canonical_key
from agentgym.computer_use.screen import (
    PIXELS_PER_NOTCH,
    UI_TARS_SCROLL_NOTCHES,
    FormatError,
    PixelAction,
    Reading,
)
from agentgym.contract.reply_text import strip_thinking
from agentgym.contract.tool_parsing import parse_tool_calls
from agentgym.contract.tools import ToolCallError, check_arguments, read_action


@cache
def format_specs() -> dict[str, Any]:
    """Each format's data in ``formats.yaml``: title, scale, instructions and (tool formats) the tool declaration."""
    text = resources.files("agentgym.computer_use").joinpath("formats.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


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


def key_combination(keys: Sequence[str]) -> str:
    """One combination as the env's ``key`` command takes it: names lowercased, joined by ``+``
    (``["CTRL", "A"]`` -> ``"ctrl+a"``; ``ArrowDown`` -> ``down``, ``Return`` -> ``enter``)."""
    if not keys or not all(isinstance(key, str) and key.strip(" ") or key == " " for key in keys):
        raise FormatError(f"expected key names such as ['ctrl', 'c'], got {json.dumps(list(keys), default=str)[:60]}")
    return "+".join(canonical_key(key) for key in keys)


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
    spec = format_specs()["qwen-computer"]["tool"]
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
    spec = format_specs()["qwen-mobile"]["tool"]
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
            spec = format_specs()["anthropic"]["tool"]
            try:
                check_arguments(spec["parameters"], dict(tool_input))
            except ToolCallError as error:
                raise FormatError(f"computer: {error}") from None
            return dict(tool_input)
    return _tool_arguments(action, "computer", format_specs()["anthropic"]["tool"])


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
        inner = _tool_arguments(action, "computer", format_specs()["openai"]["tool"]).get("action")
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


#: Each format's reader, by name (the formats' registry, :func:`agentgym.computer_use.get_format`, reads it).
READERS: dict[str, Callable[[Any, Reading], PixelAction]] = {
    "pyautogui": _read_pyautogui,
    "qwen-computer": _read_qwen_computer,
    "qwen-mobile": _read_qwen_mobile,
    "ui-tars": _read_ui_tars,
    "anthropic": _read_anthropic,
    "openai": _read_openai,
}
