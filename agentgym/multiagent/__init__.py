"""Multi-agent text games on PettingZoo's AEC API, and a single-agent view of any of them.

:class:`TextGame` implements the turn loop once, following PettingZoo's AEC contract
(``agent_iter``, ``last``, ``step``). Each agent observes ``{"text": ...}``: the rules, the
events it may see, its view of the state, the legal moves, and, after an illegal move,
why it was illegal. The action is the agent's raw reply, parsed like every agentgym env
(:func:`agentgym.contract.core.parse_action`). An illegal or unparseable move gives the same agent
another try, up to ``max_illegal_moves`` in a row; one more and it forfeits the game.
``step`` never raises on any string.

A game supplies the rules: ``_setup`` (deal, empty board), ``_current_agent``,
``_legal_moves``, ``_apply`` (one move; raises :class:`~agentgym.contract.core.InvalidAction`),
``_view`` and ``_outcome``; and scripted ``players`` (``random`` and stronger ones).

:class:`GameEnv` plays a game as a single-agent Gymnasium env (a :class:`TextEnv`) against
a fixed scripted opponent: ``gym.make("TicTacToe-vs-Minimax-v0")``. Its task id seeds the
game and picks the learner's seat.

:mod:`~agentgym.multiagent.game` holds the AEC contract (``TextGame``) and the games' table (``register_game``,
``make_game``); :mod:`~agentgym.multiagent.env` the single-agent view (``GameEnv``) and its tools.

Floor: env machinery; it imports only its own floor and those below it: contract (docs/architecture.md).
"""

from agentgym.multiagent.env import GAME_SPLITS, GameEnv
from agentgym.multiagent.game import (
    Event,
    Outcome,
    Player,
    TextGame,
    list_games,
    make_game,
    random_legal_move,
    register_game,
)

__all__ = [
    "GAME_SPLITS",
    "Event",
    "GameEnv",
    "Outcome",
    "Player",
    "TextGame",
    "list_games",
    "make_game",
    "random_legal_move",
    "register_game",
]
