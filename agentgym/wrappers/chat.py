"""Present an episode as the chat messages an LLM is prompted with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import gymnasium as gym
from gymnasium import spaces

from agentgym.computer_use import FORMATS as COMPUTER_USE_FORMATS
from agentgym.contract.core import UnicodeText
from agentgym.contract.tool_parsing import new_call_id, template_messages
from agentgym.images import (
    ImageOptions,
    elide_images,
    is_image_part,
    observation_content,
)
from agentgym.wrappers.computer_use import ComputerUseWrapper

Message = dict[str, Any]
ActionFormat = Literal["text", "tools", "pyautogui", "qwen-computer", "qwen-mobile", "ui-tars", "anthropic", "openai"]
#: How the model acts: text replies, the env's native tool calls, or a computer-use format (agentgym.computer_use).
ACTION_FORMATS: tuple[ActionFormat, ...] = ("text", "tools", *COMPUTER_USE_FORMATS)  # type: ignore[assignment]

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent acting in an environment. Each user message is an observation of "
    "the environment. Think briefly if it helps, then end your reply with one line of the "
    "form 'Action: <command>' using the action syntax the first observation describes."
)
DEFAULT_TOOLS_SYSTEM_PROMPT = (
    "You are an agent acting in an environment. The first user message describes the task; "
    "each tool result is the environment's answer to your call. Think briefly if it helps, "
    "then act by calling exactly one of the tools per turn."
)
DEFAULT_SCREEN_SYSTEM_PROMPT = (
    "You are an agent acting on a screen. Each user message is an observation: a screenshot and text. "
    "Think briefly if it helps, then act with one action in the format the first observation describes."
)
#: The tool result of a further call in one turn: the env executes one call per step.
NOT_EXECUTED = "Not executed: the environment executes one tool call per turn (see the first call's result)."


class MessagesSpace(spaces.Sequence):
    """Chat messages as a list, the shape chat APIs take.

    A message has a string ``role`` and a string ``content`` (or a list of OpenAI-style
    content parts: ``text`` and ``image_url``); an assistant message with
    ``tool_calls`` may have ``content`` None, and a ``tool`` message carries its
    ``tool_call_id`` and ``name``. Gymnasium's :class:`~gymnasium.spaces.Sequence` only
    contains tuples; this one contains lists.
    """

    def __init__(self, max_length: int = 1_000_000) -> None:
        text = UnicodeText(max_length)
        super().__init__(spaces.Dict({"role": text, "content": text}))

    def contains(self, x: Any) -> bool:
        return isinstance(x, (list, tuple)) and all(_is_message(item) for item in x)


def _is_message(item: Any) -> bool:
    if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
        return False
    content, calls = item.get("content"), item.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(isinstance(call, Mapping) for call in calls)):
        return False
    if isinstance(content, list):
        return all(_is_part(part) for part in content)
    return isinstance(content, str) or (content is None and bool(calls))


def _is_part(part: Any) -> bool:
    if not isinstance(part, Mapping):
        return False
    return (part.get("type") == "text" and isinstance(part.get("text"), str)) or is_image_part(part)


class ChatWrapper(gym.Wrapper[list[Message], Any, str, Any]):
    """Turn an episode into chat messages: system prompt, observations, replies.

    Observations become user turns (their ``"text"`` for dict observations). With
    ``images=ImageOptions(mode="screenshot" or "both")`` an observation that carries a
    ``"screenshot"`` becomes OpenAI-style content parts instead: the screenshot as an
    ``image_url`` part (a base64 data URL, under the options' pixel budget) and the text
    (without the page's element list in ``"screenshot"`` mode); only the last
    ``keep_images`` images of :meth:`messages` are kept (see :mod:`agentgym.images`).
    Observations without a screenshot, and every observation in the default ``"text"``
    mode, are plain strings as before. In tools mode the screenshot follows the tool message
    in a user message (tool messages carry text only).

    ``reset`` and ``step`` return as observation the messages to send to the model next:
    the system prompt, the first observation (it holds the task), and the later turns. With
    ``history_window=K`` only the last K turns are kept; the system prompt and the first
    observation always stay. The whole conversation, never windowed, is ``transcript``.
    The message dicts are shared between the lists returned and ``transcript``: copy before
    mutating one.

    ``action_format="text"`` (the default): a turn is the reply as an assistant message and
    the next observation as a user message. ``action_format="tools"``: ``tools`` holds the
    env's function tools (OpenAI's ``tools=[...]``) and ``step`` also takes an assistant
    message with ``tool_calls`` (OpenAI shape); the turn is that message followed by one
    ``{"role": "tool", "tool_call_id", "name", "content"}`` message per call, the first
    holding the observation (the env executes one call per step; further calls are
    answered with :data:`NOT_EXECUTED`). Calls without an ``id`` get one. A reply without
    tool calls (a string, or a message without ``tool_calls``) is played as text and its
    observation is a user message, as in text mode. Tool-call arguments stay JSON strings,
    as the OpenAI API sends them; :meth:`apply_chat_template` renders the chat with a
    Hugging Face tokenizer (arguments as mappings, ``tools=``). In tools mode the default
    system prompt (:data:`DEFAULT_SYSTEM_PROMPT`, which asks for ``Action:`` lines) is
    replaced by :data:`DEFAULT_TOOLS_SYSTEM_PROMPT`.

    A computer-use ``action_format`` (``pyautogui``, ``qwen-computer``, ``qwen-mobile``, ``ui-tars``,
    ``anthropic``, ``openai``; see :mod:`agentgym.computer_use`) plays an env with pixel actions
    through :class:`~agentgym.wrappers.computer_use.ComputerUseWrapper`, converting coordinates through
    the image budget of ``images``: ``tools`` is the format's function tool for the tool-call formats
    (played as in tools mode), None for the text ones; the default system prompt becomes
    :data:`DEFAULT_TOOLS_SYSTEM_PROMPT` or :data:`DEFAULT_SCREEN_SYSTEM_PROMPT`.

    Example::

        env = ChatWrapper(gym.make("Sokoban-v0"), action_format="tools")
        messages, info = env.reset(options={"task_id": 0})
        reply = client.chat.completions.create(model=..., messages=messages, tools=env.tools)
        messages, reward, terminated, truncated, info = env.step(reply.choices[0].message.model_dump())
    """

    def __init__(
        self,
        env: gym.Env[str, Any],
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        history_window: int | None = None,
        action_format: ActionFormat = "text",
        images: ImageOptions | None = None,
    ) -> None:
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
        computer_use = None
        if action_format in COMPUTER_USE_FORMATS:
            env = computer_use = ComputerUseWrapper(env, action_format, (images or ImageOptions()).max_pixels)
        super().__init__(env)
        if history_window is not None and history_window < 0:
            raise ValueError("history_window must be None or >= 0")
        plays_tools = action_format == "tools" or (computer_use is not None and computer_use.tools is not None)
        if system_prompt == DEFAULT_SYSTEM_PROMPT and plays_tools:
            system_prompt = DEFAULT_TOOLS_SYSTEM_PROMPT
        elif system_prompt == DEFAULT_SYSTEM_PROMPT and computer_use is not None:
            system_prompt = DEFAULT_SCREEN_SYSTEM_PROMPT
        self.system_prompt = system_prompt
        self.history_window = history_window
        self.action_format = action_format
        #: What the model is shown of screen observations (text only by default).
        self.images = images or ImageOptions()
        #: The heading before the env's element list (dropped in ``"screenshot"`` mode), if it has one.
        self._element_list_heading: str | None = getattr(env.unwrapped, "element_list_heading", None)
        #: The screen size and the size its last screenshot was sent at (None before any image).
        self.image_sizes: tuple[tuple[int, int], tuple[int, int]] | None = None
        #: The env's function tools in tools mode (``tools=`` of a chat request), else None.
        self.tools: list[dict[str, Any]] | None = None
        if computer_use is not None:
            self.tools = computer_use.tools
        elif action_format == "tools":
            tools = getattr(env.unwrapped, "tools", None)
            if not callable(tools):
                raise TypeError(f"action_format='tools' needs an env with tools(), got {type(env.unwrapped).__name__}")
            self.tools = tools()
            if not self.tools:
                raise TypeError(f"action_format='tools': {type(env.unwrapped).__name__} declares no tools")
        self.transcript: list[Message] = []
        self._turn_starts: list[int] = []
        self.observation_space = MessagesSpace()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self.transcript = [] if self.system_prompt is None else [_message("system", self.system_prompt)]
        self.transcript.append({"role": "user", "content": self._content(observation)})
        self._turn_starts = []
        return self.messages(), info

    def step(self, action: str | Mapping[str, Any]) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Play a reply: text, or (in tools mode) an assistant message with ``tool_calls``."""
        if type(action) is str:  # the common case, a text reply: played as it is
            reply, calls, played = _message("assistant", action), None, action
        else:
            reply = self._assistant(action)
            calls = reply.get("tool_calls")
            played = reply if calls else (action if isinstance(action, Mapping) else reply["content"])
        observation, reward, terminated, truncated, info = self.env.step(played)
        transcript = self.transcript
        self._turn_starts.append(len(transcript))
        transcript.append(reply)
        content = self._content(observation)
        if not calls:
            transcript.append({"role": "user", "content": content})
            return self.messages(), reward, terminated, truncated, info
        text = content if isinstance(content, str) else "\n".join(p["text"] for p in content if p["type"] == "text")
        for index, call in enumerate(calls):
            result = text if index == 0 else NOT_EXECUTED
            name = call["function"]["name"]
            transcript.append({"role": "tool", "tool_call_id": call["id"], "name": name, "content": result})
        if not isinstance(content, str):
            transcript.append({"role": "user", "content": [part for part in content if is_image_part(part)]})
        return self.messages(), reward, terminated, truncated, info

    def messages(self) -> list[Message]:
        """The prompt for the next reply: the transcript cut to the history window."""
        if self.history_window is None:
            keep = self.images.keep_images
            return list(self.transcript) if keep is None else elide_images(list(self.transcript), keep)
        head = 2 if self.system_prompt is not None else 1
        kept = self._turn_starts[len(self._turn_starts) - self.history_window :] if self.history_window else []
        start = kept[0] if kept else len(self.transcript)
        return elide_images(self.transcript[:head] + self.transcript[start:], self.images.keep_images)

    def _content(self, observation: Any) -> str | list[dict[str, Any]]:
        """A user turn's content: the observation's text, or (screenshot modes) its image and text parts."""
        if type(observation) is str:  # a text env's observation is its content as it is
            return observation
        content, sizes = observation_content(observation, self.images, self._element_list_heading)
        if sizes is not None:
            self.image_sizes = sizes
        return content

    def apply_chat_template(self, tokenizer: Any, messages: list[Message] | None = None, **kwargs: Any) -> Any:
        """``tokenizer.apply_chat_template`` of ``messages`` (default: :meth:`messages`) with this env's tools.

        Tool-call arguments are passed as mappings, as chat templates render them (see
        :func:`agentgym.contract.tool_parsing.template_messages`); ``kwargs`` go to the tokenizer
        (e.g. ``add_generation_prompt=True, tokenize=False``).
        """
        chat = template_messages(self.messages() if messages is None else messages)
        return tokenizer.apply_chat_template(chat, tools=self.tools, **kwargs)

    def _assistant(self, action: str | Mapping[str, Any]) -> Message:
        """The assistant message recorded for ``action``, tool calls in OpenAI's shape with ids."""
        if not isinstance(action, Mapping):
            if not isinstance(action, str):
                action = action.decode("utf-8", "replace") if isinstance(action, bytes) else str(action)
            return _message("assistant", action)
        if self.tools is None:
            raise TypeError("this ChatWrapper plays text replies; use action_format='tools' for tool calls")
        content = action.get("content")
        calls = action.get("tool_calls") if "tool_calls" in action or action.get("role") == "assistant" else [action]
        if not calls or not isinstance(calls, list):
            text = content if isinstance(content, str) else ("" if content is None else str(content))
            return _message("assistant", text)
        reply: Message = {"role": "assistant", "content": content if isinstance(content, str) else None}
        reply["tool_calls"] = [_openai_call(call) for call in calls]
        return reply


def _openai_call(call: Any) -> dict[str, Any]:
    """A copy of ``call`` in OpenAI's shape (``id``, ``type``, ``function.name``, ``function.arguments`` as a string).

    Anything malformed is kept as given (the env answers it); a missing id is made up.
    """
    if not isinstance(call, Mapping):
        return {"id": new_call_id(), "type": "function", "function": {"name": "", "arguments": json.dumps(call)}}
    function = call.get("function", call)
    function = function if isinstance(function, Mapping) else {}
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, default=str)
    name = function.get("name")
    return {
        "id": call.get("id") if isinstance(call.get("id"), str) and call.get("id") else new_call_id(),
        "type": "function",
        "function": {"name": name if isinstance(name, str) else "", "arguments": arguments},
    }


def _message(role: str, content: str) -> Message:
    return {"role": role, "content": content}
