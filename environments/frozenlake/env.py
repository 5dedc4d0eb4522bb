"""FrozenLake in text, following Gymnasium's ``FrozenLakeEnv`` rules.

Observation: the lake as a grid, one letter per cell: ``P`` you, ``F`` frozen (safe),
``H`` hole, ``G`` goal, ``S`` start (when you have left it).

Action: ``left``, ``down``, ``right`` or ``up`` (or their first letter). Moving off the
edge leaves you where you are. With ``is_slippery=True`` you move in the intended
direction with probability 1/3 and to each perpendicular side with 1/3 each, drawn
from the env's seeded generator.

Termination: stepping on a hole (failure) or on the goal (success, score 1).

Tasks: map ``task_id`` is drawn from a generator seeded with the id and the config:
each cell is frozen with probability ``1 - hole_probability``, start at the top left,
goal at the bottom right, redrawn until a safe path exists. Maps are assigned to splits
by content, so no train map appears in dev or test.

Oracle: the shortest safe path, or, when slippery, the policy that maximises the
probability of reaching the goal (value iteration).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from functools import cached_property

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.frozenlake import SPLITS

ACTIONS = ("left", "down", "right", "up")
MOVES = {"left": (0, -1), "down": (1, 0), "right": (0, 1), "up": (-1, 0)}
ALIASES = {name: name for name in ACTIONS} | {name[0]: name for name in ACTIONS}
# Slipping turns the intended move to one of its perpendicular neighbours in ACTIONS.
SLIPS = {name: (ACTIONS[(i - 1) % 4], name, ACTIONS[(i + 1) % 4]) for i, name in enumerate(ACTIONS)}
ACTION_LINE = "Actions: left, down, right, up. Reply with one of them, e.g. 'Action: down'."


class FrozenLakeEnv(TextEnv):
    """FrozenLake with text observations; see the module docstring for the rules."""

    # Pure-Python and fast: runners may call it on their event loop.
    metadata = {**TextEnv.metadata, "inline_safe": True}
    splits = SPLITS

    def __init__(
        self,
        size: int = 4,
        hole_probability: float = 0.2,
        is_slippery: bool = False,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        if size < 2:
            raise ValueError("size must be at least 2")
        if not 0.0 <= hole_probability < 1.0:
            raise ValueError("hole_probability must be in [0, 1)")
        self.size = size
        self.hole_probability = hole_probability
        self.is_slippery = is_slippery
        self.grid: list[str] = []
        self.position = (0, 0)

    @property
    def action_syntax(self) -> str:
        return (
            f"{ACTION_LINE}\n"
            "Map legend: P you, F frozen ice (safe), H hole, G goal, S start. Row 1 is the top." + self.slip_note
        )

    @property
    def slip_note(self) -> str:
        """What the action syntax says of slipping ("" on a lake that is not slippery)."""
        if not self.is_slippery:
            return ""
        return " The ice is slippery: you may slide to the left or right of the direction you chose."

    def _generate(self, task_id: int) -> str:
        rng = self.task_rng(task_id, self.size, self.hole_probability)

        def lakes() -> Iterator[tuple[str, list[str]] | None]:
            while True:
                cells = [
                    ["H" if rng.random() < self.hole_probability else "F" for _ in range(self.size)]
                    for _ in range(self.size)
                ]
                cells[0][0], cells[-1][-1] = "S", "G"
                grid = ["".join(row) for row in cells]
                yield ("/".join(grid), grid) if _reachable(grid) else None

        self.grid = self.splits.first_in_split(task_id, lakes())
        self.position = (0, 0)
        self.__dict__.pop("_solution", None)
        return (
            f"You are on a frozen lake of {self.size}x{self.size} cells, at the start in the top-left "
            "corner. Reach the goal G in the bottom-right corner without stepping into a hole H."
        )

    def _describe(self) -> str:
        row, col = self.position
        lines = []
        for r, line in enumerate(self.grid):
            cells = ["P" if (r, c) == (row, col) else cell for c, cell in enumerate(line)]
            lines.append(" ".join(cells))
        return "\n".join(lines)

    def _execute(self, command: str) -> str:
        action = ALIASES.get(command.lower())
        if action is None:
            raise InvalidAction("expected one of left, down, right, up.")
        moved = action
        if self.is_slippery:
            moved = SLIPS[action][int(self.np_random.integers(3))]
        row, col = self.position
        target = _neighbour(self.position, moved, self.size)
        slipped = f" You slipped and moved {moved} instead." if moved != action else ""
        if target == (row, col):
            return f"You tried to move {moved} but the edge of the lake stops you.{slipped}"
        self.position = target
        cell = self.grid[target[0]][target[1]]
        if cell == "H":
            self.terminated = True
            return f"You moved {moved} and fell into a hole. The episode is over.{slipped}"
        if cell == "G":
            self.terminated = self.success = True
            self.score = 1.0
            return f"You moved {moved} and reached the goal!{slipped}"
        return f"You moved {moved}.{slipped}"

    def available_actions(self) -> list[str]:
        return list(ACTIONS)

    def oracle_action(self) -> str:
        # Only terminal cells (goal, holes) have no entry; any move will do there.
        return self._solution[0].get(self.position, ACTIONS[0])

    def success_probability(self) -> float:
        """The probability that the oracle reaches the goal from the start (no step limit)."""
        return self._solution[1][(0, 0)]

    @cached_property
    def _solution(self) -> tuple[dict[tuple[int, int], str], dict[tuple[int, int], float]]:
        if self.is_slippery:
            return _max_success_policy(self.grid)
        policy = _shortest_path_policy(self.grid)
        return policy, {cell: 1.0 for cell in policy}


def _neighbour(position: tuple[int, int], action: str, size: int) -> tuple[int, int]:
    d_row, d_col = MOVES[action]
    row, col = position[0] + d_row, position[1] + d_col
    return (row, col) if 0 <= row < size and 0 <= col < size else position


def _reachable(grid: list[str]) -> bool:
    return (0, 0) in _shortest_path_policy(grid)


def _shortest_path_policy(grid: list[str]) -> dict[tuple[int, int], str]:
    """For every safe cell that can reach the goal, the first move of a shortest path."""
    size = len(grid)
    goal = (size - 1, size - 1)
    policy: dict[tuple[int, int], str] = {}
    frontier = deque([goal])
    seen = {goal}
    while frontier:
        cell = frontier.popleft()
        for action in ACTIONS:
            # A predecessor moves *towards* ``cell``: it sits one step opposite to ``action``.
            d_row, d_col = MOVES[action]
            previous = (cell[0] - d_row, cell[1] - d_col)
            if previous in seen or not (0 <= previous[0] < size and 0 <= previous[1] < size):
                continue
            if grid[previous[0]][previous[1]] == "H":
                continue
            seen.add(previous)
            policy[previous] = action
            frontier.append(previous)
    return policy


def _max_success_policy(
    grid: list[str], sweeps: int = 1000, tolerance: float = 1e-10
) -> tuple[dict[tuple[int, int], str], dict[tuple[int, int], float]]:
    """Value iteration on the slippery lake.

    Returns the action maximising P(reach goal) for every safe cell, and that
    probability for every cell (1 at the goal, 0 in holes).
    """
    size = len(grid)
    cells = [(r, c) for r in range(size) for c in range(size) if grid[r][c] in "SF"]
    value = {(r, c): 1.0 if grid[r][c] == "G" else 0.0 for r in range(size) for c in range(size)}

    def action_value(cell: tuple[int, int], action: str) -> float:
        return sum(value[_neighbour(cell, slip, size)] for slip in SLIPS[action]) / 3

    for _ in range(sweeps):
        change = 0.0
        for cell in cells:
            best = max(action_value(cell, action) for action in ACTIONS)
            change = max(change, abs(best - value[cell]))
            value[cell] = best
        if change < tolerance:
            break
    policy = {cell: max(ACTIONS, key=lambda action: action_value(cell, action)) for cell in cells}
    return policy, value
