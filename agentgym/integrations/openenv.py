"""agentgym envs on OpenEnv's wire (``openenv-core``): its server routes and a client class.

OpenEnv (Meta / Hugging Face) serves an env with its own ``HTTPEnvServer``: a WebSocket
at ``/ws`` holds one env per connection (messages ``reset`` / ``step`` / ``state`` /
``close``), next to ``/reset``, ``/step``, ``/state``, ``/schema``, ``/metadata``,
``/health``. This module wraps an agentgym env as an OpenEnv ``Environment`` and lets
OpenEnv's own server expose it, so every id served by ``agentgym serve`` is also an
OpenEnv env at ``http://HOST:PORT/openenv/ENV_ID`` (mounted lazily: openenv is imported
on the first request there, not when the server starts).

Types (pydantic, OpenEnv's base classes):

* :class:`AgentGymAction`: ``text`` (an LLM reply, as ``env.step(str)``) or ``tool_call``
  (a call on the env's function tools, ``{"name", "arguments"}`` or OpenAI's shape);
* :class:`AgentGymObservation`: ``text`` plus ``terminated``, ``truncated``, ``score``,
  ``success``, ``invalid_action``, ``task_id``, ``steps`` and, after a reset, ``tools``
  (OpenEnv's ``reward`` is the step's reward, ``done`` is terminated or truncated);
* :class:`AgentGymState`: ``episode_id``, ``step_count``, ``env_id``, ``task_id``,
  ``split``, ``score``, ``success``, ``terminated``, ``truncated``.

``reset`` takes ``seed``, ``episode_id``, ``task_id`` and ``split``. Sessions get the
registered env kwargs; :func:`create_app` serves an env made with other kwargs.
:class:`AgentGymEnvClient` is OpenEnv's ``EnvClient`` for these types::

    async with AgentGymEnvClient("http://127.0.0.1:8000", env_id="Sokoban-v0") as env:
        result = await env.reset(task_id=3)
        result = await env.step({"name": "move", "arguments": {"direction": "up"}})
"""

from __future__ import annotations

import functools
import os
import uuid
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from agentgym.contract.core import observation_text
from agentgym.contract.registry import env_info
from agentgym.images import ImageOptions, encode_screenshot
from agentgym.integrations._session import make_env, reset_options
from agentgym.serving.client import API_KEY_ENV

DEFAULT_MAX_SESSIONS = 1024


class AgentGymAction(Action):
    """One step: an LLM's text reply, or one tool call on the env's function tools."""

    text: str | None = Field(default=None, description="the reply, as env.step(text) reads it ('Action: ...')")
    tool_call: dict[str, Any] | None = Field(
        default=None, description='a call on the env\'s tools: {"name", "arguments"} or OpenAI\'s shape'
    )

    @model_validator(mode="after")
    def _one_of(self) -> AgentGymAction:
        if (self.text is None) == (self.tool_call is None):
            # A PydanticCustomError (not a ValueError) keeps the error JSON-serialisable for OpenEnv's reply.
            raise PydanticCustomError("one_action", "give exactly one of 'text' and 'tool_call'")
        return self


class AgentGymObservation(Observation):
    """What the agent sees after a reset or step, with the episode's numbers."""

    text: str = Field(default="", description="the observation's text")
    terminated: bool = False
    truncated: bool = False
    score: float = Field(default=0.0, description="the episode's score so far, in [0, 1]")
    success: bool = False
    invalid_action: bool = False
    task_id: int | None = None
    steps: int = 0
    tools: list[dict[str, Any]] | None = Field(default=None, description="the env's function tools (after reset)")
    image: str | None = Field(
        default=None, description="a screen env's screenshot as a PNG data URL (an image_url part's url)"
    )


class AgentGymState(State):
    """The episode's state (OpenEnv's ``state`` call)."""

    env_id: str = ""
    task_id: int | None = None
    split: str | None = None
    score: float = 0.0
    success: bool = False
    terminated: bool = False
    truncated: bool = False


class AgentGymEnvironment(Environment[AgentGymAction, AgentGymObservation, AgentGymState]):
    """An agentgym env as an OpenEnv ``Environment``; the gym env is made on the first reset."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session makes its own env

    def __init__(self, env_id: str, kwargs: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.env_id, self.kwargs = env_info(env_id).id, dict(kwargs or {})
        self.env: Any = None
        self._state = AgentGymState(env_id=self.env_id)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: int | None = None,
        split: str | None = None,
        **kwargs: Any,
    ) -> AgentGymObservation:
        if kwargs:
            raise ValueError(f"unknown reset arguments {sorted(kwargs)}; use seed, episode_id, task_id, split")
        if self.env is None:
            self.env = make_env(self.env_id, self.kwargs)
        observation, info = self.env.reset(seed=seed, options=reset_options(task_id, split))
        self._state = AgentGymState(
            episode_id=episode_id or uuid.uuid4().hex,
            env_id=self.env_id,
            task_id=info.get("task_id"),
            split=info.get("split"),
        )
        tools = getattr(self.env.unwrapped, "tools", None)
        return self._observation(observation, None, False, False, info, tools() if callable(tools) else None)

    def step(self, action: AgentGymAction, timeout_s: float | None = None, **kwargs: Any) -> AgentGymObservation:
        if self.env is None or self._state.episode_id is None:
            raise RuntimeError("call reset before step")
        observation, reward, terminated, truncated, info = self.env.step(
            action.text if action.text is not None else action.tool_call
        )
        state = self._state
        state.step_count += 1
        state.score, state.success = float(info.get("score", 0.0)), bool(info.get("success", False))
        state.terminated, state.truncated = bool(terminated), bool(truncated)
        return self._observation(observation, float(reward), terminated, truncated, info)

    @property
    def state(self) -> AgentGymState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        info = env_info(self.env_id)
        return EnvironmentMetadata(name=self.env_id, description=info.description, version=_version())

    def close(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()

    @staticmethod
    def _observation(
        observation: Any,
        reward: float | None,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        tools: list[dict[str, Any]] | None = None,
    ) -> AgentGymObservation:
        pixels = observation.get("screenshot") if isinstance(observation, dict) else None
        return AgentGymObservation(
            text=observation_text(observation),
            image=None if pixels is None else encode_screenshot(pixels, ImageOptions("screenshot", None))[0],
            reward=reward,
            done=bool(terminated or truncated),
            terminated=bool(terminated),
            truncated=bool(truncated),
            score=float(info.get("score", 0.0)),
            success=bool(info.get("success", False)),
            invalid_action=bool(info.get("invalid_action", False)),
            task_id=info.get("task_id"),
            steps=int(info.get("steps", 0)),
            tools=tools,
        )


def create_app(env_id: str, kwargs: dict[str, Any] | None = None, *, max_sessions: int = DEFAULT_MAX_SESSIONS) -> Any:
    """An OpenEnv FastAPI app (OpenEnv's own routes) serving ``env_id`` made with ``kwargs``."""
    from fastapi import FastAPI

    env_info(env_id)  # unknown ids fail here, not on the first connection
    app = FastAPI(title=f"agentgym {env_id} (OpenEnv)")
    server = HTTPEnvServer(
        functools.partial(AgentGymEnvironment, env_id, kwargs),
        AgentGymAction,
        AgentGymObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=None),
    )
    server.register_routes(app)
    return app


def create_router(env_ids: list[str], max_sessions: int = DEFAULT_MAX_SESSIONS) -> Any:
    """One OpenEnv app per id, at ``/ENV_ID`` (``agentgym serve`` mounts this at ``/openenv``)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    return Starlette(
        routes=[Mount(f"/{env_id}", app=create_app(env_id, max_sessions=max_sessions)) for env_id in env_ids]
    )


class AgentGymEnvClient(EnvClient[AgentGymAction, AgentGymObservation, AgentGymState]):
    """OpenEnv's client for an agentgym env: ``base_url`` of an OpenEnv app, or of ``agentgym
    serve`` with ``env_id``. ``step`` takes an :class:`AgentGymAction`, a text reply (``str``)
    or a tool call (``dict``). ``api_key``: the server's key (docs/security.md; default
    ``$AGENTGYM_API_KEY``), sent as ``Authorization: Bearer`` when the WebSocket opens."""

    def __init__(self, base_url: str, env_id: str | None = None, *, api_key: str | None = None, **kwargs: Any) -> None:
        if env_id is not None:
            base_url = f"{base_url.rstrip('/')}/openenv/{env_id}"
        super().__init__(base_url, **kwargs)
        self._api_key = api_key or os.environ.get(API_KEY_ENV)

    async def connect(self) -> AgentGymEnvClient:
        """Open the WebSocket, with the key (OpenEnv's own ``connect`` sends no headers)."""
        if self._ws is not None or not self._api_key:
            return await super().connect()
        from websockets.asyncio.client import connect

        try:
            self._ws = await connect(
                self._ws_url,
                open_timeout=self._connect_timeout,
                max_size=self._max_message_size,
                additional_headers={"Authorization": f"Bearer {self._api_key}"},
                proxy=None,
            )
        except Exception as error:
            raise ConnectionError(f"Failed to connect to {self._ws_url}: {error}") from error
        return self

    def _step_payload(self, action: AgentGymAction | str | dict[str, Any]) -> dict[str, Any]:
        if isinstance(action, str):
            action = AgentGymAction(text=action)
        elif isinstance(action, dict):
            action = AgentGymAction(tool_call=action)
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[AgentGymObservation]:
        observation = AgentGymObservation(
            **payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False)
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> AgentGymState:
        return AgentGymState(**payload)


def _version() -> str:
    from agentgym import __version__

    return __version__
