"""Household-v0: ALFWorld-style household tasks on an engine of ours, offline and fast.

Not the ALFWorld benchmark (that is ``ALFWorld-v0``, on ALFWorld's own game files): the
rooms, objects and tasks are generated here, in ALFWorld's style and with its commands.

Task: one room (kitchen, bedroom, bathroom or living room) with numbered receptacles
(``countertop 1``, ``cabinet 3``; cabinets, drawers, fridges, microwaves and safes open and
close) and numbered objects inside them. The instruction is one of ALFWorld's six task
types: put an object in a receptacle type (``pick_and_place_simple``); the same with the
object cleaned in a sink basin, heated in a microwave or cooled in a fridge first
(``pick_clean/heat/cool_then_place_in_recep``); put two objects of a type in one receptacle
(``pick_two_obj_and_place``); or hold an object at a lamp that is switched on
(``look_at_obj_in_light``, "examine the X under the desklamp"). Goals are about types:
any apple and any cabinet will do, as in ALFWorld.

Observation: the feedback of the last command (ALFWorld's wording: "You arrive at fridge 1.
The fridge 1 is closed."), then the room overview (the receptacles there are). The first
observation holds the instruction and the action syntax instead of feedback.

Action: one command, case-insensitive: ``go to X``, ``open X``, ``close X``,
``take X from Y``, ``move X to Y`` (ALFWorld 0.4's wording; ``put X in Y``, ``put X on Y``
and ``put X in/on Y`` are accepted too), ``clean X with Y``, ``heat X with Y``,
``cool X with Y``, ``use X`` (switch a lamp), ``examine X``, ``look``, ``inventory``.
``info["available_actions"]`` lists the commands whose preconditions hold. A command whose
preconditions fail (a closed receptacle, full hands, the wrong appliance, being elsewhere)
is an invalid action whose feedback says why; nothing changes.

Reward: the change of the score, the task's progress in [0, 1] (see
:func:`~agentgym.environments.household.tasks.progress`: the held target, its change, its
placing; 1 exactly at the goal). Undoing progress lowers the score, so the return is the
final score. Termination: the goal holds (success).

Tasks: task ``N`` draws, from a generator seeded with ``N``, a goal (task type, room,
object type, receptacle or lamp type) and a layout. Goals are assigned to splits by a hash
of (task type, room, object, receptacle, lamp), so no dev or test goal is ever a train goal
(the layouts differ too). Oracle: a planner that knows the whole room (like ALFWorld's PDDL
expert): from any state it puts away what is useless, fetches a target, opens what is
closed, changes it and places it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv
from agentgym.environments.household import SPLITS
from agentgym.environments.household.engine import World
from agentgym.environments.household.tasks import TASK_TYPES, Goal, build_world, draw_goal, plan_step, progress


class HouseholdEnv(TextEnv):
    """ALFWorld-style household tasks (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {**TextEnv.metadata, "inline_safe": True}
    splits: ClassVar[TaskSplits] = SPLITS

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.goal: Goal | None = None
        self.world: World | None = None

    @property
    def action_syntax(self) -> str:
        return (
            "Act with one command per turn, e.g. 'Action: go to countertop 1'. Commands: go to [receptacle], "
            "open [receptacle], close [receptacle], take [object] from [receptacle], move [object] to [receptacle], "
            "clean [object] with [sinkbasin], heat [object] with [microwave], cool [object] with [fridge], "
            "use [lamp], examine [thing], look, inventory. You hold one object at a time."
        )

    def task(self, task_id: int) -> tuple[Goal, World]:
        """The goal and starting room of ``task_id`` (the same every time)."""
        rng = self.task_rng(task_id)
        task_type = rng.choice(TASK_TYPES)

        def candidates() -> Iterator[tuple[str, Goal] | None]:
            while True:
                goal = draw_goal(rng, task_type)
                yield None if goal is None else (goal.content_key, goal)

        goal = self.splits.first_in_split(task_id, candidates())
        return goal, build_world(goal, rng)

    def _generate(self, task_id: int) -> str:
        self.goal, self.world = self.task(task_id)
        return self.goal.instruction()

    def _describe(self) -> str:
        assert self.world is not None
        return self.world.overview()

    def _execute(self, command: str) -> str:
        assert self.world is not None and self.goal is not None
        command = " ".join(command.lower().split())
        if not command:
            raise InvalidAction("the reply holds no command; " + self.action_syntax)
        feedback = self.world.execute(command)
        self.score = progress(self.world, self.goal)
        if self.score == 1.0:
            self.success = self.terminated = True
            feedback += " Task complete!"
        return feedback

    def available_actions(self) -> list[str] | None:
        return None if self.world is None else self.world.admissible()

    def oracle_action(self) -> str:
        assert self.world is not None and self.goal is not None
        return plan_step(self.world, self.goal)
