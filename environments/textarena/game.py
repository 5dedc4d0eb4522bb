"""TextArena's multi-player games on agentgym's AEC base (:class:`TextArenaGame`) and as single-agent envs.

Rules, observations, invalid-move handling and rewards are TextArena's own: a game wraps
``textarena.make(id)`` (TextArena's default registration, with its default wrappers) and only
calls its ``reset``, ``step`` and ``close``; nothing of a game is re-implemented here.

Observation: ``{"text": ...}``: a line naming the game, then TextArena's observation of the
agent (every message TextArena sent that player so far, rendered by the game's own default
observation wrapper: ``[GAME] ...``, ``[Player 1] ...``), then agentgym's turn line (whose turn,
and the legal moves where TextArena lists them). The player to move gets its observation from
TextArena's ``get_observation`` after every step, as in TextArena's loop; a player waiting for its
turn sees the messages sent to it so far too (TextArena's loop hands them over at its turn).

Action: the agent's raw reply; the move is its ``Action: ...`` line (or the whole reply, clipped
to :data:`MAX_MOVE_CHARS`), handed to TextArena, whose action wrapper puts it in square brackets
where it has none. An invalid move is TextArena's to judge and is reported as
``info["invalid_action"]``: TextArena lets the player try again within its error allowance; past it,
TextArena ends the game (or, in some multi-player games, eliminates the player) by its own rules.

Reward: TextArena's reward of each player at the end (win 1, loss -1, draw 0 in most games).
Chance: TextArena draws from Python's global ``random``, which it seeds at reset; each game keeps
its own generator state and swaps it in around every TextArena call, and plays every game on a new
TextArena env (some keep state across resets), so games are deterministic per seed however many
run in one process, and equal to TextArena's own loop on a new env with the same seed.

Scripted player ``random``: a move drawn uniformly from the moves TextArena listed to the player
since its last move ("Available Moves: '[0]', '[4]'"); where TextArena lists none, a bracketed
move drawn from the player's messages (an example of the syntax, often invalid).
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import yaml

from agentgym.contract.core import InvalidAction
from agentgym.multiagent import Event, GameEnv, Outcome, Player, TextGame

#: A move TextArena lists: a bracketed move in quotes, e.g. ``'[4]'``.
LISTED_MOVE = re.compile(r"'(\[[^\[\]']{1,60}\])'")
#: The longest move handed to TextArena (longer ones are clipped, as TextArena's own clipping wrapper does in
#: its talk games): TextArena echoes moves into every player's log.
MAX_MOVE_CHARS = 4_096
#: The base's own limit of illegal moves in a row, never reached: TextArena's rules decide.
NEVER = 2**62
#: Any bracketed text: TextArena's move syntax in rules and examples.
BRACKETED = re.compile(r"\[[^\[\]\n]{1,60}\]")


@cache
def game_specs() -> dict[str, dict[str, Any]]:
    """The games this family plays (``games.yaml``): name -> TextArena id, players, options."""
    return yaml.safe_load(resources.files(__package__).joinpath("games.yaml").read_text(encoding="utf-8"))


@cache
def left_out() -> dict[str, Any]:
    """TextArena's games this family does not play, and why (``left_out.yaml``)."""
    return yaml.safe_load(resources.files(__package__).joinpath("left_out.yaml").read_text(encoding="utf-8"))


def list_games() -> list[str]:
    """The names of the TextArena games played here, e.g. ``"TicTacToe"``."""
    return sorted(game_specs())


def make_game(name: str, **kwargs: Any) -> TextArenaGame:
    """A new AEC game of TextArena's ``name`` (see :class:`TextArenaGame` for the keyword arguments)."""
    return TextArenaGame(name, **kwargs)


def random_listed_move(game: TextGame, agent: str, rng: random.Random) -> str:
    """The ``random`` player: a listed legal move, else a bracketed move from the agent's messages."""
    moves = game.legal_moves(agent)
    if moves:
        return rng.choice(moves)
    assert isinstance(game, TextArenaGame)
    examples = BRACKETED.findall(game.view(agent))
    return rng.choice(examples) if examples else "[?]"


class TextArenaGame(TextGame):
    """One TextArena game as a PettingZoo AEC env (see the module docstring).

    ``name``: a game of :func:`list_games`; ``num_players``: one of the counts TextArena accepts
    for it (default: ``games.yaml``'s). Agents are ``player_0`` ... (TextArena's player ids).
    """

    metadata = {**TextGame.metadata, "name": "textarena"}
    players = {"random": random_listed_move}
    strong_player = "random"
    #: A safety cut-off: TextArena's games end by their own turn limits long before.
    max_moves = 2_000
    #: TextArena echoes every message whole into the log: talk games' observations grow long.
    max_observation_chars = 50_000_000

    def __init__(self, name: str, num_players: int | None = None, render_mode: str | None = None) -> None:
        import textarena

        if name not in game_specs():
            raise KeyError(f"unknown TextArena game {name!r}; played here: {', '.join(list_games())}")
        spec = game_specs()[name]
        count = num_players or spec["players"]
        if count not in spec.get("allowed", [spec["players"]]):
            raise ValueError(f"{name} takes {spec.get('allowed', [spec['players']])} players, not {count}")
        self.name = name
        self.textarena_id: str = spec["id"]
        self.agent_names = tuple(f"player_{pid}" for pid in range(count))
        super().__init__(max_illegal_moves=NEVER, render_mode=render_mode)  # TextArena judges invalid moves
        self.env = textarena.make(self.textarena_id)
        self._renderer = _observation_wrapper(self.env)
        self._make = textarena.make
        self._random_state = random.Random(0).getstate()
        #: How many of each player's messages it had when it last moved (the moves it may play are listed after).
        self._moved_at = dict.fromkeys(range(count), 0)

    @property
    def rules(self) -> str:
        return (
            f"TextArena's {self.name} ({self.textarena_id}, {len(self.agent_names)} players). TextArena's messages to "
            "you follow; moves are written in square brackets, e.g. 'Action: [4]'."
        )

    @contextlib.contextmanager
    def _textarena_random(self) -> Iterator[None]:
        """Run TextArena on this game's own state of the global ``random`` (see the module docstring)."""
        outer = random.getstate()
        random.setstate(self._random_state)
        try:
            yield
        finally:
            self._random_state = random.getstate()
            random.setstate(outer)

    def _deliver(self) -> None:
        """Hand the player to move its observation as TextArena's loop does (``get_observation``, which some
        games extend), and every other player the messages queued for it so far."""
        if not self.env.state.done:
            with self._textarena_random():
                self.env.get_observation()
        queued = self.env.state.observations
        for pid in range(len(self.agent_names)):
            self._renderer.observation(pid, queued[pid])
            queued[pid] = []

    def _messages(self, pid: int) -> list[tuple[int, str, Any]]:
        return self._renderer.full_observations.get(pid, [])

    def _setup(self) -> None:
        # A new TextArena env per game: some keep state across resets (KuhnPoker's deck order).
        self.env = self._make(self.textarena_id)
        self._renderer = _observation_wrapper(self.env)
        self._moved_at = dict.fromkeys(range(len(self.agent_names)), 0)
        with self._textarena_random():
            self.env.reset(num_players=len(self.agent_names), seed=self.game_seed)
        _end_when_all_eliminated(self.env.state)
        self._deliver()

    def _current_agent(self) -> str:
        return self.agent_names[self.env.state.current_player_id]

    def _legal_moves(self, agent: str) -> list[str] | None:
        """The moves TextArena listed to ``agent`` since its last move (its latest list), or None."""
        pid = self.agent_names.index(agent)
        for _, message, _ in reversed(self._messages(pid)[self._moved_at[pid] :]):
            listed = LISTED_MOVE.findall(message)
            if listed:
                return list(dict.fromkeys(listed))
        return None

    def _apply(self, agent: str, move: str) -> list[Event]:
        """Play ``move`` in TextArena; raise ``InvalidAction`` where TextArena asks the player to try again."""
        pid = self.agent_names.index(agent)
        state = self.env.state
        errors = getattr(state, "error_count", 0)
        with self._textarena_random():
            self.env.step(move[:MAX_MOVE_CHARS])
        self._deliver()
        retry = not state.done and getattr(state, "error_count", 0) > errors
        if retry or state.game_info[pid].get("invalid_move"):
            if state.done:  # TextArena ended the game over this move: the base forfeits, with TextArena's outcome
                self._illegal[agent] = self.max_illegal_moves
            raise InvalidAction(self._messages(pid)[-1][1] if self._messages(pid) else "TextArena refused the move.")
        self._moved_at[pid] = len(self._messages(pid))
        return []

    def _forfeit(self, agent: str) -> Outcome:
        """TextArena's outcome of a game it ended over ``agent``'s invalid move (not the base's forfeit rule)."""
        outcome = self._outcome()
        assert outcome is not None, "forfeits happen only where TextArena ended the game"
        return outcome

    def _view(self, agent: str) -> str:
        return self._renderer.observation(self.agent_names.index(agent), None).strip("\n")

    def view(self, agent: str) -> str:
        """TextArena's observation of ``agent`` so far (its messages, rendered by the game's wrapper)."""
        return self._view(agent)

    def _outcome(self) -> Outcome | None:
        if not self.env.state.done:
            return None
        rewards, game_info = self.env.close()
        by_agent = {agent: float((rewards or {}).get(pid, 0.0)) for pid, agent in enumerate(self.agent_names)}
        best = max(by_agent.values())
        leaders = [agent for agent, reward in by_agent.items() if reward == best]
        winner = leaders[0] if len(leaders) == 1 and best > min(by_agent.values()) else None
        reasons = [info.get("reason") for info in game_info.values() if info.get("reason")]
        return Outcome(by_agent, winner, str(reasons[0]) if reasons else "game over")

    def observe(self, agent: str) -> dict[str, str]:
        """``{"text": ...}``: the game's name line, TextArena's observation of ``agent``, the turn line."""
        return {"text": "\n\n".join([self.rules, self._view(agent), self._prompt(agent)])}


def _end_when_all_eliminated(state: Any) -> None:
    """End a multi-player game in a draw once every player is eliminated, before TextArena 0.7.4 turns again.

    Its ``FFAMultiPlayerState.step`` looks for the next player not eliminated in a loop that never ends when
    none is left (MarketEntryGame reaches it when every player runs out of invalid moves); the games' own
    rule for that case (MarketEntryGame's) is a draw, "All players eliminated!". States without eliminations
    are left as they are.
    """
    if not hasattr(state, "elimination_order"):
        return
    step = state.step

    def step_or_draw(*args: Any, **kwargs: Any) -> Any:
        if not state.done and set(range(state.num_players)) <= set(state.elimination_order):
            state.set_draw(reason="All players eliminated!")
        return step(*args, **kwargs)

    state.step = step_or_draw


def _observation_wrapper(env: Any) -> Any:
    """The outermost observation wrapper of TextArena's default wrappers (it renders the message log)."""
    from textarena.core import ObservationWrapper, Wrapper

    while isinstance(env, Wrapper):
        if isinstance(env, ObservationWrapper) and hasattr(env, "full_observations"):
            return env
        env = env.env
    raise TypeError("the TextArena env has no observation wrapper that keeps the message log")


class TextArenaEnv(GameEnv):
    """A TextArena game as a single-agent env against a scripted opponent (``TextArena-<Name>-vs-Random-v0``).

    Everything but the game is :class:`agentgym.multiagent.GameEnv`'s (task id seeds the game and
    seats the learner; score is the game reward scaled to [0, 1]); the game is made here because
    TextArena's games are not in the core's registry of agentgym's own games.
    """

    def __init__(
        self,
        game: str,
        opponent: str | Player = "random",
        seat: str | None = None,
        num_players: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            make_game(game, num_players=num_players),
            opponent,
            seat,
            render_mode=render_mode,
            game_id=f"TextArena-{game}-v0",
        )
