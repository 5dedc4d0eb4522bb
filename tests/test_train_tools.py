"""The reference trainer with native tool calls: token-in/token-out stays exact, and a smoke run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from transformers import AutoTokenizer  # noqa: E402

from agentgym.contract.tool_parsing import template_messages  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict  # noqa: E402
from agentgym.train.rollout import ChatTokens, Sample, chat_env, make_slots, play_episodes  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402

SYSTEM = "Push the box onto the target."
MOVE = '<tool_call>\n{"name": "move", "arguments": {"direction": "%s"}}\n</tool_call>'


class ScriptedSampler:
    """Returns the next scripted token ids for every prompt; records the prompts."""

    context_length = 4096

    def __init__(self, replies: list[list[int]]) -> None:
        self.replies = replies
        self.prompts: list[list[int]] = []

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]:
        self.prompts += [list(prompt) for prompt in prompts]
        ids = self.replies.pop(0)
        return [Sample(list(ids), [-1.0] * len(ids)) for _ in prompts]


def test_tool_call_rollouts_are_token_exact(tiny_tool_model_path: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_tool_model_path)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    replies = [
        tokenizer(MOVE % "left", add_special_tokens=False).input_ids + [end],
        tokenizer("I think.\n" + MOVE % "down", add_special_tokens=False).input_ids + [end],
        tokenizer("Action: down", add_special_tokens=False).input_ids + [end],  # text, no call
    ]
    sampler = ScriptedSampler([list(ids) for ids in replies])
    env = chat_env("Sokoban-v0", {}, SYSTEM, "tools")
    (slot,) = make_slots([env], [("Sokoban-v0", 0, 0)], random.Random(0))
    chat_tokens = ChatTokens(tokenizer, [end])
    (trajectory,) = play_episodes([slot], sampler, chat_tokens, 3, lambda i, t: t)

    # The env was given the parsed calls, and answered each with a tool message.
    roles = [message["role"] for message in env.transcript]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    assert env.transcript[2]["tool_calls"][0]["function"]["arguments"] == '{"direction": "left"}'
    assert env.transcript[4]["content"] == "I think."
    assert env.transcript[3]["content"].startswith("You moved left")

    # prompt + sampled + template delta + sampled + ...; the sampled ids are kept as they were sampled.
    prompt = chat_tokens.prompt(env.transcript[:2], env.tools)
    assert sampler.prompts[0] == prompt
    assert trajectory.token_ids[: len(prompt)] == prompt and not any(trajectory.loss_mask[: len(prompt)])
    position = len(prompt)
    for turn, ids in enumerate(replies):
        assert trajectory.token_ids[position : position + len(ids)] == ids
        assert all(trajectory.loss_mask[position : position + len(ids)])
        assert trajectory.turn_ends[turn] == position + len(ids) - 1
        position += len(ids)
        if turn < 2:
            assert sampler.prompts[turn + 1] == trajectory.token_ids[: next_sample(trajectory, position)]
            position = next_sample(trajectory, position)
    assert position == len(trajectory.token_ids)

    # Re-rendering the conversation gives the same ids: the template is prefix-stable here.
    text = tokenizer.apply_chat_template(template_messages(env.transcript[:7]), tools=env.tools, tokenize=False)
    rendered = tokenizer(text, add_special_tokens=False).input_ids
    assert rendered[: len(trajectory.token_ids)] == trajectory.token_ids
    assert tokenizer.decode(rendered[len(trajectory.token_ids) :]) == "\n"  # the newline after the last <|im_end|>


def next_sample(trajectory, start: int) -> int:
    """Where the next sampled turn begins after ``start`` (the end of the env's delta)."""
    position = start
    while position < len(trajectory.loss_mask) and not trajectory.loss_mask[position]:
        position += 1
    return position


def test_trainer_smoke_in_tools_mode(tiny_tool_model_path: Path, tmp_path: Path) -> None:
    """One GRPO iteration and a greedy evaluation, both playing native tool calls."""
    config: TrainConfig = from_dict(
        TrainConfig,
        {
            "model": {"path": str(tiny_tool_model_path), "device": "cpu", "lora": {"r": 4, "alpha": 8}},
            "envs": [{"id": "Sokoban-v0"}],
            "algorithm": {"name": "grpo", "group_size": 2},
            "rollout": {"max_new_tokens": 6, "max_turns": [[0, 2]], "action_format": "tools"},
            "out": str(tmp_path / "run"),
            "iterations": 1,
            "groups_per_iteration": 1,
            "minibatch_size": 2,
            "eval_episodes": 1,
            "tensorboard": False,
        },
    )
    trainer = Trainer(config)
    try:
        trajectories = trainer.rollout()
        assert all(env.tools for env in trainer.envs[0])
        for trajectory in trajectories:
            assert trajectory.turns >= 1 and sum(trajectory.loss_mask) > 0
        metrics = trainer.step()
        assert metrics["model_tokens"] > 0 and metrics["loss"] == metrics["loss"]  # not NaN
        trainer.evaluate()
    finally:
        trainer.close()
    run = json.loads((tmp_path / "run" / "eval" / "iteration-000001" / "run.json").read_text())
    assert run["action_format"] == "tools"
