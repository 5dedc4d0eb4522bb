"""OpenRLHF's own multi-turn agent executor playing agentgym envs (run by tests/test_openrlhf.py).

Not collected by the main test run: it needs ``openrlhf``, which lives in its own venv
(:mod:`agentgym.integrations.venvs`, entry ``openrlhf``); tests/test_openrlhf.py runs this file with
that venv's python. The executor is OpenRLHF's ``MultiTurnAgentExecutor.execute`` (via
:class:`AgentGymExecutor`); the engine is scripted (oracle replies as token ids) or
:class:`LocalEngine` over a tiny model, standing in for OpenRLHF's vLLM rollout actor.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import pytest
from openrlhf.utils import agent as openrlhf_agent
from transformers import AutoTokenizer

from agentgym.contract.tools import command_to_tool_call
from agentgym.integrations import openrlhf as adapter
from agentgym.llm.generation import Generator
from agentgym.wrappers.chat import ChatWrapper


class OracleEngine:
    """Answers every prompt with the oracle's next command (as the model's ids, ending in end-of-turn)."""

    def __init__(self, tokenizer: Any, action_format: str, replies: list[str] | None = None) -> None:
        self.tokenizer, self.action_format, self.replies = tokenizer, action_format, replies
        self.sampled: list[list[int]] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        if self.replies is not None:
            text = self.replies[len(self.sampled)]
        else:
            base = adapter._EPISODE.get().instance.chat.unwrapped  # the env this episode plays
            command = base.extract_action(base.oracle_action())
            if self.action_format == "text":
                text = f"Action: {command}"
            else:
                call = command_to_tool_call(base.tool_specs(), command)
                text = f"<tool_call>\n{json.dumps({'name': call.name, 'arguments': call.arguments})}\n</tool_call>"
        ids = self.tokenizer(text, add_special_tokens=False).input_ids + [self.tokenizer.eos_token_id]
        self.sampled.append(ids)
        # OpenRLHF samples with skip_special_tokens=False: the text keeps the end-of-turn token.
        output = SimpleNamespace(token_ids=ids, text=self.tokenizer.decode(ids), finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


def execute(label: str | dict, engine: Any, tokenizer: Any, max_length: int = 4096, logprobs: int | None = None):
    params = adapter.EngineParams(max_tokens=None, logprobs=logprobs, temperature=1.0)
    return asyncio.run(adapter.AgentGymExecutor().execute("ignored", label, params, max_length, tokenizer, engine))


@pytest.fixture(scope="module")
def tokenizer(tiny_tool_model_path: Path) -> Any:
    return AutoTokenizer.from_pretrained(tiny_tool_model_path)


def test_the_agent_file_loads_as_openrlhf_loads_it(tmp_path: Path) -> None:
    """What ``--train.agent_func_path`` asks of the file (openrlhf.trainer.ray.vllm_engine._load_agent_executor)."""
    path = tmp_path / "agentgym_agent.py"
    path.write_text("from agentgym.integrations.openrlhf import AgentGymExecutor as AgentExecutor\n")
    spec = importlib.util.spec_from_file_location("agent_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.AgentExecutor, openrlhf_agent.AgentExecutorBase)
    assert isinstance(module.AgentExecutor(), openrlhf_agent.MultiTurnAgentExecutor)


@pytest.mark.parametrize("action_format", ["text", "tools"])
@pytest.mark.parametrize(("env_id", "task_id"), [("Sokoban-v0", 3), ("WebShop-v0", 0)])
def test_oracle_episodes_through_openrlhfs_executor(tokenizer: Any, env_id: str, task_id: int, action_format: str):
    engine = OracleEngine(tokenizer, action_format)
    label = json.dumps({"env_id": env_id, "task_id": task_id, "action_format": action_format})
    response = execute(label, engine, tokenizer)
    assert response["reward"] == pytest.approx(1.0) and float(response["scores"]) == pytest.approx(1.0)
    assert response["extra_logs"]["success"] == 1.0 and response["extra_logs"]["invalid_action"] == 0.0
    tokens, ranges = response["observation_tokens"], response["action_ranges"]
    # Token-in/token-out: every action range holds exactly the ids sampled, in order.
    assert [tokens[start:end] for start, end in ranges] == engine.sampled
    # Everything else is the prompt or the env: the chat template's text around the replies, with no loss.
    env_text = tokenizer.decode([tok for i, tok in enumerate(tokens) if not any(s <= i < e for s, e in ranges)])
    role = "<|im_start|>user" if action_format == "text" else "<tool_response>"
    assert env_text.count(role) == len(ranges) - (1 if action_format == "tools" else 0)
    after_prompt = [tok for i, tok in enumerate(tokens) if i >= ranges[0][0] and not any(s <= i < e for s, e in ranges)]
    assert "<|im_start|>assistant" in env_text and "<tool_call>" not in tokenizer.decode(after_prompt)
    if action_format == "tools":
        assert '"name": "' in env_text  # the tools, offered in the prompt by the chat template


def test_a_malformed_reply_gets_the_envs_explanation(tokenizer: Any) -> None:
    engine = OracleEngine(tokenizer, "text", replies=["I dance.\nAction: dance", "Action: up"])
    response = execute({"env_id": "Sokoban-v0", "task_id": 3, "max_turns": 2}, engine, tokenizer)
    first_end = response["action_ranges"][0][1]
    second_start = response["action_ranges"][1][0]
    feedback = tokenizer.decode(response["observation_tokens"][first_end:second_start])
    assert "Invalid action" in feedback and feedback.rstrip().endswith("<|im_start|>assistant")
    assert response["reward"] == 0.0 and len(response["action_ranges"]) == 2

    engine = OracleEngine(tokenizer, "tools", replies=['<tool_call>\n{"name": "jump", "arguments": {}}\n</tool_call>'])
    response = execute(
        {"env_id": "Sokoban-v0", "task_id": 3, "max_turns": 1, "action_format": "tools"}, engine, tokenizer
    )
    assert response["extra_logs"]["invalid_action"] == 1.0 and response["reward"] == 0.0


def test_labels_are_checked() -> None:
    assert adapter.parse_label("Sokoban-v0") == {"env_id": "Sokoban-v0"}
    with pytest.raises(ValueError, match="unknown label keys"):
        adapter.parse_label({"env_id": "Sokoban-v0", "temperature": 1})
    with pytest.raises(ValueError, match="action_format"):
        adapter.parse_label('{"env_id": "Sokoban-v0", "action_format": "xml"}')
    with pytest.raises(KeyError, match="unknown env id"):
        adapter.parse_label("NoSuchEnv-v0")
    rows = adapter.dataset_rows("Sokoban-v0", split="test", num_tasks=2, action_format="tools")
    assert len(rows) == 2 and json.loads(rows[0]["label"])["action_format"] == "tools"


def test_a_tiny_model_plays_episodes_through_the_local_engine(tiny_tool_model_path: Path, tokenizer: Any) -> None:
    generator = Generator.from_pretrained(tiny_tool_model_path, device="cpu")
    engine = adapter.LocalEngine(generator)
    labels = [json.dumps({"env_id": "Sokoban-v0", "task_id": i, "max_turns": 2}) for i in range(4)]
    # OpenRLHF gives each turn the whole budget left (max_length minus the tokens so far): keep it short.
    env = gym.make("Sokoban-v0")
    prompts = [ChatWrapper(env).reset(options={"task_id": i})[0] for i in range(4)]
    texts = [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in prompts]
    prompt_lengths = [len(tokenizer(text, add_special_tokens=False).input_ids) for text in texts]
    max_length = max(prompt_lengths) + 12

    async def play() -> list[dict]:
        executor = adapter.AgentGymExecutor()
        params = adapter.EngineParams(logprobs=1)
        return await asyncio.gather(
            *(executor.execute("x", lab, params, max_length, tokenizer, engine) for lab in labels)
        )

    responses = asyncio.run(play())
    assert engine.batches <= 2 * len(labels) - 1  # the episodes' turns were batched
    for response, prompt_length in zip(responses, prompt_lengths):
        assert 1 <= len(response["action_ranges"]) <= 2
        assert response["action_ranges"][0][0] == prompt_length  # the whole prompt, not truncated
        assert len(response["rollout_log_probs"]) == len(response["observation_tokens"])
        start, end = response["action_ranges"][0]
        assert all(lp < 0 for lp in response["rollout_log_probs"][start:end])
        assert response["extra_logs"]["steps"] == len(response["action_ranges"])


def test_the_examples_in_docs_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "train-with-openrlhf.md"
    agent_file, rows = page.read_text().split("```python\n")[1:3]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(agent_file.split("```")[0], "docs/train-with-openrlhf.md", "exec"), namespace)
    assert namespace["AgentExecutor"] is adapter.AgentGymExecutor
    exec(compile(rows.split("```")[0], "docs/train-with-openrlhf.md", "exec"), {})
    lines = (tmp_path / "sokoban_train.jsonl").read_text().splitlines()
    assert len(lines) == 2000
    assert lines[0] == rows.split("# ", 1)[1].split("\n")[0]
