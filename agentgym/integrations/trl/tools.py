"""TRL's ``environment_factory`` path (``action_format="tools"``): an agentgym episode as a class whose methods
are the env's function tools (:func:`environment_factory`, :class:`AgentGymToolEnv`), played in process or
through ``agentgym serve``'s OpenEnv routes. :mod:`agentgym.integrations.trl` says how it fits with the
``rollout_func`` path and builds the trainer's arguments.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any, ClassVar

from agentgym.contract.core import observation_text
from agentgym.contract.registry import env_info
from agentgym.images import (
    ImageOptions,
    ObservationMode,
    decode_image,
    image_url,
    is_image_part,
    observation_content,
    screenshot_kwargs,
)
from agentgym.integrations._session import make_env, reset_options

#: Python types for the JSON schema types of a tool's parameters (TRL reads tools from signatures).
_PYTHON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "array": list,
}


def image_options(images: ImageOptions | ObservationMode | None) -> ImageOptions:
    """``images`` as :class:`ImageOptions` (a mode name: that mode with the default budget)."""
    if images is None:
        return ImageOptions()
    return images if isinstance(images, ImageOptions) else ImageOptions(images)


# ---- tool calls: environment_factory ------------------------------------------------------------


class _LocalEpisode:
    """An in-process env as the tool env plays it: reset to content, step to (content, score, done).

    The content is the observation's text, or with ``images`` (screenshot modes) TRL's content
    blocks: the screenshot (PIL, within the image budget) and the text, as ``ChatWrapper`` shows them.
    """

    def __init__(
        self, env_id: str, env_kwargs: dict[str, Any], max_episode_steps: int | None, images: ImageOptions
    ) -> None:
        self.images = images
        screen = screenshot_kwargs(env_id) if images.images else {}
        self.env = make_env(env_id, {**screen, **env_kwargs}, max_episode_steps)
        self._element_list_heading = getattr(self.env.unwrapped, "element_list_heading", None)

    def tools(self) -> list[dict[str, Any]]:
        return self.env.unwrapped.tools()

    def reset(self, seed: int | None, task_id: int | None, split: str | None) -> dict[str, Any]:
        observation, info = self.env.reset(seed=seed, options=reset_options(task_id, split))
        return self._outcome(observation, False, False, info)

    def step(self, call: dict[str, Any]) -> dict[str, Any]:
        observation, _, terminated, truncated, info = self.env.step(call)
        return self._outcome(observation, terminated, truncated, info)

    def _outcome(self, observation: Any, terminated: bool, truncated: bool, info: dict[str, Any]) -> dict[str, Any]:
        outcome = _outcome(observation, terminated, truncated, info)
        content, _ = observation_content(observation, self.images, self._element_list_heading)
        if isinstance(content, list):  # OpenAI-style parts -> TRL's blocks (images as PIL)
            outcome["content"] = [
                {"type": "image", "image": decode_image(image_url(part))} if is_image_part(part) else part
                for part in content
            ]
        return outcome

    def close(self) -> None:
        self.env.close()


class _OpenEnvEpisode:
    """The env behind ``agentgym serve``'s OpenEnv routes, through OpenEnv's own (sync) client."""

    def __init__(self, url: str, env_id: str) -> None:
        from agentgym.integrations.openenv import AgentGymEnvClient

        self.client = AgentGymEnvClient(url, env_id=env_id).sync()
        self.client.connect()
        self._tools: list[dict[str, Any]] | None = None

    def tools(self) -> list[dict[str, Any]]:
        if self._tools is None:
            self._tools = self.client.reset().observation.tools or []
        return self._tools

    def reset(self, seed: int | None, task_id: int | None, split: str | None) -> dict[str, Any]:
        options = {"seed": seed, **(reset_options(task_id, split) or {})}
        observation = self.client.reset(**{k: v for k, v in options.items() if v is not None}).observation
        self._tools = observation.tools or self._tools
        return _openenv_outcome(observation)

    def step(self, call: dict[str, Any]) -> dict[str, Any]:
        return _openenv_outcome(self.client.step(call).observation)

    def close(self) -> None:
        self.client.close()


def _outcome(observation: Any, terminated: bool, truncated: bool, info: dict[str, Any]) -> dict[str, Any]:
    return {
        "text": observation_text(observation),
        "done": bool(terminated or truncated),
        "score": float(info.get("score", 0.0)),
        "success": bool(info.get("success", False)),
    }


def _openenv_outcome(observation: Any) -> dict[str, Any]:
    return {
        "text": observation.text,
        "done": bool(observation.done),
        "score": observation.score,
        "success": observation.success,
    }


class AgentGymToolEnv:
    """One agentgym episode as TRL's ``environment_factory`` wants it: the env's tools as methods.

    Subclasses made by :func:`environment_factory` add one public method per function tool
    of the env (``move(direction)``, ``search(keywords)``, ...; signature and docstring
    from the tool's JSON schema, so TRL renders the same schema). ``reset(**row)`` takes
    a dataset row (``task_id``, ``seed``, ``split``; other columns are ignored) and returns
    the first observation; a tool call steps the env and returns the observation, and
    after the episode ends a call raises (TRL answers the model with the error).
    ``get_reward()`` is the episode's score (``info["score"]``); ``_close()`` closes the env.

    With ``images`` in a screenshot mode, a screen env's observations (``reset``'s and each tool
    result) are TRL's multimodal content, ``[{"type": "image", "image": <PIL>}, {"type": "text",
    ...}]``: TRL puts the image in the tool message, its processor expands it into image tokens
    (masked out of the loss with the rest of the result) and its pixels go to the model's forward.
    """

    env_id: ClassVar[str]
    env_kwargs: ClassVar[dict[str, Any]] = {}
    max_episode_steps: ClassVar[int | None] = None
    openenv_url: ClassVar[str | None] = None
    images: ClassVar[ImageOptions] = ImageOptions()

    def __init__(self) -> None:
        self._episode: _LocalEpisode | _OpenEnvEpisode = (
            _OpenEnvEpisode(self.openenv_url, self.env_id)
            if self.openenv_url
            else _LocalEpisode(self.env_id, self.env_kwargs, self.max_episode_steps, self.images)
        )
        self.score, self.success, self.done, self.steps = 0.0, False, False, 0
        self.task_id: int | None = None

    def reset(
        self, task_id: int | None = None, seed: int | None = None, split: str | None = None, **row: Any
    ) -> str | list[dict[str, Any]]:
        outcome = self._episode.reset(seed, task_id, split)
        self.task_id = task_id
        self.score, self.success, self.done, self.steps = outcome["score"], outcome["success"], outcome["done"], 0
        return outcome.get("content", outcome["text"])

    def get_reward(self) -> float:
        return self.score

    def _close(self) -> None:
        """Close the env (private: TRL would offer a public ``close`` to the model as a tool)."""
        self._episode.close()

    def _call(self, name: str, arguments: dict[str, Any]) -> str | list[dict[str, Any]]:
        if self.done:
            raise ValueError(f"the episode is over (score {self.score:g}); answer without calling a tool")
        outcome = self._episode.step({"name": name, "arguments": arguments})
        self.steps += 1
        self.score, self.success, self.done = outcome["score"], outcome["success"], outcome["done"]
        return outcome.get("content", outcome["text"])


def environment_factory(
    env_id: str,
    *,
    env_kwargs: dict[str, Any] | None = None,
    max_episode_steps: int | None = None,
    openenv_url: str | None = None,
    images: ImageOptions | ObservationMode | None = None,
) -> type[AgentGymToolEnv]:
    """A subclass of :class:`AgentGymToolEnv` for ``env_id``: pass it as ``environment_factory``.

    ``openenv_url`` (the base URL of ``agentgym serve ENV_ID``) plays the episodes through
    OpenEnv's client on the server's OpenEnv routes instead of in-process (the server's
    registered kwargs then apply, not ``env_kwargs``). ``images`` (``ImageOptions`` or a mode,
    ``"screenshot"`` or ``"both"``; in-process envs) returns each screenshot as an image block
    (the trainer's ``processing_class`` is then a vision-language model's processor).
    """
    env_id = env_info(env_id).id
    options = image_options(images)
    if options.images and openenv_url:
        raise ValueError("images= is for in-process envs; OpenEnv's observations carry the screenshot in .image")
    env = make_env(env_id, env_kwargs, max_episode_steps)
    try:
        declarations = env.unwrapped.tools() if callable(getattr(env.unwrapped, "tools", None)) else None
    finally:
        env.close()
    if not declarations:
        raise TypeError(f"{env_id} declares no function tools; use action_format='text'")
    namespace: dict[str, Any] = {
        "env_id": env_id,
        "env_kwargs": dict(env_kwargs or {}),
        "max_episode_steps": max_episode_steps,
        "openenv_url": openenv_url,
        "images": options,
        "__doc__": f"{env_id} as a TRL environment: its tools are methods. {AgentGymToolEnv.__doc__}",
    }
    for declaration in declarations:
        function = declaration["function"]
        if function["name"] in vars(AgentGymToolEnv) or function["name"] in namespace:
            raise ValueError(f"{env_id}'s tool {function['name']!r} clashes with a method of AgentGymToolEnv")
        namespace[function["name"]] = _tool_method(function)
    name = env_id.replace("-", "_").replace(".", "_")  # TRL logs get_reward under the class name
    return type(name, (AgentGymToolEnv,), namespace)


def _tool_method(function: dict[str, Any]) -> Callable[..., str]:
    """A method calling tool ``function`` (OpenAI's ``function`` object), typed and documented from its schema."""
    name, schema = function["name"], function.get("parameters", {})
    properties, required = schema.get("properties", {}), set(schema.get("required", ()))

    def method(self: AgentGymToolEnv, **arguments: Any) -> str | list[dict[str, Any]]:
        return self._call(name, arguments)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [function.get("description") or f"Call {name}.", "", "Args:"]
    for argument, spec in properties.items():
        kind = _PYTHON_TYPES.get(spec.get("type"), str)
        item_type = _PYTHON_TYPES.get(spec.get("items", {}).get("type"))
        if kind is list and item_type is not None:
            kind = list[item_type]
        annotations[argument] = kind if argument in required else kind | None
        default = inspect.Parameter.empty if argument in required else None
        parameters.append(
            inspect.Parameter(
                argument, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotations[argument]
            )
        )
        description = " ".join(str(spec.get("description", argument)).split())
        if "enum" in spec:
            description += f" (choices: {json.dumps(spec['enum'])})"
        lines.append(f"    {argument}: {description}")
    if not properties:
        lines.pop()
    lines += ["", "Returns:", "    What the environment shows after the call."]
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "\n".join(lines)
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return method
