"""Set-of-marks, coordinate actions and the computer-use formats (docs/computer-use.md).

On real pages in Chromium: marks sit on every interactive element the element list names, with its
id; a click at an element's centre has the effect of ``click(id)`` on each browser family (MiniWoB++,
WebShop-Browser, WebApps); a click written in each computer-use format lands on the same element;
bad coordinates and malformed calls are explained. The conversions themselves are checked exactly
on a grid of sizes without a browser.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from browsers import needs_chromium

import agentgym  # noqa: F401  (registers the ids)
from agentgym.computer_use import FORMATS, FormatError, Geometry, get_format, smart_resize
from agentgym.images import ImageOptions
from agentgym.utils.marks import PALETTE, Mark, draw_marks
from agentgym.wrappers.chat import ChatWrapper
from agentgym.wrappers.computer_use import ComputerUseWrapper

_DESKTOP_TOOLS = ("Xvfb", "openbox", "xdotool", "wmctrl", "mousepad", "dbus-daemon")
needs_desktop = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in _DESKTOP_TOOLS) or not Path("/usr/bin/python3").exists(),
    reason=f"needs {', '.join(_DESKTOP_TOOLS)} and AT-SPI (containers/setup-host.sh)",
)
#: A small image budget, so that the image-pixel formats really scale (500x400 -> 300x240).
BUDGET = 300 * 240


# ---- conversions (no browser) ------------------------------------------------------------------


@pytest.mark.parametrize("screen", [(500, 400), (1280, 720), (1024, 768), (333, 517)])
@pytest.mark.parametrize("budget", [None, 300 * 240, 640 * 480])
def test_every_scale_maps_each_screen_pixel_back_onto_itself(screen: tuple[int, int], budget: int | None) -> None:
    geometry = Geometry.for_screen(*screen, budget)
    for scale in ("screen", "image", "qwen", "relative"):
        width, height = geometry.space(scale)
        step = max(1, screen[0] // 37)
        for x in range(0, screen[0], step):
            y = (x * 7) % screen[1]
            fx, fy = geometry.from_screen(x, y, scale)
            if scale == "screen" or (width >= screen[0] and height >= screen[1]):
                assert geometry.to_screen(round(fx), round(fy), scale) == (x, y), (scale, x, y)
            # Where the space is coarser, a whole number names a block of screen pixels: the exact
            # point maps back exactly, and the nearest whole one within one block of it.
            gx, gy = geometry.to_screen(round(fx), round(fy), scale)
            assert abs(gx - x) <= screen[0] / width + 1 and abs(gy - y) <= screen[1] / height + 1


def test_scales_are_exact_at_the_edges_and_refuse_points_outside() -> None:
    geometry = Geometry.for_screen(1280, 720, 640 * 360)
    assert geometry.image == (640, 360)
    assert geometry.to_screen(0, 0, "image") == (1, 1)  # image pixel 0 covers screen pixels 0 and 1: its centre is 1
    assert geometry.to_screen(0, 0, "screen") == (0, 0) and geometry.to_screen(0, 0, "relative") == (0, 0)
    assert geometry.to_screen(639, 359, "image") == (1279, 719)
    assert geometry.to_screen(320, 180, "image") == (641, 361)  # the screen pixel under the image pixel's centre
    assert geometry.to_screen(500, 500, "relative") == (640, 360)
    assert geometry.to_screen(1000, 1000, "relative") == (1279, 719)
    outside = [((640, 10), "image"), ((-1, 10), "screen"), ((1001, 3), "relative"), ((float("nan"), 1), "image")]
    for bad, scale in outside:
        with pytest.raises(FormatError, match="coordinate"):
            geometry.to_screen(*bad, scale)
    with pytest.raises(FormatError, match="must be a number"):
        geometry.to_screen("12", 3, "screen")


def test_smart_resize_matches_qwen2_vl_processor_rules() -> None:
    # Both sides multiples of 28, nearest to the image; the area kept within the processor's bounds.
    assert smart_resize(1280, 720) == (1288, 728)
    assert smart_resize(300, 240) == (308, 252)
    assert smart_resize(28, 28) == (56, 56)  # below min_pixels (4 x 28 x 28): scaled up
    width, height = smart_resize(8000, 6000)
    assert width * height <= 16384 * 28 * 28 and width % 28 == 0 and height % 28 == 0


def test_desktop_takes_a_scroll_at_a_point() -> None:
    from agentgym.contract.core import InvalidAction
    from agentgym.environments.desktop.actions import parse_command, xdotool_calls

    command = parse_command("scroll(100, 50, 0, -3)", 1024, 768)
    assert command.args == (100, 50, 0, -3)
    assert xdotool_calls(command) == [["mousemove", "100", "50", "click", "--repeat", "3", "--delay", "20", "4"]]
    assert parse_command("scroll(0, 2)", 1024, 768).args == (0, 2)
    with pytest.raises(InvalidAction, match="2 or 4"):
        parse_command("scroll(1, 2, 3)", 1024, 768)
    with pytest.raises(InvalidAction, match="x coordinate"):
        parse_command("scroll(2000, 2, 0, 1)", 1024, 768)


def test_marks_are_drawn_deterministically_with_their_ids() -> None:
    pixels = np.full((120, 200, 3), 128, dtype=np.uint8)
    marks = [Mark(3, 10, 40, 60, 30), Mark(12, 100, 50, 80, 40), Mark(7, -50, -50, 10, 10)]  # the last is off screen
    drawn = draw_marks(pixels, marks)
    assert np.array_equal(drawn, draw_marks(pixels, marks)) and np.array_equal(pixels, np.full_like(pixels, 128))
    assert tuple(drawn[69, 10]) == PALETTE[3 % len(PALETTE)]  # the box's bottom-left corner
    assert tuple(drawn[89, 100]) == PALETTE[12 % len(PALETTE)]
    assert tuple(drawn[55, 40]) == (128, 128, 128)  # inside a box: untouched
    label = drawn[40 - 16 : 40, 10:30]  # the label above box 3: filled with its colour, its number in white
    assert (label == PALETTE[3 % len(PALETTE)]).all(axis=2).any() and (label > 200).all(axis=2).any()
    assert not np.array_equal(drawn[24:40, 10:30], draw_marks(pixels, [Mark(4, 10, 40, 60, 30)])[24:40, 10:30])


# ---- pages in Chromium --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def miniwob() -> Iterator[gym.Env]:
    env = gym.make("MiniWoB-click-button-v0", actions="both", marks=True)
    yield env
    env.close()


def page_state(env: gym.Env, observation: dict[str, Any]) -> tuple:
    """What an action left behind: the page as listed (without the feedback line), the URL, the score."""
    unwrapped = env.unwrapped
    text = observation["text"]
    page = text[text.index("\n\n") + 2 :] if "\n\n" in text else text
    url = unwrapped.tab.page.url
    session = getattr(unwrapped, "session_id", None)  # WebShop's per-episode session in the URL
    url = url.replace(session, "<session>") if session else url
    return page, url, unwrapped.score, unwrapped.success, unwrapped.terminated


def assert_centre_click_equals_id_click(env: gym.Env, task_id: int, max_steps: int = 12) -> str:
    """Play the oracle until it clicks an element shown in the viewport; the same episode again with that
    click made at the element's centre ends in the same state. Returns the click compared."""
    unwrapped = env.unwrapped
    env.reset(options={"task_id": task_id})
    prefix: list[str] = []
    for _ in range(max_steps):
        command = unwrapped.oracle_action()
        if command.startswith("click("):
            bid = int(command[len("click(") : -1])
            element = next((e for e in unwrapped.page()[1] if e.bid == bid), None)
            width, height = unwrapped.viewport
            if element is not None and 0 <= element.centre[0] < width and 0 <= element.centre[1] < height:
                break
        *_, terminated, _, _ = env.step(command)
        assert not terminated, f"the oracle ended task {task_id} before a click in view"
        prefix.append(command)
    else:
        raise AssertionError(f"no oracle click in view within {max_steps} steps of task {task_id}")
    by_id = page_state(env, env.step(command)[0])
    env.reset(options={"task_id": task_id})
    for earlier in prefix:
        env.step(earlier)
    x, y = element.centre
    observation, _, _, _, info = env.step(f"click({x:g}, {y:g})")
    assert not info["invalid_action"], observation["text"][:300]
    assert page_state(env, observation) == by_id
    return command


@needs_chromium
def test_marks_sit_on_every_interactive_element_with_its_id(miniwob: gym.Env) -> None:
    observation, _ = miniwob.reset(options={"task_id": 3})
    env = miniwob.unwrapped
    listed = env.page()[1]
    width, height = env.viewport
    expected = {e.bid for e in listed if e.interactive and e.width > 0 and e.left < width and e.top < height}
    marks = env.set_of_marks()
    assert {mark.id for mark in marks} == expected and expected
    raw = env.pixels()
    assert np.array_equal(observation["screenshot"], draw_marks(raw, marks))
    for mark in marks:
        element = next(e for e in listed if e.bid == mark.id)
        box = (element.left, element.top, element.width, element.height)
        assert (mark.left, mark.top, mark.width, mark.height) == box
        assert f"[{mark.id}] " in observation["text"]  # the number on the image is the list's id
    # The numbered box is the element click(id) acts on: a click at its centre reaches that element.
    hit = "([x, y]) => document.elementFromPoint(x, y).closest('[data-bid]').getAttribute('data-bid')"
    assert [int(env.evaluate(hit, list(mark.centre))) for mark in marks] == [mark.id for mark in marks]
    target = int(env.oracle_action()[len("click(") : -1])
    assert target in expected


@needs_chromium
def test_centre_click_equals_click_by_id_on_miniwob(miniwob: gym.Env) -> None:
    for task_id in (3, 11):
        assert_centre_click_equals_id_click(miniwob, task_id)
        assert miniwob.unwrapped.success


@needs_chromium
def test_centre_click_equals_click_by_id_on_webshop_browser() -> None:
    env = gym.make("WebShop-Browser-v0", actions="both")
    try:
        assert_centre_click_equals_id_click(env, 7)
    finally:
        env.close()


@needs_chromium
def test_centre_click_equals_click_by_id_on_webapps() -> None:
    env = gym.make("WebApps-Wiki-v0", actions="both") if "WebApps-wiki-v0" in gym.registry else None
    if env is None:
        from agentgym.environments.webapps.env import WebAppEnv

        env = WebAppEnv(sites=("wiki",), actions="both")
    try:
        train = env.unwrapped.splits.ids("train")
        assert_centre_click_equals_id_click(env, train[0], max_steps=20)
    finally:
        env.close()


@needs_chromium
def test_bad_coordinates_and_calls_are_explained(miniwob: gym.Env) -> None:
    miniwob.reset(options={"task_id": 3})
    cases = {
        "click(900, 10)": "outside the 500x400 page",
        "click(10, -1)": "outside the 500x400 page",
        "drag(1, 1, 20, 4000)": "outside",
        "click(1, 2, 3)": "takes 1 or 2 argument(s), got 3",
        "scroll(1, 2, 3)": "takes 1 or 4 argument(s)",
        "scroll(1, 2, 0, 99)": "notches",
        "double_click(x, 3)": "cannot read the arguments",
        'key("ctrl+banana")': "unknown key 'banana'",
        "click(1e999, 3)": "finite",
    }
    for command, reason in cases.items():
        observation, reward, terminated, _, info = miniwob.step(command)
        assert info["invalid_action"] and reward == 0 and not terminated, command
        assert reason in observation["text"], (command, observation["text"][:200])
    ids_only = gym.make("MiniWoB-click-button-v0")
    try:
        ids_only.reset(options={"task_id": 3})
        observation, *_, info = ids_only.step("double_click(10, 10)")
        assert info["invalid_action"] and "unknown command 'double_click'" in observation["text"]
    finally:
        ids_only.close()


def format_click(name: str, x: float, y: float) -> Any:
    """A left click at (x, y) of the format's own scale, written as the model would."""
    x, y = round(x), round(y)
    if name == "pyautogui":
        return f"I will click it.\n```python\nimport pyautogui\npyautogui.click({x}, {y})\n```"
    if name == "qwen-computer":
        arguments = {"action": "left_click", "coordinate": [x, y]}
        function = {"name": "computer_use", "arguments": json.dumps(arguments)}
        call = {"id": "call-1", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if name == "qwen-mobile":  # Qwen's own text, as the model writes it (a <tool_call> block)
        arguments = {"action": "click", "coordinate": [x, y]}
        return f"<tool_call>\n{json.dumps({'name': 'mobile_use', 'arguments': arguments})}\n</tool_call>"
    if name == "ui-tars":
        return f"Thought: The button is there.\nAction: click(start_box='<|box_start|>({x},{y})<|box_end|>')"
    if name == "anthropic":  # the Messages API's tool_use block
        tool_input = {"action": "left_click", "coordinate": [x, y]}
        return {"type": "tool_use", "id": "toolu_1", "name": "computer", "input": tool_input}
    assert name == "openai"  # the Responses API's computer_call item
    return {"type": "computer_call", "call_id": "call_1", "action": {"type": "click", "button": "left", "x": x, "y": y}}


@needs_chromium
@pytest.mark.parametrize("name", FORMATS)
def test_a_click_in_each_format_lands_on_the_same_element(miniwob: gym.Env, name: str) -> None:
    wrapper = ComputerUseWrapper(miniwob, name, max_pixels=BUDGET)
    observation, _ = wrapper.reset(options={"task_id": 3})
    assert wrapper.format.instructions(wrapper.geometry) in observation["text"]
    env = miniwob.unwrapped
    target = int(env.oracle_action()[len("click(") : -1])
    mark = next(mark for mark in env.set_of_marks() if mark.id == target)
    x, y = wrapper.geometry.from_screen(*map(int, mark.centre), wrapper.format.scale)
    observation, reward, terminated, _, info = wrapper.step(format_click(name, x, y))
    played = info["computer_use"]["command"]
    px, py = json.loads("[" + played[len("click(") : -1] + "]")
    assert played.startswith("click(") and mark.contains(px, py), (played, mark)
    assert reward == 1.0 and terminated and env.success


MALFORMED = [
    ("pyautogui", "pyautogui.click(100, 200)\npyautogui.write('x')", "one action per step"),
    ("pyautogui", "pyautogui.tripleClick(1, 2)", "not supported"),
    ("pyautogui", "pyautogui.click(100, 900)", "outside the 500x400 screen"),
    ("pyautogui", "click it please", "not valid Python"),
    ("qwen-computer", {"name": "computer_use", "arguments": '{"action": "left_click", "coordinate": [5]}'}, "[x, y]"),
    ("qwen-computer", {"name": "computer_use", "arguments": '{"action": "fly"}'}, "must be one of"),
    ("qwen-computer", {"name": "computer_use", "arguments": "{not json"}, "not valid JSON"),
    ("qwen-mobile", "I would tap it.", "expected a call of the mobile_use function"),
    ("qwen-mobile", {"name": "mobile_use", "arguments": {"action": "click", "coordinate": [400, 10]}}, "the 308x252"),
    ("ui-tars", "Action: click(start_box='(1001,30)')", "relative 0-1000"),
    ("ui-tars", "Action: teleport(start_box='(1,3)')", "unknown UI-TARS action"),
    (
        "anthropic",
        {"type": "tool_use", "name": "computer", "input": {"action": "left_click", "coordinate": [300, 1]}},
        "outside the 300x240",
    ),
    ("anthropic", {"type": "tool_use", "name": "computer", "input": {"action": "triple_click"}}, "no counterpart"),
    ("openai", {"type": "computer_call", "action": {"type": "click", "x": 1}}, "needs 'y'"),
    ("openai", {"type": "computer_call", "action": {"type": "wait"}}, "no wait action"),
]


@needs_chromium
def test_malformed_calls_in_each_format_are_explained(miniwob: gym.Env) -> None:
    wrappers = {name: ComputerUseWrapper(miniwob, name, max_pixels=BUDGET) for name in FORMATS}
    wrappers["pyautogui"].reset(options={"task_id": 3})
    for name, action, reason in MALFORMED:
        observation, reward, terminated, _, info = wrappers[name].step(action)
        assert info["invalid_action"] and reward == 0 and not terminated, (name, action)
        assert observation["text"].startswith("Invalid action: ") and reason in observation["text"], (
            name,
            observation["text"][:200],
        )
        assert info["computer_use"]["command"] is None
    with pytest.raises(TypeError, match="pixel actions"):
        ComputerUseWrapper(gym.make("Sokoban-v0"), "pyautogui")


@needs_chromium
def test_chat_wrapper_offers_the_format_tool_and_plays_its_calls(miniwob: gym.Env) -> None:
    chat = ChatWrapper(miniwob, action_format="qwen-computer", images=ImageOptions("screenshot", max_pixels=BUDGET))
    assert chat.tools is not None and chat.tools[0]["function"]["name"] == "computer_use"
    assert "308x252" in chat.tools[0]["function"]["description"]
    messages, _ = chat.reset(options={"task_id": 3})
    assert "computer_use" in messages[1]["content"][1]["text"] and messages[1]["content"][0]["type"] == "image_url"
    env = miniwob.unwrapped
    target = int(env.oracle_action()[len("click(") : -1])
    mark = next(mark for mark in env.set_of_marks() if mark.id == target)
    x, y = chat.env.geometry.from_screen(*map(int, mark.centre), "qwen")
    messages, reward, terminated, _, info = chat.step(format_click("qwen-computer", x, y))
    assert reward == 1.0 and messages[-2]["role"] == "tool" and info["computer_use"]["format"] == "qwen-computer"
    assert get_format("pyautogui").tools(chat.env.geometry) is None


@needs_desktop
def test_desktop_marks_number_the_accessibility_tree_and_take_clicks_by_id_and_by_format() -> None:
    env = gym.make("Desktop-v0", marks=True, apps=("editor",))
    try:
        observation, _ = env.reset(options={"task_id": 0})
        desktop = env.unwrapped
        marks = desktop.set_of_marks
        assert marks and [mark.id for mark in marks] == list(range(1, len(marks) + 1))
        lines = observation["text"].splitlines()
        file_line = next(line for line in lines if line.strip().endswith('menu "File"'))
        file_id = int(file_line.strip()[1 : file_line.strip().index("]")])
        for mark in marks:  # every number in the tree has its box drawn on the screenshot
            assert any(line.strip().startswith(f"[{mark.id}] ") for line in lines)
            x0, y0, x1, y1 = mark.clipped(1024, 768)
            assert tuple(observation["screenshot"][y1, x0]) in PALETTE
        observation, _, _, _, info = env.step(f"click({file_id})")
        assert not info["invalid_action"] and 'menu item "Save"' in observation["text"], observation["text"][-800:]
        env.step('key("Escape")')
        observation, _, _, _, info = env.step("click(999)")
        assert info["invalid_action"] and "no element [999]" in observation["text"]
        # The same menu by a UI-TARS click on its box's centre (relative coordinates of the screenshot).
        wrapper = ComputerUseWrapper(env, "ui-tars")
        edit = next(mark for mark in desktop.set_of_marks if mark.id == file_id + 1)
        x, y = wrapper.geometry.from_screen(*map(int, edit.centre), "relative")
        observation, _, _, _, info = wrapper.step(f"Action: click(start_box='({round(x)},{round(y)})')")
        assert not info["invalid_action"] and 'menu item "Undo"' in observation["text"], observation["text"][-800:]
    finally:
        env.close()


def test_browser_tools_follow_the_action_space() -> None:
    from agentgym.contract.tools import ToolCall, ToolCallError, command_to_tool_call
    from agentgym.environments.miniwob.env import MiniWoBEnv

    env = object.__new__(MiniWoBEnv)  # the class's declarations, without a browser
    env.toolset = "default"
    assert [tool.name for tool in env.tool_specs()] == ["click", "type", "select", "press", "scroll", "click_xy"]
    env.actions = "coordinates"
    names = [tool.name for tool in env.tool_specs()]
    assert names == ["click", "double_click", "right_click", "move", "drag", "scroll", "type", "key"]
    assert env.tool_command(ToolCall("scroll", {"x": 10, "y": 20, "dx": 0, "dy": 3})) == "scroll(10, 20, 0, 3)"
    env.actions = "both"
    assert env.tool_command(ToolCall("click", {"id": 12})) == "click(12)"
    assert env.tool_command(ToolCall("click", {"x": 10.5, "y": 20})) == "click(10.5, 20)"
    assert env.tool_command(ToolCall("type", {"text": "hi"})) == 'type("hi")'
    with pytest.raises(ToolCallError, match=r"click takes the arguments \(id\) or \(x, y\)"):
        env.tool_command(ToolCall("click", {"x": 3}))
    assert command_to_tool_call(env.tool_specs(), "click(12)") == ToolCall("click", {"id": 12})
    assert command_to_tool_call(env.tool_specs(), "click(3, 4)") == ToolCall("click", {"x": 3, "y": 4})


class _PyautoguiClicker:
    """A policy that answers in OSWorld's pyautogui format: a click at the centre of the element the
    env's oracle would click (it reads the env, as the scripted baselines do)."""

    name = "pyautogui-clicker"

    async def act(self, messages: list[dict[str, Any]], episode: Any) -> Any:
        from agentgym.llm.policies.base import Reply

        assert isinstance(messages[-1]["content"], list)  # the screenshot is sent
        assert "pyautogui" in json.dumps(messages[1]["content"])  # and the format's instructions

        def code(env: Any) -> str:
            bid = int(env.oracle_action()[len("click(") : -1])
            x, y = next(element for element in env.page()[1] if element.bid == bid).centre
            return f"```python\npyautogui.click({int(x)}, {int(y)})\n```"

        return Reply(await episode.in_env(code))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    async def aclose(self) -> None:
        return None


@needs_chromium
def test_agentgym_eval_plays_a_computer_use_format(tmp_path: Path) -> None:
    import asyncio

    from agentgym.evaluation.runner import EvalItem, run_eval

    items = [EvalItem("MiniWoB-click-button-v0", 2, split="test", max_turns=3)]
    stats = asyncio.run(
        run_eval(
            "pyautogui-clicker",
            _PyautoguiClicker(),  # type: ignore[arg-type]
            items,
            tmp_path,
            action_format="pyautogui",
            images=ImageOptions("screenshot"),
            prepare=False,
        )
    )
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert stats.played == 2 and all(record["success"] for record in records), records
    assert all(record["turns"][0]["action"].startswith("click(") for record in records)
    assert json.loads((tmp_path / "run.json").read_text())["action_format"] == "pyautogui"


def test_one_key_table_names_each_key_for_the_browser_the_desktop_and_the_formats() -> None:
    from agentgym.computer_use.keys import canonical_key, playwright_keys, xdotool_keys

    assert playwright_keys("ctrl+shift+Return") == "Control+Shift+Enter"
    assert xdotool_keys("ctrl+shift+Return") == "ctrl+shift+Return"
    assert playwright_keys("cmd++") == "Meta++" and xdotool_keys("cmd++") == "super+plus"
    assert playwright_keys("F2") == "F2" == xdotool_keys("f2")
    assert playwright_keys("pagedown") == "PageDown" and xdotool_keys("page_down") == "Next"
    assert [canonical_key(key) for key in ("Return", "ArrowDown", "Cmd", " ", "x")] == [
        "enter",
        "down",
        "super",
        "space",
        "x",
    ]
    assert playwright_keys("ctrl+@") == "Control+@"  # any printable character in the browser
    for bad, reason in (("ctrl+@", "unknown key '@'"), ("ctrl+banana", "unknown key 'banana'"), ("ctrl+", "malformed")):
        with pytest.raises(ValueError, match=reason):
            xdotool_keys(bad)


def test_the_browser_and_the_desktop_read_pixel_commands_with_one_reader() -> None:
    from agentgym.browser.commands import Command
    from agentgym.browser.commands import parse_command as browser_command
    from agentgym.contract.core import InvalidAction
    from agentgym.environments.desktop.actions import parse_command as desktop_command

    for text in ('type("a\\x07")', "type(5)", 'key("ctrl+banana")', "scroll(1, 2, 0, 99)", "drag(1, 2, x, 4)"):
        with pytest.raises(ValueError) as in_browser:
            browser_command(text, action_space="coordinates")
        with pytest.raises(InvalidAction) as on_desktop:
            desktop_command(text, 1024, 768)
        assert str(on_desktop.value) in str(in_browser.value), text
    assert browser_command('key("Down Down ctrl+a")', action_space="both") == Command(
        "key", ("ArrowDown ArrowDown Control+a",)
    )
    assert desktop_command('key("Down Down ctrl+a")', 1024, 768).args == ("Down Down ctrl+a",)
    assert browser_command("click(10.5, 3)", action_space="coordinates") == Command("click_at", (10.5, 3.0))
    with pytest.raises(InvalidAction, match="whole numbers"):
        desktop_command("click(10.5, 3)", 1024, 768)
    with pytest.raises(ValueError, match="expected a call"):  # pyautogui's spelling is the desktop's alone
        browser_command("pyautogui.click(1, 2)", action_space="coordinates")
