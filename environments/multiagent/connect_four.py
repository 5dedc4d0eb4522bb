"""ConnectFour: two players drop discs into a 6x7 grid; four in a row wins.

Agents: ``player_0`` plays X and moves first, ``player_1`` plays O.

Observation: the rules, the moves so far, the board (6 rows top to bottom, columns 1-7
left to right; ``.`` empty), the legal moves and whose turn it is.

Move: a column number ``1``-``7`` (the legal moves are listed as numbers); a disc falls to
the lowest empty cell of that column. Letters ``a``-``g`` and ``column 4`` / ``col 4``
are accepted as well; case and surrounding spaces are ignored. A full column or anything
else is illegal (feedback, then retries, then forfeit: see
:class:`agentgym.multiagent.TextGame`).

Rewards: +1 for four discs in a row (horizontal, vertical or diagonal), -1 for the other
player; 0 each when the board fills up (a draw, after 42 moves).

Players: ``random`` (a uniformly random legal move) and ``search`` (depth-limited negamax
with alpha-beta pruning, :data:`SEARCH_DEPTH` plies, over bitboards; the leaf heuristic
counts each side's open threats (empty cells that would complete four) and weights discs
by how many lines pass through their cell. It always takes an immediate win, otherwise
always blocks an immediate loss, and breaks ties between equally good moves at random).
"""

from __future__ import annotations

import random
import re

from agentgym.contract.core import InvalidAction
from agentgym.multiagent import Event, Outcome, TextGame, random_legal_move

ROWS, COLUMNS = 6, 7
#: Bitboard layout: column ``c`` holds bits ``7c`` (bottom row) to ``7c + 5`` (top row);
#: bit ``7c + 6`` stays empty so that shifted lines never wrap from one column to the next.
HEIGHT = ROWS + 1
BOTTOM = [1 << (HEIGHT * column) for column in range(COLUMNS)]
TOP = [1 << (HEIGHT * column + ROWS - 1) for column in range(COLUMNS)]
BOARD = sum(((1 << ROWS) - 1) << (HEIGHT * column) for column in range(COLUMNS))
MARKS = {"player_0": "X", "player_1": "O"}
#: Plies the ``search`` player looks ahead.
SEARCH_DEPTH = 5
#: Search order: centre columns first, which makes alpha-beta prune far more.
ORDER = (3, 2, 4, 1, 5, 0, 6)
#: Number of four-cell lines through each cell (rows bottom to top), the positional weight of a disc.
_CELL_LINES = (
    (3, 4, 5, 7, 5, 4, 3),
    (4, 6, 8, 10, 8, 6, 4),
    (5, 8, 11, 13, 11, 8, 5),
    (5, 8, 11, 13, 11, 8, 5),
    (4, 6, 8, 10, 8, 6, 4),
    (3, 4, 5, 7, 5, 4, 3),
)
WEIGHT_MASKS: tuple[tuple[int, int], ...] = tuple(
    (weight, sum(1 << (HEIGHT * c + r) for r in range(ROWS) for c in range(COLUMNS) if _CELL_LINES[r][c] == weight))
    for weight in sorted({w for row in _CELL_LINES for w in row})
)
THREAT_WEIGHT = 24
WIN = 1_000_000
_MOVE = re.compile(r"(?:col(?:umn)?\s*)?([1-7a-g])")


def has_four(discs: int) -> bool:
    """Whether the bitboard ``discs`` holds four in a row in any direction."""
    for shift in (1, HEIGHT, HEIGHT - 1, HEIGHT + 1):  # vertical, horizontal, the two diagonals
        pairs = discs & (discs >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def threats(discs: int, mask: int) -> int:
    """The empty cells where one more disc of ``discs`` would make four in a row (a bitboard)."""
    found = (discs << 1) & (discs << 2) & (discs << 3)  # vertical: three below
    for shift in (HEIGHT, HEIGHT - 1, HEIGHT + 1):
        pair = (discs << shift) & (discs << 2 * shift)
        found |= pair & (discs << 3 * shift)
        found |= pair & (discs >> shift)
        pair = (discs >> shift) & (discs >> 2 * shift)
        found |= pair & (discs << shift)
        found |= pair & (discs >> 3 * shift)
    return found & (BOARD ^ mask)


def evaluate(mine: int, theirs: int, mask: int) -> int:
    """The heuristic value of a position for the side about to move (``mine``)."""
    score = THREAT_WEIGHT * (threats(mine, mask).bit_count() - threats(theirs, mask).bit_count())
    for weight, cells in WEIGHT_MASKS:
        score += weight * ((mine & cells).bit_count() - (theirs & cells).bit_count())
    return score


def negamax(mine: int, theirs: int, mask: int, depth: int, alpha: int, beta: int) -> int:
    """Alpha-beta negamax value for the side to move; wins sooner score higher."""
    playable = [column for column in ORDER if not mask & TOP[column]]
    if not playable:
        return 0  # full board: a draw
    for column in playable:  # an immediate win ends the search
        if has_four(mine | ((mask + BOTTOM[column]) & ~mask)):
            return WIN + depth
    if depth == 0:
        return evaluate(mine, theirs, mask)
    best = -WIN - depth - 1
    for column in playable:
        after = mask | (mask + BOTTOM[column])
        value = -negamax(theirs, mine | (after ^ mask), after, depth - 1, -beta, -alpha)
        if value > best:
            best = value
            if value > alpha:
                alpha = value
                if alpha >= beta:
                    break
    return best


def search_move(mine: int, theirs: int, mask: int, depth: int, rng: random.Random) -> int:
    """The column (0-6) the ``search`` player picks."""
    playable = [column for column in ORDER if not mask & TOP[column]]
    drops = {column: (mask + BOTTOM[column]) & ~mask for column in playable}
    wins = [column for column in playable if has_four(mine | drops[column])]
    if wins:
        return rng.choice(wins)
    losses = [column for column in playable if has_four(theirs | drops[column])]
    if losses:
        return rng.choice(losses)  # block (with two threats the game is lost anyway)
    best, choices = -WIN * 2, []
    for column in playable:
        after = mask | drops[column]
        # A window just below the best so far: values that tie with it come back exact.
        value = -negamax(theirs, mine | drops[column], after, depth - 1, -WIN * 2, -(best - 1))
        if value > best:
            best, choices = value, [column]
        elif value == best:
            choices.append(column)
    return rng.choice(choices)


#: Board bits in reading order: top row first, left to right.
DISPLAY_ORDER = tuple(HEIGHT * column + row for row in reversed(range(ROWS)) for column in range(COLUMNS))


class ConnectFour(TextGame):
    """ConnectFour as a text game; see the module docstring for the rules."""

    metadata = {**TextGame.metadata, "name": "connect_four"}
    agent_names = ("player_0", "player_1")
    max_moves = ROWS * COLUMNS

    @property
    def rules(self) -> str:
        return (
            "ConnectFour. player_0 plays X and moves first, player_1 plays O. The board has 6 rows and 7 "
            "columns; each turn drop a disc into a column that is not full, and it falls to the lowest empty "
            "cell. Four of your discs in a row (horizontally, vertically or diagonally) wins; a full board is a "
            "draw. Name a column by its number, 1 (left) to 7 (right), e.g. 4."
        )

    def _setup(self) -> None:
        self.discs = dict.fromkeys(self.agent_names, 0)
        self.mask = 0
        self.last_mover: str | None = None

    def _current_agent(self) -> str:
        return self.agent_names[self.mask.bit_count() % 2]

    def _legal_moves(self, agent: str) -> list[str]:
        return [str(column + 1) for column in range(COLUMNS) if not self.mask & TOP[column]]

    def _apply(self, agent: str, move: str) -> list[Event]:
        match = _MOVE.fullmatch(move.strip().lower())
        if match is None:
            raise InvalidAction("name a column by its number, 1 to 7, e.g. 4.")
        symbol = match.group(1)
        column = int(symbol) - 1 if symbol.isdigit() else ord(symbol) - ord("a")
        if self.mask & TOP[column]:
            raise InvalidAction(f"column {column + 1} is full.")
        drop = (self.mask + BOTTOM[column]) & ~self.mask
        self.mask |= drop
        self.discs[agent] |= drop
        self.last_mover = agent
        row = drop.bit_length() - 1 - HEIGHT * column
        return [
            Event(f"{agent} ({MARKS[agent]}) dropped a disc in column {column + 1} (row {row + 1} from the bottom).")
        ]

    def cell(self, row: int, column: int) -> str:
        """The mark at ``row`` (0 = bottom) and ``column`` (0 = left): ``X``, ``O`` or ``.``."""
        bit = 1 << (HEIGHT * column + row)
        for agent, discs in self.discs.items():
            if discs & bit:
                return MARKS[agent]
        return "."

    def _view(self, agent: str) -> str:
        (first, x), (second, o) = ((self.discs[name], MARKS[name]) for name in self.agent_names)
        cells = [x if first >> bit & 1 else o if second >> bit & 1 else "." for bit in DISPLAY_ORDER]
        rows = [" ".join(cells[start : start + COLUMNS]) for start in range(0, ROWS * COLUMNS, COLUMNS)]
        return f"You are {agent} ({MARKS[agent]}). Board (top row first):\n1 2 3 4 5 6 7\n" + "\n".join(rows)

    def _outcome(self) -> Outcome | None:
        mover = self.last_mover
        if mover is not None and has_four(self.discs[mover]):
            loser = next(agent for agent in self.agent_names if agent != mover)
            return Outcome({mover: 1.0, loser: -1.0}, mover, f"{mover} has four in a row")
        if self.mask == BOARD:
            return Outcome(dict.fromkeys(self.agent_names, 0.0), None, "the board is full: a draw")
        return None


def search_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """Depth-limited alpha-beta negamax (see the module docstring)."""
    assert isinstance(game, ConnectFour)
    other = next(name for name in game.agent_names if name != agent)
    return str(search_move(game.discs[agent], game.discs[other], game.mask, SEARCH_DEPTH, rng) + 1)


ConnectFour.players = {"random": random_legal_move, "search": search_player}
ConnectFour.strong_player = "search"
