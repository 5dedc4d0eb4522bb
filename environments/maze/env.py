"""Maze: walk from your start to the goal through a perfect maze.

Layout: a maze of ``size`` x ``size`` cells is drawn on a grid of ``2 * size + 1`` squares
a side. Cells sit at odd rows and columns; the square between two neighbouring cells is
either a wall or an open passage; the border is wall. You move one square per step, so
going from one cell to the next takes two moves.

Observation: the grid, one character per square separated by spaces, top row first:
``#`` wall, ``_`` open, ``P`` you, ``G`` goal, ``?`` not seen yet. The first observation
also holds the instruction and the action syntax; each later one starts with a feedback
line ("You moved up.", "A wall blocks the way up.", or why the reply was invalid).
With ``view="full"`` the whole maze is shown. With ``view="partial"`` you see the squares
within ``view_radius`` squares of you, diagonals included (a window of
``2 * view_radius + 1`` squares a side); squares once seen stay on the map and all others
show as ``?``, the goal included until you have seen it.

Action: ``up``, ``down``, ``left`` or ``right``, case-insensitive, or their first letter.
Moving into a wall is a valid action that leaves you where you are. Anything else is an
invalid action: reward 0, nothing changes.

Reward: 1 on the step that reaches the goal, 0 otherwise; the score is 1 once the goal is
reached (success) and 0 before.

Termination: reaching the goal. Truncation comes from the registered step limit:
``Maze-v0`` allows 100 steps, at least the longest possible path in a 7x7 maze
(``2 * (7 * 7 - 1) = 96`` moves); ``Maze-Partial-v0`` allows 200, enough to walk every
passage there and back (192 moves). Other sizes should pass ``max_episode_steps`` to
``gym.make``.

Tasks: maze ``task_id`` is carved by randomized Kruskal from a generator seeded with the
id and ``size`` (at least 3): a perfect maze, in which exactly one path joins any two
cells. The start is a random cell and the goal the cell farthest from it along the maze.
Mazes are assigned to splits by their walls, so no train maze appears in dev or test (a
maze failing its task's split is redrawn). The view does not change the maze: task N of
``Maze-v0`` and of ``Maze-Partial-v0`` is the same maze.

Oracle: the first move of the shortest path from where you stand to the goal, computed
from the whole maze (also with the partial view).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from functools import cached_property
from typing import Literal

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.maze import SPLITS

ACTIONS = ("up", "down", "left", "right")
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
ALIASES = {name: name for name in ACTIONS} | {name[0]: name for name in ACTIONS}
WALL, OPEN, AGENT, GOAL, UNSEEN = "#", "_", "P", "G", "?"
ACTION_LINE = "Actions: up, down, left, right (or u, d, l, r). Reply with one of them, e.g. 'Action: up'."

Square = tuple[int, int]


class MazeEnv(TextEnv):
    """A grid maze with text observations; see the module docstring for the rules."""

    # Pure-Python and fast: runners may call it on their event loop.
    metadata = {**TextEnv.metadata, "inline_safe": True}
    splits = SPLITS

    def __init__(
        self,
        size: int = 7,
        view: Literal["full", "partial"] = "full",
        view_radius: int = 2,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        # Each split needs mazes of its own: a 2x2 maze has only 4 layouts, a 3x3 one 192.
        if size < 3:
            raise ValueError("size must be at least 3")
        if view not in ("full", "partial"):
            raise ValueError("view must be 'full' or 'partial'")
        if view_radius < 1:
            raise ValueError("view_radius must be at least 1")
        self.size = size
        self.view = view
        self.view_radius = view_radius
        self.width = 2 * size + 1
        #: The maze, one string per row of squares (``#``, ``_`` and ``G``).
        self.grid: list[str] = []
        self.position: Square = (1, 1)
        self.goal: Square = (1, 1)
        # What the agent is shown: every square (full view) or the squares seen so far,
        # as rows of spaced characters joined into ``_map`` (without ``P``).
        self._known: list[list[str]] = []
        self._rows: list[str] = []
        self._map = ""

    @property
    def action_syntax(self) -> str:
        unseen = ", ? not seen yet" if self.view == "partial" else ""
        return f"{ACTION_LINE}\nMap legend: # wall, _ open, P you, G goal{unseen}. Up is towards the top row."

    def _generate(self, task_id: int) -> str:
        rng = self.task_rng(task_id, self.size)

        def mazes() -> Iterator[tuple[str, tuple[list[list[int]], list[str]]]]:
            while True:
                neighbours = _carve(rng, self.size)
                walls = _draw(neighbours, self.size)
                yield "\n".join(walls), (neighbours, walls)

        neighbours, walls = self.splits.first_in_split(task_id, mazes())
        start = rng.randrange(self.size * self.size)
        self.position = _square(start, self.size)
        self.goal = _square(_farthest(neighbours, start), self.size)
        goal_row, goal_col = self.goal
        line = walls[goal_row]
        walls[goal_row] = line[:goal_col] + GOAL + line[goal_col + 1 :]
        self.grid = walls
        self.__dict__.pop("_policy", None)
        if self.view == "full":
            self._map = "\n".join(" ".join(line) for line in self.grid)
        else:
            self._known = [[UNSEEN] * self.width for _ in range(self.width)]
            self._rows = [" ".join(line) for line in self._known]
            self._reveal()
        instruction = (
            f"You are in a maze of {self.size}x{self.size} rooms drawn as a grid of "
            f"{self.width}x{self.width} squares; walls block the way. Walk to the goal G, "
            "one square per move."
        )
        if self.view == "partial":
            instruction += (
                f" You see only the squares within {self.view_radius} squares of you; squares "
                "you have seen stay on the map. The goal is somewhere in the maze: explore to find it."
            )
        return instruction

    def _describe(self) -> str:
        row, col = self.position
        # Rows are 2 * width characters apart (spaced squares plus a newline).
        offset = 2 * (row * self.width + col)
        return self._map[:offset] + AGENT + self._map[offset + 1 :]

    def _execute(self, command: str) -> str:
        action = ALIASES.get(command.lower())
        if action is None:
            raise InvalidAction("expected one of up, down, left, right (or their first letters u, d, l, r).")
        d_row, d_col = MOVES[action]
        row, col = self.position[0] + d_row, self.position[1] + d_col
        if self.grid[row][col] == WALL:
            return f"A wall blocks the way {action}."
        self.position = (row, col)
        if self.view == "partial":
            self._reveal()
        if self.position == self.goal:
            self.terminated = self.success = True
            self.score = 1.0
            return f"You moved {action} and reached the goal!"
        return f"You moved {action}."

    def available_actions(self) -> list[str]:
        return list(ACTIONS)

    def oracle_action(self) -> str:
        # Only the goal has no entry; the episode is over there, so any move will do.
        return self._policy.get(self.position, ACTIONS[0])

    @cached_property
    def _policy(self) -> dict[Square, str]:
        """For every open square, the first move of its shortest path to the goal (BFS)."""
        policy: dict[Square, str] = {}
        frontier = deque([self.goal])
        seen = {self.goal}
        while frontier:
            row, col = frontier.popleft()
            for action, (d_row, d_col) in MOVES.items():
                # A predecessor moves *towards* this square: it sits one step opposite to ``action``.
                previous = (row - d_row, col - d_col)
                if previous in seen or self.grid[previous[0]][previous[1]] == WALL:
                    continue
                seen.add(previous)
                policy[previous] = action
                frontier.append(previous)
        return policy

    def _reveal(self) -> None:
        """Copy the squares within the view radius into the shown map (partial view)."""
        row, col = self.position
        radius = self.view_radius
        first_col, end_col = max(col - radius, 0), min(col + radius + 1, self.width)
        for r in range(max(row - radius, 0), min(row + radius + 1, self.width)):
            known = self._known[r]
            known[first_col:end_col] = self.grid[r][first_col:end_col]
            self._rows[r] = " ".join(known)
        self._map = "\n".join(self._rows)


def _carve(rng: random.Random, size: int) -> list[list[int]]:
    """A perfect maze by randomized Kruskal: for each cell, the cells it opens onto.

    Cell ``i`` is at row ``i // size`` and column ``i % size``.
    """
    cells = size * size
    edges = [(i, i + 1) for i in range(cells) if i % size < size - 1]
    edges += [(i, i + size) for i in range(cells - size)]
    rng.shuffle(edges)
    parent = list(range(cells))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    neighbours: list[list[int]] = [[] for _ in range(cells)]
    for a, b in edges:
        root_a, root_b = root(a), root(b)
        if root_a != root_b:
            parent[root_a] = root_b
            neighbours[a].append(b)
            neighbours[b].append(a)
    return neighbours


def _draw(neighbours: list[list[int]], size: int) -> list[str]:
    """The grid of squares of a carved maze: cells and their passages open, the rest wall."""
    width = 2 * size + 1
    squares = [[WALL] * width for _ in range(width)]
    for a, links in enumerate(neighbours):
        row, col = _square(a, size)
        squares[row][col] = OPEN
        for b in links:
            other_row, other_col = _square(b, size)
            squares[(row + other_row) // 2][(col + other_col) // 2] = OPEN
    return ["".join(line) for line in squares]


def _farthest(neighbours: list[list[int]], start: int) -> int:
    """The cell farthest from ``start`` along the maze (the last one BFS reaches)."""
    frontier = deque([start])
    seen = {start}
    cell = start
    while frontier:
        cell = frontier.popleft()
        for other in neighbours[cell]:
            if other not in seen:
                seen.add(other)
                frontier.append(other)
    return cell


def _square(cell: int, size: int) -> Square:
    """The grid square (row, column) of cell number ``cell``."""
    row, col = divmod(cell, size)
    return 2 * row + 1, 2 * col + 1
