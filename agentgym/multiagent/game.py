"""Multi-agent text games on PettingZoo's AEC API: :class:`TextGame` (the turn loop, once, as the package docstring
of :mod:`agentgym.multiagent` tells it), the outcome and event records, and the table of registered games
(:func:`register_game`, :func:`make_game`)."""

from __future__ import annotations

import abc
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from gymnasium import spaces
from gymnasium.envs.registration import load_env_creator
from pettingzoo import AECEnv

from agentgym.contract.core import InvalidAction, UnicodeText, parse_action, quote

#: A scripted player: (game, the agent it plays, a generator) -> its move.
Player = Callable[["TextGame", str, random.Random], str]


@dataclass(frozen=True)
class Outcome:
    """How a game ended: each agent's reward, the winner (``None`` for a draw or a team result) and why."""

    rewards: dict[str, float]
    winner: str | None
    reason: str


@dataclass(frozen=True)
class Event:
    """Something that happened, and who may see it (``None``: everyone)."""

    text: str
    visible_to: frozenset[str] | None = None


class TextGame(AECEnv, abc.ABC):
    """Base of agentgym's turn-based text games (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "name": "text_game", "is_parallelizable": False}
    #: The agents' names, e.g. ``("player_0", "player_1")``.
    agent_names: ClassVar[tuple[str, ...]]
    #: Scripted players by name; every game has ``"random"``.
    players: ClassVar[dict[str, Player]]
    #: The strongest scripted player: the oracle of the single-agent view.
    strong_player: ClassVar[str]
    #: Each agent's worst and best possible game reward (scales the single-agent score).
    reward_range: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    #: Valid moves after which the game is cut off as a draw (truncation); games whose
    #: length depends on their options set it per instance.
    max_moves: ClassVar[int] = 200
    #: Whether the agents are partners (one shared result) rather than opponents.
    cooperative: ClassVar[bool] = False
    max_observation_chars: ClassVar[int] = 200_000
    max_action_chars: ClassVar[int] = 65_536

    def __init__(self, max_illegal_moves: int = 2, render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode not in (None, "ansi"):
            raise ValueError("render_mode must be 'ansi' or None")
        if max_illegal_moves < 0:
            raise ValueError("max_illegal_moves must be >= 0")
        self.render_mode = render_mode
        self.max_illegal_moves = max_illegal_moves
        self.possible_agents = list(self.agent_names)
        self.observation_spaces = {
            agent: spaces.Dict({"text": UnicodeText(self.max_observation_chars)}) for agent in self.possible_agents
        }
        self.action_spaces = {agent: UnicodeText(self.max_action_chars) for agent in self.possible_agents}
        self._seeds = random.Random()
        self.game_seed = 0
        self.rng = random.Random()
        self.events: list[Event] = []
        self.outcome: Outcome | None = None
        self._state = 0  # counts state changes: the key of the legal-move cache
        self._moves_cache: tuple[int, list[str] | None] = (-1, None)

    # ---- what a game implements ---------------------------------------------------

    @property
    @abc.abstractmethod
    def rules(self) -> str:
        """The rules and the move syntax, shown at the top of every observation."""

    @abc.abstractmethod
    def _setup(self) -> None:
        """Start a new game (use ``self.rng`` for any chance: deals, dice)."""

    @abc.abstractmethod
    def _current_agent(self) -> str:
        """The agent to move."""

    @abc.abstractmethod
    def _legal_moves(self, agent: str) -> list[str] | None:
        """The legal moves of ``agent`` now, or ``None`` where they are not enumerable."""

    @abc.abstractmethod
    def _apply(self, agent: str, move: str) -> list[Event]:
        """Play ``move`` for ``agent``; return what happened. Raise ``InvalidAction`` if illegal."""

    @abc.abstractmethod
    def _view(self, agent: str) -> str:
        """The state as ``agent`` sees it (board, own cards, ...)."""

    @abc.abstractmethod
    def _outcome(self) -> Outcome | None:
        """How the game ended, or ``None`` while it goes on."""

    def _forfeit(self, agent: str) -> Outcome:
        """The outcome when ``agent`` forfeits: it loses, the others share the win; partners in a cooperative
        game lose together."""
        low, high = self.reward_range
        if self.cooperative:
            return Outcome(dict.fromkeys(self.possible_agents, low), None, f"{agent} forfeited after illegal moves")
        others = [other for other in self.possible_agents if other != agent]
        rewards = {other: high / len(others) for other in others} | {agent: low}
        return Outcome(rewards, others[0] if len(others) == 1 else None, f"{agent} forfeited after illegal moves")

    # ---- the AEC API ----------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a game; ``seed`` fixes every chance event and the seeds of later unseeded resets."""
        if seed is not None:
            self._seeds = random.Random(seed)
        self.game_seed = self._seeds.getrandbits(63)
        self.rng = random.Random(self.game_seed)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.events = []
        self.outcome = None
        self.moves = 0
        self._state += 1
        self._illegal = dict.fromkeys(self.agents, 0)
        self._feedback = dict.fromkeys(self.agents, "")
        self._setup()
        self.agent_selection = self._current_agent()
        self.infos = {agent: self._agent_info(agent, invalid=False) for agent in self.agents}

    def observe(self, agent: str) -> dict[str, str]:
        """``{"text": ...}``: rules, visible events, the agent's view, legal moves and feedback."""
        parts = [self.rules]
        seen = [event.text for event in self.events if event.visible_to is None or agent in event.visible_to]
        if seen:
            parts.append("What happened so far:\n" + "\n".join(seen))
        parts.append(self._view(agent))
        if self._feedback.get(agent):
            parts.append(self._feedback[agent])
        parts.append(self._prompt(agent))
        return {"text": "\n\n".join(parts)}

    def step(self, action: Any) -> None:
        """Play the selected agent's reply (``None`` for an agent whose game is over)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self._state += 1
        reply = action if isinstance(action, str) else "" if action is None else str(action)
        move = parse_action(reply)
        invalid = False
        try:
            self.events.extend(self._apply(agent, move))
            self.moves += 1
            self._illegal[agent], self._feedback[agent] = 0, ""
            self.outcome = self._outcome()
        except InvalidAction as error:
            invalid = True
            self._illegal[agent] += 1
            tries = self.max_illegal_moves + 1 - self._illegal[agent]
            if tries <= 0:
                self.outcome = self._forfeit(agent)
            else:
                self._feedback[agent] = f"Your move {quote(move)} is illegal: {error} You have {tries} more tries."
        if self.outcome is not None:
            self._finish(self.outcome, truncated=False)
        elif self.moves >= self.max_moves:
            self._finish(Outcome(dict.fromkeys(self.agents, 0.0), None, "move limit reached"), truncated=True)
        else:
            self.agent_selection = self._current_agent()
        self.infos = {name: self._agent_info(name, invalid and name == agent) for name in self.agents}
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._view(self.agent_selection)
        return None

    def close(self) -> None:
        pass

    # ---- helpers for games and views ------------------------------------------------

    def legal_moves(self, agent: str) -> list[str] | None:
        """The legal moves of ``agent`` if it is to move, else ``[]`` (a new list each call)."""
        if self.outcome is not None or agent != self.agent_selection:
            return []
        if self._moves_cache[0] != self._state:  # one computation per state: observe and info both need it
            self._moves_cache = (self._state, self._legal_moves(agent))
        moves = self._moves_cache[1]
        return None if moves is None else list(moves)

    def play(self, player: str, agent: str, rng: random.Random) -> str:
        """The move the scripted ``player`` makes for ``agent`` now."""
        return self.players[player](self, agent, rng)

    def _prompt(self, agent: str) -> str:
        if self.outcome is not None:
            winner = f" {self.outcome.winner} wins." if self.outcome.winner else ""
            return f"The game is over: {self.outcome.reason}.{winner}"
        if agent != self.agent_selection:
            return f"Waiting for {self.agent_selection} to move."
        moves = self.legal_moves(agent)
        listed = f" Legal moves: {', '.join(moves)}." if moves else ""
        return f"You are {agent} and it is your turn.{listed} End your reply with 'Action: <move>'."

    def _finish(self, outcome: Outcome, truncated: bool) -> None:
        self.outcome = outcome
        for agent in self.agents:
            self.rewards[agent] = outcome.rewards.get(agent, 0.0)
            if truncated:
                self.truncations[agent] = True
            else:
                self.terminations[agent] = True

    def _agent_info(self, agent: str, invalid: bool) -> dict[str, Any]:
        info: dict[str, Any] = {"invalid_action": invalid}
        moves = self.legal_moves(agent)
        if moves is not None:
            info["available_actions"] = moves
        if self.outcome is not None:
            # The seed replays every chance event: shown only once nothing is hidden any more.
            info |= {"winner": self.outcome.winner, "reason": self.outcome.reason, "game_seed": self.game_seed}
        return info


def random_legal_move(game: TextGame, agent: str, rng: random.Random) -> str:
    """The ``random`` player of games whose legal moves are enumerable."""
    moves = game.legal_moves(agent)
    if not moves:
        raise ValueError(f"{type(game).__name__} has no enumerable legal moves for {agent}")
    return rng.choice(moves)


# ---- the game registry -------------------------------------------------------------------

_GAMES: dict[str, tuple[str, dict[str, Any]]] = {}


def register_game(game_id: str, entry_point: str, kwargs: dict[str, Any] | None = None) -> None:
    """Register a :class:`TextGame` class (``"module:Class"``) under ``game_id``, made with ``kwargs`` (those of
    :func:`make_game` override them): one class may serve many games (TextArena's, OpenSpiel's)."""
    _GAMES[game_id] = (entry_point, dict(kwargs or {}))


def list_games() -> list[str]:
    """The registered game ids."""
    return sorted(_GAMES)


def make_game(game_id: str, **kwargs: Any) -> TextGame:
    """A new instance of a registered game, e.g. ``make_game("TicTacToe-v0")``."""
    try:
        entry_point, registered = _GAMES[game_id]
    except KeyError:
        raise KeyError(f"unknown game {game_id!r}; known games: {', '.join(list_games())}") from None
    return load_env_creator(entry_point)(**(registered | kwargs))
