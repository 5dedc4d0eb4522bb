"""Present an episode as the chat messages an LLM is prompted with."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium import spaces

from agentgym.core import UnicodeText, observation_text

Message = dict[str, str]

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent acting in an environment. Each user message is an observation of "
    "the environment. Think briefly if it helps, then end your reply with one line of the "
    "form 'Action: <command>' using the action syntax the first observation describes."
)


class MessagesSpace(spaces.Sequence):
    """Chat messages (``{"role", "content"}`` dicts) as a list, the shape chat APIs take.

    Gymnasium's :class:`~gymnasium.spaces.Sequence` only contains tuples.
    """

    def __init__(self, max_length: int = 1_000_000) -> None:
        text = UnicodeText(max_length)
        super().__init__(spaces.Dict({"role": text, "content": text}))

    def contains(self, x: Any) -> bool:
        return isinstance(x, (list, tuple)) and all(self.feature_space.contains(item) for item in x)


class ChatWrapper(gym.Wrapper[list[Message], str, str, str]):
    """Turn an episode into chat messages: system prompt, observations, replies.

    Observations become user turns (their ``"text"`` for dict observations).

    ``reset`` and ``step`` return as observation the messages to send to the model next:
    the system prompt, the first observation (it holds the task), and the later turns as
    (assistant reply, user observation) pairs. With ``history_window=K`` only the last K
    pairs are kept; the system prompt and the first observation always stay. The whole
    conversation, never windowed, is ``transcript``. The message dicts are shared between
    the lists returned and ``transcript``: copy before mutating one.

    Example::

        env = ChatWrapper(gym.make("Sokoban-v0"), history_window=4)
        messages, info = env.reset(options={"task_id": 0})
        reply = llm(messages)                     # any chat-completion call
        messages, reward, terminated, truncated, info = env.step(reply)
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        history_window: int | None = None,
    ) -> None:
        super().__init__(env)
        if history_window is not None and history_window < 0:
            raise ValueError("history_window must be None or >= 0")
        self.system_prompt = system_prompt
        self.history_window = history_window
        self.transcript: list[Message] = []
        self.observation_space = MessagesSpace()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self.transcript = [] if self.system_prompt is None else [_message("system", self.system_prompt)]
        self.transcript.append(_message("user", observation_text(observation)))
        return self.messages(), info

    def step(self, action: str) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.transcript.append(_message("assistant", action))
        self.transcript.append(_message("user", observation_text(observation)))
        return self.messages(), reward, terminated, truncated, info

    def messages(self) -> list[Message]:
        """The prompt for the next reply: the transcript cut to the history window."""
        if self.history_window is None:
            return list(self.transcript)
        head = 2 if self.system_prompt is not None else 1
        kept = min(2 * self.history_window, len(self.transcript) - head)
        return self.transcript[:head] + self.transcript[len(self.transcript) - kept :]


def _message(role: str, content: str) -> Message:
    return {"role": role, "content": content}
