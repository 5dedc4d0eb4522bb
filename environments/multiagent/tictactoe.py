"""TicTacToe: two players take turns marking a 3x3 grid; three in a row wins.

Agents: ``player_0`` plays X and moves first, ``player_1`` plays O.

Observation: the rules, the moves so far, the board (rows 1-3 top to bottom, columns
a-c left to right; ``.`` empty), the legal moves and whose turn it is.

Move: a cell name such as ``b2`` (column letter, row number; case and surrounding
spaces ignored). A taken cell or anything else is illegal (feedback, then retries, then
forfeit: see :class:`agentgym.multiagent.TextGame`).

Rewards: +1 for three in a row, -1 for the other player; 0 each for a full board (draw).

Players: ``random`` (a uniformly random legal move) and ``minimax`` (perfect play: the
game-theoretic value of every move by exhaustive search, ties broken at random; it never
loses).
"""

from __future__ import annotations

import random
from functools import cache

from agentgym.contract.core import InvalidAction
from agentgym.multiagent import Event, Outcome, TextGame, random_legal_move

CELLS = tuple(f"{column}{row}" for row in "123" for column in "abc")
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MARKS = {"player_0": "X", "player_1": "O"}


def winner_mark(board: str) -> str | None:
    """``"X"`` or ``"O"`` if that mark has three in a row on ``board`` (9 characters, ``.`` empty)."""
    for a, b, c in LINES:
        if board[a] != "." and board[a] == board[b] == board[c]:
            return board[a]
    return None


@cache
def minimax_value(board: str, mark: str) -> int:
    """The value of ``board`` for the player about to play ``mark``: +1 win, 0 draw, -1 loss."""
    if winner_mark(board) is not None:
        return -1  # the previous player just completed a line
    if "." not in board:
        return 0
    other = "O" if mark == "X" else "X"
    return max(-minimax_value(board[:i] + mark + board[i + 1 :], other) for i, cell in enumerate(board) if cell == ".")


class TicTacToe(TextGame):
    """TicTacToe as a text game; see the module docstring for the rules."""

    metadata = {**TextGame.metadata, "name": "tictactoe"}
    agent_names = ("player_0", "player_1")
    max_moves = 9

    @property
    def rules(self) -> str:
        return (
            "TicTacToe. player_0 plays X and moves first, player_1 plays O. Mark an empty cell of the 3x3 "
            "board each turn; three of your marks in a row, column or diagonal wins; a full board is a draw. "
            "Name a cell by column (a-c) and row (1-3), e.g. b2."
        )

    def _setup(self) -> None:
        self.board = "." * 9

    def _current_agent(self) -> str:
        return "player_0" if self.board.count(".") % 2 == 1 else "player_1"

    def _legal_moves(self, agent: str) -> list[str]:
        return [CELLS[i] for i, cell in enumerate(self.board) if cell == "."]

    def _apply(self, agent: str, move: str) -> list[Event]:
        cell = move.strip().lower()
        if cell not in CELLS:
            raise InvalidAction("name a cell by column a-c and row 1-3, e.g. b2.")
        index = CELLS.index(cell)
        if self.board[index] != ".":
            raise InvalidAction(f"{cell} is already taken.")
        self.board = self.board[:index] + MARKS[agent] + self.board[index + 1 :]
        return [Event(f"{agent} ({MARKS[agent]}) marked {cell}.")]

    def _view(self, agent: str) -> str:
        rows = [f"{row} " + " ".join(self.board[3 * i : 3 * i + 3]) for i, row in enumerate("123")]
        return f"You are {agent} ({MARKS[agent]}). Board:\n  a b c\n" + "\n".join(rows)

    def _outcome(self) -> Outcome | None:
        mark = winner_mark(self.board)
        if mark is not None:
            winner = "player_0" if mark == "X" else "player_1"
            loser = "player_1" if winner == "player_0" else "player_0"
            return Outcome({winner: 1.0, loser: -1.0}, winner, f"{winner} has three in a row")
        if "." not in self.board:
            return Outcome({"player_0": 0.0, "player_1": 0.0}, None, "the board is full: a draw")
        return None


def minimax_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """A perfect player: a move of the highest minimax value, ties broken by ``rng``."""
    assert isinstance(game, TicTacToe)
    mark, other = MARKS[agent], "O" if MARKS[agent] == "X" else "X"
    board = game.board
    values = {
        CELLS[i]: -minimax_value(board[:i] + mark + board[i + 1 :], other)
        for i, cell in enumerate(board)
        if cell == "."
    }
    best = max(values.values())
    return rng.choice([move for move, value in values.items() if value == best])


TicTacToe.players = {"random": random_legal_move, "minimax": minimax_player}
TicTacToe.strong_player = "minimax"
