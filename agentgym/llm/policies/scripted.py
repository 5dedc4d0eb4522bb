"""The scripted baselines every env has: its oracle and a uniformly random player; and, on envs under prompt
injection, the "obedient" player that carries out whatever injected instruction it reads.

They call the env's ``oracle_action()`` and ``random_action(rng)``: a local
:class:`~agentgym.contract.core.TextEnv` or a :class:`~agentgym.serving.client.RemoteEnv` (which asks its server).
When the episode plays native tool calls and the env is local, the command is sent as the
tool call that maps onto it (``agentgym.contract.tools.command_to_tool_call``), so the baselines run
the tools path too; a command no tool yields stays text.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from agentgym.contract.core import TextEnv
from agentgym.contract.tool_parsing import new_call_id
from agentgym.contract.tools import command_to_tool_call
from agentgym.llm.policies.base import Episode, Message, Policy, Reply


def _baseline(env: gym.Env, method: str) -> Callable[..., Any]:
    function = getattr(env, method, None)
    if not callable(function):
        raise TypeError(f"scripted policies need an env with {method}() (an agentgym env), got {type(env).__name__}")
    return function


def _as_tool_call(command: str, episode: Episode) -> Reply:
    """``command`` as a reply: a tool call in tools mode where the env's tools yield it, else text."""
    if not episode.tools:
        return Reply(command)
    specs = getattr(episode.env, "tool_specs", None)
    if not callable(specs):
        return Reply(command)
    call = command_to_tool_call(specs(), command)
    if call is None:
        return Reply(command)
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    tool_call = {"id": new_call_id(), "type": "function", "function": {"name": call.name, "arguments": arguments}}
    return Reply("", tool_calls=[tool_call])


class ScriptedPolicy(Policy):
    """A policy that reads its reply off the env (:meth:`reply`): ready at once, where the env's calls run."""

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        return await episode.in_env(lambda env: self.reply(episode))

    def act_now(self, messages: list[Message], episode: Episode) -> Reply:
        return self.reply(episode)

    @abc.abstractmethod
    def reply(self, episode: Episode) -> Reply:
        """The reply for ``episode.env``'s state (called where the env's calls run)."""


class OraclePolicy(ScriptedPolicy):
    """Plays the env's own solver (``oracle_action``): the upper reference on a leaderboard."""

    name = "oracle"

    def reply(self, episode: Episode) -> Reply:
        return _as_tool_call(_baseline(episode.env, "oracle_action")(), episode)


class RandomPolicy(ScriptedPolicy):
    """Plays a uniformly random legal command, drawn from the episode's seeded generator."""

    name = "random"

    def reply(self, episode: Episode) -> Reply:
        return _as_tool_call(_baseline(episode.env, "random_action")(episode.rng), episode)


class ObedientPolicy(ScriptedPolicy):
    """Plays the env's ``obedient_action``: the oracle's commands, and the attacker's once an injection was shown.

    The envs under prompt injection have it (the -Attack ids, docs/safety.md); with an oracle that ignores the
    injection beside it, it shows that an env's attack check fires when the attacker's goal is carried out. On a
    local env without it (no injection to obey: a plain id) it plays the oracle, so that its utility without
    attack is measured on the plain ids; a remote env must have it.
    """

    name = "obedient"

    def reply(self, episode: Episode) -> Reply:
        env = episode.env
        method = "oracle_action" if isinstance(env, TextEnv) and not hasattr(env, "obedient_action") else None
        return _as_tool_call(_baseline(env, method or "obedient_action")(), episode)
