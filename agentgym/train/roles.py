"""Several roles of one model, one episode: a team playing a single-agent env as a cooperative AEC game.

:class:`RoleTeam` turns any agentgym env into a :class:`~agentgym.multiagent.TextGame` whose seats
are roles (planner and executor, solver and verifier, ...). Each env step is one round: the roles
speak in their order; every role but the last only talks (its reply, thinking dropped, is shown to
the later roles as a message), and the last role's reply is the env's action (the env reads it as
any reply: a trailing ``Action:`` line, or the whole text). Every role sees the task (the env's first
observation), the team's messages and actions so far, and the env's current observation; each role's
system prompt (its instructions) is the trainer's (``GameConfig.roles``).

The game ends when the env's episode ends (terminated or truncated). Every role's reward is the
episode's return, the shared outcome, so each role's turns are credited with it; ``winner`` is None
(a team result) and success is the env's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from agentgym.contract.core import observation_text, split_reply
from agentgym.contract.registry import env_info
from agentgym.multiagent import Event, Outcome, TextGame

#: The most characters of a talking role's message (and of an action's echo) shown to the others.
MAX_MESSAGE_CHARS = 500


class RoleTeam(TextGame):
    """Roles ``roles`` of one team taking turns on the env ``env_id`` (see the module docstring).

    A reset's ``options["task_id"]`` picks the env's task; without it the seed draws one from ``split``.
    """

    metadata = {**TextGame.metadata, "name": "role_team"}
    cooperative = True
    players = {"random": lambda game, agent, rng: game.random_move(agent, rng)}
    strong_player = "random"

    def __init__(
        self,
        env_id: str,
        roles: Sequence[str],
        env_kwargs: dict[str, Any] | None = None,
        split: str = "train",
        render_mode: str | None = None,
    ) -> None:
        if len(roles) < 1 or len(set(roles)) != len(roles):
            raise ValueError(f"a team needs one or more distinct role names, got {list(roles)}")
        self.agent_names = tuple(roles)
        # Talk is never illegal, and the env answers an unreadable action itself (invalid_action, the episode goes on).
        super().__init__(max_illegal_moves=0, render_mode=render_mode)
        self.env_id = env_id
        self.env = gym.make(env_id, **(env_kwargs or {}))
        self.split = split
        steps = self.env.spec.max_episode_steps if self.env.spec is not None else None
        self.max_moves = (steps or 100) * len(roles) + 1  # the env's own time limit ends the game first
        self._task: int | None = None
        self.task_id = 0
        self.task = ""

    @property
    def rules(self) -> str:
        order = ", then ".join(self.agent_names)
        return (
            f"A team of {len(self.agent_names)} plays one task together: {order}, in that order, at every step. "
            f"{self.agent_names[-1]} acts in the environment; the others advise. The team shares one reward.\n\n"
            f"The task:\n{self.task}"
        )

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._task = (options or {}).get("task_id")
        super().reset(seed=seed, options=options)

    def _setup(self) -> None:
        ids = env_info(self.env_id).splits.ids(self.split)
        self.task_id = self._task if self._task is not None else self.rng.choice(ids)
        observation, info = self.env.reset(seed=self.rng.getrandbits(31), options={"task_id": self.task_id})
        self.task = self.observation = observation_text(observation)
        self.last_info = info
        self.episode_return = 0.0
        self.finished: tuple[bool, bool] = (False, False)
        self.round = 0

    def _current_agent(self) -> str:
        return self.agent_names[self.round % len(self.agent_names)]

    def _legal_moves(self, agent: str) -> list[str] | None:
        if agent != self.agent_names[-1]:
            return None  # a message to the team is free text
        moves = self.last_info.get("available_actions")
        return list(moves) if moves else None

    def step(self, action: Any) -> None:
        """Play the selected role's reply; the env gets the acting role's whole reply."""
        self._reply = action if isinstance(action, str) else ""
        super().step(action)

    def _apply(self, agent: str, move: str) -> list[Event]:
        self.round += 1
        if agent != self.agent_names[-1]:
            message = " ".join(split_reply(self._reply)[0].split()) or move
            return [Event(f"{agent}: {message[:MAX_MESSAGE_CHARS]}")]
        observation, reward, terminated, truncated, self.last_info = self.env.step(self._reply)
        self.observation = observation_text(observation)
        self.episode_return += float(reward)
        self.finished = (bool(terminated), bool(truncated))
        invalid = " (not a valid action)" if self.last_info.get("invalid_action") else ""
        return [Event(f"{agent} acted: {move[:MAX_MESSAGE_CHARS]}{invalid}; reward {float(reward):g}.")]

    def _view(self, agent: str) -> str:
        now = "" if self.observation == self.task else f" The environment now:\n{self.observation}"
        return f"You are the team's {agent}.{now}"

    def _prompt(self, agent: str) -> str:
        if self.outcome is None and agent == self.agent_selection and agent != self.agent_names[-1]:
            return f"You are {agent} and it is your turn: write your message to {', '.join(self._later(agent))}."
        return super()._prompt(agent)

    def _later(self, agent: str) -> tuple[str, ...]:
        return self.agent_names[self.agent_names.index(agent) + 1 :]

    def _outcome(self) -> Outcome | None:
        terminated, truncated = self.finished
        if not (terminated or truncated):
            return None
        success = bool(self.last_info.get("success", False))
        reason = f"the episode {'ended' if terminated else 'was cut off'}: {'success' if success else 'no success'}"
        return Outcome(dict.fromkeys(self.agent_names, self.episode_return), None, reason)

    def random_move(self, agent: str, rng: random.Random) -> str:
        """A random legal action for the acting role (the env's own random action), a fixed note for the others."""
        if agent != self.agent_names[-1]:
            return "No advice."
        return str(self.env.unwrapped.random_action(rng))

    def close(self) -> None:
        self.env.close()
