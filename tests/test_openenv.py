"""OpenEnv: agentgym envs on ``agentgym serve`` reached by openenv-core's own client (WebSocket sessions)."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest

pytest.importorskip("openenv", reason="the openenv extra is not installed (pip install 'agentgym[openenv]')")

from asgi import serving_in_thread  # noqa: E402
from openenv.core.env_client import EnvClient  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.contract.tools import command_to_tool_call  # noqa: E402
from agentgym.integrations.openenv import AgentGymAction, AgentGymEnvClient, AgentGymObservation  # noqa: E402
from agentgym.serving.server import create_app  # noqa: E402

ENV_ID = "Sokoban-v0"


@pytest.fixture(scope="module")
def base_url():
    with serving_in_thread(create_app(["Sokoban-*"])) as url:
        yield url


async def play(client: AgentGymEnvClient, task_id: int, tool_calls: bool) -> list:
    """The oracle's episode through ``client`` (as tool calls or text), checked step by step against a local env."""
    local = gym.make(ENV_ID)
    observation, info = local.reset(options={"task_id": task_id})
    result = await client.reset(task_id=task_id)
    assert result.observation.text == observation and not result.done and result.reward is None
    assert result.observation.tools == local.unwrapped.tools()
    results = [result]
    while not result.done:
        command = local.unwrapped.oracle_action()
        call = command_to_tool_call(local.unwrapped.tool_specs(), command)
        action = {"name": call.name, "arguments": call.arguments} if tool_calls else f"I push.\nAction: {command}"
        result = await client.step(action)
        observation, reward, terminated, truncated, info = local.step(command)
        assert (result.observation.text, result.reward, result.done) == (observation, reward, terminated or truncated)
        assert result.observation.score == info["score"] and result.observation.steps == info["steps"]
        results.append(result)
    local.close()
    return results


def test_full_episode_state_and_malformed_actions(base_url: str) -> None:
    async def scenario() -> None:
        client = AgentGymEnvClient(base_url, env_id=ENV_ID)
        assert isinstance(client, EnvClient)
        async with client:
            results = await play(client, task_id=7, tool_calls=True)
            last = results[-1].observation
            assert last.success and last.score == 1.0 and last.terminated and not last.truncated
            state = await client.state()
            assert (state.env_id, state.task_id, state.split, state.step_count) == (
                ENV_ID,
                7,
                "train",
                len(results) - 1,
            )
            assert state.success and state.score == 1.0 and state.episode_id

            await client.reset(task_id=7)
            bad = await client.step({"name": "move", "arguments": {"direction": "sideways"}})
            assert bad.observation.invalid_action and not bad.done and bad.reward == 0.0
            assert "sideways" in bad.observation.text
            with pytest.raises(RuntimeError, match="Invalid message"):  # no text and no tool_call
                await client.step(AgentGymAction.model_construct(text=None, tool_call=None))
            with pytest.raises(RuntimeError, match="task_id"):
                await client.reset(task_id=10**9)
            # The session survives both errors.
            text_episode = await play(client, task_id=8, tool_calls=False)
            assert text_episode[-1].observation.success

    asyncio.run(scenario())


def test_sessions_are_isolated_and_openenv_routes_answer(base_url: str) -> None:
    import httpx

    async def scenario() -> None:
        async with (
            AgentGymEnvClient(base_url, env_id=ENV_ID) as one,
            AgentGymEnvClient(base_url, env_id="Sokoban-2Boxes-v0") as two,
        ):
            await asyncio.gather(one.reset(task_id=1), two.reset(task_id=2))
            await one.step("Action: up")
            states = await asyncio.gather(one.state(), two.state())
            assert [(s.env_id, s.task_id, s.step_count) for s in states] == [
                (ENV_ID, 1, 1),
                ("Sokoban-2Boxes-v0", 2, 0),
            ]

    asyncio.run(scenario())
    schema = httpx.get(f"{base_url}/openenv/{ENV_ID}/schema").json()
    assert schema["action"]["title"] == "AgentGymAction" and "tool_call" in schema["action"]["properties"]
    assert httpx.get(f"{base_url}/openenv/{ENV_ID}/metadata").json()["name"] == ENV_ID
    assert httpx.get(f"{base_url}/health").json()["status"] == "ok"  # agentgym's own routes stay as they were


def test_observation_round_trip() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        AgentGymAction(text="up", tool_call={"name": "move"})
    observation = AgentGymObservation(text="x", reward=1.0, done=True, score=1.0)
    assert AgentGymObservation.model_validate(observation.model_dump()) == observation


def test_trl_openenv_pattern_grpo_trainer_plays_through_our_server(base_url: str, tmp_path) -> None:
    """TRL's OpenEnv example pattern: ``GRPOTrainer(environment_factory=...)`` whose environment class
    talks to an OpenEnv server, here ``agentgym serve``'s OpenEnv routes; TRL builds the class's tools,
    trains a step through it, and the class's tool methods play a whole episode over OpenEnv."""
    pytest.importorskip("trl")
    import importlib.resources

    from tiny_model import build_tiny_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from agentgym.integrations.trl import environment_factory, task_dataset

    folder = build_tiny_model(tmp_path / "model", context_length=1024, tools=True)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = importlib.resources.files("trl").joinpath("chat_templates/qwen2_5.jinja").read_text()
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=16,
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    factory = environment_factory(ENV_ID, openenv_url=base_url)
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(folder),
        processing_class=tokenizer,
        args=config,
        train_dataset=task_dataset(ENV_ID, [7], action_format="tools"),
        environment_factory=factory,
    )
    assert [tool.__name__ for tool in trainer.tools] == ["move"]
    assert trainer.reward_func_names == ["Sokoban_v0"]
    trainer.train()  # a random tiny model makes no tool call: every episode is reset over OpenEnv and scores 0
    assert trainer.state.global_step == 1

    environment = trainer.environments[0]
    assert environment.openenv_url == base_url
    local = gym.make(ENV_ID)
    observation, _ = local.reset(options={"task_id": 7})
    assert environment.reset(task_id=7) == observation
    while True:
        command = local.unwrapped.oracle_action()
        observation, _, terminated, truncated, _ = local.step(command)
        assert environment.move(direction=command) == observation
        if terminated or truncated:
            break
    assert environment.get_reward() == 1.0
    local.close()
