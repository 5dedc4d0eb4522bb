"""BabyAI-Text: minigrid's BabyAI levels played through text, in the style of BALROG.

Engine: the level is a real minigrid BabyAI environment (``BabyAI-GoTo-v0`` and friends,
minigrid 3.2); task ``task_id`` is that level reset with ``seed=task_id``. Rooms, doors,
objects, the mission ("go to the red ball", "open the yellow door and then pick up a key")
and its checking are minigrid's own.

Observation: the mission, then what the agent sees of its 7x7 view (it sees nothing behind
walls or closed doors), described relative to itself: every visible object with its position
("a red ball 1 step left and 2 steps forward"), the nearest visible wall straight ahead, to the
left and to the right, what is directly in front of it and what it carries. Each later
observation starts with what the last action did ("You picked up the red ball.").

Action: ``turn left``, ``turn right``, ``go forward``, ``pick up``, ``drop`` or ``toggle``
(case-insensitive; ``left``, ``right`` and ``forward`` are accepted too). ``pick up``,
``drop`` and ``toggle`` act on the square directly in front; ``toggle`` opens and closes doors
and unlocks a locked door when the agent carries the key of its colour. An action that
changes nothing (walking into a wall) is valid; anything else is invalid, changes nothing and
lists the actions.

Reward: the score is 1 once the mission is accomplished (success), 0 before and after a
failed mission (some levels fail an episode when, e.g., a sequence is done out of order).
minigrid's own reward, ``1 - 0.9 * steps / max_steps`` on success, is in
``info["babyai_reward"]``.

Termination: the mission is accomplished or failed. Truncation comes from the registered
step limit (per level, see ``__init__.py``).

Oracle: minigrid's ``BabyAIBot``, which plans from what it has seen. It follows the episode
step by step; after actions it did not suggest it replans from the current state (a fresh bot
when it missed steps), so it also finishes episodes that others started.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401  (registers the BabyAI levels with Gymnasium)
from minigrid.envs.babyai.core import roomgrid_level
from minigrid.utils.baby_ai_bot import BabyAIBot

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.babyai import SPLITS

VIEW = 7  # minigrid's agent view: VIEW x VIEW squares, the agent at the middle of the bottom row
AGENT_X, AGENT_Y = VIEW // 2, VIEW - 1
#: Our action words and minigrid's action numbers (``MiniGridEnv.Actions``).
ACTIONS = {"turn left": 0, "turn right": 1, "go forward": 2, "pick up": 3, "drop": 4, "toggle": 5}
ACTION_NAMES = {number: name for name, number in ACTIONS.items()}
ALIASES = ACTIONS | {"left": 0, "right": 1, "forward": 2, "move forward": 2, "pickup": 3}

_generating = threading.local()


def _level_print(*args: Any, **kwargs: Any) -> None:
    """minigrid's levels print each rejected sample of their generation ("Sampling rejected: ..."): silent
    while this thread generates a task (:func:`_quiet_generation`), ``print`` otherwise."""
    if not getattr(_generating, "active", False):
        builtins.print(*args, **kwargs)


# The module's own name ``print`` (its global, looked up before the builtin) is the thread-aware one above.
# contextlib.redirect_stdout would swap sys.stdout for the whole process: envs resetting on several threads
# restored each other's buffers, and the process's stdout stayed a buffer for good (its prints vanished).
roomgrid_level.print = _level_print  # type: ignore[attr-defined]


@contextmanager
def _quiet_generation() -> Iterator[None]:
    """Silence minigrid's rejection-sampling prints in this thread only."""
    _generating.active = True
    try:
        yield
    finally:
        _generating.active = False


class BabyAITextEnv(TextEnv):
    """A BabyAI level with text observations; see the module docstring for the rules."""

    # minigrid, the description and the bot are pure Python; a step or a bot move takes about a millisecond.
    metadata = {**TextEnv.metadata, "inline_safe": True}
    splits = SPLITS

    def __init__(self, level: str = "BabyAI-GoTo-v0", render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        if not level.startswith("BabyAI-") or level not in gym.registry:
            raise ValueError(f"unknown BabyAI level {level!r}; expected a minigrid id such as 'BabyAI-GoTo-v0'")
        self.level = level
        self.world = gym.make(level, disable_env_checker=True).unwrapped
        # The agent's view, computed once per world state: minigrid's step computes it for its observation,
        # then the description and the bot ask for it again (two thirds of a step's time went to it).
        self._view: tuple[Any, ...] | None = None
        self.world.gen_obs_grid = self._agent_view
        self.babyai_reward = 0.0
        self._bot: BabyAIBot | None = None
        self._bot_step = -1  # the world step at which the bot last planned
        self._last_action: int | None = None
        self._suggestion: int | None = None

    @property
    def action_syntax(self) -> str:
        return (
            "Actions: turn left, turn right, go forward, pick up, drop, toggle. 'go forward' moves one "
            "square ahead; 'pick up', 'drop' and 'toggle' act on the square directly in front of you "
            "(you carry at most one object; 'toggle' opens or closes a door, and unlocks a locked door "
            "when you carry a key of its colour). Reply with one action, e.g. 'Action: go forward'."
        )

    def _generate(self, task_id: int) -> str:
        with _quiet_generation():  # minigrid's rejection sampling prints "Sampling rejected: ..."
            self.world.reset(seed=task_id)
        self.babyai_reward = 0.0
        self._bot, self._bot_step, self._last_action, self._suggestion = None, -1, None, None
        return (
            "You are in a BabyAI grid world: rooms joined by doors, holding keys, balls and boxes. You see "
            "the 7x7 squares ahead of you, not through walls or closed doors. To go to an object, stand "
            "right in front of it, facing it; to put an object next to another, drop it on a square "
            f"beside that one. Your mission: {self.world.mission}."
        )

    def _agent_view(self, agent_view_size: int | None = None) -> tuple[Any, Any]:
        """minigrid's ``gen_obs_grid`` (the view grid and its visibility mask), kept while the world stands.

        The world changes in a step (its step count moves) and a reset (a new grid); the view is kept
        for one grid, step count, agent position, direction and carried object. :meth:`render`
        recomputes it always, for code that changes the world in place (tests).
        """
        world = self.world
        if agent_view_size not in (None, world.agent_view_size):
            return type(world).gen_obs_grid(world, agent_view_size)
        state = (world.step_count, tuple(world.agent_pos), world.agent_dir)
        kept = self._view
        if kept is not None and kept[0] is world.grid and kept[1] is world.carrying and kept[2] == state:
            return kept[3]
        view = type(world).gen_obs_grid(world)
        self._view = (world.grid, world.carrying, state, view)
        return view

    def render(self) -> str | None:
        self._view = None
        return super().render()

    def _describe(self) -> str:
        seen, walls = [], {}
        # The view as minigrid computes it for the agent: the agent at the bottom middle, facing up.
        grid, visible = self.world.gen_obs_grid()
        for x in range(VIEW):
            for y in range(VIEW):
                cell = grid.get(x, y)
                if (x, y) == (AGENT_X, AGENT_Y) or not visible[x, y] or cell is None or cell.type == "floor":
                    continue
                forward, right = AGENT_Y - y, x - AGENT_X
                if cell.type == "wall":  # only the nearest wall straight ahead, left and right
                    if right == 0:
                        walls["forward"] = min(forward, walls.get("forward", VIEW))
                    elif forward == 0:
                        side = "right" if right > 0 else "left"
                        walls[side] = min(abs(right), walls.get(side, VIEW))
                    continue
                seen.append((forward + abs(right), forward, right, _describe_cell(cell)))
        lines = [f"Mission: {self.world.mission}.", "You see:"]
        lines += [f"- {thing} {_position(forward, right)}" for _, forward, right, thing in sorted(seen)]
        lines += [f"- a wall {_steps(distance)} {direction}" for direction, distance in sorted(walls.items())]
        if len(lines) == 2:
            lines.append("- nothing but empty floor")
        front = self.world.grid.get(*self.world.front_pos)
        lines.append(f"Directly in front of you: {_describe_cell(front)}.")
        carrying = self.world.carrying
        lines.append(f"You are carrying {_describe_cell(carrying) if carrying else 'nothing'}.")
        return "\n".join(lines)

    def _execute(self, command: str) -> str:
        action = ALIASES.get(" ".join(command.lower().split()))
        if action is None:
            raise InvalidAction(f"expected one of {', '.join(ACTIONS)}.")
        world = self.world
        position, front, carrying = tuple(world.agent_pos), world.grid.get(*world.front_pos), world.carrying
        door_state = _door_state(front)
        _, reward, terminated, _, _ = world.step(action)
        self._last_action, self._suggestion = action, None
        feedback = _feedback(action, position, front, carrying, door_state, world)
        if terminated:
            self.terminated = True
            if reward > 0:
                self.success, self.score, self.babyai_reward = True, 1.0, float(reward)
                feedback += " Mission accomplished!"
            else:
                feedback += " The mission failed."
        return feedback

    def available_actions(self) -> list[str]:
        return list(ACTIONS)

    def oracle_action(self) -> str:
        if self._suggestion is None:
            self._suggestion = self._plan()
        return ACTION_NAMES[self._suggestion]

    def _plan(self) -> int:
        """The bot's next action, keeping it in step with the episode."""
        step = self.world.step_count
        in_step = self._bot is not None and self._bot_step == step - 1
        for fresh in (not in_step, True):
            try:
                if fresh:
                    self._bot = BabyAIBot(self.world)
                    action = self._bot.replan()
                else:
                    action = self._bot.replan(self._last_action)
            except Exception:  # the bot gives up on some states (e.g. a box it needed was opened)
                continue
            self._bot_step = step
            if action in ACTION_NAMES:
                return action
        self._bot = None  # nothing the bot can do ("done" or an error): turn and look again
        return ACTIONS["turn left"]

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info["babyai_reward"] = self.babyai_reward
        return info

    def close(self) -> None:
        self.world.close()


def _describe_cell(cell: Any) -> str:
    if cell is None:
        return "empty floor"
    if cell.type == "wall":
        return "a wall"
    if cell.type == "door":
        return f"a {_door_state(cell)} {cell.color} door"
    return f"a {cell.color} {cell.type}"


def _door_state(cell: Any) -> str | None:
    if cell is None or cell.type != "door":
        return None
    return "open" if cell.is_open else "locked" if cell.is_locked else "closed"


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def _position(forward: int, right: int) -> str:
    parts = []
    if right:
        parts.append(f"{_steps(abs(right))} {'right' if right > 0 else 'left'}")
    if forward:
        parts.append(f"{_steps(forward)} forward")
    return " and ".join(parts)


def _feedback(action: int, position: tuple, front: Any, carrying: Any, door_state: str | None, world: Any) -> str:
    """What an action did, from the state before it and the world after it."""
    name = ACTION_NAMES[action]
    if action in (0, 1):
        return f"You turned {name.split()[1]}."
    if action == 2:
        if tuple(world.agent_pos) != position:
            return "You went forward."
        return f"You cannot go forward: {_describe_cell(front)} is in the way."
    if action == 3:
        if world.carrying is not None and carrying is None:
            return f"You picked up {_describe_cell(world.carrying)}."
        if carrying is not None:
            return f"You cannot pick up anything: you already carry {_describe_cell(carrying)}."
        return f"There is nothing to pick up in front of you ({_describe_cell(front)})."
    if action == 4:
        if carrying is not None and world.carrying is None:
            return f"You dropped {_describe_cell(carrying)}."
        if carrying is None:
            return "You carry nothing to drop."
        return f"You cannot drop {_describe_cell(carrying)} here: {_describe_cell(front)} is in front of you."
    if door_state is not None:
        after = _door_state(front)
        if after == door_state:
            return f"The {front.color} door is locked; you need to carry a {front.color} key to unlock it."
        verb = {"open": "opened", "closed": "closed"}[after]
        return f"You {'unlocked and ' if door_state == 'locked' else ''}{verb} the {front.color} door."
    if front is not None and front.type == "box" and world.grid.get(*world.front_pos) is not front:
        return f"You opened the {front.color} box; it was empty and is gone."
    return f"Nothing happens: you cannot toggle {_describe_cell(front)}."
