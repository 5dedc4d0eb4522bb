"""verl's own rollout worker playing agentgym envs through our agent loop (run by tests/test_verl.py).

Not collected by the main test run: it needs verl, which lives in its own venv
(:mod:`agentgym.integrations.venvs`); tests/test_verl.py runs this file with that venv's
python. Everything on verl's side is verl's own code: its generated trainer config, its
``AgentLoopWorker`` (registry lookup from ``agent_loop_config_path``, hydra instantiation,
padding into a ``DataProto``), its RL dataset reading parquet rows, its ``TokenOutput``.
Only the LLM server is ours: :class:`GeneratorServerManager` answers verl's server-manager
call (``LLMServerClient.generate``) with a tiny model (``agentgym.llm.generation.Generator``),
or :class:`OracleServerManager` answers with the env oracle's commands as token ids.

Screen envs: a tiny Qwen2-VL (``tests/tiny_vlm.py``) plays Desktop-v0 from its screenshots. verl
loads the model's processor itself (``hf_processor``: transformers' ``Qwen2VLProcessor`` with
Qwen-VL's M-RoPE position function bound to it); the one stand-in is that processor's video
processor, which needs torchvision (see :func:`qwen2_vl_processor_without_torchvision`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import pandas as pd
import pytest
import torch
import verl
from hydra.errors import InstantiationException
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.utils.model import extract_multi_modal_inputs
from verl.workers.rollout.replica import TokenOutput

from agentgym.contract.tool_parsing import template_messages
from agentgym.contract.tools import command_to_tool_call
from agentgym.integrations import verl as adapter
from agentgym.llm.generation import Generator
from agentgym.llm.vision import VisionGenerator
from agentgym.train.rollout import ChatTokens, chat_env

PROMPT_LENGTH, RESPONSE_LENGTH = 2048, 2048


class GeneratorServerManager(adapter.GeneratorServerManager):
    """The adapter's server manager over the tiny model, recording every call's prompt and sampled ids per request."""

    def __init__(self, generator: Generator) -> None:
        super().__init__(generator, default_max_tokens=RESPONSE_LENGTH)
        self.calls: dict[str, list[tuple[list[int], list[int]]]] = defaultdict(list)
        #: Per request, how many images each call sent (verl's ``image_data``).
        self.images_sent: dict[str, list[int]] = defaultdict(list)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any):
        params = {**sampling_params, "seed": len(self.calls) * 1000 + len(self.calls[request_id])}
        output = await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=params, **kwargs)
        self.calls[request_id].append((list(prompt_ids), output.token_ids))
        self.images_sent[request_id].append(len(kwargs.get("image_data") or ()))
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
    model_path: Path,
    action_format: str = "text",
    max_turns: int = 6,
    max_tokens_per_turn: int = 48,
    observation: str = "text",
    max_pixels: int | None = None,
) -> Any:
    """verl's generated PPO trainer config, the tiny model, the agentgym loop selected (docs/train-with-verl.md)."""
    config = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    loops = OmegaConf.load(adapter.CONFIG_PATH)
    loops[0].action_format = action_format
    loops[0].max_turns = max_turns
    loops[0].max_tokens_per_turn = max_tokens_per_turn
    loops[0].observation = observation
    if max_pixels is not None:
        loops[0].max_pixels = max_pixels
    loops_path = model_path.parent / f"agent_loops_{action_format}_{observation}.yaml"
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
    # An image is one placeholder in the template's text and its expanded run of image tokens in the ids.
    decoded = re.sub(r"(<\|image_pad\|>)+", "<|image_pad|>", tokenizer.decode(prompt + response))
    assert rendered.startswith(decoded) and len(rendered) - len(decoded) <= len(tokenizer.eos_token) + 1
    # The reward, on the last response token, is the score of the same episode replayed on a fresh env.
    reward = float(output.batch["rm_scores"][row].sum())
    assert output.batch["rm_scores"][row][len(response) - 1] == reward
    info = output.non_tensor_batch["extra_info"][row]
    env = chat_env(info["env_id"], json.loads(info["env_kwargs"]), None, "tools" if tools else "text")
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


# ---- screen envs: a vision-language model sees the screenshots ---------------------------------------------------

SCREEN_PIXELS = 112 * 84  # each screenshot scaled to about 112x84: a dozen image tokens for the tiny Qwen2-VL


@pytest.fixture(scope="module")
def tiny_qwen2_vl_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_vlm import build_tiny_qwen2_vl

    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("qwen2_vl") / "model")


@pytest.fixture
def qwen2_vl_processor_without_torchvision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lets ``Qwen2VLProcessor.from_pretrained`` (which verl's ``hf_processor`` reaches through
    ``AutoProcessor``) load the folder on this machine.

    The processor holds a video processor, and Qwen2-VL's needs torchvision, whose registry wheels
    are CUDA builds that cannot be installed next to this CPU torch. It is the one stand-in: the
    processor is transformers' own class with the folder's tokenizer and image processor (the PIL
    one); no video is ever sent. verl's ``hf_processor`` then runs as it does on a GPU machine.
    """
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil, Qwen2VLProcessor
    from transformers.processing_utils import ProcessorMixin

    class NoVideoProcessor(ProcessorMixin.get_possibly_dynamic_module("BaseVideoProcessor")):
        def __init__(self, merge_size: int) -> None:
            self.merge_size = merge_size

        def to_dict(self) -> dict[str, Any]:
            return {"merge_size": self.merge_size}

    def from_pretrained(cls: type, path: str, **kwargs: Any) -> Any:
        tokenizer = AutoTokenizer.from_pretrained(path)
        images = Qwen2VLImageProcessorPil.from_pretrained(path)
        return cls(images, tokenizer, NoVideoProcessor(images.merge_size), chat_template=tokenizer.chat_template)

    monkeypatch.setattr(Qwen2VLProcessor, "from_pretrained", classmethod(from_pretrained))


@pytest.mark.usefixtures("qwen2_vl_processor_without_torchvision")
def test_screenshots_reach_the_model_and_verls_batch(tiny_qwen2_vl_path: Path, tmp_path: Path):
    """Desktop-v0 from its screenshots and Sokoban-v0 (text) in one batch through verl's worker, a tiny Qwen2-VL.

    Each server call gets the screenshots so far (``image_data``) with their image tokens in the prompt;
    verl's worker turns ``multi_modal_data`` into the batch's pixel values, image grids and M-RoPE
    positions; a forward pass of the model over that batch row (what verl's actor computes) gives the
    sampled tokens the logprobs the sampler gave them, so training sees the screens the rollout saw.
    """
    generator = VisionGenerator.from_pretrained(tiny_qwen2_vl_path)
    server = GeneratorServerManager(generator)
    rows = adapter.dataset_rows("Desktop-v0", task_ids=[0], seeds=[5]) + adapter.dataset_rows("Sokoban-v0", [0], [6])
    config = verl_config(
        tiny_qwen2_vl_path, max_turns=3, max_tokens_per_turn=16, observation="screenshot", max_pixels=SCREEN_PIXELS
    )
    output = rollout(config, server, rows, tmp_path)
    tokenizer = generator.tokenizer
    image_token, vision_start = (tokenizer.convert_tokens_to_ids(t) for t in ("<|image_pad|>", "<|vision_start|>"))
    for row in range(2):
        check_episode(output, row, server, tokenizer)

    # Desktop-v0: one screenshot per observation the model was shown, each call sent the images its prompt holds.
    valid = output.batch["attention_mask"][0].bool()
    ids = output.batch["input_ids"][0][valid]
    transcript = output.non_tensor_batch["messages"][0]
    shown = sum(part == {"type": "image"} for message in transcript for part in message["content"])
    (request,) = [key for key, calls in server.calls.items() if vision_start in calls[0][0]]
    sent = server.images_sent[request]
    assert sent == [sum(t == vision_start for t in prompt) for prompt, _ in server.calls[request]]
    assert sent == list(range(1, len(sent) + 1)) and len(sent) == output.non_tensor_batch["replies"][0] > 1
    inputs = output.non_tensor_batch["multi_modal_inputs"][0]
    grids = inputs["image_grid_thw"]
    assert len(grids) == int((ids == vision_start).sum()) >= len(sent) and shown >= len(grids)
    assert int((ids == image_token).sum()) == int(grids.prod(-1).sum()) // 4  # Qwen2-VL merges 2x2 patches
    assert inputs["pixel_values"].shape[0] == int(grids.prod(-1).sum())
    # verl's M-RoPE positions (text row, then time/height/width): the image tokens' differ from the text positions.
    positions = output.batch["position_ids"][0][:, valid]
    assert positions.shape[0] == 4 and not torch.equal(positions[1], positions[2])

    # Training sees what the rollout saw: the model over verl's batch row gives the sampled logprobs.
    model_inputs = extract_multi_modal_inputs([inputs])
    model_inputs.pop("images_seqlens", None)  # for verl's packed-attention patch; the HF forward takes none
    with torch.no_grad():
        logits = (
            generator.model(input_ids=ids[None], position_ids=positions[:, None, :], **model_inputs).logits[0].float()
        )
    prompt_length = int(output.batch["attention_mask"][0, :PROMPT_LENGTH].sum())
    response_valid = output.batch["attention_mask"][0, PROMPT_LENGTH:].bool()
    sampled = output.batch["response_mask"][0][response_valid].bool()
    targets = ids[prompt_length:]
    logprobs = torch.log_softmax(logits[prompt_length - 1 : -1], -1).gather(-1, targets[:, None])[:, 0]
    rollout_logprobs = output.batch["rollout_log_probs"][0][response_valid]
    assert sampled.sum() > 0
    assert torch.allclose(logprobs[sampled], rollout_logprobs[sampled], atol=2e-4)

    # Sokoban-v0 in the same batch: text only, its prompt the text path's ids.
    assert "pixel_values" not in output.non_tensor_batch["multi_modal_inputs"][1]
    sokoban = output.batch["prompts"][1][output.batch["attention_mask"][1, :PROMPT_LENGTH].bool()].tolist()
    first_chat = list(output.non_tensor_batch["messages"][1][:2])
    assert sokoban == ChatTokens(tokenizer, []).prompt(first_chat)
    assert image_token not in output.batch["input_ids"][1]


def test_screenshots_need_a_vision_language_model(tiny_tool_model_path: Path, tmp_path: Path):
    """observation='screenshot' with a text model (verl loads no processor for it) is a clear error."""
    config = verl_config(tiny_tool_model_path, observation="screenshot")
    rows = adapter.dataset_rows("Desktop-v0", task_ids=[0])
    with pytest.raises(InstantiationException, match="no multimodal processor"):  # hydra's, around our ValueError
        rollout(config, OracleServerManager(None, []), rows, tmp_path)
