"""Train agentgym envs with TRL's ``GRPOTrainer`` (trl 1.16), multi-turn, rewarded by the env.

TRL's GRPOTrainer offers two hooks for multi-turn episodes, and each action format uses one:

* ``action_format="text"``: ``rollout_func`` (:class:`AgentGymRollout`). Each prompt of
  the batch is one episode of an agentgym task played by agentgym's own token-in/token-out
  rollout (:func:`agentgym.train.rollout.play_episodes`, ``ChatWrapper`` messages: system
  prompt, observations as user turns, replies as assistant turns), with TRL generating each
  reply (its ``transformers`` or vLLM backend, its sampling settings). The completion TRL
  trains on is everything after the prompt: the sampled replies *and* the chat template's
  ids for the env's observations between them; the latter get ``env_mask`` 0, which TRL
  multiplies into the loss mask. The episode's ``info["score"]`` comes back as the reward
  column ``env_score`` that :func:`env_reward` returns.
* ``action_format="tools"``: ``environment_factory`` (:func:`environment_factory`). TRL
  plays the episode itself: it renders the env's function tools (``TextEnv.tools()``) into
  the prompt, parses the model's tool calls with the tokenizer's response template, calls
  the matching method of an :class:`AgentGymToolEnv` (one per rollout), appends the result
  as a ``tool`` message and generates again, until the model answers without a tool call.
  Tool-result tokens get ``tool_mask`` 0. The reward is the env's score through the
  class's ``get_reward`` (TRL adds it as a reward function named after the class).

:func:`grpo_kwargs` builds either set of ``GRPOTrainer`` arguments for an env id::

    from trl import GRPOConfig, GRPOTrainer
    from agentgym.integrations.trl import grpo_kwargs

    trainer = GRPOTrainer(model, args=GRPOConfig(...), **grpo_kwargs("WebShop-v0", tasks=64))
    trainer.train()

The dataset (:func:`task_dataset`) holds one row per task: ``prompt`` (the chat the
episode starts from), ``env_id``, ``task_id`` and ``seed``. TRL's OpenEnv examples use
the same ``environment_factory`` shape around an OpenEnv client; ``environment_factory(...,
openenv_url=...)`` plays the env through :class:`agentgym.integrations.openenv.AgentGymEnvClient`
against ``agentgym serve`` instead of in-process. See docs/train-with-trl.md.

Screenshots (``images="screenshot"`` or an ``ImageOptions``; the trainer's ``processing_class``
a vision-language model's processor): in tools mode every observation is TRL's multimodal
content (an image block and a text block), which TRL carries through its tool loop into
generation and the loss; in text mode the first screenshot is the dataset's ``image`` column and
later ones are the text :data:`LATER_SCREENSHOT`, because after a ``rollout_func`` TRL's loss
forward pass takes only the dataset's images. See docs/vlm.md.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from agentgym.contract.registry import env_info
from agentgym.images import (
    ImageOptions,
    ObservationMode,
    content_text,
    decode_image,
    image_part,
    is_image_part,
    screenshot_kwargs,
    text_part,
)
from agentgym.integrations._session import make_env
from agentgym.integrations.trl.tools import AgentGymToolEnv, environment_factory, image_options
from agentgym.llm.vision import message_image_urls
from agentgym.train.rollout import ChatTokens, EpisodeSlot, Sample, Trajectory, VisionChatTokens, play_episodes
from agentgym.wrappers.chat import (
    ACTION_FORMATS,
    DEFAULT_SYSTEM_PROMPT,
    DEFAULT_TOOLS_SYSTEM_PROMPT,
    ActionFormat,
    ChatWrapper,
    Message,
)

#: What a later screenshot becomes in ``rollout_func`` episodes: TRL's loss sees only the prompt's images.
LATER_SCREENSHOT = "[screenshot not shown: only the first screen is an image in this episode]"


def task_ids(
    env_id: str, tasks: int | Sequence[int], split: str = "train", env_kwargs: dict | None = None
) -> list[int]:
    """``tasks`` as a list of task ids: the first ``tasks`` ids of ``split``, or the ids given."""
    if not isinstance(tasks, int):
        return [int(task) for task in tasks]
    env = make_env(env_id, env_kwargs)
    try:
        splits = getattr(env.unwrapped, "splits", None) or env_info(env_id).splits
        ids = list(splits.ids(split))
    finally:
        env.close()
    if tasks > len(ids):
        raise ValueError(f"{env_id} has {len(ids)} {split} tasks, not {tasks}")
    return ids[:tasks]


def task_dataset(
    env_id: str,
    tasks: int | Sequence[int] = 64,
    *,
    split: str = "train",
    action_format: ActionFormat = "text",
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    rollout: AgentGymRollout | None = None,
) -> Any:
    """A ``datasets.Dataset`` of agentgym tasks, one row per task, for ``GRPOTrainer``.

    Columns: ``prompt`` (chat messages), ``env_id``, ``task_id``, ``seed`` (the env's
    reset seed, drawn from ``seed``). In text mode the prompt is what ``ChatWrapper.reset``
    gives (the system prompt and the first observation) and ``rollout`` (an
    :class:`AgentGymRollout`) learns which task each prompt is; in tools mode it is the
    system prompt and an empty user turn that :meth:`AgentGymToolEnv.reset` fills with the
    first observation (TRL appends what ``reset`` returns to the last user message).

    With screenshots (a ``rollout`` made with ``images=``), the first screenshot of each task is
    the ``image`` column (a PIL image, as TRL's vision-language GRPO takes it) and the prompt is
    the chat's text: TRL puts the image back before the first user turn's text, where
    ``ChatWrapper`` has it. (In tools mode the screenshot comes from ``AgentGymToolEnv.reset``.)
    """
    from datasets import Dataset

    if action_format not in ACTION_FORMATS:
        raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
    if action_format == "tools" and system_prompt == DEFAULT_SYSTEM_PROMPT:
        system_prompt = DEFAULT_TOOLS_SYSTEM_PROMPT
    ids = task_ids(env_id, tasks, split, env_kwargs)
    rng = random.Random(seed)
    seeds = [rng.getrandbits(31) for _ in ids]
    if action_format == "tools":
        head = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]
        prompts = [[*head, {"role": "user", "content": ""}] for _ in ids]
    else:
        if rollout is None:
            raise ValueError("a text-mode dataset needs the AgentGymRollout that will play it (rollout=...)")
        prompts = [rollout.register(task, task_seed) for task, task_seed in zip(ids, seeds)]
    columns: dict[str, list[Any]] = {"prompt": prompts}
    if any(message_image_urls(prompt) for prompt in prompts):
        columns["image"] = [_first_image(prompt) for prompt in prompts]
        columns["prompt"] = [_text_messages(prompt) for prompt in prompts]
    columns |= {"env_id": [env_id] * len(ids), "task_id": ids, "seed": seeds}
    return Dataset.from_dict(columns)


def _first_image(messages: list[Message]) -> Any:
    """The prompt's one screenshot (PIL); a clear error for a prompt with several."""
    urls = message_image_urls(messages)
    if len(urls) > 1:
        raise ValueError(f"a TRL prompt takes the image column's images only before its first turn; it has {len(urls)}")
    return decode_image(urls[0]) if urls else None


def _text_messages(messages: list[Message]) -> list[Message]:
    """``messages`` with each content as its text (images left out), as a dataset column stores them."""
    return [{**message, "content": content_text(message["content"])} for message in messages]


# ---- text replies: rollout_func ---------------------------------------------------------------


class TRLSampler:
    """agentgym's ``Sampler`` over the trainer's own generation (``GRPOTrainer._generate_single_turn``).

    One reply per token-id prompt, with TRL's generation config (temperature, top-p,
    ``max_completion_length`` new tokens) on its backend (transformers or vLLM). TRL
    samples from the global RNG (``GRPOConfig.seed``), so the per-sample seeds are unused.
    Prompts of a vision-language model (:class:`~agentgym.llm.vision.VisionPrompt`) go with their
    image inputs (pixel values, image grids; ``mm_token_type_ids`` per token), concatenated in
    prompt order as TRL batches a processor's output, and on vLLM with their images.
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        config = trainer.model.config
        self.context_length: int | None = getattr(config.get_text_config(), "max_position_embeddings", None)
        #: Whether every sample so far came with the backend's logprobs (vLLM does, transformers not).
        self.has_logprobs = True

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]:
        images, fields = self._image_inputs(prompts)
        ids = [list(prompt) for prompt in prompts]
        completion_ids, logprobs = self.trainer._generate_single_turn(ids, images, fields, 1)
        if logprobs is None:
            self.has_logprobs = False
            logprobs = [[0.0] * len(ids) for ids in completion_ids]
        return [Sample(list(ids), [float(value) for value in lps]) for ids, lps in zip(completion_ids, logprobs)]

    def _image_inputs(self, prompts: list[list[int]]) -> tuple[list[Any] | None, dict[str, Any]]:
        """The images (vLLM only) and the model's image inputs of ``prompts``, as TRL's generation takes them."""
        chunks = [getattr(prompt, "inputs", None) or {} for prompt in prompts]
        if not any(chunks):
            return None, {}
        import torch

        fields: dict[str, Any] = {}
        for key in {key for chunk in chunks for key in chunk}:
            if key == "mm_token_type_ids":  # per token: TRL left-pads lists of ids
                fields[key] = [
                    chunk[key][0].tolist() if key in chunk else [0] * len(prompt)
                    for chunk, prompt in zip(chunks, prompts)
                ]
            else:
                fields[key] = torch.cat([chunk[key] for chunk in chunks if key in chunk])
        images = None
        if getattr(self.trainer, "use_vllm", False):
            images = [[decode_image(url) for url in getattr(prompt, "image_urls", ())] or None for prompt in prompts]
        return images, fields


class AgentGymRollout:
    """TRL's ``rollout_func`` playing agentgym episodes in text replies (or tool calls) with ChatWrapper.

    ``rollout(prompts, trainer)`` plays one episode per prompt (a prompt of
    :func:`task_dataset` made with this object) and returns TRL's fields: ``prompt_ids``,
    ``completion_ids`` (replies and observations, up to ``max_completion_length``),
    ``logprobs`` (None on TRL's transformers backend), ``env_mask`` (1 on sampled ids, 0 on
    the env's), and for the reward functions ``env_score``, ``env_success``, ``env_turns``.
    An episode ends when the env terminates or truncates, after ``max_turns`` replies, or
    when the completion budget is spent.

    ``images`` (``ImageOptions`` or a mode, ``"screenshot"`` or ``"both"``) makes a screen env's
    first screenshot the prompt's image (the dataset's ``image`` column) and plays the episode
    with the trainer's processor (a vision-language model's ``ProcessorMixin``). TRL's loss
    forward pass takes only the dataset's images (see docs/vlm.md), so later screenshots are
    not shown: each becomes the text :data:`LATER_SCREENSHOT`, in sampling as in the loss.

    TRL hands back only the prompts, so a prompt names its task. Tasks whose first prompt is the
    same (Wordle's hidden words, identical small maps) cannot be told apart that way: each GRPO
    group (``num_generations`` consecutive prompts) plays one task, and groups with the same
    prompt take those tasks in turn.
    """

    def __init__(
        self,
        env_id: str,
        *,
        action_format: ActionFormat = "text",
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        env_kwargs: dict[str, Any] | None = None,
        max_turns: int | None = None,
        images: ImageOptions | ObservationMode | None = None,
    ) -> None:
        self.env_id = env_info(env_id).id
        self.action_format = action_format
        self.system_prompt = system_prompt
        self.images = image_options(images)
        self.env_kwargs = {**(screenshot_kwargs(self.env_id) if self.images.images else {}), **(env_kwargs or {})}
        self.max_turns = max_turns or env_info(env_id).max_episode_steps
        self._envs: list[ChatWrapper] = []
        self._tasks: dict[str, list[tuple[int, int]]] = {}
        self._turns: dict[str, int] = {}

    def _env(self, index: int) -> ChatWrapper:
        while len(self._envs) <= index:
            self._envs.append(
                ChatWrapper(
                    make_env(self.env_id, self.env_kwargs),
                    self.system_prompt,
                    action_format=self.action_format,
                    images=self.images,
                )
            )
        return self._envs[index]

    def register(self, task_id: int, seed: int) -> list[Message]:
        """The prompt that starts ``task_id`` (reset with ``seed``), remembered so that a rollout can play it."""
        messages, _ = self._env(0).reset(seed=seed, options={"task_id": task_id})
        self._tasks.setdefault(_prompt_key(messages), []).append((task_id, seed))
        return messages

    def tasks_for(self, prompts: list[list[Message]], group_size: int) -> list[tuple[int, int]]:
        """The (task id, seed) each prompt plays: one task per group of ``group_size`` consecutive
        prompts, the tasks sharing a prompt taken in turn."""
        tasks: list[tuple[int, int]] = []
        for start in range(0, len(prompts), group_size):
            key = _prompt_key(prompts[start])
            candidates = self._tasks.get(key)
            if candidates is None:
                raise ValueError(
                    "AgentGymRollout got a prompt it did not make: build the dataset with "
                    "agentgym.integrations.trl.task_dataset(..., rollout=this_rollout)"
                )
            turn = self._turns.get(key, 0)
            self._turns[key] = turn + 1
            group = prompts[start : start + group_size]
            tasks += [candidates[turn % len(candidates)]] * len(group)
        return tasks

    def __call__(self, prompts: list[list[Message]], trainer: Any) -> dict[str, Any]:
        tasks = self.tasks_for(prompts, max(1, int(getattr(trainer, "num_generations", 1) or 1)))
        slots = [
            EpisodeSlot(self._env(index), Trajectory(self.env_id, task_id, index), seed)
            for index, (task_id, seed) in enumerate(tasks)
        ]
        chat_tokens = self._chat_tokens(trainer)
        sampler = TRLSampler(trainer)
        prompt_ids = [
            list(chat_tokens.prompt(_openai_parts(prompt), slot.env.tools)) for prompt, slot in zip(prompts, slots)
        ]
        trajectories = play_episodes(slots, sampler, chat_tokens, self.max_turns, lambda slot, turn: 0)
        budget = trainer.max_completion_length
        output: dict[str, Any] = {"prompt_ids": prompt_ids, "completion_ids": [], "logprobs": [], "env_mask": []}
        for ids, prompt, trajectory in zip(prompt_ids, prompts, trajectories):
            if trajectory.token_ids[: len(ids)] != ids:
                raise RuntimeError("the episode's tokens do not start with its prompt's")
            images = _prompt_images(prompt)
            if images and not _same_pixels(trajectory.image_urls[: len(images)], images):
                raise RuntimeError("the prompt's image is not the screenshot its episode started from")
            output["completion_ids"].append(trajectory.token_ids[len(ids) :][:budget])
            output["logprobs"].append(trajectory.logprobs[len(ids) :][:budget])
            output["env_mask"].append(trajectory.loss_mask[len(ids) :][:budget])
        if not sampler.has_logprobs:
            output["logprobs"] = None
        output["env_score"] = [trajectory.score for trajectory in trajectories]
        output["env_success"] = [trajectory.success for trajectory in trajectories]
        output["env_turns"] = [trajectory.turns for trajectory in trajectories]
        return output

    def _chat_tokens(self, trainer: Any) -> ChatTokens:
        """Token ids of chats with the trainer's tokenizer, or (screenshots) its processor."""
        processing_class = trainer.processing_class
        if not self.images.images:
            return ChatTokens(getattr(processing_class, "tokenizer", processing_class), trainer.eos_token_ids)
        if not hasattr(processing_class, "image_processor"):
            raise TypeError(
                "screenshots need a vision-language model: pass its processor (AutoProcessor) as processing_class"
            )
        from agentgym.llm.vision import VisionProcessor

        return PromptImagesTokens(VisionProcessor(processing_class), trainer.eos_token_ids)

    def close(self) -> None:
        """Close the envs this rollout made."""
        envs, self._envs = self._envs, []
        for env in envs:
            env.close()


def env_reward(completions: list[Any], env_score: list[float], **kwargs: Any) -> list[float]:
    """TRL reward function: the episode's score (``info["score"]``) that :class:`AgentGymRollout` reported."""
    return [float(score) for score in env_score]


def _prompt_key(messages: list[Message]) -> str:
    """A prompt's identity: its roles, texts and images' pixels (TRL hands a prompt back with its
    images as PIL parts; agentgym made it with data URLs). Visual puzzles' texts hide the map."""
    parts = [[message["role"], content_text(message["content"])] for message in messages]
    images = _prompt_images(messages) + [decode_image(url) for url in message_image_urls(messages)]
    return json.dumps([parts, [_pixel_digest(image) for image in images]], ensure_ascii=False)


def _pixel_digest(image: Any) -> str:
    import hashlib

    import numpy as np

    pixels = np.ascontiguousarray(np.asarray(image.convert("RGB")))
    return hashlib.blake2b(str(pixels.shape).encode() + pixels.tobytes(), digest_size=12).hexdigest()


def _openai_parts(messages: list[Message]) -> list[Message]:
    """``messages`` with TRL's image parts (``{"type": "image", "image": PIL}``) as ``image_url`` parts."""
    converted = []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            parts = [_openai_part(part) for part in content]
            # TRL splits a string content into text parts; a text-only turn is a string again.
            content = parts if any(is_image_part(part) for part in parts) else content_text(parts)
        converted.append({**message, "content": content})
    return converted


def _openai_part(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("type") != "image":
        return part
    import base64
    import io

    buffer = io.BytesIO()
    part["image"].convert("RGB").save(buffer, format="PNG", compress_level=1)
    return image_part("data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"))


def _prompt_images(messages: list[Message]) -> list[Any]:
    """The PIL images of TRL's image parts in ``messages``."""
    return [
        part["image"]
        for message in messages
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image"
    ]


def _same_pixels(urls: list[str], images: list[Any]) -> bool:
    """Whether the data URLs ``urls`` hold the same pixels as the PIL ``images``."""
    import numpy as np

    return len(urls) == len(images) and all(
        np.array_equal(np.asarray(decode_image(url).convert("RGB")), np.asarray(image.convert("RGB")))
        for url, image in zip(urls, images)
    )


class PromptImagesTokens(VisionChatTokens):
    """:class:`VisionChatTokens` that keep only the prompt's images: a later observation's screenshot
    becomes the text :data:`LATER_SCREENSHOT` (TRL's ``rollout_func`` path has no place for its pixels)."""

    def delta(
        self,
        history: list[Message],
        sampled: Any,
        new_messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        return super().delta(history, sampled, _without_images(new_messages), tools)


def _without_images(messages: list[Message]) -> list[Message]:
    return [
        {
            **message,
            "content": [text_part(LATER_SCREENSHOT) if is_image_part(part) else part for part in message["content"]],
        }
        if isinstance(message.get("content"), list)
        else message
        for message in messages
    ]


# ---- the few lines --------------------------------------------------------------------------------


def grpo_kwargs(
    env_id: str,
    tasks: int | Sequence[int] = 64,
    *,
    action_format: ActionFormat = "text",
    split: str = "train",
    env_kwargs: dict[str, Any] | None = None,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    max_turns: int | None = None,
    seed: int = 0,
    images: ImageOptions | ObservationMode | None = None,
) -> dict[str, Any]:
    """``GRPOTrainer`` keyword arguments that train on ``env_id``'s ``tasks`` with the env's score as reward.

    Text: ``train_dataset``, ``rollout_func`` (an :class:`AgentGymRollout`) and
    ``reward_funcs=[env_reward]``. Tools: ``train_dataset`` and ``environment_factory`` (the
    reward is its ``get_reward``; ``max_turns`` is then TRL's ``max_tool_calling_iterations``,
    set it in ``GRPOConfig``). Add your own ``reward_funcs`` next to them if you like.
    ``images`` (a screenshot mode or ``ImageOptions``) shows a screen env's screenshots to a
    vision-language model: every one in tools mode, the first one in text mode (docs/vlm.md).
    """
    if action_format == "tools":
        dataset = task_dataset(
            env_id,
            tasks,
            split=split,
            action_format="tools",
            system_prompt=system_prompt,
            env_kwargs=env_kwargs,
            seed=seed,
        )
        factory = environment_factory(env_id, env_kwargs=env_kwargs, images=images)
        return {"train_dataset": dataset, "environment_factory": factory}
    rollout = AgentGymRollout(
        env_id, system_prompt=system_prompt, env_kwargs=env_kwargs, max_turns=max_turns, images=images
    )
    dataset = task_dataset(
        env_id, tasks, split=split, system_prompt=system_prompt, env_kwargs=env_kwargs, seed=seed, rollout=rollout
    )
    return {"train_dataset": dataset, "rollout_func": rollout, "reward_funcs": [env_reward]}


__all__ = [
    "LATER_SCREENSHOT",
    "AgentGymRollout",
    "PromptImagesTokens",
    "AgentGymToolEnv",
    "TRLSampler",
    "environment_factory",
    "env_reward",
    "grpo_kwargs",
    "image_options",
    "task_dataset",
    "task_ids",
]
