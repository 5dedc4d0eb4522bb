"""Sokoban in text, in the style of RAGEN's Sokoban environment for LLM agents.

Observation: the room as a grid, one symbol per cell separated by spaces, row 1 at the
top: ``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ``√`` box on a target, ``P`` you,
``S`` you standing on a target. The first observation also holds the instruction, the
action syntax and this legend; every later one starts with feedback on the last action
("You pushed the box up.", "You tried to move left, but a wall blocks you.", "You tried
to push the box down, but the box cannot move: a wall is behind it.").

Action: ``up``, ``down``, ``left`` or ``right`` (case-insensitive; ``u``, ``d``, ``l``,
``r`` too; a trailing period is ignored). You move one cell; walking into a box pushes it
one cell further if the cell behind it is free floor or a free target. Walking into a
wall, or into a box with a wall or another box behind it, is a valid action that leaves
the state unchanged. Anything else is an invalid action.

Reward: the score is the fraction of boxes on targets (in [0, 1]); each step's reward
is the change of the score, so pushing a box onto a target earns ``1 / num_boxes`` and
pushing it off again costs as much.

Termination: success when every box is on a target (score 1). With
``end_on_deadlock=True`` (the default) the episode also ends, unsuccessfully, as soon as
a push leaves a box that can provably never reach a target: a box on a non-target
square from which no target can be reached even with the room otherwise empty (a corner,
or along a wall with no target on it), or a box that is not on a target and is frozen in
a 2x2 block of walls and boxes. Truncation comes from the registered step limit.

Tasks: level ``task_id`` is drawn from a generator seeded with the id and the config,
after gym-sokoban (the generator RAGEN uses). A random walk of
``int(1.7 * (height + width))`` steps carves the room out of solid wall, stamping a small
random floor pattern at each step, and ``num_boxes`` targets go on random floor cells.
Then the game is played in reverse from the solved room (every box on a target): a
breadth-first search over moves that pull a box behind the player finds the states that
need the most pushes (gym-sokoban keeps the state whose boxes are farthest from their
targets instead). One of them with no box on a target is drawn, and the player is put on
a random cell of the area it can reach. A level is kept only if it needs at least
``2 * num_boxes`` pushes and the forward solver below solves it within its node limit;
otherwise the same generator draws a new room. Walls and targets decide the split of a
level (``TaskSplits.bucket``), so no train level shares its room and targets with a dev
or test level.

Oracle: a breadth-first search over pushes, whose states are the box positions plus the
area the player can reach, finds a plan with the fewest pushes (the walks between pushes
are shortest paths). The plan is cached; when the state leaves it (after other moves)
the oracle searches again from the current state, and if no solution exists any more it
plays ``up``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from random import Random

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.sokoban import SPLITS

ACTIONS = ("up", "down", "left", "right")
ALIASES = {name: name for name in ACTIONS} | {name[0]: name for name in ACTIONS}
WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "√", "P", "S"
ACTION_LINE = "Actions: up, down, left, right (or u, d, l, r). Reply with one of them, e.g. 'Action: up'."

#: Floor patterns stamped around the walker while carving a room: gym-sokoban's 3x3
#: masks, as (row, column) offsets of their floor cells from the centre.
MASKS = (
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, 0)),
    ((0, -1), (0, 0), (1, -1), (1, 0)),
    ((0, 0), (0, 1), (1, 0)),
)
CHANGE_DIRECTION_PROBABILITY = 0.35
#: States the reverse play may visit while looking for the hardest start.
REVERSE_NODE_LIMIT = 5_000
#: Search states the generator's solver may visit before a level is redrawn.
GENERATION_NODE_LIMIT = 20_000
#: Search states the oracle may visit when it re-plans from a state off its plan.
ORACLE_NODE_LIMIT = 200_000
MAX_DRAWS = 10_000

State = tuple[int, int]  # (player cell, bit mask of box cells)
Push = tuple[int, int]  # (box cell, step), the step being one of Room.steps' values
Node = tuple[int, int]  # a search state: (box mask, lowest bit of the mask of cells the player can reach)


def _bits(mask: int) -> Iterator[int]:
    """The indices of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Room:
    """The static part of a level: walls and targets, and what follows from them.

    Cells are numbered row by row (``row * width + column``); sets of cells are bit
    masks. The border of the grid must be wall.
    """

    def __init__(self, height: int, width: int, floor: int, targets: int) -> None:
        self.height, self.width = height, width
        self.floor, self.targets = floor, targets
        self.walls = ((1 << (height * width)) - 1) & ~floor
        self.steps = {"up": -width, "down": width, "left": -1, "right": 1}
        self.dead = floor & ~self._live_cells()
        # The 2x2 blocks around each cell, for the frozen-boxes deadlock test.
        corners = (0, 1, width, width + 1)
        self.blocks = {
            cell: tuple(0b11 << (cell - corner) | 0b11 << (cell - corner + width) for corner in corners)
            for cell in _bits(floor)
        }

    def _live_cells(self) -> int:
        """Cells from which a lone box can be pushed onto some target."""
        live = self.targets
        frontier = list(_bits(self.targets))
        while frontier:
            cell = frontier.pop()
            for step in self.steps.values():
                # The box came from ``cell - step``, pushed by a player at ``cell - 2 * step``.
                before, behind = cell - step, cell - 2 * step
                if not live >> before & 1 and self.floor >> before & 1 and behind >= 0 and self.floor >> behind & 1:
                    live |= 1 << before
                    frontier.append(before)
        return live

    def reach(self, player: int, boxes: int) -> int:
        """The cells the player can walk to without pushing a box."""
        free, width = self.floor & ~boxes, self.width
        reach = 1 << player
        while True:
            grown = (reach | reach << 1 | reach >> 1 | reach << width | reach >> width) & free
            if grown == reach:
                return reach
            reach = grown

    def is_stuck(self, boxes: int, cell: int) -> bool:
        """Whether the box on ``cell`` makes the level unsolvable (dead cell or frozen block)."""
        if self.dead >> cell & 1:
            return True
        blocked, loose = self.walls | boxes, boxes & ~self.targets
        return any(block & blocked == block and block & loose for block in self.blocks[cell])

    def hardest_starts(self, node_limit: int) -> tuple[int, list[tuple[int, int]]]:
        """Reverse play: the starts that need the most pushes, and how many they need.

        Breadth-first over pulls from the solved room (boxes on the targets, the player in
        any area), so a state's depth is the fewest pushes that solve it. Returns the
        deepest layer's states (boxes, reachable area) with no box on a target. The search
        stops after the layer in which it has seen more than ``node_limit`` states.
        """
        boxes, layer, seen = self.targets, [], set()
        unvisited = self.floor & ~self.targets
        while unvisited:  # one solved state per area the player can stand in
            reach = self.reach((unvisited & -unvisited).bit_length() - 1, boxes)
            unvisited &= ~reach
            seen.add((boxes, reach & -reach))
            layer.append((boxes, reach))
        depth, best = 0, (0, [])
        while layer and len(seen) <= node_limit:
            depth, next_layer = depth + 1, []
            for boxes, reach in layer:
                open_cells = self.floor & ~boxes
                for box in _bits(boxes):
                    for step in self.steps.values():
                        # The player stands at ``box + step`` and steps back, pulling the box.
                        if not (reach >> (box + step) & 1 and open_cells >> (box + 2 * step) & 1):
                            continue
                        moved = boxes ^ (1 << box | 1 << (box + step))
                        next_reach = self.reach(box + 2 * step, moved)
                        child = (moved, next_reach & -next_reach)
                        if child not in seen:
                            seen.add(child)
                            next_layer.append((moved, next_reach))
            starts = [state for state in next_layer if not state[0] & self.targets]
            if starts:
                best = (depth, starts)
            layer = next_layer
        return best

    def solve(self, player: int, boxes: int, node_limit: int) -> list[Push] | None:
        """A plan with the fewest pushes that puts every box on a target, or ``None``.

        Breadth-first over (boxes, reachable area) states, skipping pushes that leave a
        box stuck; ``None`` also when more than ``node_limit`` states were visited.
        """
        reach = self.reach(player, boxes)
        start = (boxes, reach & -reach)
        parents: dict[Node, tuple[Node, Push] | None] = {start: None}
        frontier = deque([(start, reach)])
        while frontier:
            node, reach = frontier.popleft()
            boxes = node[0]
            if not boxes & ~self.targets:
                return self._pushes_to(node, parents)
            open_cells = self.floor & ~boxes
            for box in _bits(boxes):
                for step in self.steps.values():
                    if not (reach >> (box - step) & 1 and open_cells >> (box + step) & 1):
                        continue
                    moved = boxes ^ (1 << box | 1 << (box + step))
                    if self.is_stuck(moved, box + step):
                        continue
                    next_reach = self.reach(box, moved)
                    child = (moved, next_reach & -next_reach)
                    if child in parents:
                        continue
                    parents[child] = (node, (box, step))
                    if len(parents) > node_limit:
                        return None
                    frontier.append((child, next_reach))
        return None

    @staticmethod
    def _pushes_to(node: Node, parents: dict[Node, tuple[Node, Push] | None]) -> list[Push]:
        pushes = []
        while parents[node] is not None:
            node, push = parents[node]
            pushes.append(push)
        return pushes[::-1]

    def walk(self, start: int, goal: int, boxes: int) -> list[str]:
        """The moves of a shortest walk from ``start`` to ``goal`` around the boxes."""
        free = self.floor & ~boxes
        came_from: dict[int, tuple[int, str] | None] = {start: None}
        frontier = deque([start])
        while goal not in came_from:
            cell = frontier.popleft()
            for name, step in self.steps.items():
                nxt = cell + step
                if nxt not in came_from and free >> nxt & 1:
                    came_from[nxt] = (cell, name)
                    frontier.append(nxt)
        moves = []
        cell = goal
        while came_from[cell] is not None:
            cell, name = came_from[cell]
            moves.append(name)
        return moves[::-1]

    def plan(self, player: int, boxes: int, pushes: list[Push]) -> dict[State, str]:
        """The move to play in each state along the walks and ``pushes`` from the start."""
        names = {step: name for name, step in self.steps.items()}
        policy: dict[State, str] = {}
        for box, step in pushes:
            for name in self.walk(player, box - step, boxes):
                policy[(player, boxes)] = name
                player += self.steps[name]
            policy[(player, boxes)] = names[step]
            player, boxes = box, boxes ^ (1 << box | 1 << (box + step))
        return policy


class SokobanEnv(TextEnv):
    """Sokoban with text observations; see the module docstring for the rules."""

    # Pure-Python and fast: runners may call it on their event loop.
    metadata = {**TextEnv.metadata, "inline_safe": True}
    splits = SPLITS

    def __init__(
        self,
        dim_room: tuple[int, int] = (6, 6),
        num_boxes: int = 1,
        end_on_deadlock: bool = True,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        height, width = (int(size) for size in dim_room)
        if min(height, width) < 5:
            raise ValueError("dim_room must be at least (5, 5): the border is wall")
        most_boxes = (height - 2) * (width - 2) // 5  # one box per five inner cells
        if not 1 <= num_boxes <= most_boxes:
            raise ValueError(f"num_boxes must be between 1 and {most_boxes} for a {height}x{width} room")
        self.dim_room = (height, width)
        self.num_boxes = num_boxes
        self.end_on_deadlock = end_on_deadlock
        self.room = Room(height, width, 0, 0)
        self.player = 0
        self.boxes = 0
        self._policy: dict[State, str] = {}
        self._template: list[str] = []

    @property
    def action_syntax(self) -> str:
        return (
            f"{ACTION_LINE}\n"
            f"Map legend: {WALL} wall, {FLOOR} floor, {TARGET} target, {BOX} box, {BOX_ON_TARGET} box on a target, "
            f"{PLAYER} you, {PLAYER_ON_TARGET} you on a target. Row 1 is the top."
        )

    # ---- levels ------------------------------------------------------------------------

    def _generate(self, task_id: int) -> str:
        rng = self.task_rng(task_id, self.dim_room, self.num_boxes)
        split = self.splits.split_of(task_id)
        height, width = self.dim_room
        for _ in range(MAX_DRAWS):
            floor = _carve(rng, height, width)
            cells = list(_bits(floor))
            if len(cells) < 2 * self.num_boxes + 2:
                continue
            targets = sum(1 << cell for cell in rng.sample(cells, self.num_boxes))
            if self.splits.bucket(f"{height}x{width}:{floor:x}:{targets:x}") != split:
                continue
            room = Room(height, width, floor, targets)
            depth, starts = room.hardest_starts(REVERSE_NODE_LIMIT)
            if depth < 2 * self.num_boxes:
                continue
            boxes, reach = rng.choice(starts)
            player = rng.choice(list(_bits(reach)))
            pushes = room.solve(player, boxes, GENERATION_NODE_LIMIT)
            if pushes is not None:
                self._start(room, player, boxes, room.plan(player, boxes, pushes))
                goal = "the box onto the target"
                if self.num_boxes > 1:
                    goal = f"all {self.num_boxes} boxes onto the targets"
                return (
                    f"You are in a {height}x{width} warehouse room. Push {goal} ({TARGET} marks a target). "
                    "Walk into a box to push it one cell; you cannot pull boxes or push two at once."
                )
        raise RuntimeError(f"no solvable level found for task {task_id} after {MAX_DRAWS} draws")

    def _start(self, room: Room, player: int, boxes: int, policy: dict[State, str]) -> None:
        """Set up the level: the room, the player, the boxes and an oracle plan for them."""
        self.room, self.player, self.boxes, self._policy = room, player, boxes, policy
        # Cell i is token 2 * i; the odd tokens separate cells (space) and rows (newline).
        template = []
        for cell in range(room.height * room.width):
            if room.walls >> cell & 1:
                template.append(WALL)
            else:
                template.append(TARGET if room.targets >> cell & 1 else FLOOR)
            template.append("\n" if cell % room.width == room.width - 1 else " ")
        self._template = template[:-1]

    # ---- the game ----------------------------------------------------------------------

    def _describe(self) -> str:
        tokens = self._template.copy()
        targets = self.room.targets
        for box in _bits(self.boxes):
            tokens[2 * box] = BOX_ON_TARGET if targets >> box & 1 else BOX
        tokens[2 * self.player] = PLAYER_ON_TARGET if targets >> self.player & 1 else PLAYER
        return "".join(tokens)

    def _execute(self, command: str) -> str:
        action = ALIASES.get(command.lower())
        if action is None:
            raise InvalidAction("expected one of up, down, left, right (or u, d, l, r).")
        room, step = self.room, self.room.steps[action]
        target = self.player + step
        if room.walls >> target & 1:
            return f"You tried to move {action}, but a wall blocks you."
        if not self.boxes >> target & 1:
            self.player = target
            return f"You moved {action}."
        beyond = target + step
        if room.walls >> beyond & 1:
            return f"You tried to push the box {action}, but the box cannot move: a wall is behind it."
        if self.boxes >> beyond & 1:
            return f"You tried to push the box {action}, but the box cannot move: another box is behind it."
        self.player, self.boxes = target, self.boxes ^ (1 << target | 1 << beyond)
        placed = (self.boxes & room.targets).bit_count()
        self.score = placed / self.num_boxes
        if placed == self.num_boxes:
            self.success = self.terminated = True
            return f"You pushed the box {action}. Every box is on a target: you solved the puzzle!"
        if room.targets >> beyond & 1:
            feedback = f"You pushed the box {action} onto a target."
        elif room.targets >> target & 1:
            feedback = f"You pushed the box {action}, off its target."
        else:
            feedback = f"You pushed the box {action}."
        if self.end_on_deadlock and room.is_stuck(self.boxes, beyond):
            self.terminated = True
            return (
                f"{feedback} It is now stuck (in a corner, along a wall with no target, or blocked by "
                "other boxes) and can never reach a target, so the puzzle cannot be solved. The episode is over."
            )
        return feedback

    def available_actions(self) -> list[str]:
        return list(ACTIONS)

    def oracle_action(self) -> str:
        state = (self.player, self.boxes)
        if state not in self._policy:
            pushes = self.room.solve(self.player, self.boxes, ORACLE_NODE_LIMIT)
            if pushes is None:  # no solution: play "up" anywhere in this area without searching again
                self._policy = {(cell, self.boxes): ACTIONS[0] for cell in _bits(self.room.reach(*state))}
            else:
                self._policy = self.room.plan(self.player, self.boxes, pushes)
        return self._policy.get(state, ACTIONS[0])  # a solved room (no push left) has no plan: any move


def _carve(rng: Random, height: int, width: int) -> int:
    """A random room: floor cells (as a bit mask) carved by a random walk (gym-sokoban)."""
    directions = ((1, 0), (0, 1), (-1, 0), (0, -1))
    d_row, d_col = rng.choice(directions)
    row, col = rng.randint(1, height - 1), rng.randint(1, width - 1)
    floor = 0
    for _ in range(int(1.7 * (height + width))):
        if rng.random() < CHANGE_DIRECTION_PROBABILITY:
            d_row, d_col = rng.choice(directions)
        row = max(min(row + d_row, height - 2), 1)
        col = max(min(col + d_col, width - 2), 1)
        for d_r, d_c in rng.choice(MASKS):
            r, c = row + d_r, col + d_c
            if 0 < r < height - 1 and 0 < c < width - 1:
                floor |= 1 << (r * width + c)
    return floor
