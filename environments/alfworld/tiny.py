"""A tiny set of genuine ALFWorld games, written where the tests (or a user) ask.

The real ALFWorld games cannot be downloaded on an offline machine, so the loader is
tested on games made here in exactly their format: for each game a folder
``json_2.1.1/<split>/<task_type>-<Object>-<Mrecep>-<Recep>-<scene>/trial_T<...>/`` that holds

* ``traj_data.json`` with ``task_type`` and ``pddl_params`` (what the handcoded expert reads);
* ``game.tw-pddl``: JSON with the ALFRED PDDL domain and text grammar shipped in the
  ``alfworld`` package (the grammar's ``UNKNOWN GOAL`` filled in, as ``alfworld-generate``
  does), a PDDL problem in the ALFRED style (mangled ids such as
  ``Apple_bar__plus_01_dot_00_bar_...``, ``canContain`` facts from ALFRED's receptacle
  constants, the goal from ALFRED's goal library) and ``"solvable": true``.

Two small scenes (a kitchen and a bedroom) host the six task types. Usage::

    python -m agentgym.environments.alfworld.tiny /tmp/alfworld-tiny
    ALFWORLD_DATA=/tmp/alfworld-tiny python -c "import gymnasium as gym, agentgym; gym.make('ALFWorld-v0')"
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

#: Games per folder split written by :func:`write_tiny_games` (every task type in each split).
TINY_GAMES = {"train": 8, "valid_seen": 6, "valid_unseen": 6}
LAMPS = ("DeskLamp", "FloorLamp")


@dataclass(frozen=True)
class Scene:
    """A room: receptacles (type, openable) and the objects inside each."""

    number: int
    receptacles: tuple[tuple[str, bool], ...]
    contents: dict[int, tuple[str, ...]]  # receptacle index -> object types


KITCHEN = Scene(
    number=1,
    receptacles=(
        ("CounterTop", False),
        ("Cabinet", True),
        ("Drawer", True),
        ("Fridge", True),
        ("Microwave", True),
        ("SinkBasin", False),
        ("StoveBurner", False),
        ("DiningTable", False),
        ("GarbageCan", False),
        ("Shelf", False),
    ),
    contents={
        0: ("Apple", "Apple", "Bread", "Knife"),
        1: ("Plate",),
        2: ("Spoon", "Fork"),
        3: ("Tomato", "Lettuce"),
        7: ("Mug", "Potato"),
        8: ("Egg",),
        9: ("Cup",),
    },
)
BEDROOM = Scene(
    number=301,
    receptacles=(
        ("Desk", False),
        ("SideTable", False),
        ("Bed", False),
        ("Drawer", True),
        ("Shelf", False),
        ("GarbageCan", False),
    ),
    contents={
        0: ("DeskLamp", "Pen"),
        1: ("AlarmClock", "KeyChain"),
        2: ("Book", "Pillow"),
        3: ("CD", "CellPhone"),
        4: ("CreditCard", "Pencil"),
    },
)


@dataclass(frozen=True)
class TinyTask:
    """One ALFWorld task: its type, scene and targets (ALFRED class names)."""

    task_type: str
    scene: Scene
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""

    @property
    def folder(self) -> str:
        return f"{self.task_type}-{self.object_target}-None-{self.parent_target or 'None'}-{self.scene.number}"


TASKS = (
    TinyTask("pick_and_place_simple", KITCHEN, "Apple", "Microwave"),
    TinyTask("pick_clean_then_place_in_recep", KITCHEN, "Mug", "Shelf"),
    TinyTask("pick_heat_then_place_in_recep", KITCHEN, "Potato", "CounterTop"),
    TinyTask("pick_cool_then_place_in_recep", KITCHEN, "Tomato", "DiningTable"),
    TinyTask("look_at_obj_in_light", BEDROOM, "AlarmClock", toggle_target="DeskLamp"),
    TinyTask("pick_two_obj_and_place", KITCHEN, "Apple", "Fridge"),
    TinyTask("pick_and_place_simple", BEDROOM, "Book", "Desk"),
    TinyTask("pick_heat_then_place_in_recep", KITCHEN, "Egg", "GarbageCan"),
)


def mangle(name: str) -> str:
    """ALFRED's PDDL spelling of an id such as ``Apple|+01.00|+00.90|-01.00``."""
    for char, word in (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_")):
        name = name.replace(char, word)
    return name


def _object_id(kind: str, index: int, slot: int) -> str:
    """An ALFRED-style id; a basin is named after its sink or bathtub (``Sink|...|SinkBasin``)."""
    position = f"{index * 0.5 - 1:+06.2f}|{0.9 + slot * 0.05:+06.2f}|{slot * 0.25 - 1:+06.2f}"
    if kind.endswith("Basin"):
        return mangle(f"{kind.removesuffix('Basin')}|{position}|{kind}")
    return mangle(f"{kind}|{position}")


def pddl_problem(task: TinyTask, name: str) -> str:
    """The PDDL problem of ``task`` in the ALFRED domain (initial state and goal)."""
    from alfworld.gen import constants
    from alfworld.gen.goal_library import gdict

    scene = task.scene
    receptacles, objects, locations, init = [], [], [], []
    for index, (kind, openable) in enumerate(scene.receptacles):
        receptacle = _object_id(kind, index, 0)
        location = f"loc_bar_{index}_bar__minus_{index + 1}_bar_{index % 4}_bar_60"
        receptacles.append(receptacle)
        locations.append(location)
        init += [f"(receptacleType {receptacle} {kind}Type)", f"(receptacleAtLocation {receptacle} {location})"]
        if openable:
            init.append(f"(openable {receptacle})")
        for slot, object_kind in enumerate(scene.contents.get(index, ()), start=1):
            thing = _object_id(object_kind, index, slot)
            objects.append(thing)
            init += [
                f"(objectType {thing} {object_kind}Type)",
                f"(inReceptacle {thing} {receptacle})",
                f"(objectAtLocation {thing} {location})",
            ]
            init.append(f"({'toggleable' if object_kind in LAMPS else 'pickupable'} {thing})")
            for action, predicate in (("Cleanable", "cleanable"), ("Heatable", "heatable"), ("Coolable", "coolable")):
                if object_kind in constants.VAL_ACTION_OBJECTS[action]:
                    init.append(f"({predicate} {thing})")
    start = "loc_bar__minus_1_bar_0_bar_0_bar_30"
    locations.append(start)
    init.append(f"(atLocation agent1 {start})")
    object_kinds = {kind for kinds in scene.contents.values() for kind in kinds}
    receptacle_kinds = {kind for kind, _ in scene.receptacles}
    for receptacle_kind in sorted(receptacle_kinds):
        for object_kind in sorted(object_kinds & constants.VAL_RECEPTACLE_OBJECTS.get(receptacle_kind, set())):
            init.append(f"(canContain {receptacle_kind}Type {object_kind}Type)")
    declarations = (
        ["agent1 - agent"]
        + [f"{kind}Type - otype" for kind in sorted(object_kinds)]
        + [f"{kind}Type - rtype" for kind in sorted(receptacle_kinds)]
        + [f"{thing} - object" for thing in objects]
        + [f"{receptacle} - receptacle" for receptacle in receptacles]
        + [f"{location} - location" for location in locations]
    )
    goal = gdict[task.task_type]["pddl"].replace("#", "-")
    goal = goal.format(obj=task.object_target, recep=task.parent_target, toggle=task.toggle_target, mrecep="")
    indent = "\n        "
    objects_part = f"(:objects{indent}{indent.join(declarations)}\n)"
    init_part = f"(:init{indent}{indent.join(init)}\n)"
    return f"(define (problem {name})\n(:domain alfred)\n{objects_part}\n{init_part}\n{goal}"


def task_description(task: TinyTask) -> str:
    """The goal text, from the first template of ALFRED's goal library (lower-case names)."""
    from alfworld.gen.goal_library import gdict

    template = gdict[task.task_type]["templates"][0]
    return template.format(
        obj=task.object_target.lower(), recep=task.parent_target.lower(), toggle=task.toggle_target.lower(), mrecep=""
    )


def write_game(task: TinyTask, folder: Path, trial: str) -> Path:
    """Write ``traj_data.json`` and ``game.tw-pddl`` of ``task`` into ``folder``; return the game file."""
    from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

    folder.mkdir(parents=True, exist_ok=True)
    params = {
        "object_target": task.object_target,
        "parent_target": task.parent_target,
        "toggle_target": task.toggle_target,
        "mrecep_target": "",
        "object_sliced": False,
    }
    description = task_description(task)
    traj_data = {
        "task_id": trial,
        "task_type": task.task_type,
        "pddl_params": params,
        "scene": {"scene_num": task.scene.number},
        "turk_annotations": {"anns": [{"task_desc": description[0].upper() + description[1:] + "."}]},
    }
    (folder / "traj_data.json").write_text(json.dumps(traj_data, indent=2))
    grammar = Path(ALFRED_TWL2_PATH).read_text().replace("UNKNOWN GOAL", description)
    game = {
        "pddl_domain": Path(ALFRED_PDDL_PATH).read_text(),
        "grammar": grammar,
        "pddl_problem": pddl_problem(task, f"plan_{trial}"),
        "solvable": True,
    }
    game_file = folder / "game.tw-pddl"
    game_file.write_text(json.dumps(game))
    return game_file


def write_tiny_games(root: str | Path, counts: dict[str, int] | None = None) -> Path:
    """Write a tiny ALFWorld data folder under ``root`` and return ``root``.

    ``root/json_2.1.1/<split>/`` gets ``counts[split]`` games (default :data:`TINY_GAMES`),
    cycling through :data:`TASKS` with a different start per split.
    """
    root = Path(root)
    for offset, (split, count) in enumerate((counts or TINY_GAMES).items()):
        for number in range(count):
            task = TASKS[(number + 3 * offset) % len(TASKS)]
            trial = f"T2019{offset:02d}{number:02d}_000000_{number:06d}"
            write_game(task, root / "json_2.1.1" / split / task.folder / f"trial_{trial}", trial)
    return root


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m agentgym.environments.alfworld.tiny FOLDER")
    print(write_tiny_games(sys.argv[1]))
