"""The policy interface: the chat so far in, the next reply out."""

from __future__ import annotations

import abc
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

import gymnasium as gym

from agentgym.contract.tool_parsing import parse_tool_calls

T = TypeVar("T")

Message = dict[str, Any]


@dataclass
class Episode:
    """What a policy may know about the episode it acts in.

    LLM policies use ``seed`` (as a sampling seed, where the backend takes one) and
    ``tools``: the env's function tools when the run plays native tool calls (``None`` when
    it plays text), to be offered to the model (``tools=``);
    scripted policies read the env (its unwrapped instance) through ``in_env``, which runs a function of the env
    where the runner runs the env's own calls (some envs must stay on one thread).
    ``rng`` is seeded from ``seed``. An LLM policy whose model's context cannot hold the whole chat leaves out its
    oldest turns (:func:`drop_oldest_turns`) and keeps their count in ``dropped_turns``.
    """

    key: str
    seed: int
    env: gym.Env
    run_in_env: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    #: The oldest turns an LLM policy last left out of the prompt to fit its model's context (the next prompt
    #: leaves out at least as many: the history only grows).
    dropped_turns: int = 0

    @cached_property
    def rng(self) -> random.Random:
        """A generator seeded from ``seed``, made on first use (most policies draw nothing)."""
        return random.Random(self.seed)

    async def in_env(self, function: Callable[[gym.Env], T]) -> T:
        """``function(env)``, run where the env's calls run."""
        if self.run_in_env is None:
            return function(self.env)
        return await self.run_in_env(lambda: function(self.env))


@dataclass
class Reply:
    """A policy's reply and what it cost.

    ``text`` is the reply's text (its content beside any tool calls); ``tool_calls`` the
    native tool calls it made, in OpenAI's shape (``{"id", "type": "function", "function":
    {"name", "arguments"}}``, arguments a JSON string), or None.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The sampled token ids and their logprobs, where the backend reports them.
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    #: Why generation ended (``"stop"``, ``"length"``: cut at the token limit, ``"tool_calls"``), where reported.
    finish_reason: str | None = None
    #: The oldest turns of the history left out of the prompt so that it fit the model's context.
    dropped_turns: int = 0

    @property
    def action(self) -> str | dict[str, Any]:
        """What the env is given: the assistant message with its tool calls, or the text."""
        if not self.tool_calls:
            return self.text
        return {"role": "assistant", "content": self.text or None, "tool_calls": self.tool_calls}

    @classmethod
    def parsed(cls, text: str, tools: list[dict[str, Any]] | None, **usage: Any) -> Reply:
        """A reply to a prompt that offered ``tools``: tool calls read from ``text`` (Hermes/Qwen blocks).

        Without tools the text is kept as it is.
        """
        if not tools:
            return cls(text, **usage)
        parsed = parse_tool_calls(text)
        if not parsed.tool_calls:
            return cls(text, **usage)
        return cls(parsed.content or "", tool_calls=parsed.tool_calls, **usage)


class PromptTooLong(RuntimeError):
    """The episode's prompt does not fit the model's context even with its oldest turns left out (the task and the
    newest observation alone are too long). The runner ends the episode there, unsuccessful, as a failure of the
    model rather than an error (``EpisodeRecord.stopped == "context"``; AgentBench's "agent context limit")."""


class Policy(abc.ABC):
    """Maps the chat history of an episode to the next reply.

    ``act`` is a coroutine so that hundreds of episodes can wait on a model at once;
    backends that batch collect concurrent calls into one forward pass.
    """

    #: A short label for results and leaderboards, e.g. ``"oracle"`` or a model name.
    name: str = "policy"

    @abc.abstractmethod
    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        """The next reply, given the messages so far (system, user, assistant, ...)."""

    def act_now(self, messages: list[Message], episode: Episode) -> Reply | None:
        """The next reply computed at once, where the env's calls run, by a policy that never waits
        (the scripted baselines); None (the default) when the reply must be awaited from :meth:`act`.

        The runner asks it first for envs it steps inline, sparing a coroutine per step. A class
        that overrides ``act`` and not ``act_now`` answers None here, so its ``act`` is never bypassed.
        """
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "act" in vars(cls) and "act_now" not in vars(cls):
            cls.act_now = Policy.act_now  # type: ignore[method-assign]

    def describe(self) -> dict[str, Any]:
        """The policy's configuration, recorded in a run's ``run.json``."""
        return {"name": self.name}

    async def aclose(self) -> None:
        """Release connections, threads or models."""


def history_turns(messages: list[Message]) -> list[int]:
    """Where each turn of ``messages`` starts: the index of each assistant message after the task (the leading
    system messages and the first observation, which holds the task: the head that a history window keeps)."""
    head = next((i for i, message in enumerate(messages) if message.get("role") != "system"), len(messages)) + 1
    return [i for i in range(head, len(messages)) if messages[i].get("role") == "assistant"]


def droppable_turns(messages: list[Message]) -> int:
    """How many turns :func:`drop_oldest_turns` may leave out of ``messages``: all but the newest."""
    return max(len(history_turns(messages)) - 1, 0)


def drop_oldest_turns(messages: list[Message], count: int) -> list[Message]:
    """``messages`` without their ``count`` oldest turns after the task (as ``ChatWrapper(history_window=K)`` cuts a
    history); the newest turn always stays, with the observation to answer."""
    starts = history_turns(messages)
    count = min(count, len(starts) - 1)
    if count <= 0:
        return messages
    return messages[: starts[0]] + messages[starts[count] :]
