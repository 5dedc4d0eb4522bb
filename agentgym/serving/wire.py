"""The wire format of agentgym's env protocol, shared by the server and every client.

* :func:`encode_json`: JSON with numpy values as plain numbers and lists;
* :func:`describe_space` / :func:`space_from_description`: spaces as JSON;
* :func:`encode_observation` / :func:`decode_observation`: dict observations' numpy arrays
  (a screenshot) as compressed base64 (:func:`encode_answer` for a session call's answer);
* :func:`describe_env`: what a client needs to rebuild an env's interface;
* :func:`rng_state` / :func:`set_rng_state`: a ``random.Random`` state as JSON.

Nothing here imports a web framework or an HTTP client.
"""

from __future__ import annotations

import base64
import json
import random
import zlib
from typing import Any

import gymnasium as gym
import numpy as np
import orjson
from gymnasium import spaces

from agentgym.contract.core import TextOrToolCall, UnicodeText

#: The close code of a session's WebSocket channel when the server no longer holds the session
#: (closed, reaped after idling, failed, or never opened).
CHANNEL_SESSION_GONE = 4404


def encode_json(data: Any) -> bytes:
    """The wire format: JSON (UTF-8) with numpy values as plain numbers and lists.

    orjson writes it (about 15x quicker than the standard library) wherever its output is the
    same JSON: anything it refuses (a string with a lone surrogate, an integer past 64 bits, a
    non-string key) and any output with ``null`` in it (orjson writes NaN and infinities as
    null) is written by the standard library instead, with ASCII escapes, so that lone
    surrogates and non-finite floats survive.
    """
    try:
        encoded = orjson.dumps(data, default=_plain, option=_ORJSON_AS_STDLIB)
    except TypeError:  # orjson.JSONEncodeError included
        encoded = b"null"
    if b"null" in encoded:
        return json.dumps(data, default=_plain, separators=(",", ":")).encode()
    return encoded


#: Dataclasses, datetimes and str/int/dict/list subclasses go to ``default`` as the standard library sends them.
_ORJSON_AS_STDLIB = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def _plain(value: Any) -> Any:
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def describe_space(space: spaces.Space) -> dict[str, Any]:
    """A JSON description of a space that :func:`space_from_description` rebuilds.

    Handles :class:`~agentgym.contract.core.UnicodeText`, ``Box`` (bounds sent as one number when
    they are uniform, so a screenshot's space stays small) and ``Dict`` of those.
    """
    if isinstance(space, TextOrToolCall):
        return {"type": "TextOrToolCall", "min_length": space.min_length, "max_length": space.max_length}
    if isinstance(space, UnicodeText):
        return {"type": "UnicodeText", "min_length": space.min_length, "max_length": space.max_length}
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "low": _bound(space.low),
            "high": _bound(space.high),
            "shape": list(space.shape),
            "dtype": space.dtype.str,
        }
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {key: describe_space(value) for key, value in space.spaces.items()}}
    raise NotImplementedError(f"serving envs with {space!r} spaces is not supported yet")


def _bound(values: np.ndarray) -> Any:
    flat = values.reshape(-1)
    return flat[0].item() if flat.size and (flat == flat[0]).all() else values.tolist()


def space_from_description(description: dict[str, Any]) -> spaces.Space:
    """The space :func:`describe_space` described."""
    if description["type"] == "TextOrToolCall":
        return TextOrToolCall(description["max_length"], min_length=description["min_length"])
    if description["type"] == "UnicodeText":
        return UnicodeText(description["max_length"], min_length=description["min_length"])
    if description["type"] == "Box":
        dtype, shape = np.dtype(description["dtype"]), tuple(description["shape"])
        low, high = (np.broadcast_to(np.asarray(description[key], dtype=dtype), shape) for key in ("low", "high"))
        return spaces.Box(low, high, shape, dtype)
    if description["type"] == "Dict":
        return spaces.Dict({key: space_from_description(value) for key, value in description["spaces"].items()})
    raise NotImplementedError(f"unknown space type {description['type']!r}")


def encode_observation(observation: Any) -> Any:
    """An observation for the wire: numpy arrays (a screenshot) inside dicts become
    ``{"__ndarray__": base64 of the zlib-compressed bytes, "dtype", "shape"}``; text stays text."""
    if isinstance(observation, dict):
        return {key: encode_observation(value) for key, value in observation.items()}
    if isinstance(observation, np.ndarray):
        data = np.ascontiguousarray(observation)
        return {
            "__ndarray__": base64.b64encode(zlib.compress(data.tobytes(), 1)).decode("ascii"),
            "dtype": data.dtype.str,
            "shape": list(data.shape),
        }
    return observation


def encode_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """A session call's answer for JSON: its observation, if it has one, through :func:`encode_observation`."""
    if "observation" not in answer:
        return answer
    return {**answer, "observation": encode_observation(answer["observation"])}


def decode_observation(observation: Any) -> Any:
    """The observation :func:`encode_observation` encoded, arrays rebuilt with their dtype and shape."""
    if isinstance(observation, dict):
        if "__ndarray__" in observation:
            data = zlib.decompress(base64.b64decode(observation["__ndarray__"]))
            array = np.frombuffer(data, dtype=np.dtype(observation["dtype"]))
            return array.reshape(observation["shape"]).copy()
        return {key: decode_observation(value) for key, value in observation.items()}
    return observation


def describe_env(env: gym.Env, env_id: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """What a client needs to rebuild the env's interface (see the module docstring)."""
    splits = getattr(env.unwrapped, "splits", None)
    return {
        "id": env_id,
        "kwargs": kwargs,
        "max_episode_steps": env.spec.max_episode_steps if env.spec is not None else None,
        "observation_space": describe_space(env.observation_space),
        "action_space": describe_space(env.action_space),
        "metadata": env.metadata,
        "render_mode": env.render_mode,
        "splits": splits.counts() if splits is not None else None,
        "tools": env_tools(env),
    }


def env_tools(env: gym.Env) -> list[dict[str, Any]] | None:
    """The env's function tools (OpenAI shape), or None for an env that declares none."""
    tools = getattr(env.unwrapped, "tools", None)
    return tools() if callable(tools) else None


def rng_state(rng: random.Random) -> list[Any]:
    """A ``random.Random`` state as JSON (its tuple as a list)."""
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def set_rng_state(rng: random.Random, state: list[Any]) -> None:
    """Give ``rng`` the state :func:`rng_state` wrote."""
    version, internal, gauss = state
    rng.setstate((version, tuple(internal), gauss))
