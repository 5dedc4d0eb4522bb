"""RockPaperScissors, repeated: both players choose at once, ``rounds`` times (default 9).

Agents: ``player_0`` and ``player_1``.

A round: both choose rock, paper or scissors without seeing the other's choice; rock
beats scissors, scissors beats paper, paper beats rock; equal choices tie the round. After
the last round the player who won more rounds wins the match.

Observation (``{"text": ...}`` per agent): the rules, every finished round with both
choices and who won it, the score, the round to play, and the legal moves.

Move syntax: ``rock``, ``paper`` or ``scissors`` (any case; also ``r``, ``p``, ``s``).

Rewards: 0 until the match ends, then +1 for the match winner and -1 for the loser (0
each for a tie). ``info`` at the end holds ``winner`` and ``reason``.

Two APIs, one set of rules:

- :func:`parallel_env` (``RockPaperScissorsParallel``) is a PettingZoo ``ParallelEnv``:
  ``step`` takes both replies at once. A reply that is not a move (or a missing one) loses
  that round for its agent (``info["invalid_action"]``); both invalid tie the round. There
  are no retries and nothing ever raises.
- :class:`RockPaperScissors` (game id ``RockPaperScissors-v0``) is the AEC version for the
  arena and the single-agent views: within a round ``player_0`` moves first and its choice
  stays hidden from ``player_1`` (an event only ``player_0`` sees) until ``player_1`` has
  chosen too, so the information is that of simultaneous moves. Like every
  :class:`~agentgym.multiagent.TextGame`, an illegal move there gets feedback and retries,
  then loses the whole match by forfeit.

Players (AEC version): ``random`` (uniform) and ``pattern`` (predicts the other player's
next choice from the finished rounds: the most frequent choice that followed its last
choice before, or, with no such record, its most frequent choice; plays what beats it.
Against a uniformly random player its expected score is 0; against a constant or cycling
player it wins from the second or third round on).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv

from agentgym.contract.core import InvalidAction, UnicodeText, parse_action, quote
from agentgym.multiagent import Event, Outcome, TextGame

MOVES = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
BEATEN_BY = {loser: winner for winner, loser in BEATS.items()}
AGENTS = ("player_0", "player_1")
_ALIASES = {"r": "rock", "p": "paper", "s": "scissors"}


def parse_move(move: str) -> str:
    """``rock``, ``paper`` or ``scissors`` from a move (any case, or its initial); raises :class:`InvalidAction`."""
    word = move.strip().lower()
    word = _ALIASES.get(word, word)
    if word not in MOVES:
        raise InvalidAction(f"{quote(move)} is not a move: choose rock, paper or scissors.")
    return word


def round_winner(first: str | None, second: str | None) -> int:
    """0 if the first choice wins, 1 if the second does, -1 for a tie; ``None`` is an invalid choice that loses."""
    if first == second or (first is None and second is None):
        return -1
    if first is None:
        return 1
    if second is None or BEATS[first] == second:
        return 0
    return 1


def rules_text(rounds: int) -> str:
    return (
        f"RockPaperScissors, {rounds} rounds. player_0 and player_1 each choose rock, paper or scissors at the same "
        "time, without seeing the other's choice: rock beats scissors, scissors beats paper, paper beats rock, and "
        "equal choices tie the round. Whoever wins more rounds wins the match (+1, the other -1; 0 each for a tie)."
    )


def score_text(history: list[tuple[str | None, str | None]], agent: str) -> str:
    """The score after the finished rounds, from ``agent``'s side."""
    wins = [0, 0]
    for choices in history:
        winner = round_winner(*choices)
        if winner >= 0:
            wins[winner] += 1
    me = AGENTS.index(agent)
    return f"Score: you ({agent}) {wins[me]}, {AGENTS[1 - me]} {wins[1 - me]}."


def history_text(history: list[tuple[str | None, str | None]], agent: str) -> str:
    """The finished rounds and the score, from ``agent``'s side."""
    if not history:
        return "No round played yet."
    lines = []
    for number, choices in enumerate(history, 1):
        winner = round_winner(*choices)
        result = "a tie" if winner < 0 else f"{AGENTS[winner]} wins it"
        shown = ", ".join(f"{name} {choice or '(no valid move)'}" for name, choice in zip(AGENTS, choices))
        lines.append(f"Round {number}: {shown}: {result}.")
    lines.append(score_text(history, agent))
    return "\n".join(lines)


def match_outcome(history: list[tuple[str | None, str | None]]) -> Outcome:
    """The match result from the finished rounds."""
    wins = Counter(round_winner(*choices) for choices in history)
    score = f"{wins[0]}-{wins[1]} with {wins[-1]} tied round{'s' if wins[-1] != 1 else ''}"
    if wins[0] == wins[1]:
        return Outcome(dict.fromkeys(AGENTS, 0.0), None, f"the match is tied ({score})")
    winner, loser = AGENTS if wins[0] > wins[1] else reversed(AGENTS)
    return Outcome({winner: 1.0, loser: -1.0}, winner, f"{winner} won more rounds ({score})")


def predict_and_beat(opponent_moves: list[str], rng: random.Random) -> str:
    """The ``pattern`` strategy: beat the opponent's most likely next move, predicted from its past moves."""
    if not opponent_moves:
        return rng.choice(MOVES)
    last = opponent_moves[-1]
    followers = Counter(after for before, after in zip(opponent_moves, opponent_moves[1:]) if before == last)
    counts = followers or Counter(opponent_moves)
    top = max(counts.values())
    predicted = rng.choice(sorted(move for move, count in counts.items() if count == top))
    return BEATEN_BY[predicted]


# ---- the Parallel API -----------------------------------------------------------------------


class RockPaperScissorsParallel(ParallelEnv):
    """Repeated RockPaperScissors on PettingZoo's Parallel API; see the module docstring."""

    metadata = {"render_modes": ["ansi"], "name": "rock_paper_scissors_v0", "is_parallelizable": True}
    max_observation_chars = 200_000
    max_action_chars = 65_536

    def __init__(self, rounds: int = 9, render_mode: str | None = None) -> None:
        if not 1 <= rounds <= 1000:
            raise ValueError("rounds must be between 1 and 1000")
        if render_mode not in (None, "ansi"):
            raise ValueError("render_mode must be 'ansi' or None")
        self.rounds = rounds
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self.history: list[tuple[str | None, str | None]] = []
        self.outcome: Outcome | None = None
        self._last_invalid = dict.fromkeys(AGENTS, False)
        self.observation_spaces = {
            agent: spaces.Dict({"text": UnicodeText(self.max_observation_chars)}) for agent in AGENTS
        }
        self.action_spaces = {agent: UnicodeText(self.max_action_chars) for agent in AGENTS}

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
        """Start a match (the game has no chance: ``seed`` changes nothing)."""
        self.agents = list(self.possible_agents)
        self.history = []
        self.outcome = None
        self._last_invalid = dict.fromkeys(self.agents, False)
        return {agent: self.observe(agent) for agent in self.agents}, {
            agent: self._info(agent) for agent in self.agents
        }

    def observe(self, agent: str) -> dict[str, str]:
        parts = [rules_text(self.rounds), history_text(self.history, agent)]
        if self.outcome is not None:
            winner = f" {self.outcome.winner} wins." if self.outcome.winner else ""
            parts.append(f"The match is over: {self.outcome.reason}.{winner}")
        else:
            parts.append(
                f"Round {len(self.history) + 1} of {self.rounds}. You are {agent}. Legal moves: rock, paper, "
                "scissors. End your reply with 'Action: <move>'; a reply without a valid move loses the round."
            )
        return {"text": "\n\n".join(parts)}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Play one round with both agents' replies; see the module docstring."""
        if not self.agents:
            return {}, {}, {}, {}, {}  # the match is over: nothing to play until reset()
        choices: list[str | None] = []
        for agent in AGENTS:
            reply = actions.get(agent)
            try:
                choices.append(parse_move(parse_action(reply if isinstance(reply, str) else "")))
            except InvalidAction:
                choices.append(None)
        self._last_invalid = {agent: choice is None for agent, choice in zip(AGENTS, choices)}
        self.history.append((choices[0], choices[1]))
        done = len(self.history) >= self.rounds
        rewards = dict.fromkeys(self.agents, 0.0)
        if done:
            self.outcome = match_outcome(self.history)
            rewards = dict(self.outcome.rewards)
        observations = {agent: self.observe(agent) for agent in self.agents}
        infos = {agent: self._info(agent) for agent in self.agents}
        terminations = dict.fromkeys(self.agents, done)
        truncations = dict.fromkeys(self.agents, False)
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _info(self, agent: str) -> dict[str, Any]:
        info: dict[str, Any] = {"round": len(self.history), "invalid_action": self._last_invalid.get(agent, False)}
        if self.outcome is None:
            info["available_actions"] = list(MOVES)
        else:
            info |= {"winner": self.outcome.winner, "reason": self.outcome.reason}
        return info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return history_text(self.history, AGENTS[0])
        return None

    def close(self) -> None:
        pass


def parallel_env(**kwargs: Any) -> RockPaperScissorsParallel:
    """The Parallel version: ``parallel_env(rounds=9, render_mode=None)``."""
    return RockPaperScissorsParallel(**kwargs)


# ---- the AEC version -------------------------------------------------------------------------


class RockPaperScissors(TextGame):
    """Repeated RockPaperScissors as a turn-based text game with hidden choices; see the module docstring."""

    metadata = {**TextGame.metadata, "name": "rock_paper_scissors"}
    agent_names = AGENTS

    def __init__(self, rounds: int = 9, max_illegal_moves: int = 2, render_mode: str | None = None) -> None:
        if not 1 <= rounds <= 1000:
            raise ValueError("rounds must be between 1 and 1000")
        super().__init__(max_illegal_moves=max_illegal_moves, render_mode=render_mode)
        self.rounds = rounds
        self.max_moves = 2 * rounds  # the match always ends after its last round; never truncated

    @property
    def rules(self) -> str:
        return rules_text(self.rounds) + (
            " Here player_0 chooses first each round, but its choice stays hidden until player_1 has chosen."
        )

    def _setup(self) -> None:
        self.history: list[tuple[str | None, str | None]] = []
        self.hidden: str | None = None  # player_0's choice in the round being played

    def _current_agent(self) -> str:
        return AGENTS[0] if self.hidden is None else AGENTS[1]

    def _legal_moves(self, agent: str) -> list[str]:
        return list(MOVES)

    def _apply(self, agent: str, move: str) -> list[Event]:
        choice = parse_move(move)
        number = len(self.history) + 1
        if agent == AGENTS[0]:
            self.hidden = choice
            return [
                Event(f"Round {number}: you chose {choice}.", frozenset({agent})),
                Event(f"Round {number}: {agent} has chosen.", frozenset({AGENTS[1]})),
            ]
        assert self.hidden is not None
        choices = (self.hidden, choice)
        self.history.append(choices)
        self.hidden = None
        winner = round_winner(*choices)
        result = "a tie" if winner < 0 else f"{AGENTS[winner]} wins the round"
        return [Event(f"Round {number}: player_0 {choices[0]}, player_1 {choices[1]}: {result}.")]

    def _view(self, agent: str) -> str:
        score = score_text(self.history, agent) if self.history else "No round played yet."
        number = min(len(self.history) + 1, self.rounds)
        return f"You are {agent}. Round {number} of {self.rounds}. {score}"

    def _outcome(self) -> Outcome | None:
        return match_outcome(self.history) if len(self.history) >= self.rounds else None


def pattern_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """Beats the other player's predicted choice, from finished rounds only (see :func:`predict_and_beat`)."""
    assert isinstance(game, RockPaperScissors)
    other = 1 - AGENTS.index(agent)
    return predict_and_beat([choices[other] for choices in game.history if choices[other] is not None], rng)


def random_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """A uniformly random choice."""
    return rng.choice(MOVES)


RockPaperScissors.players = {"random": random_player, "pattern": pattern_player}
RockPaperScissors.strong_player = "pattern"
