"""Where an eval episode's env lives: made, stepped and closed inline (pure-Python envs) or on a thread of its own
with a timeout per call; an env that raises or hangs is an :class:`EnvFailure`, and is not used again.

An inline-safe id's first envs in a process still start on threads: its first use imports libraries and fills
caches (TextArena's import, Wordle's solver table: seconds each on a busy machine), which inline would stop the
event loop, and with it every other episode and run sharing the loop. Such an env is made, reset and played for one
turn on its thread, then goes inline; an env made once a turn of its id has been played is inline from the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from agentgym.computer_use import FORMATS as COMPUTER_USE_FORMATS
from agentgym.contract.registry import inline_safe
from agentgym.evaluation.plan import EvalItem
from agentgym.images import ImageOptions, screenshot_kwargs
from agentgym.wrappers.chat import ActionFormat, ChatWrapper
from agentgym.wrappers.computer_use import pixel_action_kwargs
from agentgym.wrappers.screenshots import ScreenshotRecorder


class EnvFailure(RuntimeError):
    """An env call raised or exceeded its timeout; the env is not used again."""


class InfraFailure(EnvFailure):
    """The env ended the episode reporting a failure of its infrastructure (``info["infra_error"]``)."""


class _EnvThread:
    """A daemon thread that runs one env's calls in order; abandoned if a call hangs."""

    def __init__(self, loop: asyncio.AbstractEventLoop, name: str) -> None:
        self._loop = loop
        self._jobs: queue.SimpleQueue[tuple[asyncio.Future, Callable[[], Any]] | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, function: Callable[[], Any]) -> asyncio.Future:
        future = self._loop.create_future()
        self._jobs.put((future, function))
        return future

    def stop(self) -> None:
        self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, function = job
            try:
                result, error = function(), None
            except BaseException as exception:  # handed to the awaiting episode
                result, error = None, exception
            try:
                self._loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop is closed: nobody waits any more
                return


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():  # the waiter timed out or was cancelled
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


#: Ids a turn of which has been played in this process: their inline-safe envs are made and stepped inline.
_WARM: set[str] = set()


class EnvHost:
    """One env, wrapped for chat, and where its calls run (inline or its own thread)."""

    def __init__(
        self,
        item: EvalItem,
        system_prompt: str | None,
        history_window: int | None,
        timeout_s: float,
        backend: str | None = None,
        action_format: ActionFormat = "text",
        images: ImageOptions | None = None,
    ):
        self.item = item
        self.images = images or ImageOptions()
        self.action_format = action_format
        self.kwargs = item.kwargs if backend is None else {**item.kwargs, "backend": backend}
        self.timeout_s = timeout_s
        self._inline_safe = inline_safe(item.env, self.kwargs)
        self.inline = self._inline_safe and item.env in _WARM
        self._thread = None if self.inline else _EnvThread(asyncio.get_running_loop(), f"env-{item.env}")
        self._system_prompt = system_prompt
        self._history_window = history_window
        self.chat: ChatWrapper | None = None
        #: The Ray node the env runs on (None off Ray, and before :meth:`start`).
        self.node_id: str | None = None

    async def start(self) -> None:
        """Make the env (in its thread unless inline)."""

        def make() -> ChatWrapper:
            limit = {"max_episode_steps": self.item.max_turns} if self.item.max_turns else {}
            screen = screenshot_kwargs(self.item.env) if self.images.images else {}
            if self.action_format in COMPUTER_USE_FORMATS:  # a browser env gets its coordinate actions
                screen |= pixel_action_kwargs(self.item.env)
            env = gym.make(self.item.env, **limit, **{**screen, **self.kwargs})
            if not isinstance(env.observation_space, spaces.Text):  # a text observation has no screenshot to save
                env = ScreenshotRecorder(env)
            return ChatWrapper(env, self._system_prompt, self._history_window, self.action_format, self.images)

        self.chat = await self.call(make)
        self.node_id = getattr(self.chat.unwrapped, "node_id", None)

    async def call(self, function: Callable[[], Any]) -> Any:
        """``function()`` where this env's calls run; :class:`EnvFailure` if it raises or hangs."""
        try:
            if self._thread is None:
                return function()
            return await asyncio.wait_for(self._thread.submit(function), self.timeout_s)
        except asyncio.TimeoutError:
            raise EnvFailure(f"env call exceeded its {self.timeout_s:g} s timeout") from None
        except Exception as error:
            raise env_failure(error) from error

    def step_now(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The chat env's ``step(action)`` called here (an inline env: no thread, no coroutine);
        :class:`EnvFailure` if it raises."""
        assert self.chat is not None and self.inline
        try:
            return self.chat.step(action)
        except Exception as error:
            raise env_failure(error) from error

    def warm(self) -> None:
        """A turn on this env has been played (its first use is paid, the env is sound): its id is warm, and an
        inline-safe env goes inline (called between calls, with none in flight)."""
        _WARM.add(self.item.env)
        if self._inline_safe and self._thread is not None:
            self._thread.stop()
            self._thread, self.inline = None, True

    def close(self) -> None:
        """Close the env where it runs, without waiting (a hung env is left to its thread)."""
        chat = self.chat
        if self._thread is None:
            if chat is not None:
                _close_quietly(chat)
            return
        if chat is not None:
            self._thread.submit(lambda: _close_quietly(chat))
        self._thread.stop()


def env_failure(error: Exception) -> EnvFailure:
    """The :class:`EnvFailure` of an env call that raised ``error``."""
    return EnvFailure(f"env raised {type(error).__name__}: {error}")


def _close_quietly(env: gym.Env) -> None:
    with contextlib.suppress(Exception):  # closing a broken env must not stop the run
        env.close()
