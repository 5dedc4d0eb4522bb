"""agentgym envs as OpenRLHF multi-turn agents (OpenRLHF 0.11, ``openrlhf.utils.agent``).

OpenRLHF's PPO/GRPO trainer (``openrlhf.cli.train_ppo_ray``) plays multi-turn episodes
through the executor class of the Python file given as ``--train.agent_func_path``: the
file must define ``AgentExecutor``. One line makes that file::

    # agentgym_agent.py
    from agentgym.integrations.openrlhf import AgentGymExecutor as AgentExecutor

Each dataset row is one episode; its label (``--data.label_key``) names the env and the
task as JSON, e.g. ``{"env_id": "WebShop-v0", "task_id": 12}`` (:func:`dataset_rows`
writes such rows; a bare id such as ``"WebShop-v0"`` plays a train task). Optional
label keys: ``split``, ``seed``, ``action_format`` (``"text"`` or ``"tools"``),
``system_prompt``, ``env_kwargs`` (of ``gym.make``), ``max_episode_steps`` and
``max_turns`` (default: the env's step limit).

OpenRLHF's ``MultiTurnAgentExecutor`` runs the loop, token ids in and out: the prompt is
what :meth:`AgentGymInstance.reset` returns (the row's own input is not used), then
per turn the engine samples ids, :meth:`AgentGymInstance.step` plays the reply on the
env, and the env's answer is appended as text that OpenRLHF tokenizes (outside its
``action_ranges``, so env tokens get no loss). Here:

* the prompt is the chat of :class:`~agentgym.wrappers.ChatWrapper` (system prompt and
  first observation) rendered with the tokenizer's chat template (with the env's tools in
  tools mode) and its generation prompt;
* the reply played is the decoded sampled ids without special tokens (OpenRLHF's text
  keeps them); in tools mode its ``<tool_call>`` blocks are the env's native tool calls
  (:func:`agentgym.contract.tool_parsing.assistant_message`), a reply without any is played as text;
* the env's answer is the chat template's continuation after the reply: the end of the
  assistant turn (unless the model sampled it), the observation as a user message (text)
  or tool messages (tools), and the next generation prompt
  (:meth:`agentgym.train.rollout.ChatTokens.delta_text`);
* ``rewards`` is the step's reward (the change of the env's score: an episode's rewards
  add up to its final score) and ``scores`` the env's score; ``extra_logs`` has
  ``score``, ``success``, ``invalid_action`` and ``steps``. An action the env cannot read
  gets its explanatory observation, reward 0, and the episode goes on.

Envs run on a thread of their own where they wait on something (browsers, JVMs), as in
the protocol adapters (:class:`agentgym.integrations._session.EnvSession`).

OpenRLHF's wheel requires flash-attn and deepspeed (CUDA builds) and vLLM serves its
rollouts: training runs on GPUs. This module needs only ``openrlhf.utils.agent``, which
imports on CPU (``pip install --no-deps openrlhf==0.11.2 pylatexenc`` next to torch and
transformers); :class:`LocalEngine` stands in for OpenRLHF's vLLM rollout actor on CPU
(tests, benchmarks). See docs/train-with-openrlhf.md.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from agentgym.contract.registry import env_info
from agentgym.contract.tool_parsing import assistant_message, template_messages
from agentgym.integrations._session import EnvSession, reset_options
from agentgym.llm.generation import Generator, SamplingParams
from agentgym.train.rollout import ChatTokens
from agentgym.wrappers.chat import ACTION_FORMATS, DEFAULT_SYSTEM_PROMPT, DEFAULT_TOOLS_SYSTEM_PROMPT, ChatWrapper

#: The label keys an episode reads (besides ``env_id``).
LABEL_KEYS = (
    "task_id",
    "split",
    "seed",
    "action_format",
    "system_prompt",
    "env_kwargs",
    "max_episode_steps",
    "max_turns",
)


def parse_label(label: str | Mapping[str, Any]) -> dict[str, Any]:
    """An episode's settings from a dataset label: a JSON object with ``env_id`` (or a bare env id).

    Raises ``ValueError`` naming what is wrong (an unknown env id raises
    :class:`agentgym.contract.registry.UnknownEnvError`).
    """
    if isinstance(label, str):
        text = label.strip()
        if not text.startswith("{"):
            return {"env_id": env_info(text).id}
        try:
            label = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"the label is not a JSON object or an env id: {error}") from None
    if not isinstance(label, Mapping) or not isinstance(label.get("env_id"), str):
        raise ValueError(f'the label must be a JSON object with "env_id" (or an env id), got {label!r}')
    unknown = set(label) - {"env_id", *LABEL_KEYS}
    if unknown:
        raise ValueError(f"unknown label keys {sorted(unknown)}; the keys are env_id, {', '.join(LABEL_KEYS)}")
    if label.get("action_format", "text") not in ACTION_FORMATS:
        raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {label['action_format']!r}")
    return {**label, "env_id": env_info(label["env_id"]).id}


@dataclass
class _Episode:
    """What one ``execute`` call shares with the instance OpenRLHF makes for it."""

    tokenizer: Any
    engine: _RecordingEngine
    instance: AgentGymInstance | None = None


_EPISODE: contextvars.ContextVar[_Episode] = contextvars.ContextVar("agentgym_openrlhf_episode")


class _RecordingEngine:
    """OpenRLHF's rollout engine, keeping the ids it sampled last (the instance only gets their text)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.last_token_ids: list[int] = []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        output = await self.engine.generate(prompt_token_ids, sampling_params, multi_modal_data=multi_modal_data)
        self.last_token_ids = list(output.outputs[0].token_ids)
        return output


class AgentGymInstance(AgentInstanceBase):
    """One episode of an agentgym env as an OpenRLHF ``AgentInstance`` (see the module docstring).

    Made by :class:`AgentGymExecutor`, which hands it the tokenizer and the ids sampled.
    """

    def __init__(self, episode: _Episode | None = None) -> None:
        if episode is None:
            raise TypeError("AgentGymInstance is made by AgentGymExecutor (use it as the AgentExecutor)")
        self.episode = episode
        self.chat_tokens = ChatTokens(episode.tokenizer, episode.tokenizer.all_special_ids)
        self.session: EnvSession | None = None
        self.chat: ChatWrapper | None = None
        self.max_turns = 0
        self.turns = 0

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Make the label's env, reset it to its task, and return the rendered first prompt as ``observation``."""
        settings = parse_label(states["label"])
        action_format = settings.get("action_format", "text")
        default = DEFAULT_TOOLS_SYSTEM_PROMPT if action_format == "tools" else DEFAULT_SYSTEM_PROMPT
        limit = settings.get("max_episode_steps")
        self.max_turns = int(settings.get("max_turns") or limit or env_info(settings["env_id"]).max_episode_steps)
        self.session = EnvSession(settings["env_id"], settings.get("env_kwargs"), limit)
        env = await self.session.get_env()
        self.chat = chat = ChatWrapper(env, settings.get("system_prompt", default), action_format=action_format)
        seed = settings.get("seed")
        options = reset_options(settings.get("task_id"), settings.get("split"))
        messages, _ = await self.session.run(lambda: chat.reset(seed=seed, options=options))
        prompt = self.episode.tokenizer.apply_chat_template(
            template_messages(messages), tools=chat.tools, add_generation_prompt=True, tokenize=False
        )
        return {"observation": prompt, "label": states["label"]}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Play the sampled reply; return OpenRLHF's step result (rewards, scores, feedback text, done, logs)."""
        chat = self.chat
        assert chat is not None and self.session is not None, "step before reset"
        sampled = self.episode.engine.last_token_ids
        reply: Any = self.episode.tokenizer.decode(sampled, skip_special_tokens=True)
        if chat.tools is not None:
            reply = assistant_message(reply)
        history = chat.transcript[:]
        _, reward, terminated, truncated, info = await self.session.run(lambda: chat.step(reply))
        self.turns += 1
        done = bool(terminated or truncated or self.turns >= self.max_turns)
        answer = chat.transcript[len(history) + 1 :]
        feedback = "" if done else self.chat_tokens.delta_text(history, sampled, answer, chat.tools)
        score = float(info.get("score", 0.0))
        return {
            "rewards": torch.tensor(float(reward)),
            "scores": torch.tensor(score),
            "environment_feedback": feedback,
            "done": done,
            "extra_logs": {
                "score": score,
                "success": float(bool(info.get("success", False))),
                "invalid_action": float(bool(info.get("invalid_action", False))),
                "steps": float(self.turns),
            },
        }

    async def close(self) -> None:
        """Close the env where it runs; never raises."""
        if self.session is not None:
            await self.session.close()


class AgentGymExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn executor playing agentgym envs: the ``AgentExecutor`` of ``--train.agent_func_path``.

    OpenRLHF makes it with no arguments and calls :meth:`execute` once per sample,
    concurrently; each call plays one episode with its own :class:`AgentGymInstance`
    and closes the env at the end.
    """

    def __init__(self) -> None:
        super().__init__(AgentGymInstance)
        # OpenRLHF makes the instance with no arguments: hand it this episode's tokenizer and engine.
        self.agent_instance_cls = self._new_instance

    @staticmethod
    def _new_instance() -> AgentGymInstance:
        episode = _EPISODE.get()
        episode.instance = AgentGymInstance(episode)
        return episode.instance

    async def execute(
        self,
        prompt: str,
        label: str,
        sampling_params: Any,
        max_length: int,
        hf_tokenizer: Any,
        llm_engine: Any,
        images: Any = None,
    ) -> dict[str, Any]:
        episode = _Episode(hf_tokenizer, _RecordingEngine(llm_engine))
        token = _EPISODE.set(episode)
        try:
            return await super().execute(
                prompt, label, sampling_params, max_length, hf_tokenizer, episode.engine, images
            )
        finally:
            _EPISODE.reset(token)
            if episode.instance is not None:
                await episode.instance.close()


def dataset_rows(
    env_id: str, split: str = "train", num_tasks: int | None = None, **settings: Any
) -> list[dict[str, str]]:
    """Rows of an OpenRLHF prompt dataset (JSON lines): ``input`` (a short description) and ``label`` (JSON).

    One row per task of ``split`` (its first ``num_tasks``); ``settings`` are further
    label keys (:data:`LABEL_KEYS`). Train with ``--data.input_key input --data.label_key label``
    (without ``--data.apply_chat_template``: the prompt comes from the env).
    """
    info = env_info(env_id)
    ids = info.splits.ids(split)
    ids = ids[:num_tasks] if num_tasks is not None else ids
    rows = []
    for task_id in ids:
        label = {"env_id": info.id, "task_id": int(task_id), "split": split, **settings}
        parse_label(label)
        rows.append({"input": f"{info.id} task {task_id}", "label": json.dumps(label)})
    return rows


@dataclass
class EngineParams:
    """The fields of ``vllm.SamplingParams`` that :class:`LocalEngine` reads (a vLLM one works too)."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    logprobs: int | None = None
    seed: int | None = None


@dataclass
class _Pending:
    prompt: list[int]
    params: SamplingParams
    future: asyncio.Future[Any] = field(repr=False)


class LocalEngine:
    """OpenRLHF's rollout engine interface (``await generate(prompt_token_ids, sampling_params)``) on a
    :class:`~agentgym.llm.generation.Generator`: in-process transformers, for CPU runs and tests.

    Returns what OpenRLHF reads of vLLM's ``RequestOutput``: ``outputs[0]`` with
    ``token_ids``, ``text``, ``finish_reason`` and, when ``sampling_params.logprobs`` is
    set, ``logprobs`` (one ``{token_id: Logprob}`` per token). Calls that arrive in the
    same event-loop turn are decoded as one batch, on a worker thread. ``max_new_tokens``
    caps every completion (OpenRLHF's multi-turn executor asks each turn for all the
    length budget left).
    """

    def __init__(self, generator: Generator, max_batch_size: int = 64, max_new_tokens: int | None = None) -> None:
        self.generator = generator
        self.max_batch_size = max_batch_size
        self.max_new_tokens = max_new_tokens
        self.batches = 0
        self._pending: list[_Pending] = []
        self._flush: asyncio.Task[None] | None = None

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        if multi_modal_data:
            raise ValueError("LocalEngine generates from text only")
        params = SamplingParams(
            temperature=float(getattr(sampling_params, "temperature", 1.0)),
            top_p=float(getattr(sampling_params, "top_p", 1.0)),
            max_new_tokens=min(
                filter(None, (getattr(sampling_params, "max_tokens", None), self.max_new_tokens)), default=None
            ),
            seed=getattr(sampling_params, "seed", None),
        )
        loop = asyncio.get_running_loop()
        pending = _Pending(list(prompt_token_ids), params, loop.create_future())
        self._pending.append(pending)
        if self._flush is None or self._flush.done():
            self._flush = loop.create_task(self._run())
        completion = await pending.future
        logprobs = None
        if getattr(sampling_params, "logprobs", None) is not None:
            logprobs = [
                {token: SimpleNamespace(logprob=value)}
                for token, value in zip(completion.token_ids, completion.logprobs)
            ]
        output = SimpleNamespace(
            token_ids=completion.token_ids,
            text=completion.text,
            finish_reason="length" if completion.finish_reason == "length" else "stop",
            logprobs=logprobs,
        )
        return SimpleNamespace(prompt_token_ids=list(prompt_token_ids), outputs=[output])

    async def _run(self) -> None:
        await asyncio.sleep(0)  # let the other episodes of this turn queue their requests
        while self._pending:
            batch, self._pending = self._pending[: self.max_batch_size], self._pending[self.max_batch_size :]
            try:
                completions = await asyncio.to_thread(
                    self.generator.generate_tokens, [item.prompt for item in batch], [item.params for item in batch]
                )
            except Exception as error:  # every waiting episode gets the error
                for item in batch:
                    item.future.set_exception(error)
                continue
            self.batches += 1
            for item, completion in zip(batch, completions):
                item.future.set_result(completion)
