"""agentgym envs as SkyRL text environments (``skyrl-gym`` 0.4, ``skyrl_gym.envs.base_text_env``).

SkyRL's generator plays one episode per env instance: it makes the env with
``skyrl_gym.make(env_class, env_config=..., extras=...)`` (``extras`` is the dataset row
without its prompt, plus ``max_turns``), calls ``init(prompt)`` for the chat to start
from, then ``step(reply_text)`` after each model reply, appending the returned
``observations`` (chat messages) to the conversation until ``done``.

Importing this module registers every agentgym id with skyrl-gym's registry as
``agentgym:<ID>`` (skyrl-gym's registry matches ids exactly, so each id is registered)::

    import skyrl_gym
    import agentgym.integrations.skyrl  # registers agentgym:<ID> for every agentgym id

    env = skyrl_gym.make("agentgym:Sokoban-v0", extras={"task_id": 3})
    messages, metadata = env.init([])
    out = env.step("Action: up")  # {"observations": [...], "reward": ..., "done": ..., "metadata": {...}}

The messages follow :class:`agentgym.wrappers.ChatWrapper`: the system prompt, the
env's first observation as a user message, then per step the env's answer as a user
message (text replies) or as ``{"role": "tool", "tool_call_id", "name", "content"}``
messages (tool calls). When ``done`` the observations are ``[]`` (the final
observation is in ``metadata["observation"]``). The step reward is the env's reward
(the change of its score), so an episode's rewards add up to the env's final
``info["score"]``. An action the env cannot parse or execute is answered with the
env's observation saying why (reward 0, ``metadata["invalid_action"]`` true).

Settings, read from ``extras`` (a dataset row's columns, or its ``extra_info``) first and
then from ``env_config`` (SkyRL's ``environment.skyrl_gym.<env_class>`` config):

* ``task_id``, ``split``, ``seed``: which task ``init`` resets to (default: a train task);
* ``max_turns``: end the episode after this many steps (SkyRL sets it from
  ``generator.max_turns``; the env's own step limit applies too);
* ``action_format``: ``"text"`` (default; the env reads the reply's ``Action:`` line) or
  ``"tools"``: the reply's Hermes/Qwen ``<tool_call>`` blocks are the env's native tool
  calls (:func:`agentgym.contract.tool_parsing.assistant_message`); a reply without blocks is
  played as text. The tools are described in the system prompt (``tools_in_prompt``,
  default true; set it false when the tools reach the chat template another way, e.g.
  ``generator.chat_template_kwargs.tools``) and are :attr:`AgentGymTextEnv.tools`;
* ``system_prompt``: replaces ChatWrapper's default (a system message in ``prompt``
  replaces it too); ``env_kwargs``: keyword arguments of ``gym.make``;
  ``max_episode_steps``: the env's step limit.

:func:`dataset_rows` builds the rows of a SkyRL training set (``prompt``, ``env_class``,
task columns) for one agentgym id. See docs/train-with-skyrl.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import skyrl_gym
from omegaconf import DictConfig, OmegaConf
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from agentgym.contract.registry import env_info, list_envs
from agentgym.contract.tool_parsing import TOOL_CALL_END, TOOL_CALL_START, assistant_message
from agentgym.integrations._session import make_env, reset_options
from agentgym.wrappers.chat import (
    ACTION_FORMATS,
    DEFAULT_SYSTEM_PROMPT,
    DEFAULT_TOOLS_SYSTEM_PROMPT,
    ChatWrapper,
    Message,
)

#: What prefixes an agentgym id in skyrl-gym's registry.
PREFIX = "agentgym:"
_ENTRY_POINT = f"{__name__}:AgentGymTextEnv"
_SETTINGS = (
    "task_id",
    "split",
    "seed",
    "max_turns",
    "action_format",
    "tools_in_prompt",
    "system_prompt",
    "env_kwargs",
    "max_episode_steps",
)


def tools_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """The paragraph that offers ``tools`` to a model and asks for ``<tool_call>`` blocks (Hermes/Qwen convention)."""
    listing = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    example = json.dumps({"name": "<tool name>", "arguments": {"<parameter>": "<value>"}})
    return (
        "You can call these tools (JSON schemas, one per line):\n"
        f"<tools>\n{listing}\n</tools>\n\n"
        f"Call one tool per turn with a JSON object in {TOOL_CALL_START}{TOOL_CALL_END} tags:\n"
        f"{TOOL_CALL_START}\n{example}\n{TOOL_CALL_END}"
    )


class AgentGymTextEnv(BaseTextEnv):
    """One episode of an agentgym env behind skyrl-gym's text env interface (see the module docstring).

    ``env_id`` is the agentgym id (``agentgym:`` prefix allowed); ``env_config`` and
    ``extras`` are what SkyRL's generator passes to ``skyrl_gym.make``. The wrapped env
    is :attr:`chat` (a :class:`~agentgym.wrappers.ChatWrapper`; ``chat.unwrapped`` is the family's env).
    """

    def __init__(
        self, env_id: str, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.env_id = env_info(env_id).id
        self.settings = _settings(env_config, extras)
        action_format = self.settings.get("action_format", "text")
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
        limit = self.settings.get("max_episode_steps")
        self.max_turns = int(self.settings.get("max_turns") or limit or env_info(self.env_id).max_episode_steps)
        env = make_env(self.env_id, dict(self.settings.get("env_kwargs") or {}), None if limit is None else int(limit))
        system_prompt = self.settings.get("system_prompt", DEFAULT_SYSTEM_PROMPT)
        self.chat = ChatWrapper(env, system_prompt, action_format=action_format)
        #: The env's function tools (OpenAI shape) in tools mode, else None.
        self.tools: list[dict[str, Any]] | None = self.chat.tools
        self.info: dict[str, Any] = {}
        self.invalid_actions = 0

    def init(self, prompt: Sequence[Message] | None = None) -> tuple[list[Message], dict[str, Any]]:
        """Reset to the configured task; return the chat to generate from and the task's metadata.

        A system message in ``prompt`` replaces the system prompt; its other messages come
        before the env's first observation.
        """
        prompt = [dict(message) for message in prompt or ()]
        systems = [message for message in prompt if message.get("role") == "system"]
        if systems:
            self.chat.system_prompt = str(systems[-1].get("content") or "")
        seed = self.settings.get("seed")
        options = reset_options(self.settings.get("task_id"), self.settings.get("split"))
        messages, self.info = self.chat.reset(seed=None if seed is None else int(seed), options=options)
        self.turns, self.invalid_actions = 0, 0
        messages = [dict(message) for message in messages]
        if self.tools is not None and self.settings.get("tools_in_prompt", True):
            offer = tools_prompt(self.tools)
            if messages[0]["role"] == "system":
                messages[0]["content"] = f"{messages[0]['content']}\n\n{offer}".lstrip()
            else:
                messages.insert(0, {"role": "system", "content": offer})
        head = 1 if messages[0]["role"] == "system" else 0
        others = [message for message in prompt if message.get("role") != "system"]
        messages[head:head] = others
        metadata = {
            "env_id": self.env_id,
            "task_id": self.info.get("task_id"),
            "instruction": self.info.get("instruction"),
        }
        return messages, metadata

    def step(self, action: str | Mapping[str, Any]) -> BaseTextEnvStepOutput:
        """Play one model reply (its text, or an assistant message) and return the env's answer as chat messages."""
        if isinstance(action, str) and self.tools is not None:
            action = assistant_message(action)
        self.turns += 1
        before = len(self.chat.transcript)
        _, reward, terminated, truncated, self.info = self.chat.step(action)
        self.invalid_actions += bool(self.info.get("invalid_action", False))
        answer = [dict(message) for message in self.chat.transcript[before + 1 :]]
        done = bool(terminated or truncated or self.turns >= self.max_turns)
        metadata = {
            "observation": answer[0]["content"] if answer else "",
            "action": self.info.get("action"),
            "invalid_action": bool(self.info.get("invalid_action", False)),
            "score": float(self.info.get("score", 0.0)),
            "success": bool(self.info.get("success", False)),
            "terminated": bool(terminated),
            "truncated": bool(truncated) or (done and not terminated),
            "task_id": self.info.get("task_id"),
        }
        return BaseTextEnvStepOutput(
            observations=[] if done else answer, reward=float(reward), done=done, metadata=metadata
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's numbers: score, success, steps and invalid actions."""
        return {
            "score": float(self.info.get("score", 0.0)),
            "success": bool(self.info.get("success", False)),
            "steps": self.turns,
            "invalid_actions": self.invalid_actions,
        }

    def close(self) -> None:
        self.chat.close()


def _settings(env_config: Mapping[str, Any] | None, extras: Mapping[str, Any] | None) -> dict[str, Any]:
    """The adapter's settings: ``extras`` (top level, then its ``extra_info``) over ``env_config``."""
    if isinstance(env_config, DictConfig):  # SkyRL passes its config section as it is
        env_config = OmegaConf.to_container(env_config, resolve=True)
    settings: dict[str, Any] = {}
    layers = [env_config or {}, (extras or {}).get("extra_info") or {}, extras or {}]
    for layer in layers:
        for key in _SETTINGS:
            if key in layer and layer[key] is not None:
                settings[key] = layer[key]
    return settings


def register_envs(env_ids: Sequence[str] | None = None) -> list[str]:
    """Register agentgym ids (default: all) with skyrl-gym as ``agentgym:<ID>``; return the skyrl-gym ids.

    Ids already registered are left as they are, so calling it again is harmless (do so
    after registering more agentgym envs).
    """
    ids = [env_info(env_id).id for env_id in env_ids] if env_ids is not None else [info.id for info in list_envs()]
    names = []
    for env_id in ids:
        name = PREFIX + env_id
        if name not in skyrl_gym.registry:
            skyrl_gym.register(id=name, entry_point=_ENTRY_POINT, kwargs={"env_id": env_id})
        names.append(name)
    return names


def dataset_rows(
    env_id: str, split: str = "train", num_tasks: int | None = None, **settings: Any
) -> list[dict[str, Any]]:
    """Rows of a SkyRL prompt dataset: one per task of ``split`` (the first ``num_tasks``).

    Each row has SkyRL's ``prompt`` (the system prompt, which ``init`` keeps) and
    ``env_class`` (``agentgym:<ID>``) columns, then ``task_id``, ``split`` and ``settings``
    (any of the module docstring's settings), which SkyRL hands to the env as ``extras``.
    Write them with e.g. ``pandas.DataFrame(rows).to_parquet(path)``.
    """
    info = env_info(env_id)
    unknown = set(settings) - set(_SETTINGS)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; the settings are {', '.join(_SETTINGS)}")
    ids = info.splits.ids(split)
    ids = ids[:num_tasks] if num_tasks is not None else ids
    default = DEFAULT_TOOLS_SYSTEM_PROMPT if settings.get("action_format") == "tools" else DEFAULT_SYSTEM_PROMPT
    system_prompt = settings.get("system_prompt", default)
    prompt = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [
        {"prompt": prompt, "env_class": PREFIX + info.id, "task_id": int(task_id), "split": split, **settings}
        for task_id in ids
    ]


register_envs()
