"""verl's own rollout worker playing agentgym envs through our agent loop (run by tests/test_verl.py).

Not collected by the main test run: it needs verl, which lives in its own venv
(:mod:`agentgym.integrations.venvs`); tests/test_verl.py runs this file with that venv's
python. Everything on verl's side is verl's own code: its generated trainer config, its
``AgentLoopWorker`` (registry lookup from ``agent_loop_config_path``, hydra instantiation,
padding into a ``DataProto``), its RL dataset reading parquet rows, its ``TokenOutput``.
Only the LLM server is ours: :class:`GeneratorServerManager` answers verl's server-manager
call (``LLMServerClient.generate``) with a tiny model (``agentgym.llm.generation.Generator``),
or :class:`OracleServerManager` answers with the env oracle's commands as token ids.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import pandas as pd
import pytest
import verl
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from agentgym.integrations import verl as adapter
from agentgym.llm.generation import Generator
from agentgym.tool_parsing import template_messages
from agentgym.tools import command_to_tool_call
from agentgym.train.rollout import chat_env

PROMPT_LENGTH, RESPONSE_LENGTH = 2048, 2048


class GeneratorServerManager(adapter.GeneratorServerManager):
    """The adapter's server manager over the tiny model, recording every call's prompt and sampled ids per request."""

    def __init__(self, generator: Generator) -> None:
        super().__init__(generator, default_max_tokens=RESPONSE_LENGTH)
        self.calls: dict[str, list[tuple[list[int], list[int]]]] = defaultdict(list)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any):
        params = {**sampling_params, "seed": len(self.calls) * 1000 + len(self.calls[request_id])}
        output = await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=params)
        self.calls[request_id].append((list(prompt_ids), output.token_ids))
        return output


class OracleServerManager(GeneratorServerManager):
    """Answers each call with the next of ``replies`` (the oracle's), as the model's ids plus end of turn."""

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer, self.replies = tokenizer, replies
        self.calls = defaultdict(list)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any):
        text = self.replies[sum(len(calls) for calls in self.calls.values())]
        ids = self.tokenizer(text, add_special_tokens=False).input_ids + [self.tokenizer.eos_token_id]
        self.calls[request_id].append((list(prompt_ids), ids))
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids) if sampling_params.get("logprobs") else None)


def oracle_replies(env_id: str, task_id: int, seed: int, action_format: str) -> list[str]:
    """The replies that play the oracle on this episode: ``Action: ...`` lines or tool-call blocks."""
    env = gym.make(env_id)
    try:
        env.reset(seed=seed, options={"task_id": task_id})
        base, replies, done = env.unwrapped, [], False
        while not done:
            command = base.extract_action(base.oracle_action())
            if action_format == "text":
                replies.append(f"Action: {command}")
            else:
                call = command_to_tool_call(base.tool_specs(), command)
                block = json.dumps({"name": call.name, "arguments": call.arguments})
                replies.append(f"<tool_call>\n{block}\n</tool_call>")
            _, _, terminated, truncated, _ = env.step(f"Action: {command}")
            done = terminated or truncated
        return replies
    finally:
        env.close()


def verl_config(
    model_path: Path, action_format: str = "text", max_turns: int = 6, max_tokens_per_turn: int = 48
) -> Any:
    """verl's generated PPO trainer config, the tiny model, the agentgym loop selected (docs/train-with-verl.md)."""
    config = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    loops = OmegaConf.load(adapter.CONFIG_PATH)
    loops[0].action_format = action_format
    loops[0].max_turns = max_turns
    loops[0].max_tokens_per_turn = max_tokens_per_turn
    loops_path = model_path.parent / f"agent_loops_{action_format}.yaml"
    OmegaConf.save(loops, loops_path)
    overrides = {
        "data": {
            "max_prompt_length": PROMPT_LENGTH,
            "max_response_length": RESPONSE_LENGTH,
            "return_raw_chat": True,
            "filter_overlong_prompts": False,
        },
        "actor_rollout_ref": {
            "model": {"path": str(model_path)},
            "rollout": {
                "name": "vllm",
                "prompt_length": PROMPT_LENGTH,
                "response_length": RESPONSE_LENGTH,
                "calculate_log_probs": True,
                "agent": {"agent_loop_config_path": str(loops_path), "default_agent_loop": adapter.AGENT_NAME},
            },
        },
    }
    return OmegaConf.merge(config, overrides)


def batch_of(config: Any, rows: list[dict[str, Any]], folder: Path) -> DataProto:
    """Rows -> parquet -> verl's RLHFDataset and collate_fn -> the DataProto its trainer hands the rollout."""
    path = folder / "rows.parquet"
    pd.DataFrame(rows).to_parquet(path)
    tokenizer = AutoTokenizer.from_pretrained(config.actor_rollout_ref.model.path)
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=tokenizer, config=config.data, processor=None)
    return DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))


def rollout(config: Any, server: Any, rows: list[dict[str, Any]], folder: Path) -> DataProto:
    """verl's ``AgentLoopWorker.generate_sequences`` on the rows (see :func:`batch_of`)."""
    batch = batch_of(config, rows, folder)
    return asyncio.run(AgentLoopWorker(config, llm_client=server).generate_sequences(batch))


def check_episode(
    output: DataProto, row: int, server: GeneratorServerManager, tokenizer: Any, tools: Any = None
) -> float:
    """The token-in/token-out invariants of one output row (``tools``: the env's, in tools mode); returns its reward."""
    prompt_mask = output.batch["attention_mask"][row, :PROMPT_LENGTH].bool()
    response_valid = output.batch["attention_mask"][row, PROMPT_LENGTH:].bool()
    prompt = output.batch["prompts"][row][prompt_mask].tolist()
    response = output.batch["responses"][row][response_valid].tolist()
    mask = output.batch["response_mask"][row][response_valid].tolist()
    (calls,) = [calls for calls in server.calls.values() if calls[0][0] == prompt]
    # Token in: every call got the sequence so far. Token out: the sampled ids sit in the response as sampled, mask 1.
    sampled_positions = []
    for prompt_ids, sampled in calls:
        offset = len(prompt_ids) - len(prompt)
        assert prompt_ids == prompt + response[:offset]
        assert response[offset : offset + len(sampled)] == sampled[: len(response) - offset]
        sampled_positions += range(offset, min(offset + len(sampled), len(response)))
    assert [i for i, m in enumerate(mask) if m] == sampled_positions  # everything else (env tokens) is 0
    assert sum(mask) < len(mask) or len(calls) == 1  # a multi-turn episode has env tokens
    # The sequence decodes to the conversation: the transcript rendered with the sampled text as replies.
    transcript = list(output.non_tensor_batch["messages"][row])
    replies = iter(calls)
    chat = []
    for message in transcript:
        if message["role"] == "assistant":
            sampled = next(replies)[1]
            ends = sampled and sampled[-1] == tokenizer.eos_token_id
            chat.append({"role": "assistant", "content": tokenizer.decode(sampled[:-1] if ends else sampled)})
        else:
            chat.append(message)
    last_reply = max(i for i, message in enumerate(chat) if message["role"] == "assistant")
    rendered = tokenizer.apply_chat_template(template_messages(chat[: last_reply + 1]), tools=tools, tokenize=False)
    decoded = tokenizer.decode(prompt + response)
    assert rendered.startswith(decoded) and len(rendered) - len(decoded) <= len(tokenizer.eos_token) + 1
    # The reward, on the last response token, is the score of the same episode replayed on a fresh env.
    reward = float(output.batch["rm_scores"][row].sum())
    assert output.batch["rm_scores"][row][len(response) - 1] == reward
    info = output.non_tensor_batch["extra_info"][row]
    env = chat_env(info["env_id"], {}, None, "tools" if tools else "text")
    try:
        env.reset(seed=info["seed"], options={"task_id": info["task_id"]})
        for message in transcript:
            if message["role"] == "assistant":
                _, _, _, _, step_info = env.step(message if message.get("tool_calls") else message["content"])
    finally:
        env.close()
    assert reward == pytest.approx(step_info["score"])
    return reward


@pytest.fixture(scope="module")
def generator(tiny_tool_model_path: Path) -> Generator:
    return Generator.from_pretrained(tiny_tool_model_path)


@pytest.mark.parametrize("env_id", ["Sokoban-v0", "WebShop-v0"])
def test_tiny_model_episodes_through_verls_worker(
    env_id: str, generator: Generator, tiny_tool_model_path: Path, tmp_path: Path
):
    """Rows without agent_name: verl's default_agent_loop=agentgym picks the loop (from agent_loop_config_path)."""
    rows = adapter.dataset_rows(env_id, task_ids=[0, 1], seeds=[5, 6])
    for row in rows:
        del row["agent_name"]
    server = GeneratorServerManager(generator)
    output = rollout(verl_config(tiny_tool_model_path), server, rows, tmp_path)
    assert output.batch["prompts"].shape == (2, PROMPT_LENGTH)
    assert output.batch["responses"].shape == (2, RESPONSE_LENGTH)
    assert len(server.calls) == 2
    for row in range(2):
        check_episode(output, row, server, generator.tokenizer)
        assert output.non_tensor_batch["env_id"][row] == env_id
        replies = output.non_tensor_batch["replies"][row]
        assert output.non_tensor_batch["__num_turns__"][row] == 1 + 2 * replies  # first observation, replies, answers
    # The random model's replies are mostly invalid actions: the episodes run several turns.
    assert sorted(len(calls) for calls in server.calls.values()) == sorted(output.non_tensor_batch["replies"])
    assert min(len(calls) for calls in server.calls.values()) > 1
    assert output.batch["rollout_log_probs"].shape == (2, RESPONSE_LENGTH)
    # Logprobs sit where the model sampled, zeros elsewhere.
    assert bool(((output.batch["rollout_log_probs"] != 0) <= output.batch["response_mask"].bool()).all())


@pytest.mark.parametrize("action_format", ["text", "tools"])
@pytest.mark.parametrize(("env_id", "task_id"), [("Sokoban-v0", 3), ("WebShop-v0", 0)])
def test_oracle_episode_scores_one(
    env_id: str, task_id: int, action_format: str, tiny_tool_model_path: Path, tmp_path: Path
):
    """The oracle's replies, sent as the model's ids, solve the episode: reward 1 from the env, tool results masked."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_tool_model_path)
    server = OracleServerManager(tokenizer, oracle_replies(env_id, task_id, seed=7, action_format=action_format))
    rows = adapter.dataset_rows(env_id, task_ids=[task_id], seeds=[7])
    output = rollout(verl_config(tiny_tool_model_path, action_format), server, rows, tmp_path)
    env = gym.make(env_id)
    tools = env.unwrapped.tools() if action_format == "tools" else None
    env.close()
    assert check_episode(output, 0, server, tokenizer, tools) == pytest.approx(1.0)
    assert output.non_tensor_batch["success"][0] and output.non_tensor_batch["replies"][0] == len(server.replies)
    roles = {message["role"] for message in output.non_tensor_batch["messages"][0]}
    assert ("tool" in roles) == (action_format == "tools" and len(server.replies) > 1)


def test_a_row_without_an_env_is_a_clear_error(tiny_tool_model_path: Path, tmp_path: Path):
    config = verl_config(tiny_tool_model_path)
    loops = OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path)
    loops[0].env_id = None
    OmegaConf.save(loops, config.actor_rollout_ref.rollout.agent.agent_loop_config_path)
    rows = adapter.dataset_rows("Sokoban-v0", task_ids=[0])
    rows[0]["extra_info"]["env_id"] = ""
    with pytest.raises(ValueError, match="no env to play"):
        rollout(config, OracleServerManager(None, []), rows, tmp_path)
