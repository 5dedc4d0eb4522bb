"""The session calls of the env protocol: a JSON body in, the env call to run, its answer out.

The env server (:mod:`agentgym.serving.server`) runs them for HTTP sessions and the Ray
backend's actor (:mod:`agentgym.serving.backends.ray`) for its env, so that every remote
kind plays an env the same way. Each call checks its body first and raises
:class:`ProtocolError` (an HTTP status and an error type) for a bad one. Answers hold the
env's observation as it is (numpy arrays included): the server encodes it for JSON
(:func:`~agentgym.serving.wire.encode_answer`), Ray carries it as it is.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from agentgym.serving.wire import encode_json, rng_state, set_rng_state

_MISSING: Any = object()


class ProtocolError(Exception):
    """An error answered as ``{"error": {"type", "message", ...details}}`` with an HTTP status."""

    def __init__(self, status: int, type: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status, self.type, self.message, self.details = status, type, message, details

    def body(self) -> bytes:
        return encode_json({"error": {"type": self.type, "message": self.message, **self.details}})


def body_field(body: dict[str, Any], name: str, kind: type, default: Any = _MISSING) -> Any:
    """``body[name]``, checked to be a ``kind`` (or null, where there is a default)."""
    value = body.get(name, default)
    if value is _MISSING:
        raise ProtocolError(422, "InvalidRequest", f"missing field {name!r}")
    if value is default and default is not _MISSING:
        return value
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProtocolError(422, "InvalidRequest", f"field {name!r} must be {kind.__name__}, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    names = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _rng(body: dict[str, Any]) -> random.Random:
    """The generator a ``random_action`` call draws from: ``seed`` or a ``random.Random`` state."""
    rng = random.Random(body_field(body, "seed", int, None))
    state = body_field(body, "rng_state", list, None)
    if state is not None:
        try:
            set_rng_state(rng, state)
        except (TypeError, ValueError, OverflowError) as error:
            message = f"rng_state is not a random.Random state: {error}"
            raise ProtocolError(422, "InvalidArgument", message, exception="ValueError") from None
    return rng


# ---- session calls: each checks its body, then returns the env call to run --------------


def _reset(env: gym.Env, body: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    seed, options = body_field(body, "seed", int, None), body_field(body, "options", dict, None)

    def reset() -> dict[str, Any]:
        observation, info = env.reset(seed=seed, options=options)
        return {"observation": observation, "info": info}

    return reset


def _step(env: gym.Env, body: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    action = body.get("action")
    if not isinstance(action, dict):  # a tool call or assistant message object, or else a text reply
        action = body_field(body, "action", str)

    def step() -> dict[str, Any]:
        observation, reward, terminated, truncated, info = env.step(action)
        return {
            "observation": observation,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": info,
        }

    return step


def _render(env: gym.Env, body: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: {"render": env.render()}


def _oracle_action(env: gym.Env, body: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: {"action": env.unwrapped.oracle_action()}


def _random_action(env: gym.Env, body: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    rng = _rng(body)

    def random_action() -> dict[str, Any]:
        return {"action": env.unwrapped.random_action(rng), "rng_state": rng_state(rng)}

    return random_action


def _available_actions(env: gym.Env, body: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: {"actions": env.unwrapped.available_actions()}


CALLS: dict[str, Callable[[gym.Env, dict[str, Any]], Callable[[], dict[str, Any]]]] = {
    "reset": _reset,
    "step": _step,
    "render": _render,
    "oracle_action": _oracle_action,
    "random_action": _random_action,
    "available_actions": _available_actions,
}
