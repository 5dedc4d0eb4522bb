"""Native tool calls (docs/tool-calls.md): declarations, the shapes step accepts, errors, remote envs,
and every family solved by its oracle's actions sent as tool calls."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import jsonschema
import pytest
import yaml
from episodes import play_oracle
from gymnasium.utils.env_checker import check_env

import agentgym
from agentgym.contract.core import TextEnv, TextOrToolCall
from agentgym.contract.tools import (
    GENERIC_TOOLS,
    ToolCallError,
    check_arguments,
    command_to_tool_call,
    load_tools,
    read_action,
    tool_from_spec,
)
from agentgym.serving.backends.local import env_class

ENV_IDS = [info.id for info in agentgym.list_envs()]
FAMILIES = Path(__file__).parents[1] / "environments"


def call(name: str, call_id: str = "call_0", **arguments: Any) -> dict[str, Any]:
    """A tool call in OpenAI's shape."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def message(*calls: dict[str, Any], content: Any = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls) or None}


# ---- declarations ---------------------------------------------------------------------


def tool_files() -> Iterator[tuple[str, str, str]]:
    """(package, file, toolset) of every tools file shipped: the families' and the games'."""
    files = [(f"agentgym.environments.{path.parent.name}", path) for path in sorted(FAMILIES.glob("*/tools.yaml"))]
    files.append(("agentgym.multiagent", Path(agentgym.__file__).parent / "multiagent" / "game_tools.yaml"))
    for package, path in files:
        for toolset in yaml.safe_load(path.read_text()):
            yield package, path.name, toolset


@pytest.mark.parametrize(("package", "filename", "toolset"), list(tool_files()))
def test_every_declared_tool_is_a_valid_openai_function_with_a_valid_json_schema(
    package: str, filename: str, toolset: str
) -> None:
    tools = load_tools(package, filename, toolset)
    assert tools
    for tool in tools:
        declaration = tool.declaration()
        assert declaration["type"] == "function" and set(declaration["function"]) == {
            "name",
            "description",
            "parameters",
        }
        assert declaration["function"]["description"]
        jsonschema.Draft202012Validator.check_schema(declaration["function"]["parameters"])
        json.dumps(declaration)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_registered_env_declares_its_own_tools(env_id: str) -> None:
    cls = env_class(env_id)
    env = object.__new__(cls)  # the class's declaration, without starting engines or browsers
    assert env.tool_specs() is not GENERIC_TOOLS, f"{cls.__name__} ships no tools file"


def test_the_tools_that_step_checks_agree_with_jsonschema() -> None:
    """Our validator (a JSON Schema subset) accepts and rejects what jsonschema does."""
    tools = load_tools("agentgym.environments.code", "tools.yaml", "bugfix")
    cat = next(tool for tool in tools if tool.name == "cat")
    cases = [
        {"file": "a.py"},
        {"file": "a.py", "start": 3, "end": 9},
        {},
        {"file": 3},
        {"file": "a", "x": 1},
        {"file": "a", "start": 0},
        {"file": "a", "start": "3"},
        {"file": "a", "start": True},
    ]
    for arguments in cases:
        expected = jsonschema.Draft202012Validator(cat.parameters).is_valid(arguments)
        try:
            check_arguments(cat.parameters, arguments)
            ours = True
        except ToolCallError:
            ours = False
        assert ours == expected, arguments


def test_declarations_refuse_what_they_cannot_check() -> None:
    base = {"name": "f", "command": "f {x}"}
    with pytest.raises(ValueError, match="not supported"):
        tool_from_spec(
            base | {"parameters": {"type": "object", "properties": {"x": {"type": "string", "pattern": "a"}}}}
        )
    with pytest.raises(ValueError, match="not parameters"):
        tool_from_spec(base | {"parameters": {"type": "object", "properties": {}}})
    with pytest.raises(ValueError, match="conversion"):
        tool_from_spec(
            base | {"command": "f {x!r}", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}
        )


def test_an_env_without_a_tools_file_gets_the_generic_act_tool() -> None:
    from agentgym.environments.sokoban.env import SokobanEnv

    class Custom(SokobanEnv):
        tool_file = "no_such_file.yaml"

    env = Custom()
    env.reset(options={"task_id": 0})
    assert [tool["function"]["name"] for tool in env.tools()] == ["act"]
    _, _, _, _, info = env.step(call("act", command="up"))
    assert info["action"] == "up" and not info["invalid_action"]


# ---- the shapes step accepts, and malformed calls --------------------------------------


@pytest.fixture
def sokoban() -> Iterator[gym.Env]:
    env = gym.make("Sokoban-v0")
    env.reset(options={"task_id": 7})
    yield env
    env.close()


def test_sokoban_declares_move_with_an_enum(sokoban: gym.Env) -> None:
    (tool,) = sokoban.unwrapped.tools()
    assert tool["function"]["name"] == "move"
    assert tool["function"]["parameters"]["properties"]["direction"]["enum"] == ["up", "down", "left", "right"]


@pytest.mark.parametrize(
    "action",
    [
        message(call("move", direction="left")),
        call("move", direction="left"),
        {"function": {"name": "move", "arguments": {"direction": "left"}}},
        {"name": "move", "arguments": '{"direction": "left"}'},
        {"name": "move", "arguments": {"direction": "left"}},
    ],
    ids=["message", "openai-call", "dict-arguments", "bare-json", "bare-dict"],
)
def test_every_call_shape_plays_like_the_text_command(action: dict[str, Any]) -> None:
    text_env, tool_env = gym.make("Sokoban-v0"), gym.make("Sokoban-v0")
    text_env.reset(options={"task_id": 7})
    tool_env.reset(options={"task_id": 7})
    text = text_env.step("Action: left")
    tool = tool_env.step(action)
    assert tool[:4] == text[:4]
    extra = {key: tool[4].pop(key) for key in ("tool_call", "tool_call_ids")}
    assert tool[4] == text[4]
    assert extra["tool_call"]["name"] == "move" and extra["tool_call"]["arguments"] == {"direction": "left"}
    assert extra["tool_call_ids"] == [action.get("id", action.get("tool_calls", [{}])[0].get("id"))]


def test_a_message_without_tool_calls_is_a_text_reply(sokoban: gym.Env) -> None:
    for action in (
        {"role": "assistant", "content": "I go left.\nAction: left"},
        message(content=[{"type": "text", "text": "Action: left"}]),
    ):
        _, _, _, _, info = sokoban.step(action)
        assert info["action"] == "left" and not info["invalid_action"] and "tool_call" not in info


MALFORMED = {
    "unknown tool": (call("jump", height=2), "there is no tool 'jump'; the tools are move"),
    "bad json": (
        {"id": "c", "type": "function", "function": {"name": "move", "arguments": '{"direction": '}},
        "not valid JSON",
    ),
    "not an object": (call("move") | {"function": {"name": "move", "arguments": "[1]"}}, "must be a JSON object"),
    "missing argument": (call("move"), "missing required argument(s) direction"),
    "extra argument": (call("move", direction="up", speed=2), "unexpected argument(s) 'speed'"),
    "wrong type": (call("move", direction=1), "direction must be a string, got integer 1"),
    "enum": (call("move", direction="north"), 'direction must be one of "up", "down", "left", "right"'),
    "two calls": (
        message(call("move", "a", direction="up"), call("move", "b", direction="up")),
        "2 tool calls in one turn",
    ),
    "no name": ({"id": "c", "type": "function", "function": {"name": "", "arguments": "{}"}}, "names no function"),
    "not a function": ({"id": "c", "type": "code", "function": {"name": "move"}}, "only function tool calls"),
    "wrong role": ({"role": "user", "tool_calls": [call("move", direction="up")]}, "role 'assistant'"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_call_is_an_invalid_action_that_says_why(sokoban: gym.Env, case: str) -> None:
    action, reason = MALFORMED[case]
    before = sokoban.unwrapped._describe()
    observation, reward, terminated, truncated, info = sokoban.step(action)
    assert observation.startswith("Invalid tool call") and reason in observation.split("\n")[0]
    assert observation.endswith(before), "the observation shows the (unchanged) state"
    assert (reward, terminated, truncated, info["invalid_action"]) == (0.0, False, False, True)
    assert "tool_call_ids" in info
    if case == "two calls":
        assert info["tool_call_ids"] == ["a", "b"] and info["tool_call"] is None


def test_an_executed_call_the_game_rejects_is_invalid_like_the_text_command(sokoban: gym.Env) -> None:
    env = gym.make("WebShop-v0")
    env.reset(options={"task_id": 0})
    _, _, _, _, text = env.step("click[no such button]")
    _, _, _, _, tool = env.step(call("click", target="no such button"))
    assert text["invalid_action"] and tool["invalid_action"] and tool["action"] == "click[no such button]"


def test_read_action_never_guesses() -> None:
    with pytest.raises(ToolCallError):
        read_action({"role": "assistant", "tool_calls": "move"})
    assert read_action({"role": "assistant", "content": None}) == ""


def test_the_action_space_holds_text_and_tool_calls_and_check_env_passes() -> None:
    env = gym.make("Sokoban-v0").unwrapped
    space = env.action_space
    assert isinstance(space, TextOrToolCall)
    assert space.contains("up") and space.contains(call("move", direction="up")) and space.contains(message())
    assert not space.contains({"foo": 1}) and not space.contains(3)
    assert isinstance(space.sample(), str)
    check_env(env)


def test_optional_parameters_choose_the_template() -> None:
    tools = load_tools("agentgym.environments.code", "tools.yaml", "bugfix")
    cat = next(tool for tool in tools if tool.name == "cat")
    assert cat.command({"file": "a.py"}) == "cat a.py"
    assert cat.command({"file": "a.py", "start": 3, "end": 9}) == "cat a.py 3-9"
    with pytest.raises(ToolCallError, match="takes the arguments"):
        cat.command({"file": "a.py", "end": 9})


# ---- remote envs -------------------------------------------------------------------------


def test_the_process_backend_passes_tool_calls_through_and_serves_tools() -> None:
    local, remote = gym.make("Sokoban-v0"), gym.make("Sokoban-v0", backend="process")
    try:
        assert remote.unwrapped.tools() == local.unwrapped.tools()
        assert remote.unwrapped.action_space.contains(call("move", direction="up"))
        for env in (local, remote):
            env.reset(options={"task_id": 3})
        for action in (message(call("move", "x", direction="down")), call("move", direction="sideways"), "up"):
            assert remote.step(action) == local.step(action)
    finally:
        local.close()
        remote.close()


# ---- every family solved through its tools --------------------------------------------------

#: (id, task ids) per family; the ids are each family's cheap, oracle-solved tasks.
ORACLE_EPISODES: dict[str, tuple[str, list[int]]] = {
    "sokoban": ("Sokoban-2Boxes-v0", [0, 11_500]),
    "frozenlake": ("FrozenLake-v0", [0, 11_000]),
    "maze": ("Maze-Partial-v0", [0, 1]),
    "wordle": ("Wordle-v0", [0]),
    "webshop": ("WebShop-v0", [0, 1]),
    "humaneval": ("HumanEval-v0", [0, 1]),
    "bash": ("Bash-v0", [0, 1]),
    "bugfix": ("BugFix-v0", [0, 1]),
    "textcraft": ("TextCraft-Depth3-v0", [0, 1]),
    "babyai": ("BabyAI-Text-GoToLocal-v0", [0]),
    "household": ("Household-v0", [0, 1]),
    "alfworld": ("ALFWorld-v0", [0]),
    "textworld": ("TextWorld-Custom-v0", [0]),
    "scienceworld": ("ScienceWorld-v0", [0]),
    "webshop-browser": ("WebShop-Browser-v0", [0]),
    "miniwob": ("MiniWoB-click-button-v0", [0]),
    "miniwob-type": ("MiniWoB-enter-text-v0", [0]),
    "desktop": ("Desktop-v0", [0]),
    "tictactoe": ("TicTacToe-vs-Random-v0", [1]),
    "kuhnpoker": ("KuhnPoker-vs-Nash-v0", [0]),
    "negotiation": ("SimpleNegotiation-vs-Random-v0", [0]),
    "referential": ("ReferentialGame-vs-Rule-v0", [0]),
}


GAMES = {"tictactoe", "kuhnpoker", "negotiation", "referential"}


def make_or_skip(env_id: str) -> gym.Env:
    try:
        return gym.make(env_id)
    except Exception as error:  # what the family needs is not here (Java, Chromium, X; ALFWorld's data is given)
        if type(error).__name__ == "DesktopUnavailable" or isinstance(error, (ImportError, OSError)):
            pytest.skip(f"{env_id} cannot run here: {error}")
        raise


@pytest.mark.usefixtures("alfworld_data")
@pytest.mark.parametrize("family", list(ORACLE_EPISODES))
def test_the_oracle_solves_every_family_through_tool_calls(family: str) -> None:
    env_id, task_ids = ORACLE_EPISODES[family]
    if family == "scienceworld" and shutil.which("java") is None:
        pytest.skip("ScienceWorld needs Java")
    env = make_or_skip(env_id)
    base: TextEnv = env.unwrapped
    try:
        for task_id in task_ids:
            _, info = env.reset(seed=0, options={"task_id": task_id})
            truncated = terminated = False
            steps = 0
            while not (terminated or truncated):
                command = base.extract_action(base.oracle_action())
                tool_call = command_to_tool_call(base.tool_specs(), command)
                if tool_call is None and family in GAMES:  # a game's move tool writes a whole reply
                    tool_call = command_to_tool_call(base.tool_specs(), f"Action: {command}")
                assert tool_call is not None, f"no tool of {env_id} says {command!r}"
                action = message(call(tool_call.name, f"call_{steps}", **tool_call.arguments))
                _, _, terminated, truncated, info = env.step(action)
                assert not info["invalid_action"], (command, tool_call, info)
                assert info["tool_call"]["id"] == f"call_{steps}"
                steps += 1
            if family in GAMES:  # a strong player, not a solver: the same game as through text replies
                assert info["score"] == play_oracle(env, task_id).score
            else:
                assert info["success"], f"{env_id} task {task_id}: {info['score']}"
    finally:
        env.close()
