"""A chat longer than the model's context: LLM policies leave out the oldest turns, as few as make room."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from asgi import serving_in_thread

pytest.importorskip("transformers")
pytest.importorskip("fastapi")

from agentgym.llm.generation import Generator
from agentgym.llm.policies.base import Episode, drop_oldest_turns, history_turns
from agentgym.llm.policies.hf import HFPolicy
from agentgym.llm.policies.openai_compat import OpenAIPolicy
from agentgym.llm.serve_model import create_app

MAX_NEW = 8


def chat(turns: int, system: bool = True) -> list[dict[str, str]]:
    """A system prompt, the task, then ``turns`` turns of a reply and an observation."""
    messages = [{"role": "system", "content": "Move up, down, left or right."}] if system else []
    messages.append({"role": "user", "content": "task: reach the goal"})
    for turn in range(turns):
        messages.append({"role": "assistant", "content": f"Action: up {turn}"})
        messages.append({"role": "user", "content": f"You moved up; observation {turn} of the grid, left right down"})
    return messages


def test_drop_oldest_turns_keeps_the_task_and_the_newest_turn() -> None:
    messages = chat(3)
    assert history_turns(messages) == [2, 4, 6]
    assert drop_oldest_turns(messages, 0) == messages
    assert drop_oldest_turns(messages, 1) == messages[:2] + messages[4:]
    assert drop_oldest_turns(messages, 9) == messages[:2] + messages[6:]  # the newest turn stays
    assert drop_oldest_turns(messages[:2], 1) == messages[:2]
    no_system = chat(2, system=False)
    assert drop_oldest_turns(no_system, 1) == no_system[:1] + no_system[3:]
    tools = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]},
        {"role": "tool", "tool_call_id": "a", "content": "result a"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "b"}]},
        {"role": "tool", "tool_call_id": "b", "content": "result b"},
    ]
    assert drop_oldest_turns(tools, 1) == tools[:1] + tools[3:]  # a call leaves with its results


def prompt_tokens(generator: Generator, messages: list[dict[str, str]]) -> int:
    """The chat's length in tokens, however long."""
    text = generator.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return len(generator.tokenizer(text, add_special_tokens=False).input_ids)


def test_hf_policy_leaves_out_as_few_turns_as_fit(tiny_model_path: Path) -> None:
    policy = HFPolicy(tiny_model_path, device="cpu", max_new_tokens=MAX_NEW)
    generator = policy.batcher.generator
    messages = chat(40)
    assert prompt_tokens(generator, messages) > generator.context_length  # the whole chat cannot be sent
    episode = Episode("e", 0, None)
    reply = asyncio.run(policy.act(messages, episode))
    dropped = episode.dropped_turns
    assert dropped > 0 and reply.dropped_turns == dropped
    budget = generator.context_length - MAX_NEW
    assert reply.prompt_tokens <= budget < prompt_tokens(generator, drop_oldest_turns(messages, dropped - 1))
    assert reply.finish_reason in ("stop", "length")
    # The next turn starts from the count it left out before (the history only grows).
    longer = messages + chat(1)[2:]
    asyncio.run(policy.act(longer, episode))
    assert episode.dropped_turns in (dropped, dropped + 1)
    # A chat that fits leaves nothing out.
    short = Episode("short", 0, None)
    assert asyncio.run(policy.act(chat(1), short)).dropped_turns == 0 == short.dropped_turns


def test_openai_policy_drops_turns_when_the_server_says_the_context_is_too_short(tiny_model_path: Path) -> None:
    generator = Generator.from_pretrained(tiny_model_path, device="cpu")
    messages = chat(40)
    with serving_in_thread(create_app(generator, "tiny")) as url:
        policy = OpenAIPolicy("tiny", url + "/v1", max_tokens=MAX_NEW)
        episode = Episode("e", 0, None)

        async def act() -> object:
            try:
                return await policy.act(messages, episode)
            finally:
                await policy.aclose()

        reply = asyncio.run(act())
    assert reply.dropped_turns == episode.dropped_turns > 0
    assert reply.prompt_tokens < generator.context_length
    assert prompt_tokens(generator, drop_oldest_turns(messages, episode.dropped_turns - 1)) >= generator.context_length
    assert reply.finish_reason in ("stop", "length")


def test_an_episode_whose_task_outgrows_the_context_ends_failed_not_errored(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    """An 8x8 lake's first observation alone is longer than the tiny model's 256 tokens: in process and through
    serve-model, the runner ends each episode there, unsuccessful and marked ``stopped: context``, with no error."""
    from agentgym.evaluation.results import read_episodes
    from agentgym.evaluation.runner import EvalItem, run_eval

    item = EvalItem("FrozenLake-v0", 2, "test", max_turns=3, kwargs={"size": 8})
    generator = Generator.from_pretrained(tiny_model_path, device="cpu")
    with serving_in_thread(create_app(generator, "tiny")) as url:
        policies = {
            "hf": HFPolicy(tiny_model_path, device="cpu", max_new_tokens=MAX_NEW),
            "serve-model": OpenAIPolicy("tiny", url + "/v1", max_tokens=MAX_NEW),
        }
        for name, policy in policies.items():
            asyncio.run(run_eval(name, policy, [item], tmp_path / name))
            records = list(read_episodes(tmp_path / name).values())
            assert len(records) == 2, name
            for record in records:
                assert (record.status, record.error, record.stopped) == ("ok", None, "context"), name
                assert not record.success and record.truncated and record.steps == 0
                assert record.messages[-1]["role"] == "user"  # the observation it could not read
