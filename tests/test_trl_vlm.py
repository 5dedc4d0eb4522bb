"""TRL's real ``GRPOTrainer`` (trl 1.16) training a tiny vision-language model on screenshots, on CPU.

The model is a tiny random LLaVA (CLIP vision tower, Llama text model; ``tests/tiny_vlm.py``) with
Qwen's chat format (TRL's ``qwen3_vl.jinja``, whose tool calls TRL parses), loaded with its
``LlavaProcessor`` as ``processing_class``: TRL's vision-language path. (A Qwen2-VL cannot be
trained here: TRL needs a ``ProcessorMixin`` and ``Qwen2VLProcessor`` cannot be built without
torchvision.) The env is FrozenLake-Visual-v0 on 2x2 lakes, seen as 48x48 images.

* Tool calls (``environment_factory(..., images="screenshot")``): every observation, the first
  and each tool result, reaches the model as an image block; TRL expands it into image tokens,
  masks them out of the loss with the rest of the result, and feeds its pixels to the forward passes.
* Text replies (``rollout_func``): the first screenshot is the dataset's ``image`` column, as TRL's
  VLM GRPO takes it; later screenshots are the text ``LATER_SCREENSHOT`` (TRL's loss forward takes
  only the dataset's images).

Each test first teaches the model the reply's form for a few supervised steps (a move in a random
direction), so that some sampled episodes reach the goal and some not: GRPO's advantages are then
non-zero and two GRPO steps move the parameters. A hook on the vision tower records every pixel
tensor the model was given; each is the processor's pixels of a screenshot the env rendered.
"""

from __future__ import annotations

import importlib.resources
import json
import random
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")
pytest.importorskip("PIL")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from test_trl import grpo_config, padded_rows, train_two_grpo_steps  # noqa: E402
from tiny_vlm import build_tiny_llava, build_tiny_qwen2_vl, image_only_qwen2_vl_processor  # noqa: E402
from transformers import AutoModelForImageTextToText, AutoProcessor  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402
from trl import GRPOTrainer  # noqa: E402

import agentgym  # noqa: E402,F401
from agentgym.images import ImageOptions, decode_image, image_url, is_image_part  # noqa: E402
from agentgym.integrations.trl import LATER_SCREENSHOT, grpo_kwargs  # noqa: E402
from agentgym.wrappers.chat import ChatWrapper  # noqa: E402

ENV_ID = "FrozenLake-Visual-v0"
ENV_KWARGS = {"size": 2}
TASKS = [0, 4]  # the 2x2 lakes "S F / F G" and "S H / F G"
DIRECTIONS = ("left", "down", "right", "up")


#: Qwen3-VL's chat template as TRL ships it: TRL knows how to parse its tool calls.
QWEN_VL_TEMPLATE = importlib.resources.files("trl").joinpath("chat_templates/qwen3_vl.jinja").read_text()


@pytest.fixture(scope="module")
def llava_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-llava-qwen-format")
    return build_tiny_llava(folder, context_length=4096, qwen_chat_template=QWEN_VL_TEMPLATE)


@pytest.fixture(scope="module")
def qwen_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("tiny-qwen2-vl"), context_length=4096)


def split_images(pixels: torch.Tensor, grid: torch.Tensor | None) -> list[torch.Tensor]:
    """One tensor per image: LLaVA's pixels are one row per image, Qwen2-VL's a block of patches per image grid."""
    if grid is None:
        return list(pixels)
    return list(torch.split(pixels, grid.prod(-1).tolist()))


class PixelRecorder:
    """Every image's pixels the model's vision tower was given (generation and loss passes alike)."""

    def __init__(self, model: Any) -> None:
        self.seen: list[torch.Tensor] = []

        def record(module: Any, args: tuple, kwargs: dict) -> None:
            pixels = kwargs.get("pixel_values", kwargs.get("hidden_states", args[0] if args else None))
            grid = kwargs.get("grid_thw", args[1] if len(args) > 1 else None)
            self.seen += [image.detach().clone() for image in split_images(pixels, grid)]

        tower = getattr(model.model, "vision_tower", None) or model.model.visual
        self.handle = tower.register_forward_pre_hook(record, with_kwargs=True)


def screenshot(task: int, moves: list[str]) -> Any:
    """The screenshot the env renders on ``task`` after ``moves`` (an independent env, not the trainer's)."""
    env = gym.make(ENV_ID, disable_env_checker=True, **ENV_KWARGS)
    observation, _ = env.reset(seed=0, options={"task_id": task})
    for move in moves:
        observation, *_ = env.step(f"Action: {move}")
    env.close()
    from PIL import Image

    return Image.fromarray(observation["screenshot"])


def assert_seen_are_screenshots(recorder: PixelRecorder, processor: Any, screenshots: list[Any]) -> None:
    """Each image the model saw is the processor's pixels of one of ``screenshots``."""
    features = processor.image_processor(images=screenshots, return_tensors="pt")
    expected = split_images(features["pixel_values"], features.get("image_grid_thw"))
    assert recorder.seen
    for image in recorder.seen:
        assert any(
            image.shape == candidate.shape and torch.allclose(image.float(), candidate, atol=1e-5)
            for candidate in expected
        )


def teach(model: Any, processor: Any, chats: list[list[dict]], replies: list[str], tools: list | None) -> None:
    """A few supervised steps on every (chat, reply) pair, so that ``model`` answers with one of ``replies``."""
    tokenizer = processor.tokenizer
    rows, images = [], []
    for chat in chats:
        features = processor.apply_chat_template(
            chat, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
        )
        for reply in replies:
            reply_ids = tokenizer.encode(reply, add_special_tokens=False) + [tokenizer.eos_token_id]
            rows.append((features["input_ids"][0].tolist(), reply_ids))
            images.append({key: features[key] for key in ("pixel_values", "image_grid_thw") if key in features})
    input_ids, labels, attention = padded_rows(rows, tokenizer.pad_token_id)
    inputs = {key: torch.cat([image[key] for image in images]) for key in images[0]}
    if "image_grid_thw" in inputs:  # Qwen-VL: image tokens marked for the M-RoPE positions
        inputs["mm_token_type_ids"] = (input_ids == model.config.image_token_id).long()
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(25):
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels, **inputs).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def random_walks(system_prompt: str) -> list[list[dict]]:
    """ChatWrapper chats with screenshots (OpenAI-style parts): the start and two random moves into each task."""
    rng = random.Random(0)
    env = ChatWrapper(
        gym.make(ENV_ID, disable_env_checker=True, **ENV_KWARGS), system_prompt, images=ImageOptions("screenshot")
    )
    chats = []
    for task in TASKS:
        messages, _ = env.reset(seed=0, options={"task_id": task})
        for _ in range(3):
            chats.append(messages)
            messages, _, terminated, truncated, _ = env.step(f"Action: {rng.choice(DIRECTIONS)}")
            if terminated or truncated:
                break
    env.close()
    return chats


def trl_parts(content: Any, later: bool) -> Any:
    """OpenAI-style content as TRL's blocks: images as PIL (``later`` ones as the rollout's text)."""
    if not isinstance(content, list):
        return content
    return [
        (
            {"type": "text", "text": LATER_SCREENSHOT}
            if later
            else {"type": "image", "image": decode_image(image_url(part))}
        )
        if is_image_part(part)
        else part
        for part in content
    ]


def called_a_tool(completions: list[list[dict]], **kwargs: Any) -> list[float]:
    """A format reward, as tool-use GRPO recipes add: 1 for an episode whose replies called a tool."""
    return [float(any(message["role"] == "tool" for message in completion)) for completion in completions]


def test_tool_results_carry_screenshots_into_grpo(qwen_folder: Path, tmp_path: Path) -> None:
    """environment_factory with images: each tool result's screenshot is an image TRL's model sees and trains with."""
    model = AutoModelForImageTextToText.from_pretrained(qwen_folder)
    processor = image_only_qwen2_vl_processor(qwen_folder, QWEN_VL_TEMPLATE)
    kwargs = grpo_kwargs(
        ENV_ID, TASKS, action_format="tools", env_kwargs=ENV_KWARGS, system_prompt="Lake.", images="screenshot"
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=processor,
        reward_funcs=[called_a_tool],
        args=grpo_config(
            tmp_path / "out", per_device_train_batch_size=8, max_completion_length=256, max_tool_calling_iterations=2
        ),
        **kwargs,
    )
    assert trainer.reward_func_names == ["called_a_tool", "FrozenLake_Visual_v0"]
    # Teach the tool call's form on the prompts as TRL builds them: the system turn, then the user
    # turn that reset() fills with the first observation (the screenshot and its text).
    environment = kwargs["environment_factory"]()
    chats = []
    for row in kwargs["train_dataset"]:
        system, user = row["prompt"]
        first = environment.reset(**row)
        assert first[0]["type"] == "image" and first[1]["type"] == "text"
        chats.append([system, {**user, "content": [{"type": "text", "text": user["content"]}, *first]}])
    environment._close()
    replies = [
        "<tool_call>\n" + json.dumps({"name": "move", "arguments": {"direction": direction}}) + "\n</tool_call>"
        for direction in DIRECTIONS
    ]
    teach(model, processor, chats, replies, [get_json_schema(tool) for tool in trainer.tools])

    recorder = PixelRecorder(model)
    spy, moved = train_two_grpo_steps(trainer, model, reward_column=1)  # get_reward: the env's score
    assert moved, "GRPO steps with non-zero advantages left every parameter as it was"
    # Tool results brought images: the loss pass had more images than prompts, their tokens masked out.
    image_token = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert any(sum(batch["num_images"]) > len(batch["num_images"]) for batch in spy.batches)
    for batch in spy.batches:
        in_completions = batch["completion_ids"] == image_token
        assert not (in_completions & batch["tool_mask"].bool()).any()
        assert in_completions.sum() == 4 * (sum(batch["num_images"]) - len(batch["num_images"]))  # 4 per image
    # Every image the model saw is a screenshot the env renders: the 2x2 lakes with the player on any square.
    screens = [screenshot(task, moves) for task in TASKS for moves in ([], ["right"], ["down"], ["down", "right"])]
    assert_seen_are_screenshots(recorder, processor, screens)
    assert len(recorder.seen) > 8  # the prompts' screenshots and the tool results'


def test_rollout_func_prompt_carries_the_first_screenshot(llava_folder: Path, tmp_path: Path) -> None:
    """rollout_func with images: the first screenshot is the image column, seen in sampling and in the loss."""
    model = AutoModelForImageTextToText.from_pretrained(llava_folder)
    processor = AutoProcessor.from_pretrained(llava_folder, padding_side="left")
    kwargs = grpo_kwargs(ENV_ID, TASKS, env_kwargs=ENV_KWARGS, max_turns=4, system_prompt="Lake.", images="screenshot")
    dataset = kwargs["train_dataset"]
    for row, task in zip(dataset, TASKS):  # the image column is the env's first screenshot, the prompt its text
        assert np.array_equal(np.asarray(row["image"].convert("RGB")), np.asarray(screenshot(task, [])))
        assert all(isinstance(message["content"], str) for message in row["prompt"])
    chats = [
        [{**message, "content": trl_parts(message["content"], later=index > 1)} for index, message in enumerate(chat)]
        for chat in random_walks("Lake.")
    ]
    teach(model, processor, chats, [f"Action: {direction}" for direction in DIRECTIONS], None)

    trainer = GRPOTrainer(
        model=model,
        processing_class=processor,
        args=grpo_config(tmp_path / "out", per_device_train_batch_size=8, max_completion_length=512),
        **kwargs,
    )
    recorder = PixelRecorder(model)
    spy, moved = train_two_grpo_steps(trainer, model, reward_column=0)
    assert {score for scores in spy.env_scores for score in scores} == {0.0, 1.0}
    assert moved, "GRPO steps with non-zero advantages left every parameter as it was"
    image_token = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    for batch in spy.batches:
        assert batch["num_images"] == [1] * 8  # the prompt's screenshot, in the loss pass
        assert (batch["prompt_ids"] == image_token).any(dim=1).all()
        assert not (batch["completion_ids"] == image_token).any()  # later screenshots are text
    assert_seen_are_screenshots(recorder, processor, [screenshot(task, []) for task in TASKS])
    kwargs["rollout_func"].close()
