"""Sokoban: level generation, rules, feedback, solver and oracle."""

from __future__ import annotations

import math
import random
from collections import deque

import gymnasium as gym
import pytest
from episodes import play_oracle

import agentgym
from agentgym.environments.sokoban import SPLITS
from agentgym.environments.sokoban.env import Room, SokobanEnv


def parse(rows: list[str]) -> tuple[Room, int, int]:
    """A level in the usual Sokoban notation: ``#`` wall, ``.`` target, ``$`` box,
    ``*`` box on a target, ``@`` player, ``+`` player on a target, space floor."""
    height, width = len(rows), len(rows[0])
    floor = targets = boxes = 0
    player = -1
    for row, line in enumerate(rows):
        for col, symbol in enumerate(line):
            cell = row * width + col
            floor |= (symbol != "#") << cell
            targets |= (symbol in ".*+") << cell
            boxes |= (symbol in "$*") << cell
            player = cell if symbol in "@+" else player
    return Room(height, width, floor, targets), player, boxes


def load(rows: list[str], **kwargs: object) -> gym.Env:
    """A made Sokoban env playing the hand-made level ``rows``."""
    env = gym.make("Sokoban-v0", **kwargs)
    env.reset(options={"task_id": 0})
    room, player, boxes = parse(rows)
    env.unwrapped.num_boxes = boxes.bit_count()
    env.unwrapped._start(room, player, boxes, {})
    return env


def fewest_pushes(room: Room, player: int, boxes: int) -> int | None:
    """Brute force: 0-1 BFS over every (player, boxes) state; walking costs 0, pushing 1."""
    distance = {(player, boxes): 0}
    queue = deque([(player, boxes)])
    while queue:
        state = queue.popleft()
        player, boxes = state
        if not boxes & ~room.targets:
            return distance[state]
        for step in room.steps.values():
            ahead = player + step
            if not room.floor >> ahead & 1:
                continue
            if boxes >> ahead & 1:
                beyond = ahead + step
                if not room.floor >> beyond & 1 or boxes >> beyond & 1:
                    continue
                child, cost = (ahead, boxes ^ (1 << ahead | 1 << beyond)), 1
            else:
                child, cost = (ahead, boxes), 0
            if distance[state] + cost < distance.get(child, math.inf):
                distance[child] = distance[state] + cost
                queue.appendleft(child) if cost == 0 else queue.append(child)
    return None


def grid(observation: str) -> str:
    """The grid at the end of an observation."""
    return observation.rsplit("\n\n", 1)[-1]


def mixed_task_ids(count: int) -> list[int]:
    """``count`` task ids spread over the three splits."""
    return [split_ids[i] for split_ids in (SPLITS.ids(s) for s in ("train", "dev", "test")) for i in range(count // 3)]


# ---- registration, observation ---------------------------------------------------------


def test_registered_ids() -> None:
    assert agentgym.env_info("Sokoban-v0").max_episode_steps == 100
    harder = gym.make("Sokoban-2Boxes-v0").unwrapped
    assert harder.dim_room == (8, 8) and harder.num_boxes == 2


def test_first_observation_has_instruction_legend_and_grid() -> None:
    env = gym.make("Sokoban-v0")
    observation, info = env.reset(options={"task_id": 3})
    assert info["instruction"] in observation and "Push the box onto the target" in observation
    assert "Map legend" in observation and "Action: up" in observation
    rows = grid(observation).split("\n")
    assert len(rows) == 6 and all(len(row.split(" ")) == 6 for row in rows)
    cells = grid(observation).split()
    assert cells.count("X") == 1 and cells.count("O") == 1 and cells.count("P") == 1
    assert info["available_actions"] == ["up", "down", "left", "right"]
    assert info["score"] == 0.0


@pytest.mark.parametrize("kwargs", [{"dim_room": (4, 6)}, {"num_boxes": 0}, {"dim_room": (6, 6), "num_boxes": 4}])
def test_bad_config_is_rejected(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        SokobanEnv(**kwargs)


# ---- generation ------------------------------------------------------------------------


def test_levels_are_deterministic_per_task_and_differ_across_tasks() -> None:
    first, second = gym.make("Sokoban-v0"), gym.make("Sokoban-v0")
    observations = []
    for task_id in mixed_task_ids(60):
        observation = first.reset(seed=1, options={"task_id": task_id})[0]
        assert observation == second.reset(seed=2, options={"task_id": task_id})[0]
        observations.append(observation)
    assert len(set(observations)) >= 55
    harder = gym.make("Sokoban-2Boxes-v0")
    assert harder.reset(options={"task_id": 0})[0] != first.reset(options={"task_id": 0})[0]


@pytest.mark.parametrize(("env_id", "count"), [("Sokoban-v0", 30), ("Sokoban-2Boxes-v0", 6)])
def test_levels_are_nontrivial_and_the_plan_has_the_fewest_pushes(env_id: str, count: int) -> None:
    env = gym.make(env_id).unwrapped
    for task_id in mixed_task_ids(count):
        env.reset(options={"task_id": task_id})
        room, player, boxes = env.room, env.player, env.boxes
        assert boxes.bit_count() == room.targets.bit_count() == env.num_boxes
        assert not boxes & room.targets, "a box starts on a target"
        pushes = room.solve(player, boxes, node_limit=100_000)
        assert pushes is not None and len(pushes) == fewest_pushes(room, player, boxes)
        assert len(pushes) >= 2 * env.num_boxes


def test_walls_and_targets_never_cross_splits() -> None:
    env = gym.make("Sokoban-v0").unwrapped
    rooms: dict[str, set[tuple[int, int]]] = {}
    for split in ("train", "dev", "test"):
        rooms[split] = set()
        for task_id in SPLITS.ids(split)[:150]:
            env.reset(options={"task_id": task_id})
            rooms[split].add((env.room.floor, env.room.targets))
    assert not rooms["train"] & rooms["dev"] and not rooms["train"] & rooms["test"] and not rooms["dev"] & rooms["test"]


def test_three_boxes_in_an_eight_by_eight_room() -> None:
    env = gym.make("Sokoban-v0", dim_room=(8, 8), num_boxes=3, max_episode_steps=300)
    for task_id in (0, 11_000, 11_001):
        result = play_oracle(env, task_id)
        assert result.success and result.score == 1.0


# ---- rules and feedback ----------------------------------------------------------------

BLOCKED = [
    "#######",
    "#@$$ .#",
    "#  . ##",
    "#######",
]


def test_wall_bump_and_blocked_pushes_change_nothing_and_are_valid() -> None:
    env = load(BLOCKED)
    base = env.unwrapped
    before = (base.player, base.boxes)
    observation, reward, terminated, _, info = env.step("up")
    assert "wall blocks you" in observation and (base.player, base.boxes) == before
    assert reward == 0.0 and not terminated and not info["invalid_action"]
    observation, reward, terminated, _, info = env.step("Action: right")
    assert "cannot move: another box is behind it" in observation and (base.player, base.boxes) == before
    assert reward == 0.0 and not terminated and not info["invalid_action"]
    env.step("down")
    env.step("r")
    before = (base.player, base.boxes)
    observation, reward, terminated, _, info = env.step("UP")
    assert "cannot move: a wall is behind it" in observation and (base.player, base.boxes) == before
    assert reward == 0.0 and not terminated and not info["invalid_action"]
    assert grid(observation) == "# # # # # # #\n# _ X X _ O #\n# _ P O _ # #\n# # # # # # #"


@pytest.mark.parametrize("reply", ["jump", "up up", "north", "", "Action: upward", "ü"])
def test_invalid_text_is_reported_and_changes_nothing(reply: str) -> None:
    env = load(BLOCKED)
    before = (env.unwrapped.player, env.unwrapped.boxes)
    observation, reward, terminated, truncated, info = env.step(reply)
    assert info["invalid_action"] and reward == 0.0 and not terminated and not truncated
    assert "Invalid action" in observation and "up, down, left, right" in observation
    assert (env.unwrapped.player, env.unwrapped.boxes) == before


@pytest.mark.parametrize("reply", ["down", "Down", "D", "d", "down.", "Action: DOWN", "I'll go down.\nAction: `down`"])
def test_action_spellings(reply: str) -> None:
    env = load(BLOCKED)
    observation, _, _, _, info = env.step(reply)
    assert not info["invalid_action"] and info["action"] and "You moved down." in observation


def test_score_is_the_fraction_of_boxes_on_targets() -> None:
    env = load(
        [
            "#######",
            "#     #",
            "#@$ . #",
            "# $  .#",
            "#     #",
            "#######",
        ]
    )
    moves = [
        "right",
        "right",
        "right",
        "up",
        "right",
        "down",
        "left",
        "left",
        "left",
        "left",
        "down",
        "right",
        "right",
        "down",
        "right",
        "up",
    ]
    rewards, feedback = [], []
    for move in moves:
        observation, reward, terminated, _, info = env.step(move)
        rewards.append(reward)
        feedback.append(observation.split("\n")[0])
    assert rewards[:3] == [0.0, 0.5, -0.5] and rewards[5] == 0.5 and rewards[-1] == 0.5
    assert sum(rewards) == 1.0 and sum(1 for reward in rewards if reward) == 4
    assert "onto a target" in feedback[1] and "off its target" in feedback[2]
    assert terminated and info["success"] and info["score"] == 1.0


def test_solving_ends_the_episode_with_success() -> None:
    env = load(
        [
            "#######",
            "#     #",
            "# @$ .#",
            "#     #",
            "#######",
        ]
    )
    _, reward, terminated, _, info = env.step("right")
    assert reward == 0.0 and not terminated
    observation, reward, terminated, _, info = env.step("right")
    assert reward == 1.0 and terminated and info["success"] and info["score"] == 1.0
    assert "solved" in observation and "√" in observation and "S" not in grid(observation)


# ---- deadlocks -------------------------------------------------------------------------

OPEN = [
    "#######",
    "#     #",
    "# @$ .#",
    "#     #",
    "#######",
]


def test_pushing_a_box_where_it_is_stuck_ends_the_episode() -> None:
    env = load(OPEN)
    env.step("down")
    env.step("right")
    observation, reward, terminated, _, info = env.step("up")  # the box goes along the top wall
    assert terminated and not info["success"] and reward == 0.0 and "stuck" in observation
    observation, *_ = env.step("down")
    assert "episode is over" in observation


def test_without_end_on_deadlock_the_episode_goes_on_and_the_oracle_still_answers() -> None:
    env = load(OPEN, end_on_deadlock=False)
    for move in ("down", "right", "up"):
        _, _, terminated, _, _ = env.step(move)
    assert not terminated
    for _ in range(5):
        assert env.unwrapped.oracle_action() in env.unwrapped.available_actions()
        _, _, terminated, _, info = env.step(env.unwrapped.oracle_action())
        assert not terminated and not info["success"]


def test_dead_cells_and_frozen_blocks() -> None:
    room, _, boxes = parse(
        [
            "#######",
            "#     #",
            "# $$  #",
            "# $$ .#",
            "#. .. #",
            "#######",
        ]
    )
    width = room.width
    assert room.dead >> (1 * width + 1) & 1 and room.dead >> (4 * width + 5) & 1  # corners
    assert room.dead >> (1 * width + 3) & 1  # along the top wall, which has no target
    assert not room.dead >> (2 * width + 2) & 1 and not room.dead >> (4 * width + 2) & 1  # inner; row with targets
    assert room.is_stuck(boxes, 2 * width + 2)  # four boxes in a 2x2 block, none on a target
    on_targets = Room(room.height, width, room.floor, boxes)
    assert not on_targets.is_stuck(boxes, 2 * width + 2)


# ---- solver ----------------------------------------------------------------------------


def test_solver_on_hand_made_levels() -> None:
    corridor, player, boxes = parse(["#######", "#@$  .#", "#######"])
    pushes = corridor.solve(player, boxes, node_limit=1_000)
    assert len(pushes) == 3 and list(corridor.plan(player, boxes, pushes).values()) == ["right"] * 3

    corner, player, boxes = parse(
        [
            "######",
            "#@   #",
            "# $  #",
            "#  . #",
            "######",
        ]
    )
    pushes = corner.solve(player, boxes, node_limit=1_000)
    assert len(pushes) == 2 and len(corner.plan(player, boxes, pushes)) == 5

    # Round the pillar: left, up, up, right, right (or the mirror image); 11 moves.
    pillar, player, boxes = parse(
        [
            "########",
            "#   .  #",
            "#  ##  #",
            "#  $   #",
            "#  @   #",
            "########",
        ]
    )
    pushes = pillar.solve(player, boxes, node_limit=1_000)
    assert len(pushes) == 5 == fewest_pushes(pillar, player, boxes)
    assert len(pillar.plan(player, boxes, pushes)) == 11

    one_push, player, boxes = parse(["#####", "#@$.#", "#####"])
    assert one_push.solve(player, boxes, node_limit=10) == [(7, 1)]  # box cell 7, pushed right (+1)

    stuck, player, boxes = parse(
        [
            "######",
            "#@ $ #",
            "#   .#",
            "# $ .#",
            "######",
        ]
    )
    assert stuck.solve(player, boxes, node_limit=100_000) is None  # the top box cannot leave the top wall
    assert fewest_pushes(stuck, player, boxes) is None


# ---- oracle ----------------------------------------------------------------------------


@pytest.mark.parametrize(("env_id", "count"), [("Sokoban-v0", 210), ("Sokoban-2Boxes-v0", 45)])
def test_oracle_solves_tasks_of_every_split(env_id: str, count: int) -> None:
    env = gym.make(env_id)
    for task_id in mixed_task_ids(count):
        result = play_oracle(env, task_id, seed=task_id)
        assert result.success and result.score == 1.0, f"task {task_id}"
        assert math.isclose(result.total_reward, 1.0)


@pytest.mark.parametrize(
    ("env_id", "end_on_deadlock"), [("Sokoban-v0", True), ("Sokoban-v0", False), ("Sokoban-2Boxes-v0", False)]
)
def test_oracle_replans_after_random_moves(env_id: str, end_on_deadlock: bool) -> None:
    env = gym.make(env_id, end_on_deadlock=end_on_deadlock)
    base = env.unwrapped
    solvable_count = 0
    for task_id in mixed_task_ids(30):
        rng = random.Random(task_id)
        env.reset(options={"task_id": task_id})
        terminated = truncated = False
        for _ in range(rng.randint(2, 10)):
            _, _, terminated, _, _ = env.step(rng.choice(["up", "down", "left", "right"]))
            if terminated:
                break
        if terminated and not base.success:
            continue
        solvable = fewest_pushes(base.room, base.player, base.boxes) is not None
        solvable_count += solvable
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(base.oracle_action())
        assert info["success"] == solvable, f"task {task_id}"
    assert solvable_count >= 15
