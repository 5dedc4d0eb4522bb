"""A model that really generates a tool call, executed on both LLM paths.

The tiny tool model (``tests/tiny_model.py``, Qwen2.5's chat format) is trained here for a
few dozen optimizer steps on CPU until, for Sokoban's first prompt, it greedily writes a
Hermes ``<tool_call>`` block calling ``move`` with the oracle's first direction. Then:

* ``agentgym serve-model`` (a subprocess, as users start it) returns that reply as OpenAI
  ``tool_calls``, and the ``openai`` policy's reply, stepped through the ChatWrapper, moves
  the player as the call says;
* the trainer's rollout (``action_format: tools``, greedy) samples exactly the ids it was
  trained on, and the env executes the call parsed from them.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")

import gymnasium as gym  # noqa: E402
import httpx  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from agentgym.contract.registry import env_info  # noqa: E402
from agentgym.llm.generation import Generator, SamplingParams  # noqa: E402
from agentgym.llm.policies.base import Episode  # noqa: E402
from agentgym.llm.policies.openai_compat import OpenAIPolicy  # noqa: E402
from agentgym.train.config import RolloutConfig  # noqa: E402
from agentgym.train.rollout import ChatTokens, HFSampler, chat_env, make_slots, play_episodes  # noqa: E402
from agentgym.utils.sockets import free_port  # noqa: E402
from agentgym.wrappers.chat import ChatWrapper  # noqa: E402

ENV_ID = "Sokoban-v0"
MODEL = "tiny-tool-caller"
CALL = '<tool_call>\n{"name": "move", "arguments": {"direction": "%s"}}\n</tool_call>'


def first_task() -> tuple[int, str]:
    """A test task of the env and the oracle's first move on it (a move that changes the state)."""
    task_id = env_info(ENV_ID).splits.ids("test")[0]
    env = gym.make(ENV_ID)
    env.reset(options={"task_id": task_id})
    direction = env.unwrapped.oracle_action()
    env.close()
    return task_id, direction


def overfit(model_dir: Path, prompts: list[list[int]], reply: list[int], max_steps: int = 300) -> int:
    """Train the model in ``model_dir`` until it writes ``reply`` after each prompt; save it; return the steps.

    Only the last layer's MLP and the final norm learn: they act on each position's output
    alone, so the prompt's keys and values do not change as they learn, and each step runs
    just the reply's tokens on the prompt's cached keys and values (a long prompt costs
    one forward pass, not one per step). Done when, teacher-forced, every reply token is
    the argmax with probability above 0.9 (a margin that rounding differences between
    batched, cached and uncached decoding cannot flip): greedy decoding writes the reply.
    """
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.requires_grad_(False)
    learning = [*model.model.layers[-1].mlp.parameters(), *model.model.norm.parameters()]
    for parameter in learning:
        parameter.requires_grad_(True)
    optimizer = torch.optim.Adam(learning, lr=1e-2)
    with torch.no_grad():  # all but the prompt's last token, whose output predicts the reply's first
        caches = [model(torch.tensor([prompt[:-1]]), use_cache=True).past_key_values for prompt in prompts]
    inputs = [torch.tensor([[prompt[-1], *reply[:-1]]]) for prompt in prompts]
    target = torch.tensor(reply).expand(len(prompts), -1)
    threshold = torch.log(torch.tensor(0.9))
    for step in range(max_steps):
        logits = [model(ids, past_key_values=copy.deepcopy(cache)).logits for ids, cache in zip(inputs, caches)]
        logprobs = torch.log_softmax(torch.cat(logits), dim=-1)
        chosen = logprobs.gather(2, target[..., None])[..., 0]
        if bool((logprobs.argmax(-1) == target).all()) and bool(chosen.min() > threshold):
            model.save_pretrained(model_dir)
            return step
        (-chosen.mean()).backward()
        optimizer.step()
        optimizer.zero_grad()
    raise AssertionError(f"the tiny model did not learn the call in {max_steps} steps")


@pytest.fixture(scope="module")
def tool_caller(
    tiny_tool_model_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, int, str, list[int]]:
    """(model folder, task id, direction, the reply's token ids): a model trained to call ``move``."""
    model_dir = tmp_path_factory.mktemp("models") / MODEL
    tokenizer = AutoTokenizer.from_pretrained(tiny_tool_model_path)
    tokenizer.save_pretrained(model_dir)
    AutoModelForCausalLM.from_pretrained(tiny_tool_model_path).save_pretrained(model_dir)
    task_id, direction = first_task()
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    reply = tokenizer(CALL % direction, add_special_tokens=False).input_ids + [end]
    # The first prompt as the server renders the ChatWrapper's messages, and as the trainer's rollout does.
    chat = ChatWrapper(gym.make(ENV_ID), action_format="tools")
    messages, _ = chat.reset(options={"task_id": task_id})
    served = tokenizer.apply_chat_template(messages, tools=chat.tools, add_generation_prompt=True, tokenize=False)
    trained = chat_env(ENV_ID, {}, RolloutConfig().system_prompt, "tools")
    trained.reset(options={"task_id": task_id})
    prompts = {
        tuple(tokenizer(served, add_special_tokens=False).input_ids),
        tuple(ChatTokens(tokenizer, [end]).prompt(trained.transcript, trained.tools)),
    }
    chat.close()
    trained.close()
    steps = overfit(model_dir, [list(prompt) for prompt in prompts], reply)
    assert steps > 0  # the untrained model did not already write the call
    return model_dir, task_id, direction, reply


def test_serve_model_returns_the_generated_call_and_the_openai_policy_executes_it(
    tool_caller: tuple[Path, int, str, list[int]],
) -> None:
    model_dir, task_id, direction, _ = tool_caller
    port = free_port()
    command = [str(Path(sys.executable).with_name("agentgym")), "serve-model", str(model_dir), "--device", "cpu"]
    command += ["--port", str(port), "--served-model-name", MODEL, "--log-level", "warning"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, server.stdout.read()
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve-model did not come up in 120 s"
            time.sleep(0.3)

        env = ChatWrapper(gym.make(ENV_ID), action_format="tools")
        messages, _ = env.reset(options={"task_id": task_id})
        start = env.unwrapped.player

        # The raw answer: OpenAI tool_calls, parsed by the server from the generated block.
        body = {"model": MODEL, "messages": messages, "tools": env.tools, "temperature": 0, "max_tokens": 64}
        answer = httpx.post(f"{base_url}/chat/completions", json=body, timeout=60).json()
        (choice,) = answer["choices"]
        assert choice["finish_reason"] == "tool_calls", answer
        (call,) = choice["message"]["tool_calls"]
        assert call["type"] == "function" and call["function"]["name"] == "move"
        assert json.loads(call["function"]["arguments"]) == {"direction": direction}
        assert not choice["message"]["content"]

        # The openai policy reads it; the ChatWrapper executes it.
        policy = OpenAIPolicy(MODEL, base_url, max_tokens=64)
        reply = asyncio.run(policy.act(messages, Episode("generated-call", 0, env, tools=env.tools)))
        assert [c["function"]["name"] for c in reply.tool_calls or []] == ["move"]
        messages, reward, terminated, truncated, info = env.step(reply.action)
        assert not info.get("invalid_action") and messages[-1]["role"] == "tool"
        assert messages[-1]["tool_call_id"] == reply.tool_calls[0]["id"]
        # The player moved as the call says: the same as the text command on a fresh env.
        text_env = gym.make(ENV_ID)
        text_env.reset(options={"task_id": task_id})
        observation, *_ = text_env.step(f"Action: {direction}")
        assert env.unwrapped.player == text_env.unwrapped.player != start
        assert messages[-1]["content"] == observation
        text_env.close()
        env.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_trainer_rollout_samples_the_trained_ids_and_executes_the_call(
    tool_caller: tuple[Path, int, str, list[int]],
) -> None:
    model_dir, task_id, direction, reply = tool_caller
    rollout = RolloutConfig(action_format="tools", temperature=0.0)  # greedy, as the served call above
    generator = Generator.from_pretrained(model_dir, device="cpu")
    params = SamplingParams(temperature=rollout.temperature, top_p=rollout.top_p, max_new_tokens=64)
    sampler = HFSampler(generator, params, rollout.max_batch_size)
    chat_tokens = ChatTokens(generator.tokenizer, sorted(generator.eos_token_ids))
    env = chat_env(ENV_ID, {}, rollout.system_prompt, rollout.action_format)
    (slot,) = make_slots([env], [(ENV_ID, task_id, 0)], random.Random(0))
    (trajectory,) = play_episodes([slot], sampler, chat_tokens, 1, lambda i, turn: 1234 + turn)

    prompt = chat_tokens.prompt(env.transcript[:2], env.tools)
    assert trajectory.token_ids[: len(prompt)] == prompt
    assert trajectory.token_ids[len(prompt) :] == reply  # the sampled ids are the trained ids
    assert all(trajectory.loss_mask[len(prompt) :]) and not any(trajectory.loss_mask[: len(prompt)])
    assistant, tool = env.transcript[2:4]
    (call,) = assistant["tool_calls"]
    assert call["function"]["name"] == "move" and json.loads(call["function"]["arguments"]) == {"direction": direction}
    assert tool["role"] == "tool" and tool["tool_call_id"] == call["id"]
    text_env = gym.make(ENV_ID)
    text_env.reset(options={"task_id": task_id})
    observation, *_ = text_env.step(f"Action: {direction}")
    assert tool["content"] == observation and env.unwrapped.player == text_env.unwrapped.player
    text_env.close()
    env.close()
