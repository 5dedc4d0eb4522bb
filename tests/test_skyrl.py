"""agentgym envs through skyrl-gym's own registry and text env interface (``skyrl_gym.make``, ``init``, ``step``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentgym

skyrl_gym = pytest.importorskip("skyrl_gym")
from omegaconf import OmegaConf  # noqa: E402
from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402

from agentgym.contract.tools import command_to_tool_call  # noqa: E402
from agentgym.integrations import skyrl  # noqa: E402
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT  # noqa: E402

FAMILIES = [("Sokoban-v0", 3), ("WebShop-v0", 0)]


def oracle_reply(env: skyrl.AgentGymTextEnv, action_format: str) -> str:
    """The oracle's next command as the text a model would write: an ``Action:`` line or a ``<tool_call>`` block."""
    base = env.chat.unwrapped
    command = base.extract_action(base.oracle_action())
    if action_format == "text":
        return f"I know this one.\nAction: {command}"
    call = command_to_tool_call(base.tool_specs(), command)
    assert call is not None, command
    return f"<tool_call>\n{json.dumps({'name': call.name, 'arguments': call.arguments})}\n</tool_call>"


def make(env_id: str, task_id: int, **extras: Any) -> skyrl.AgentGymTextEnv:
    """The env as SkyRL's generator makes it: registry id, env_config, extras with ``max_turns``."""
    env = skyrl_gym.make(f"agentgym:{env_id}", env_config={}, extras={"task_id": task_id, "max_turns": 50, **extras})
    assert isinstance(env, BaseTextEnv) and isinstance(env, skyrl.AgentGymTextEnv)
    return env


@pytest.mark.parametrize("action_format", ["text", "tools"])
@pytest.mark.parametrize(("env_id", "task_id"), FAMILIES)
def test_oracle_replies_reach_the_success_reward(env_id: str, task_id: int, action_format: str) -> None:
    env = make(env_id, task_id, action_format=action_format)
    messages, metadata = env.init([])
    assert [message["role"] for message in messages] == ["system", "user"]
    assert metadata["task_id"] == task_id and metadata["instruction"]
    if action_format == "tools":
        assert env.tools and "<tools>" in messages[0]["content"]
        assert all(json.dumps(tool) in messages[0]["content"] for tool in env.tools)
    rewards, done = [], False
    while not done:
        output = env.step(oracle_reply(env, action_format))
        rewards.append(output["reward"])
        done = output["done"]
        assert not output["metadata"]["invalid_action"], output
        if done:
            assert output["observations"] == []
        elif action_format == "text":
            assert [message["role"] for message in output["observations"]] == ["user"]
        else:
            (answer,) = output["observations"]
            assert answer["role"] == "tool" and answer["content"] == output["metadata"]["observation"]
            assert answer["tool_call_id"] == env.chat.transcript[-2]["tool_calls"][0]["id"]
    assert output["metadata"]["success"] and output["metadata"]["terminated"]
    assert sum(rewards) == pytest.approx(output["metadata"]["score"]) == pytest.approx(1.0)
    assert env.get_metrics() == {"score": 1.0, "success": True, "steps": len(rewards), "invalid_actions": 0}
    env.close()


def test_malformed_actions_get_the_envs_explanation() -> None:
    env = make("Sokoban-v0", 3)
    env.init([])
    output = env.step("I would rather dance.\nAction: dance")
    assert output["reward"] == 0.0 and not output["done"] and output["metadata"]["invalid_action"]
    (answer,) = output["observations"]
    assert answer["role"] == "user" and answer["content"].startswith("Invalid action")

    env = make("Sokoban-v0", 3, action_format="tools")
    env.init([])
    output = env.step('<tool_call>\n{"name": "move", "arguments": {"direction": "north"}}\n</tool_call>')
    assert output["reward"] == 0.0 and not output["done"] and output["metadata"]["invalid_action"]
    (answer,) = output["observations"]
    assert answer["role"] == "tool" and answer["content"].startswith("Invalid tool call 'move'")
    assert '"north"' in answer["content"]
    output = env.step("<tool_call>\n{not json\n</tool_call>")  # no valid block: played as text, answered as a user
    assert output["metadata"]["invalid_action"] and output["observations"][0]["role"] == "user"
    assert env.get_metrics()["invalid_actions"] == 2


def test_max_turns_ends_the_episode_as_truncated() -> None:
    env = make("Sokoban-v0", 3, max_turns=2)
    env.init([])
    assert not env.step("Action: up")["done"]
    last = env.step("Action: up")
    assert last["done"] and last["metadata"]["truncated"] and last["observations"] == []


def test_dataset_rows_make_the_env_skyrl_would() -> None:
    rows = skyrl.dataset_rows("WebShop-v0", split="test", num_tasks=2, action_format="tools")
    first = list(agentgym.env_info("WebShop-v0").splits.ids("test")[:2])
    assert [row["task_id"] for row in rows] == first and rows[0]["env_class"] == "agentgym:WebShop-v0"
    row = rows[1]
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    config = OmegaConf.create({"env_kwargs": {}, "tools_in_prompt": True})  # SkyRL's config section
    env = skyrl_gym.make(row["env_class"], env_config=config, extras=extras)
    messages, metadata = env.init(row["prompt"] + [{"role": "user", "content": "Be quick."}])
    assert metadata["task_id"] == first[1] and env.tools is not None
    assert messages[0]["content"].startswith(row["prompt"][0]["content"])
    assert [message["role"] for message in messages] == ["system", "user", "user"]
    assert messages[1]["content"] == "Be quick."
    # A system message in the prompt replaces the default one.
    env = make("Sokoban-v0", 3)
    messages, _ = env.init([{"role": "system", "content": "Push the boxes."}])
    assert messages[0] == {"role": "system", "content": "Push the boxes."}
    assert DEFAULT_SYSTEM_PROMPT not in json.dumps(messages)


def test_registry_holds_every_id_and_rejects_unknown_ones() -> None:
    names = skyrl.register_envs()
    assert names == [f"agentgym:{info.id}" for info in agentgym.list_envs()]
    assert all(name in skyrl_gym.registry for name in names)
    with pytest.raises(skyrl_gym.error.Error, match="agentgym:NoSuchEnv-v0"):
        skyrl_gym.make("agentgym:NoSuchEnv-v0")
    with pytest.raises(ValueError, match="action_format"):
        make("Sokoban-v0", 3, action_format="xml")
    with pytest.raises(ValueError, match="unknown settings"):
        skyrl.dataset_rows("Sokoban-v0", temperature=1.0)


def test_the_example_in_docs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "train-with-skyrl.md"
    example = page.read_text().split("```python\n")[1].split("```")[0]
    exec(compile(example, "docs/train-with-skyrl.md", "exec"), {})
    assert capsys.readouterr().out.split() == ["0.0", "False", "user", "False"]
