"""OpenSpiel's games on agentgym's AEC base (:class:`OpenSpielGame`) and as single-agent envs.

Everything of a game is OpenSpiel's: its state (``pyspiel.load_game(name, params).new_initial_state()``),
its legal actions and their names (``state.action_to_string``), what each player observes
(``state.observation_string(player)``, or the information-state string where a game has no
observation string) and its returns (``state.returns()``). Chance nodes (deals, dice, draws) are
resolved with the game's seeded generator, drawn with OpenSpiel's own probabilities.

Observation: ``{"text": ...}``: the game's rules line, the moves the agent saw (everyone's in
games with public moves, its own in games such as phantom tic-tac-toe), OpenSpiel's observation
string for the agent, the legal moves (OpenSpiel's action names) and the turn line.

Action: the agent's raw reply; the move is its ``Action: ...`` line (or the whole reply), matched
to a legal action's name (case, spaces and surrounding parentheses ignored). Illegal moves follow
agentgym's multi-agent rule (explained, retried, then forfeited: :class:`agentgym.multiagent.TextGame`).

Reward: OpenSpiel's return of each player at the end (zero-sum games: win 1, loss -1; Hanabi: the
fireworks' score, shared by both players). Scripted players: ``random`` (a uniform legal action)
and, in the two-player perfect-information games, ``mcts`` (OpenSpiel's ``MCTSBot`` with random
rollouts, ``games.yaml``'s simulations per move).
"""

from __future__ import annotations

import random
from functools import cache
from importlib import resources
from typing import Any

import yaml

from agentgym.contract.core import InvalidAction
from agentgym.multiagent import Event, GameEnv, Outcome, Player, TextGame, random_legal_move


@cache
def game_specs() -> dict[str, dict[str, Any]]:
    """The games this family plays (``games.yaml``): name -> pyspiel name, parameters, options."""
    return yaml.safe_load(resources.files(__package__).joinpath("games.yaml").read_text(encoding="utf-8"))


def list_games() -> list[str]:
    """The names of the OpenSpiel games played here, e.g. ``"Hanabi"``."""
    return sorted(game_specs())


def make_game(name: str, **kwargs: Any) -> OpenSpielGame:
    """A new AEC game of OpenSpiel's ``name`` (see :class:`OpenSpielGame` for the keyword arguments)."""
    return OpenSpielGame(name, **kwargs)


def normal(move: str) -> str:
    """A move name as compared: lower case, no spaces, no surrounding parentheses."""
    return "".join(move.split()).lower().removeprefix("(").removesuffix(")")


def mcts_move(game: TextGame, agent: str, rng: random.Random) -> str:
    """The ``mcts`` player: OpenSpiel's MCTS bot (random rollouts) on a copy of the state."""
    import numpy as np
    from open_spiel.python.algorithms import mcts

    assert isinstance(game, OpenSpielGame)
    seed = rng.getrandbits(32)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(seed))
    bot = mcts.MCTSBot(
        game.game,
        uct_c=2.0,
        max_simulations=game.spec["mcts"],
        evaluator=evaluator,
        random_state=np.random.RandomState(seed),
    )
    player = game.agent_names.index(agent)
    return game.state.action_to_string(player, bot.step(game.state.clone()))


class OpenSpielGame(TextGame):
    """One OpenSpiel game as a PettingZoo AEC env (see the module docstring).

    ``name``: a game of :func:`list_games`; ``params``: pyspiel parameters that replace
    ``games.yaml``'s (e.g. ``{"board_size": 7}``). Agents are ``player_0`` ... (OpenSpiel's players).
    """

    metadata = {**TextGame.metadata, "name": "openspiel"}

    def __init__(
        self,
        name: str,
        params: dict[str, Any] | None = None,
        max_illegal_moves: int = 2,
        render_mode: str | None = None,
    ) -> None:
        import pyspiel

        if name not in game_specs():
            raise KeyError(f"unknown OpenSpiel game {name!r}; played here: {', '.join(list_games())}")
        self.name = name
        self.spec = game_specs()[name]
        self.params = {**self.spec["params"], **(params or {})}
        self.game = pyspiel.load_game(self.spec["game"], self.params)
        kind = self.game.get_type()
        if kind.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
            raise ValueError(f"{name}: only sequential games are played here")
        self.agent_names = tuple(f"player_{player}" for player in range(self.game.num_players()))
        self.players = {"random": random_legal_move} | ({"mcts": mcts_move} if "mcts" in self.spec else {})
        self.strong_player = "mcts" if "mcts" in self.spec else "random"
        self.reward_range = (self.game.min_utility(), self.game.max_utility())
        self.cooperative = kind.utility == pyspiel.GameType.Utility.IDENTICAL
        self.max_moves = self.game.max_game_length()
        self._observation = "observation_string" if kind.provides_observation_string else "information_state_string"
        super().__init__(max_illegal_moves, render_mode)
        self.state = self.game.new_initial_state()

    @property
    def rules(self) -> str:
        players = len(self.agent_names)
        return (
            f"OpenSpiel's {self.spec['game']} ({self.params}), {players} players. "
            f"{'You and your partner share one score.' if self.cooperative else 'Each player plays for itself.'} "
            "Moves are OpenSpiel's action names, listed on your turn."
        )

    def _chance(self) -> None:
        """Resolve chance nodes with OpenSpiel's probabilities, drawn from the game's generator."""
        while self.state.is_chance_node():
            outcomes = self.state.chance_outcomes()
            actions, weights = [action for action, _ in outcomes], [weight for _, weight in outcomes]
            self.state.apply_action(self.rng.choices(actions, weights)[0])

    def _setup(self) -> None:
        self.state = self.game.new_initial_state()
        self._chance()

    def _current_agent(self) -> str:
        return self.agent_names[self.state.current_player()]

    def _legal_moves(self, agent: str) -> list[str]:
        player = self.agent_names.index(agent)
        return [self.state.action_to_string(player, action) for action in self.state.legal_actions(player)]

    def _apply(self, agent: str, move: str) -> list[Event]:
        player = self.agent_names.index(agent)
        actions = {normal(self.state.action_to_string(player, a)): a for a in self.state.legal_actions(player)}
        action = actions.get(normal(move))
        if action is None:
            raise InvalidAction("it is not one of the legal moves.")
        name = self.state.action_to_string(player, action)
        self.state.apply_action(action)
        self._chance()
        seen = None if self.spec["public_moves"] else frozenset({agent})
        return [Event(f"{agent} played {name}.", seen)]

    def _view(self, agent: str) -> str:
        player = self.agent_names.index(agent)
        return f"Your view (OpenSpiel's):\n{getattr(self.state, self._observation)(player)}"

    def _outcome(self) -> Outcome | None:
        if not self.state.is_terminal():
            return None
        rewards = {agent: float(value) for agent, value in zip(self.agent_names, self.state.returns(), strict=True)}
        best = max(rewards.values())
        leaders = [agent for agent, reward in rewards.items() if reward == best]
        winner = leaders[0] if len(leaders) == 1 and not self.cooperative else None
        scores = ", ".join(f"{agent} {reward:g}" for agent, reward in rewards.items())
        return Outcome(rewards, winner, f"the game ended (returns: {scores})")


class OpenSpielEnv(GameEnv):
    """An OpenSpiel game as a single-agent env (``OpenSpiel-<Name>-vs-<Player>-v0``).

    Everything but the game is :class:`agentgym.multiagent.GameEnv`'s (task id seeds the game and
    seats the learner; score is the return scaled to [0, 1] from the game's utility range); the game
    is made here because OpenSpiel's games are not in the core's registry of agentgym's own games.
    """

    def __init__(
        self,
        game: str,
        opponent: str | Player = "random",
        seat: str | None = None,
        params: dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            make_game(game, params=params), opponent, seat, render_mode=render_mode, game_id=f"OpenSpiel-{game}-v0"
        )
