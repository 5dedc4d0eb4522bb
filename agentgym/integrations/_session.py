"""What the protocol adapters share: one env of one client session, and a step as plain data."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

import gymnasium as gym

from agentgym.contract.core import observation_text
from agentgym.contract.registry import env_info, inline_safe

T = TypeVar("T")


def make_env(env_id: str, kwargs: dict[str, Any] | None = None, max_episode_steps: int | None = None) -> gym.Env:
    """``gym.make`` of a registered agentgym id (``TimeLimit`` as registered unless given)."""
    return gym.make(
        env_info(env_id).id, max_episode_steps=max_episode_steps, disable_env_checker=True, **(kwargs or {})
    )


def reset_options(task_id: int | None = None, split: str | None = None) -> dict[str, Any] | None:
    """The ``options`` of ``TextEnv.reset`` for a task id or a split (None: a train task)."""
    options = {key: value for key, value in (("task_id", task_id), ("split", split)) if value is not None}
    return options or None


def step_result(
    observation: Any, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
) -> dict[str, Any]:
    """One reset or step as the adapters report it: the observation's text and the episode's numbers."""
    return {
        "observation": observation_text(observation),
        "reward": float(reward),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "score": float(info.get("score", 0.0)),
        "success": bool(info.get("success", False)),
        "invalid_action": bool(info.get("invalid_action", False)),
        "task_id": info.get("task_id"),
        "steps": int(info.get("steps", 0)),
    }


#: JSON schema of :func:`step_result` (an MCP tool's ``outputSchema``).
STEP_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "observation": {"type": "string", "description": "what the agent sees now"},
        "reward": {"type": "number", "description": "this step's reward (the change of the score)"},
        "terminated": {"type": "boolean", "description": "the episode ended (solved or lost)"},
        "truncated": {"type": "boolean", "description": "the episode hit its step limit"},
        "score": {"type": "number", "description": "the episode's score so far, in [0, 1]"},
        "success": {"type": "boolean"},
        "invalid_action": {"type": "boolean", "description": "the action could not be parsed or executed"},
        "task_id": {"type": ["integer", "null"]},
        "steps": {"type": "integer"},
    },
    "required": ["observation", "reward", "terminated", "truncated", "score", "success", "invalid_action", "steps"],
}


class EnvSession:
    """One env for one client session, its calls on a thread of its own unless the env is ``inline_safe``.

    Envs bound to a thread (browsers) stay on that one thread; puzzles run on the caller's
    event loop. ``last`` is the latest :func:`step_result` (None before the first reset);
    ``screenshot`` the latest observation's ``"screenshot"`` (uint8 HxWx3) where it has one.
    """

    def __init__(self, env_id: str, kwargs: dict[str, Any] | None = None, max_episode_steps: int | None = None):
        self.env_id, self.kwargs, self.max_episode_steps = env_id, dict(kwargs or {}), max_episode_steps
        self.executor = (
            None
            if inline_safe(env_info(env_id).id, self.kwargs)
            else concurrent.futures.ThreadPoolExecutor(1, "agentgym-session")
        )
        self.env: gym.Env | None = None
        self.last: dict[str, Any] | None = None
        self.screenshot: Any = None
        self.lock = asyncio.Lock()

    async def run(self, function: Callable[[], T]) -> T:
        """``function()`` where this session's env calls run."""
        if self.executor is None:
            return function()
        return await asyncio.get_running_loop().run_in_executor(self.executor, function)

    async def get_env(self) -> gym.Env:
        """The session's env, made on first use."""
        if self.env is None:
            self.env = await self.run(lambda: make_env(self.env_id, self.kwargs, self.max_episode_steps))
        return self.env

    async def reset(self, seed: int | None = None, task_id: int | None = None, split: str | None = None) -> dict:
        env = await self.get_env()
        observation, info = await self.run(lambda: env.reset(seed=seed, options=reset_options(task_id, split)))
        self.screenshot = _screenshot(observation)
        self.last = step_result(observation, 0.0, False, False, info)
        return self.last

    async def step(self, action: Any) -> dict[str, Any]:
        env = await self.get_env()
        outcome = await self.run(lambda: env.step(action))
        self.screenshot = _screenshot(outcome[0])
        self.last = step_result(*outcome)
        return self.last

    async def close(self) -> None:
        """Close the env where it runs and release the thread; never raises."""
        env, self.env = self.env, None
        try:
            if env is not None:
                await self.run(env.close)
        finally:
            if self.executor is not None:
                self.executor.shutdown(wait=False)


def _screenshot(observation: Any) -> Any:
    """The observation's ``"screenshot"`` array, or None (text observations)."""
    return observation.get("screenshot") if isinstance(observation, dict) else None
