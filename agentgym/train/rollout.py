"""Rollouts as token-in/token-out trajectories.

An episode is one growing token sequence: the chat template's prompt, then for each turn
the exact ids the model sampled (loss mask 1, sampled logprobs kept) followed by the chat
template's delta for the environment's reply (loss mask 0). The sampler is always given
the sequence so far as token ids, so what the model saw, what it sampled and what the
trainer scores are the same ids: nothing the model sampled is ever decoded and encoded
again (which can change ids, e.g. ``"u" "p"`` re-encoded as ``"up"``).

Native tool calls (``ChatWrapper(action_format="tools")``) keep this exact: the prompt is
rendered with the env's tools (``apply_chat_template(..., tools=...)``), the sampled ids stay
as they are, the env is given the tool calls parsed from their decoded text
(:func:`agentgym.contract.tool_parsing.assistant_message`), and the tool results enter as the
template's delta, rendered with the same tools.

Vision-language models (:class:`VisionChatTokens`): a screen env's observations carry
screenshots (``image_url`` parts, ``ChatWrapper(images=...)``); the processor expands each into
its image tokens where it enters (the first prompt or a delta), and the trajectory keeps that
chunk's image inputs (pixel values, Qwen's image grid) beside the ids. The sampler and the
trainer's forward passes get the same ids with the chunks concatenated, so they see the same
images; nothing is re-tokenized.

Samplers: ``HFSampler`` generates in-process (``agentgym.llm.generation.Generator``);
``ServerSampler`` sends token-id prompts to ``/v1/completions`` of an OpenAI-compatible
server (vLLM, ``agentgym serve-model``) and reads back the sampled ids and their logprobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol, TypeVar

import gymnasium as gym
import httpx
from transformers import PreTrainedTokenizerBase

from agentgym.contract.registry import inline_safe
from agentgym.contract.tool_parsing import assistant_message, template_messages
from agentgym.evaluation.plan import stable_seed
from agentgym.images import ImageOptions, content_text, screenshot_kwargs
from agentgym.llm.generation import Batcher, Generator, Request, SamplingParams
from agentgym.llm.policies.base import Episode, Policy, Reply
from agentgym.llm.vision import VisionProcessor, VisionPrompt, chat_images, message_image_urls
from agentgym.wrappers.chat import ActionFormat, ChatWrapper, Message

#: Stands in for an assistant reply when rendering the chat template's delta.
_REPLY_MARK = "\u2063AGENTGYM-REPLY\u2063"
_T = TypeVar("_T")


class ChatTokens:
    """Token ids of a chat, built incrementally with a tokenizer's chat template."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, eos_token_ids: Sequence[int]) -> None:
        self.tokenizer = tokenizer
        self.eos_token_ids = set(eos_token_ids)

    def prompt(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The ids of the first prompt: the template (offering ``tools``, if any) with its generation prompt."""
        text = self._render(messages, tools)
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def delta(
        self,
        history: list[Message],
        sampled: Sequence[int],
        new_messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        """The ids that follow a sampled reply: its end of turn, ``new_messages``, the next generation prompt.

        ``history`` is the chat before the reply. The template is rendered with a marker
        as the reply, and everything after the marker is the delta; if the model already
        sampled the end-of-turn token that the delta starts with, it is not repeated.
        ``new_messages`` may be tool results; ``tools`` must be those the prompt offered.
        """
        text = self.delta_text(history, sampled, new_messages, tools)
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def delta_text(
        self,
        history: list[Message],
        sampled: Sequence[int],
        new_messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        """The text of :meth:`delta` (for frameworks that tokenize the env's reply themselves)."""
        chat = [*history, {"role": "assistant", "content": _REPLY_MARK}, *new_messages]
        text = self._render(chat, tools)
        after = text[text.rindex(_REPLY_MARK) + len(_REPLY_MARK) :]
        if sampled and sampled[-1] in self.eos_token_ids:
            ending = self.tokenizer.decode([sampled[-1]])
            after = after.removeprefix(ending)
        return after

    def reply(self, history: list[Message], message: Message, tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The ids a model samples to give the assistant ``message`` after ``history``: expert data in the shape
        of a rollout's sampled ids (supervised fine-tuning).

        They are the reply's text as the template renders it (tool calls included), then the end-of-turn
        token: the first token the template puts after a reply when that is an end-of-sequence token (ChatML's
        ``<|im_end|>``), else the model's end-of-sequence token (a sampled reply ends with one either way).
        The text is the chat rendered with ``message`` less the chat rendered before it and less what follows
        any reply (rendered with a marker as the reply).
        """
        before = self._render(history, tools)
        after = self.delta_text(history, (), [], tools)
        text = self._render([*history, message], tools)
        if not (text.startswith(before) and text.endswith(after)) or len(text) < len(before) + len(after):
            raise ValueError("the chat template does not render a reply as the chat before it plus the reply")
        ending = self.tokenizer(after, add_special_tokens=False).input_ids[:1]
        end = ending[0] if ending and ending[0] in self.eos_token_ids else min(self.eos_token_ids)
        reply = text[len(before) : len(text) - len(after)]
        return [*self.tokenizer(reply, add_special_tokens=False).input_ids, end]

    def _render(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> str:
        kwargs = {"tools": tools} if tools else {}
        return self.tokenizer.apply_chat_template(
            template_messages(messages), add_generation_prompt=True, tokenize=False, **kwargs
        )

    def sampler_prompt(self, trajectory: Trajectory) -> list[int]:
        """What the sampler continues: the trajectory's ids."""
        return trajectory.token_ids

    def model_inputs(self, trajectory: Trajectory) -> dict[str, Any]:
        """The model's inputs beside the ids for a forward pass over the trajectory (none for text)."""
        return {}


class VisionChatTokens(ChatTokens):
    """:class:`ChatTokens` of a vision-language model: images become the processor's image tokens.

    :meth:`prompt` and :meth:`delta` return :class:`~agentgym.llm.vision.VisionPrompt` ids whose
    ``inputs`` are the image inputs of the images they hold (kept by :meth:`Trajectory.extend`).
    """

    def __init__(self, processor: VisionProcessor, eos_token_ids: Sequence[int]) -> None:
        super().__init__(processor.tokenizer, eos_token_ids)
        self.processor = processor

    def prompt(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> list[int]:
        chat, images = chat_images(messages)
        ids, inputs = self.processor.encode(self.processor.render(chat, tools), images)
        return VisionPrompt(ids, inputs, message_image_urls(messages))

    def delta(
        self,
        history: list[Message],
        sampled: Sequence[int],
        new_messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        text = self.delta_text(history, sampled, new_messages, tools)
        _, images = chat_images(new_messages)
        ids, inputs = self.processor.encode(text, images)
        return VisionPrompt(ids, inputs, message_image_urls(new_messages))

    def _render(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> str:
        return self.processor.render(chat_images(messages, decode=False)[0], tools)

    def sampler_prompt(self, trajectory: Trajectory) -> list[int]:
        return VisionPrompt(trajectory.token_ids, self.model_inputs(trajectory), trajectory.image_urls)

    def model_inputs(self, trajectory: Trajectory) -> dict[str, Any]:
        return self.processor.model_inputs(trajectory.token_ids, trajectory.images)


@dataclass
class Trajectory:
    """One episode as tokens, with what the trainer needs.

    ``loss_mask[i]`` is 1 where the model sampled ``token_ids[i]``; ``logprobs[i]`` is the
    sampler's logprob there (0 elsewhere). ``turn_ends[t]`` is the index of turn ``t``'s
    last sampled token, ``rewards[t]`` its reward, ``anchors[t]`` the observation it acted on.
    ``images`` holds, for a vision-language model, the image inputs of each chunk of ids that
    brought images (the first prompt, the env's replies), in order, and ``image_urls`` the images
    themselves as data URLs (sent to a server beside the ids). A self-play move
    (:mod:`agentgym.train.selfplay`) is a trajectory of one turn whose ``role`` is the seat that moved
    and ``game`` the index of its game in the iteration.
    """

    env_id: str
    task_id: int
    group: int
    role: str | None = None
    game: int = -1
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_ends: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)
    success: bool = False
    score: float = 0.0
    done: bool = False
    truncated: bool = False
    images: list[dict[str, Any]] = field(default_factory=list)
    image_urls: list[str] = field(default_factory=list)

    def extend(self, ids: Sequence[int], sampled: bool, logprobs: Sequence[float] | None = None) -> None:
        """Append prompt/env ids (``sampled`` False; with their image inputs, if any) or the model's ids
        with their logprobs."""
        if getattr(ids, "inputs", None):
            self.images.append(ids.inputs)
        self.image_urls.extend(getattr(ids, "image_urls", ()))
        self.token_ids.extend(ids)
        self.loss_mask.extend([int(sampled)] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))

    @property
    def turns(self) -> int:
        return len(self.rewards)

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))


@dataclass
class Sample:
    """What a sampler returns for one prompt."""

    token_ids: list[int]
    logprobs: list[float]


class Sampler(Protocol):
    """Samples one continuation per token-id prompt."""

    context_length: int | None

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]: ...


class HFSampler:
    """In-process sampling with a ``Generator`` over the model being trained."""

    def __init__(self, generator: Generator, params: SamplingParams, max_batch_size: int) -> None:
        self.generator = generator
        self.params = params
        self.max_batch_size = max_batch_size
        self.context_length = generator.context_length

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]:
        samples = []
        for start in range(0, len(prompts), self.max_batch_size):
            batch = prompts[start : start + self.max_batch_size]
            params = [replace(self.params, seed=seed) for seed in seeds[start : start + len(batch)]]
            for completion in self.generator.generate_tokens(batch, params):
                samples.append(Sample(completion.token_ids, completion.logprobs))
        return samples


class ServerSampler:
    """Token-id prompts to ``POST {base_url}/completions``; sampled ids and logprobs come back.

    Sends vLLM's fields: a prompt of token ids, ``logprobs: 0`` (the sampled tokens' own
    logprobs) and ``return_token_ids: true``; ``model`` is the LoRA adapter's name once
    ``load_adapter`` has been called. A vision-language model's prompt (a
    :class:`~agentgym.llm.vision.VisionPrompt`) also sends its images, as data URLs in the order its
    image tokens stand for them, as ``multi_modal_data: {"image": [...]}`` (``agentgym serve-model``
    computes the same image inputs from them; vLLM's HTTP completions do not take them).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        params: SamplingParams,
        context_length: int | None,
        timeout_s: float = 600.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.params = params
        self.context_length = context_length
        self.timeout_s = timeout_s
        self._images_checked = False

    def load_adapter(self, name: str, path: str) -> None:
        """Hot-load a LoRA adapter under ``name`` (vLLM's ``/v1/load_lora_adapter``), replacing any old one."""
        with httpx.Client(base_url=self.base_url, timeout=self.timeout_s) as client:
            unloaded = client.post("/unload_lora_adapter", json={"lora_name": name})
            if unloaded.status_code >= 400 and unloaded.status_code not in (400, 404):
                raise RuntimeError(f"unloading adapter {name!r} failed: {unloaded.text[:300]}")
            loaded = client.post("/load_lora_adapter", json={"lora_name": name, "lora_path": path})
            if loaded.status_code >= 400:
                raise RuntimeError(f"loading adapter {name!r} from {path} failed: {loaded.text[:300]}")
        self.model = name

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]:
        return asyncio.run(self._sample_all(prompts, seeds))

    async def _sample_all(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]:
        limits = httpx.Limits(max_connections=256)
        async with httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout_s, limits=limits) as client:
            if not self._images_checked and any(getattr(prompt, "image_urls", None) for prompt in prompts):
                await self._check_server_takes_images(client)
            return list(await asyncio.gather(*(self._sample(client, p, s) for p, s in zip(prompts, seeds))))

    async def _check_server_takes_images(self, client: httpx.AsyncClient) -> None:
        """Refuse a server that would drop ``multi_modal_data`` unread: vLLM's completions ignore unknown
        fields, so its samples would silently come from prompts without their images."""
        response = await client.get("/models")
        owners = {entry.get("owned_by") for entry in response.json().get("data", [])} if response.is_success else set()
        if owners != {"agentgym"}:
            raise RuntimeError(
                f"{self.base_url} is not agentgym serve-model (its /models say owned_by {sorted(map(str, owners))}): "
                "server-side sampling of a vision-language model sends each prompt's images as multi_modal_data, "
                "which only agentgym serve-model reads (vLLM's /v1/completions would ignore them); use "
                "rollout.backend 'hf' or serve the model with agentgym serve-model"
            )
        self._images_checked = True

    async def _sample(self, client: httpx.AsyncClient, prompt: list[int], seed: int) -> Sample:
        body = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": self.params.max_new_tokens,
            "temperature": self.params.temperature,
            "top_p": self.params.top_p,
            "seed": seed,
            "logprobs": 0,
            "return_token_ids": True,
        }
        if getattr(prompt, "image_urls", None):
            body["multi_modal_data"] = {"image": prompt.image_urls}
        response = await client.post("/completions", json=body)
        if response.status_code >= 400:
            raise RuntimeError(f"{self.base_url}/completions: HTTP {response.status_code}: {response.text[:500]}")
        choice = response.json()["choices"][0]
        logprobs = choice["logprobs"]["token_logprobs"]
        token_ids = choice.get("token_ids")
        if token_ids is None:  # older vLLM: return_tokens_as_token_ids gives "token_id:N" strings
            token_ids = [int(token.removeprefix("token_id:")) for token in choice["logprobs"]["tokens"]]
        if len(token_ids) != len(logprobs):
            raise RuntimeError("the server returned different numbers of token ids and logprobs")
        return Sample(list(token_ids), [float(value) for value in logprobs])


@dataclass
class EpisodeSlot:
    """A running episode: its env (wrapped for chat) and its trajectory so far."""

    env: ChatWrapper
    trajectory: Trajectory
    seed: int
    messages: list[Message] = field(default_factory=list)


def play_episodes(
    slots: list[EpisodeSlot],
    sampler: Sampler,
    chat_tokens: ChatTokens,
    max_turns: int,
    seed_of: Callable[[int, int], int],
    env_workers: int = 1,
) -> list[Trajectory]:
    """Play every slot's episode to its end, all turns of all episodes batched together.

    ``seed_of(slot_index, turn)`` gives each sample's seed, so rollouts replay exactly.
    An episode ends when the env terminates or truncates, after ``max_turns`` turns, or
    when the model's context is full (truncated). With ``env_workers`` > 1, the resets and
    steps of one turn run concurrently in that many threads for envs that wait on something
    (remote backends such as Ray actors, browsers, JVMs: see :func:`~agentgym.contract.registry.inline_safe`); the
    others are stepped one after another on this thread. Either way the trajectories are the same.
    """
    workers = min(env_workers, sum(not inline_safe(slot.env) for slot in slots))
    with ThreadPoolExecutor(workers, "agentgym-env") if workers > 1 else contextlib.nullcontext() as pool:
        resets = [
            partial(slot.env.reset, seed=slot.seed, options={"task_id": slot.trajectory.task_id}) for slot in slots
        ]
        for slot, (messages, _) in zip(slots, _call_envs(slots, resets, pool)):
            slot.messages = messages
            slot.trajectory.extend(chat_tokens.prompt(messages, slot.env.tools), sampled=False)
        for turn in range(max_turns):
            active = [i for i, slot in enumerate(slots) if not slot.trajectory.done]
            context = sampler.context_length
            for i in list(active):
                if context is not None and len(slots[i].trajectory.token_ids) >= context - 1:
                    slots[i].trajectory.done = slots[i].trajectory.truncated = True
                    active.remove(i)
            if not active:
                break
            samples = sampler.sample(
                [chat_tokens.sampler_prompt(slots[i].trajectory) for i in active], [seed_of(i, turn) for i in active]
            )
            stepping = [slots[i] for i in active]
            histories = [slot.env.transcript[:] for slot in stepping]
            # Decoded here: the tokenizer is not shared with the env threads.
            replies: list[Any] = [
                chat_tokens.tokenizer.decode(sample.token_ids, skip_special_tokens=True) for sample in samples
            ]
            # Tools mode: the env is given the calls in the sampled text (the ids themselves stay as sampled).
            replies = [
                assistant_message(reply) if slot.env.tools is not None else reply
                for slot, reply in zip(stepping, replies)
            ]
            outcomes = _call_envs(stepping, [partial(s.env.step, reply) for s, reply in zip(stepping, replies)], pool)
            for slot, sample, history, outcome in zip(stepping, samples, histories, outcomes):
                _record_turn(slot, sample, history, outcome, chat_tokens, last_turn=turn == max_turns - 1)
    return [slot.trajectory for slot in slots]


def _call_envs(slots: list[EpisodeSlot], calls: list[Callable[[], _T]], pool: ThreadPoolExecutor | None) -> list[_T]:
    """Each slot's env call, results in order: in ``pool`` (concurrently) for envs that wait, inline for the rest."""
    futures = [None if pool is None or inline_safe(slot.env) else pool.submit(call) for slot, call in zip(slots, calls)]
    inline = [call() if future is None else None for call, future in zip(calls, futures)]
    return [value if future is None else future.result() for value, future in zip(inline, futures)]


def _record_turn(
    slot: EpisodeSlot,
    sample: Sample,
    history: list[Message],
    outcome: tuple[list[Message], float, bool, bool, dict[str, Any]],
    chat_tokens: ChatTokens,
    last_turn: bool,
) -> None:
    """Append the sample and the env's reply to it as tokens; ``history`` is the chat the sample answered."""
    trajectory = slot.trajectory
    trajectory.anchors.append(_observation(history))
    trajectory.extend(sample.token_ids, sampled=True, logprobs=sample.logprobs)
    trajectory.turn_ends.append(len(trajectory.token_ids) - 1)
    slot.messages, reward, terminated, truncated, info = outcome
    trajectory.rewards.append(float(reward))
    trajectory.success = bool(info.get("success", False))
    trajectory.score = float(info.get("score", 0.0))
    if terminated or truncated or last_turn:
        trajectory.done = True
        trajectory.truncated = not terminated
        return
    # The env's answer: a user message, or (tools mode) one tool message per call of the reply.
    answer = slot.env.transcript[len(history) + 1 :]
    trajectory.extend(chat_tokens.delta(history, sample.token_ids, answer, slot.env.tools), sampled=False)


def _observation(history: list[Message]) -> str:
    """The observation the next reply acts on: the first message after the last reply (a user or tool message)."""
    replies = [i for i, message in enumerate(history) if message["role"] == "assistant"]
    content = history[replies[-1] + 1 if replies else -1]["content"]
    if isinstance(content, str):
        return content
    # A screenshot observation: its text and a digest of its images (equal screens, equal anchors).
    digest = hashlib.blake2b(json.dumps(content, sort_keys=True).encode(), digest_size=8).hexdigest()
    return f"{content_text(content)}\n[screen {digest}]"


def make_slots(envs: list[ChatWrapper], tasks: list[tuple[str, int, int]], rng: random.Random) -> list[EpisodeSlot]:
    """Pair envs with (env id, task id, group) triples; each episode gets a seed from ``rng``."""
    return [
        EpisodeSlot(env, Trajectory(env_id, task_id, group), rng.getrandbits(31))
        for env, (env_id, task_id, group) in zip(envs, tasks)
    ]


def chat_env(
    env_id: str,
    kwargs: dict[str, Any],
    system_prompt: str | None,
    action_format: ActionFormat = "text",
    images: ImageOptions | None = None,
) -> ChatWrapper:
    """A training env: ``gym.make`` wrapped for chat, with the whole history kept; with ``images``
    showing screenshots, browser envs are made with ``screenshot=True``."""
    screen = screenshot_kwargs(env_id) if images is not None and images.images else {}
    return ChatWrapper(
        gym.make(env_id, **{**screen, **kwargs}), system_prompt, action_format=action_format, images=images
    )


class GeneratorPolicy(Policy):
    """The model being trained as a runner policy (in-process, batched), for periodic evaluation."""

    name = "trainer"

    def __init__(self, generator: Generator, params: SamplingParams) -> None:
        self.batcher = Batcher(generator)
        self.params = params

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        # A seed per episode and turn: sampling replays exactly, and turns do not share their random draws.
        params = replace(self.params, seed=stable_seed(episode.seed, len(messages)))
        completion = await self.batcher.submit(Request(messages, params, episode.tools))
        usage = {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens}
        return Reply.parsed(completion.text, episode.tools, **usage)

    async def aclose(self) -> None:
        await self.batcher.aclose()
