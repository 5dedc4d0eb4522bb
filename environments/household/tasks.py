"""Household tasks: ALFWorld's six task types, generated rooms, progress and a planner oracle.

A :class:`Goal` names the task type and the object, receptacle and lamp types it is about
(ALFWorld's goals are about types: "put a clean mug in cabinet" holds for any mug and any
cabinet). :func:`generate` draws a goal and a room that hosts it; :func:`progress` measures
how far a state is from the goal; :func:`plan_step` is the oracle's next command.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from agentgym.environments.household.catalog import CHANGES, LAMPS, OBJECTS, RECEPTACLES, ROOMS
from agentgym.environments.household.engine import Receptacle, Thing, World, article

TASK_TYPES = (
    "pick_and_place_simple",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)
#: The change a task type asks for before placing ("clean", "heat", "cool"), if any.
TASK_CHANGE = {
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
}


@dataclass(frozen=True)
class Goal:
    task_type: str
    room: str
    target: str  # object type
    receptacle: str = ""  # receptacle type (placing tasks)
    lamp: str = ""  # lamp type (look_at_obj_in_light)

    @property
    def change(self) -> str | None:
        return TASK_CHANGE.get(self.task_type)

    @property
    def content_key(self) -> str:
        """What the task is about, apart from the layout: splits never share it."""
        return f"{self.task_type}|{self.room}|{self.target}|{self.receptacle}|{self.lamp}"

    def instruction(self) -> str:
        if self.task_type == "look_at_obj_in_light":
            return f"Your task is to: examine the {self.target} under the {self.lamp}."
        if self.task_type == "pick_two_obj_and_place":
            return f"Your task is to: put two {plural(self.target)} in {self.receptacle}."
        if self.change:
            adjective = CHANGES[self.change][1]
            return f"Your task is to: put a {adjective} {self.target} in {self.receptacle}."
        return f"Your task is to: put {article(self.target)} in {self.receptacle}."


def plural(noun: str) -> str:
    if noun.endswith("ife"):
        return noun[:-3] + "ives"
    if noun.endswith(("o", "x", "ch", "sh", "s")):
        return noun + "es"
    return noun + "s"


# ---- generation ----------------------------------------------------------------------


def room_receptacle_kinds(room: str) -> tuple[str, ...]:
    always, sometimes = ROOMS[room]
    return always + sometimes


def draw_goal(rng: random.Random, task_type: str) -> Goal | None:
    """A random goal of ``task_type``, or ``None`` when the draw does not fit the room."""
    room = rng.choice(sorted(ROOMS))
    kinds = set(room_receptacle_kinds(room))
    change = TASK_CHANGE.get(task_type)
    if change and CHANGES[change][0] not in ROOMS[room][0]:
        return None
    candidates = [kind for kind in OBJECTS.values() if kind.places & kinds]
    if change:
        candidates = [kind for kind in candidates if getattr(kind, f"{change}able")]
    target = rng.choice(sorted(kind.name for kind in candidates))
    if task_type == "look_at_obj_in_light":
        lamps = [lamp.name for lamp in LAMPS.values() if lamp.places & kinds]
        return Goal(task_type, room, target, lamp=rng.choice(lamps)) if lamps else None
    appliance = CHANGES[change][0] if change else None
    # The goal receptacle is never the target's appliance, nor a sink (cleaning happens there).
    places = sorted(OBJECTS[target].places & kinds - {appliance, "sinkbasin"})
    if not places:
        return None
    receptacle = rng.choice(places)
    # The targets start elsewhere, so the room must have another place for them.
    return (
        Goal(task_type, room, target, receptacle=receptacle) if OBJECTS[target].places & kinds - {receptacle} else None
    )


def build_world(goal: Goal, rng: random.Random) -> World:
    """A room for ``goal``: its receptacles, the target objects (none already placed), a lamp, clutter."""
    always, sometimes = ROOMS[goal.room]
    kinds = list(always) + [kind for kind in sometimes if rng.random() < 0.5]
    room_kinds = set(room_receptacle_kinds(goal.room))
    start = sorted(OBJECTS[goal.target].places & room_kinds - {goal.receptacle})
    needed = {goal.receptacle, rng.choice(start)} - {""}
    lamp_host = rng.choice(sorted(LAMPS[goal.lamp].places & room_kinds)) if goal.lamp else ""
    needed |= {lamp_host} - {""}
    kinds += [kind for kind in sorted(needed) if kind not in kinds]
    receptacles = []
    for kind in kinds:
        low, high = RECEPTACLES[kind].count
        receptacles += [Receptacle(f"{kind} {number}", kind) for number in range(1, rng.randint(low, high) + 1)]
    rng.shuffle(receptacles)

    def homes(object_kind: str, avoid: str = "") -> list[Receptacle]:
        return [r for r in receptacles if r.kind in OBJECTS[object_kind].places and r.kind != avoid]

    # Clutter: other object types that fit here; then the targets, kept out of goal receptacles.
    others = sorted(kind for kind in OBJECTS if kind != goal.target and homes(kind))
    placements = [(kind, 1) for kind in rng.sample(others, min(len(others), rng.randint(4, 8)))]
    low = 2 if goal.task_type == "pick_two_obj_and_place" else 1
    placements.append((goal.target, rng.randint(low, low + 1)))
    things: list[Thing] = []
    for kind, count in placements:
        for number in range(1, count + rng.choice((0, 0, 1)) + 1):
            place = rng.choice(homes(kind, avoid=goal.receptacle if kind == goal.target else ""))
            things.append(Thing(f"{kind} {number}", kind, place.name))
    if goal.lamp:
        lamp_home = rng.choice([r for r in receptacles if r.kind == lamp_host])
        things.append(Thing(f"{goal.lamp} 1", goal.lamp, lamp_home.name))
    rng.shuffle(things)
    by_name = {receptacle.name: receptacle for receptacle in receptacles}
    for thing in things:
        by_name[thing.place].contents.append(thing.name)  # type: ignore[index]
    receptacles.sort(key=lambda r: (r.kind, int(r.name.rsplit(" ", 1)[1])))
    return World(receptacles, things)


# ---- progress --------------------------------------------------------------------------


def _targets(world: World, goal: Goal) -> list[Thing]:
    return [thing for thing in world.things.values() if thing.kind == goal.target]


def _changed(thing: Thing, goal: Goal) -> bool:
    return goal.change is None or getattr(thing, CHANGES[goal.change][1])


def _in_goal(world: World, thing: Thing, goal: Goal) -> bool:
    return thing.place is not None and world.receptacles[thing.place].kind == goal.receptacle


def _lamp(world: World, goal: Goal) -> Thing:
    return next(thing for thing in world.things.values() if thing.kind == goal.lamp)


def progress(world: World, goal: Goal) -> float:
    """How far the state is toward the goal, in [0, 1]; 1 exactly when the goal holds.

    Placing: holding a target, then (if asked) changing it, then placing it, in equal parts
    (a changed target counts wherever it is). Two objects: each placed target counts 2 of 4
    parts and holding another 1. Looking: holding a target and the lamp on count 1 of 3
    each; 1 when both hold at the lamp.
    """
    targets = _targets(world, goal)
    if goal.task_type == "look_at_obj_in_light":
        lamp = _lamp(world, goal)
        holding = world.held is not None and world.things[world.held].kind == goal.target
        if holding and lamp.on and world.location == lamp.place:
            return 1.0
        return (holding + lamp.on) / 3
    if goal.task_type == "pick_two_obj_and_place":
        placed: dict[str, int] = {}
        for thing in targets:
            if _in_goal(world, thing, goal):
                placed[thing.place] = placed.get(thing.place, 0) + 1  # type: ignore[index]
        best = max(placed.values(), default=0)
        holding = world.held is not None and world.things[world.held].kind == goal.target
        return min(4, 2 * best + (holding and best < 2)) / 4
    best = 0
    for thing in targets:
        if _changed(thing, goal) and _in_goal(world, thing, goal):
            return 1.0
        changed = goal.change is not None and _changed(thing, goal)
        best = max(best, 2 if changed else int(world.held == thing.name))
    return best / (3 if goal.change else 2)


# ---- the oracle ---------------------------------------------------------------------


def _reach(world: World, receptacle: Receptacle, then: str) -> str:
    """Walk to ``receptacle``, open it if needed, then do ``then``."""
    if world.location != receptacle.name:
        return f"go to {receptacle.name}"
    if not receptacle.reachable:
        return f"open {receptacle.name}"
    return then


def _fetch(world: World, candidates: list[Thing]) -> str:
    """Take the first candidate (they are in preference order)."""
    thing = candidates[0]
    receptacle = world.receptacles[thing.place]  # type: ignore[index]
    return _reach(world, receptacle, f"take {thing.name} from {receptacle.name}")


def _put(world: World, thing: Thing, receptacle: Receptacle) -> str:
    return _reach(world, receptacle, f"move {thing.name} to {receptacle.name}")


def _first_of_kind(world: World, kind: str) -> Receptacle:
    """The receptacle of ``kind`` that you stand at, else the first by name."""
    options = [r for r in world.receptacles.values() if r.kind == kind]
    return next((r for r in options if r.name == world.location), options[0])


def plan_step(world: World, goal: Goal) -> str:
    """The next command of a plan that reaches ``goal`` from any state of ``world``.

    The planner knows where everything is. Holding something useless, it puts it back
    where such things go; otherwise it fetches a target (preferring one already changed),
    changes it at the appliance if the task asks, and brings it to a goal receptacle (for
    two objects, the one already holding a target) or, for looking, to the lamp.
    """
    if progress(world, goal) == 1.0:
        return "look"
    held = world.things[world.held] if world.held else None
    if held is not None and held.kind != goal.target:
        here = world.receptacles.get(world.location or "")
        if here is not None and here.reachable and held.accepts(here):
            return f"move {held.name} to {here.name}"
        home = next(r for r in world.receptacles.values() if held.accepts(r))
        return _put(world, held, home)
    targets = _targets(world, goal)
    if goal.task_type == "look_at_obj_in_light":
        lamp = _lamp(world, goal)
        if held is None:
            return _fetch(world, targets)
        if world.location != lamp.place:
            return f"go to {lamp.place}"
        return f"use {lamp.name}"
    if goal.task_type == "pick_two_obj_and_place":
        goal_receptacles = [r for r in world.receptacles.values() if r.kind == goal.receptacle]
        destination = max(goal_receptacles, key=lambda r: sum(world.things[n].kind == goal.target for n in r.contents))
        if held is not None:
            return _put(world, held, destination)
        return _fetch(world, [t for t in targets if t.place != destination.name])
    if held is None:
        loose = [t for t in targets if not (_changed(t, goal) and _in_goal(world, t, goal))]
        return _fetch(world, sorted(loose, key=lambda t: not _changed(t, goal)))
    if not _changed(held, goal):
        appliance = _first_of_kind(world, CHANGES[goal.change][0])  # type: ignore[index]
        if world.location != appliance.name:
            return f"go to {appliance.name}"
        return f"{goal.change} {held.name} with {appliance.name}"
    return _put(world, held, _first_of_kind(world, goal.receptacle))
