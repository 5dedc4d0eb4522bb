"""A Gymnasium vector env of sessions on one agentgym server, stepped in one round trip:
:class:`RemoteVectorEnv`.

``RemoteVectorEnv(url, env_id, num_envs)`` opens ``num_envs`` sessions of ``env_id`` (each a
:class:`~agentgym.serving.client.RemoteEnv`, in :attr:`RemoteVectorEnv.envs`, as
``SyncVectorEnv.envs``) and plays them through the server's batch channel (the WebSocket
``/batch``): one message resets or steps every session, and the server runs the calls together.
It behaves as ``gym.make_vec(env_id, num_envs, vectorization_mode="sync")`` does, autoreset
modes, ``options["reset_mask"]`` and the infos' layout included: for the same seeds and actions
the same observations, rewards, flags and infos. A trainer stepping 256 sessions makes one round
trip per step instead of 256 (``benchmarks/server_throughput.py`` measures both).

Errors are the single env's (see :mod:`agentgym.serving.client`): when a call of the batch fails,
its exception is raised after the batch (the other sessions' calls of that batch were applied,
as the sub-envs before a failing one are in ``SyncVectorEnv``). A ``reset`` whose session is gone
(reaped after idling, or closed after its env raised) opens a new session, as ``RemoteEnv.reset``
does. Not thread-safe, like an env.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from agentgym.serving.client import (
    RemoteEnv,
    RemoteEnvError,
    ServerUnavailableError,
    _error_from,
    connect_websocket,
    stepped,
    wire_action,
)
from agentgym.serving.wire import encode_json

#: A batch's call: the sub-env's index, the session call's name and its body.
Call = tuple[int, str, dict[str, Any]]


class RemoteVectorEnv(VectorEnv):
    """``num_envs`` sessions of ``env_id`` on the server at ``url``, reset and stepped together (module docstring).

    ``autoreset_mode`` as Gymnasium's vector envs (``NEXT_STEP``, the default, ``SAME_STEP`` or
    ``DISABLED``); ``copy`` returns a copy of the batched observations (as ``SyncVectorEnv``).
    ``max_episode_steps``, ``uds``, ``timeout_s``, ``connect_timeout_s``, ``retries``, ``api_key`` and every
    other keyword argument are :class:`~agentgym.serving.client.RemoteEnv`'s, for each session (the key
    also opens the batch channel).
    """

    def __init__(
        self,
        url: str,
        env_id: str,
        num_envs: int,
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        max_episode_steps: int | None = None,
        uds: str | None = None,
        timeout_s: float = 300.0,
        connect_timeout_s: float = 10.0,
        retries: int = 2,
        api_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.url, self.uds = url.rstrip("/"), uds
        self._timeouts, self._retries = (timeout_s, connect_timeout_s), retries
        self._channel: Any = None
        self.envs: list[RemoteEnv] = []
        try:
            for _ in range(num_envs):
                self.envs.append(
                    RemoteEnv(
                        url,
                        env_id,
                        max_episode_steps=max_episode_steps,
                        uds=uds,
                        timeout_s=timeout_s,
                        connect_timeout_s=connect_timeout_s,
                        retries=retries,
                        api_key=api_key,
                        **kwargs,
                    )
                )
        except BaseException:
            self.close()
            raise
        first = self.envs[0]
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.copy = copy
        self.spec = first.spec
        self.render_mode = first.render_mode
        self.metadata = {**first.metadata, "autoreset_mode": self.autoreset_mode}
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._observations = create_empty_array(self.single_observation_space, n=num_envs, fn=np.zeros)
        self._env_obs: list[Any] = [None] * num_envs
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=np.bool_)
        self._truncations = np.zeros(num_envs, dtype=np.bool_)
        self._autoreset_envs = np.zeros(num_envs, dtype=np.bool_)

    # ---- the Gymnasium vector API -------------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those of ``options["reset_mask"]``) in one message; seeds as Gymnasium's."""
        seeds = _seeds(seed, self.num_envs)
        options = dict(options) if options is not None else None
        mask = _reset_mask(options.pop("reset_mask"), self.num_envs) if options and "reset_mask" in options else None
        chosen = range(self.num_envs) if mask is None else np.flatnonzero(mask).tolist()
        for index in chosen:
            gym.Env.reset(self.envs[index], seed=seeds[index])  # the proxy's own np_random, as RemoteEnv.reset
        answers = self._run([(index, "reset", {"seed": seeds[index], "options": options}) for index in chosen])
        infos: dict[str, Any] = {}
        for index, answer in zip(chosen, answers, strict=True):
            self._env_obs[index], info = self.envs[index]._started(answer)
            infos = self._add_info(infos, info, index)
        if mask is None:
            self._terminations[:] = self._truncations[:] = self._autoreset_envs[:] = False
        else:
            self._terminations[mask] = self._truncations[mask] = self._autoreset_envs[mask] = False
        return self._batched(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env in one message (a sub-env that ended last step is reset instead, in ``NEXT_STEP``)."""
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        calls: list[Call] = []
        for index, action in enumerate(iterate(self.action_space, actions)):
            if next_step and self._autoreset_envs[index]:
                calls.append((index, "reset", {"seed": None, "options": None}))
            else:
                if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset_envs[index]:
                    raise gym.error.ResetNeeded(f"sub-env {index} ended: reset it (options['reset_mask'])")
                calls.append((index, "step", {"action": wire_action(action)}))
        infos_of: list[dict[str, Any]] = [{}] * self.num_envs
        for (index, name, _), answer in zip(calls, self._run(calls), strict=True):
            if name == "reset":
                self._env_obs[index], infos_of[index] = self.envs[index]._started(answer)
                self._rewards[index], self._terminations[index], self._truncations[index] = 0.0, False, False
            else:
                (
                    self._env_obs[index],
                    self._rewards[index],
                    self._terminations[index],
                    self._truncations[index],
                    infos_of[index],
                ) = stepped(answer)
        ended = np.logical_or(self._terminations, self._truncations)
        finals: dict[int, dict[str, Any]] = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP and ended.any():
            finished = np.flatnonzero(ended).tolist()
            resets = self._run([(index, "reset", {"seed": None, "options": None}) for index in finished])
            for index, answer in zip(finished, resets, strict=True):
                finals[index] = {"final_obs": self._env_obs[index], "final_info": infos_of[index]}
                self._env_obs[index], infos_of[index] = self.envs[index]._started(answer)
        infos: dict[str, Any] = {}
        for index, info in enumerate(infos_of):
            if index in finals:
                infos = self._add_info(infos, finals[index], index)
            infos = self._add_info(infos, info, index)
        self._autoreset_envs = ended
        return (
            self._batched(),
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Each sub-env's ``name`` (called with the arguments when it is a method), as ``SyncVectorEnv.call``."""
        results = []
        for env in self.envs:
            value = getattr(env, name)
            results.append(value(*args, **kwargs) if callable(value) else value)
        return tuple(results)

    def close_extras(self, **kwargs: Any) -> None:
        """Close the batch channel and every session."""
        self._close_channel()
        for env in self.envs:
            env.close()

    # ---- the batch channel --------------------------------------------------------------

    def _run(self, calls: list[Call]) -> list[dict[str, Any]]:
        """Answer ``calls`` in one message; raise the first failed call's error after the batch.

        A ``reset`` whose session is gone is played again (over HTTP) on a new session of its sub-env."""
        if not calls:
            return []
        from websockets.exceptions import WebSocketException

        where = f"the agentgym server at {self.url} (the batch channel)"
        for index, name, _ in calls:
            if self.envs[index].session_id is None:  # its env raised, or it was closed: a reset opens a new one
                if name != "reset":
                    raise gym.error.ResetNeeded(f"sub-env {index} has no open session on {self.url}: reset it")
                self.envs[index]._open()
        message = {
            "calls": [
                {"session_id": self.envs[index].session_id, "call": name, "body": body} for index, name, body in calls
            ]
        }
        channel = self._open_channel(where)
        try:
            channel.send(encode_json(message).decode())
            reply = json.loads(channel.recv(timeout=self._timeouts[0]))
        except (OSError, TimeoutError, WebSocketException) as error:
            self._close_channel()
            raise ServerUnavailableError(
                f"lost the channel to {where}: {type(error).__name__}: {error}; the calls may have been applied"
            ) from error
        if "answers" not in reply:  # the message as a whole was refused
            raise _error_from(reply.get("status", 0), reply.get("error"), str(reply)[:500], where)
        answers, failure = [], None
        for (index, name, body), answer in zip(calls, reply["answers"], strict=True):
            env = self.envs[index]
            if answer.get("status") == 200:
                answers.append(answer["answer"])
                continue
            error = _error_from(
                answer.get("status", 0), answer.get("error"), str(answer)[:500], f"{where}, sub-env {index}"
            )
            if isinstance(error, RemoteEnvError) and error.type in ("EnvError", "UnknownSession"):
                env.session_id = None  # the server no longer holds it
                if name == "reset":
                    with contextlib.suppress(Exception):
                        env._open()
                        answers.append(env._call("reset", body))
                        continue
            answers.append(None)
            failure = failure or error
        if failure is not None:
            raise failure
        return answers

    def _open_channel(self, where: str) -> Any:
        if self._channel is None:
            url = f"ws{self.url.removeprefix('http')}/batch"
            headers = self.envs[0]._auth_headers
            self._channel = connect_websocket(url, self.uds, self._timeouts[1], self._retries, where, headers)
        return self._channel

    def _close_channel(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            with contextlib.suppress(Exception):
                channel.close()

    def _batched(self) -> Any:
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return deepcopy(self._observations) if self.copy else self._observations


def _seeds(seed: int | Sequence[int | None] | None, count: int) -> list[int | None]:
    """Each sub-env's seed, as Gymnasium's vector envs read ``seed``."""
    if seed is None:
        return [None] * count
    if isinstance(seed, int):
        return [seed + index for index in range(count)]
    if len(seed) != count:
        raise ValueError(f"a list of seeds needs one per sub-env ({count}), got {len(seed)}")
    return list(seed)


def _reset_mask(mask: Any, count: int) -> np.ndarray:
    """``options["reset_mask"]`` checked as Gymnasium's vector envs check it."""
    if not isinstance(mask, np.ndarray) or mask.shape != (count,) or mask.dtype != np.bool_:
        raise ValueError(f"options['reset_mask'] must be a numpy bool array of shape ({count},), got {mask!r}")
    if not mask.any():
        raise ValueError("options['reset_mask'] must have at least one True value")
    return mask
