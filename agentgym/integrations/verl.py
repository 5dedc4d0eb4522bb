"""agentgym envs as a verl agent loop: ``AgentGymAgentLoop``, registered as ``"agentgym"``.

verl (0.9) rolls out with *agent loops*: an ``AgentLoopWorker`` instantiates the loop named
by a dataset row's ``agent_name`` (else ``actor_rollout_ref.rollout.agent.default_agent_loop``)
from its registry, which ``register(name)`` and the YAML list at
``actor_rollout_ref.rollout.agent.agent_loop_config_path`` fill, and awaits
``run(sampling_params, **row)``. The loop generates through ``self.server_manager.generate(
request_id, prompt_ids=..., sampling_params=...)``, which returns the sampled ids (and their
logprobs) as a ``TokenOutput``, and returns an ``AgentLoopOutput``.

This loop plays one agentgym episode per row, turn by turn, token in and token out:

* the prompt is the env's first chat (``ChatWrapper``: system prompt, first observation;
  in tools mode rendered with the env's tools), tokenized with the chat template;
* each turn sends the whole sequence so far as ids; the ids sampled are appended to the
  response exactly as they came back (mask 1, their logprobs kept) and are only *decoded*
  to give the env its action (text, or in tools mode the tool calls parsed from it);
* the env's answer enters as the chat template's delta after the reply (its end of turn,
  the observation as a user message or tool results, the next generation prompt): mask 0;
* the episode ends when the env terminates or truncates, after ``max_turns`` replies, or
  when the response reaches ``rollout.response_length``; ``reward_score`` is the env's
  ``info["score"]`` (an agentgym episode's return), which verl puts on the last token.

Screen envs and vision-language models: with ``observation: screenshot`` (or ``both``) in the
loop's config entry, a screen env's observations carry their screenshot (``ChatWrapper``'s image
parts, scaled to ``max_pixels``), as verl's own multimodal loops carry images: the prompt and
each delta are tokenized by verl's processor (``AgentLoopBase.processor``, e.g. Qwen2-VL's), so
every image's placeholder is expanded to its image tokens where it enters; each server call gets
the images so far as ``image_data`` (PIL, in order); and the output's ``multi_modal_data
["images"]`` holds the episode's images, from which verl's worker computes the batch's
``multi_modal_inputs`` (pixel values, image grids) and Qwen-VL's M-RoPE ``position_ids``.
Every image of an episode is kept (the prompt only grows). Text envs are played as before.

Which env a row plays: its ``extra_info`` keys ``env_id``, ``task_id``, ``seed`` and
``env_kwargs`` (see :func:`dataset_rows`), else the defaults given in the agent loop's
config entry (:data:`CONFIG_PATH`). Select the loop with::

    actor_rollout_ref.rollout.agent.agent_loop_config_path=<CONFIG_PATH or a copy>
    actor_rollout_ref.rollout.agent.default_agent_loop=agentgym

Needs verl, which cannot be installed next to this project's transformers: see
docs/train-with-verl.md (and :mod:`agentgym.integrations.venvs` for the CPU test's venv).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register
from verl.utils.profiler import simple_timer
from verl.workers.rollout.replica import TokenOutput

from agentgym.contract.registry import inline_safe
from agentgym.contract.tool_parsing import assistant_message
from agentgym.images import DEFAULT_MAX_PIXELS, ImageOptions, ObservationMode, is_image_part
from agentgym.llm.vision import VisionProcessor, VisionPrompt, chat_images
from agentgym.train.rollout import ChatTokens, VisionChatTokens, chat_env
from agentgym.wrappers.chat import ACTION_FORMATS, DEFAULT_SYSTEM_PROMPT, ActionFormat, ChatWrapper, Message

#: The name the loop is registered under (a row's ``agent_name``, or ``default_agent_loop``).
AGENT_NAME = "agentgym"
#: verl's agent loop config list selecting this loop (``agent_loop_config_path``).
CONFIG_PATH = Path(__file__).with_name("verl_agent_loop.yaml")
#: The ``extra_info`` keys of a dataset row this loop reads.
ROW_KEYS = ("env_id", "task_id", "seed", "env_kwargs")

_T = TypeVar("_T")


@register(AGENT_NAME)
class AgentGymAgentLoop(AgentLoopBase):
    """Plays an agentgym env through verl's server manager (see the module docstring).

    Config-entry arguments (``hydra.utils.instantiate`` passes them): ``env_id`` and
    ``env_kwargs`` (defaults for rows that name none), ``action_format`` (``"text"`` or
    ``"tools"``), ``system_prompt`` (``ChatWrapper``'s), ``max_turns`` (replies per episode,
    default ``rollout.multi_turn.max_assistant_turns`` or 16), ``max_tokens_per_turn``
    (default: whatever the response budget has left), ``observation`` (``"text"``, or
    ``"screenshot"``/``"both"`` to show a vision-language model the screen envs' screenshots;
    needs verl to have loaded the model's processor) and ``max_pixels`` (each screenshot's
    pixel budget). verl's own ``tools`` are not used: an env's tools are the env's.
    """

    def __init__(
        self,
        *args: Any,
        env_id: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        action_format: ActionFormat = "text",
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        max_turns: int | None = None,
        max_tokens_per_turn: int | None = None,
        observation: ObservationMode = "text",
        max_pixels: int | None = DEFAULT_MAX_PIXELS,
        tools: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
        self.env_id = env_id
        self.env_kwargs = _plain(env_kwargs) or {}
        self.action_format: ActionFormat = action_format
        self.system_prompt = system_prompt
        configured_turns = self.rollout_config.multi_turn.get("max_assistant_turns")
        self.max_turns = int(max_turns or configured_turns or 16)
        self.max_tokens_per_turn = max_tokens_per_turn
        self.response_length = int(self.rollout_config.response_length)
        self.images = ImageOptions(observation, max_pixels)
        # Any special token the model ends a reply with is not repeated by the template's delta.
        if self.images.images:
            self._check_vision_setup()
            self.chat_tokens: ChatTokens = VisionChatTokens(
                VisionProcessor(self.processor), self.tokenizer.all_special_ids
            )
        else:
            self.chat_tokens = ChatTokens(self.tokenizer, self.tokenizer.all_special_ids)

    def _check_vision_setup(self) -> None:
        """Screenshots need verl's multimodal processor; and the processor must size images as this loop did."""
        if self.processor is None or getattr(self.processor, "image_processor", None) is None:
            raise ValueError(
                f"observation={self.images.mode!r} shows screenshots to a vision-language model, but verl loaded no "
                f"multimodal processor for {self.config.actor_rollout_ref.model.path!r} (verl's hf_processor supports "
                "Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GLM-4V and Gemma 4 processors); use observation='text' for a text "
                "model"
            )
        if self.mm_processor_kwargs:
            raise ValueError(
                "data.mm_processor_kwargs must be empty with the agentgym loop: it sizes screenshots itself "
                f"(the loop's max_pixels), got {dict(self.mm_processor_kwargs)}"
            )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """One episode of the env the row names (``kwargs["extra_info"]``); see the module docstring."""
        episode = self.episode_spec(kwargs.get("extra_info"))
        env = chat_env(
            episode["env_id"], episode["env_kwargs"], self.system_prompt, self.action_format, images=self.images
        )
        try:
            return await self._play(env, episode, dict(sampling_params))
        finally:
            env.close()

    def episode_spec(self, extra_info: Mapping[str, Any] | None) -> dict[str, Any]:
        """The env id, task id, seed and env kwargs of a row: its ``extra_info``, else this loop's defaults."""
        info = _plain(extra_info) or {}
        env_id = info.get("env_id") or self.env_id
        if not env_id:
            raise ValueError(
                f"no env to play: give the row extra_info={{'env_id': ...}} or env_id in the {AGENT_NAME!r} "
                "agent loop's config entry"
            )
        task_id, seed, env_kwargs = info.get("task_id"), info.get("seed"), info.get("env_kwargs") or {}
        if isinstance(env_kwargs, str):  # JSON in parquet rows (an empty struct cannot be stored)
            env_kwargs = json.loads(env_kwargs)
        return {
            "env_id": str(env_id),
            "env_kwargs": {**self.env_kwargs, **env_kwargs},
            "task_id": None if task_id is None else int(task_id),
            "seed": None if seed is None else int(seed),
        }

    async def _play(
        self, env: ChatWrapper, episode: dict[str, Any], sampling_params: dict[str, Any]
    ) -> AgentLoopOutput:
        metrics: dict[str, Any] = {}
        options = None if episode["task_id"] is None else {"task_id": episode["task_id"]}
        messages, info = await self._env_call(env, partial(env.reset, seed=episode["seed"], options=options))
        prompt_ids = self.chat_tokens.prompt(messages, env.tools)
        # The images of the sequence so far, in order (PIL): sent with every call, returned as multi_modal_data.
        images = self._images(messages)
        if images and len(prompt_ids) > self.rollout_config.prompt_length:
            raise ValueError(  # cutting a prompt would part image tokens from their image (verl refuses too)
                f"the first observation of {episode['env_id']} is {len(prompt_ids)} tokens with its screenshot, more "
                f"than rollout.prompt_length={self.rollout_config.prompt_length}: lower the loop's max_pixels "
                f"({self.images.max_pixels}) or raise the prompt length"
            )
        prompt_ids = self._cap_text_prompt_length(list(prompt_ids))
        response_ids: list[int] = []
        response_mask: list[int] = []
        logprobs: list[float] | None = [] if sampling_params.get("logprobs") else None
        request_id = uuid4().hex  # one id per episode: verl's router keeps its turns on one server
        score, terminated, truncated, replies = float(info.get("score", 0.0)), False, False, 0
        while replies < self.max_turns:
            budget = self.response_length - len(response_ids)
            if budget <= 0:
                break
            params = {**sampling_params, "max_tokens": min(budget, self.max_tokens_per_turn or budget)}
            with simple_timer("generate_sequences", metrics):
                output = await self.server_manager.generate(
                    request_id=request_id,
                    prompt_ids=prompt_ids + response_ids,
                    sampling_params=params,
                    image_data=list(images) if images else None,
                )
            sampled = list(output.token_ids)
            response_ids += sampled
            response_mask += [1] * len(sampled)
            if logprobs is not None:
                logprobs += list(output.log_probs) if output.log_probs else [0.0] * len(sampled)
            replies += 1
            history = env.transcript[:]
            text = self.tokenizer.decode(sampled, skip_special_tokens=True)
            action = assistant_message(text) if env.tools is not None else text
            with simple_timer("tool_calls", metrics):
                _, _, terminated, truncated, info = await self._env_call(env, partial(env.step, action))
            score = float(info.get("score", score))
            if terminated or truncated or replies >= self.max_turns:
                break
            answer = env.transcript[len(history) + 1 :]
            delta = self.chat_tokens.delta(history, sampled, answer, env.tools)
            if len(response_ids) + len(delta) >= self.response_length:
                break  # no room to reply to this observation: the episode is cut here
            response_ids += delta
            response_mask += [0] * len(delta)
            images += self._images(answer)
            if logprobs is not None:
                logprobs += [0.0] * len(delta)
        length = self.response_length
        # Screen episodes: verl's worker computes the batch's image inputs and M-RoPE positions from these images.
        multimodal = {"multi_modal_data": {"images": images}} if images else {}
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[:length],
            response_mask=response_mask[:length],
            response_logprobs=logprobs[:length] if logprobs is not None else None,
            **multimodal,
            reward_score=score,
            num_turns=sum(message["role"] != "system" for message in env.transcript),
            metrics=AgentLoopMetrics(**metrics),
            extra_fields={
                "env_id": episode["env_id"],
                "task_id": info.get("task_id", episode["task_id"]),
                "success": bool(info.get("success", False)),
                "terminated": bool(terminated),
                "truncated": not terminated,
                "replies": replies,
                # The episode as chat (ChatWrapper's transcript; images as {"type": "image"}, the images being
                # multi_modal_data's), and the env's numbers for verl's reward logging.
                "messages": _without_image_data(env.transcript),
                "reward_extra_info": {"success": float(bool(info.get("success", False))), "replies": replies},
            },
        )

    def _images(self, messages: list[Message]) -> list[Any]:
        """The images ``messages`` hold, decoded (PIL, in order); none when screenshots are not shown."""
        return chat_images(messages)[1] if self.images.images else []

    async def _env_call(self, env: ChatWrapper, call: Callable[[], _T]) -> _T:
        """``call()`` inline for pure-Python envs, else on an executor thread (remote backends, browsers)."""
        if inline_safe(env):
            return call()
        return await asyncio.get_running_loop().run_in_executor(None, call)


class GeneratorServerManager:
    """verl's server-manager call (``LLMServerClient.generate``) answered by agentgym's in-process ``Generator``.

    For running verl's agent loops on CPU without vLLM (tests, benchmarks, debugging a loop):
    concurrent calls are decoded together, up to ``max_batch_size`` per batch. Follows verl's
    vLLM server: ``max_tokens`` (default ``default_max_tokens``), ``temperature``, ``top_p``,
    ``seed``; ``logprobs`` true returns the sampled tokens' logprobs. ``top_k`` is not supported
    (verl sends -1, off). ``image_data`` (a screen episode's images so far, as verl's loops send
    them) needs a :class:`~agentgym.llm.vision.VisionGenerator`: as vLLM does with a token prompt
    and its images, the prompt's image tokens (already expanded) take the images' features.
    """

    def __init__(self, generator: Any, max_batch_size: int = 32, default_max_tokens: int = 512) -> None:
        self.generator = generator
        self.max_batch_size = max_batch_size
        self.default_max_tokens = default_max_tokens
        self._pending: list[tuple[list[int], Any, asyncio.Future]] = []
        self._runner: asyncio.Task | None = None

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        image_data: list[Any] | None = None,
        **_: Any,
    ) -> TokenOutput:
        from agentgym.llm.generation import SamplingParams

        top_k = sampling_params.get("top_k", -1)
        if top_k not in (-1, 0, None):
            raise ValueError(f"GeneratorServerManager does not support top_k={top_k}")
        params = SamplingParams(
            temperature=float(sampling_params.get("temperature", 1.0)),
            top_p=float(sampling_params.get("top_p", 1.0)),
            max_new_tokens=int(sampling_params.get("max_tokens") or self.default_max_tokens),
            seed=sampling_params.get("seed"),
        )
        prompt = self._prompt(prompt_ids, image_data)
        future = asyncio.get_running_loop().create_future()
        self._pending.append((prompt, params, future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._drain())
        completion = await future
        logprobs = list(completion.logprobs) if sampling_params.get("logprobs") else None
        return TokenOutput(token_ids=list(completion.token_ids), log_probs=logprobs, stop_reason="completed")

    def _prompt(self, prompt_ids: list[int], images: list[Any] | None) -> list[int]:
        """The generator's prompt: the ids, with the images' model inputs for a vision-language model."""
        if not images:
            return list(prompt_ids)
        processor = getattr(self.generator, "processor", None)
        if not isinstance(processor, VisionProcessor):
            raise ValueError(f"{len(images)} images sent to a text model: serve a vision-language model")
        if processor.image_token_id not in prompt_ids:
            raise ValueError(f"{len(images)} images sent with a prompt that has no image tokens")
        return VisionPrompt(prompt_ids, processor.model_inputs(prompt_ids, [processor.image_inputs(images)]))

    async def _drain(self) -> None:
        await asyncio.sleep(0.002)  # let the other episodes' calls of this turn arrive
        while self._pending:
            batch, self._pending = self._pending[: self.max_batch_size], self._pending[self.max_batch_size :]
            try:
                completions = await asyncio.to_thread(
                    self.generator.generate_tokens, [prompt for prompt, _, _ in batch], [p for _, p, _ in batch]
                )
            except Exception as error:  # every caller of the batch gets the error
                for _, _, future in batch:
                    future.set_exception(error)
                continue
            for (_, _, future), completion in zip(batch, completions):
                future.set_result(completion)


def dataset_rows(
    env_id: str,
    task_ids: list[int],
    seeds: list[int] | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    agent_name: str = AGENT_NAME,
) -> list[dict[str, Any]]:
    """Rows of a verl RL dataset (write them to parquet) that play ``env_id``'s tasks with this loop.

    ``prompt`` is a placeholder that verl's dataset requires (the env gives the real prompt);
    ``extra_info`` says which episode to play (``env_kwargs`` as JSON); ``agent_name`` selects the loop.
    """
    seeds = seeds if seeds is not None else list(task_ids)
    if len(seeds) != len(task_ids):
        raise ValueError("give one seed per task id")
    return [
        {
            "data_source": f"agentgym/{env_id}",
            "prompt": [{"role": "user", "content": f"{env_id} task {task_id}"}],
            "agent_name": agent_name,
            "reward_model": {"style": "rule", "ground_truth": ""},
            "extra_info": {
                "index": index,
                "env_id": env_id,
                "task_id": int(task_id),
                "seed": int(seed),
                "env_kwargs": json.dumps(dict(env_kwargs or {})),
            },
        }
        for index, (task_id, seed) in enumerate(zip(task_ids, seeds))
    ]


def _without_image_data(messages: list[Message]) -> list[Message]:
    """``messages`` with each image part as ``{"type": "image"}`` (its data is in ``multi_modal_data``)."""
    return [
        {**message, "content": [{"type": "image"} if is_image_part(part) else part for part in message["content"]]}
        if isinstance(message.get("content"), list)
        else message
        for message in messages
    ]


def _plain(value: Any) -> Any:
    """OmegaConf containers (hydra passes config entries as them) as plain dicts and lists."""
    if value is None or isinstance(value, (dict, list, str, int, float, bool)):
        return value
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else dict(value)
