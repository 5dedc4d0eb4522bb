"""Maze-v0 and Maze-Partial-v0: solvable perfect mazes, the partial view, moves, splits."""

from __future__ import annotations

import hashlib
import random
from collections import deque

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the ids)
from agentgym.environments.maze import SPLITS
from agentgym.environments.maze.env import ACTIONS, GOAL, MOVES, OPEN, UNSEEN, WALL, MazeEnv

IDS = ["Maze-v0", "Maze-Partial-v0"]


def shown_grid(observation: str, width: int) -> list[list[str]]:
    """The squares of the map at the end of an observation."""
    return [line.split(" ") for line in observation.splitlines()[-width:]]


def distances(grid: list[str], source: tuple[int, int]) -> dict[tuple[int, int], int]:
    """BFS distance from ``source`` to every open square it reaches."""
    dist = {source: 0}
    frontier = deque([source])
    while frontier:
        row, col = frontier.popleft()
        for d_row, d_col in MOVES.values():
            nxt = (row + d_row, col + d_col)
            if nxt not in dist and grid[nxt[0]][nxt[1]] != WALL:
                dist[nxt] = dist[(row, col)] + 1
                frontier.append(nxt)
    return dist


def walls_key(env: MazeEnv) -> str:
    return "\n".join(env.grid).replace(GOAL, OPEN)


@pytest.mark.parametrize("env_id", IDS)
def test_oracle_solves_tasks_within_the_step_limit(env_id: str) -> None:
    env = gym.make(env_id)
    task_ids = [*range(150), *SPLITS.ids("dev")[:50], *SPLITS.ids("test")[:50]]
    for task_id in task_ids:
        env.reset(options={"task_id": task_id})
        total, terminated, truncated = 0.0, False, False
        while not (terminated or truncated):
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            total += reward
        assert terminated and not truncated, task_id
        assert info["success"] and info["score"] == 1.0 and total == 1.0
        assert not info["invalid_action"]


def test_oracle_takes_shortest_path_after_arbitrary_moves() -> None:
    env = MazeEnv(view="partial")
    rng = random.Random(0)
    for task_id in range(40):
        env.reset(options={"task_id": task_id})
        for _ in range(rng.randrange(30)):
            env.step(rng.choice(ACTIONS))
        if env.terminated:
            continue
        remaining = distances(env.grid, env.goal)[env.position]
        for _ in range(remaining):
            env.step(env.oracle_action())
        assert env.success and env.position == env.goal


@pytest.mark.parametrize("size", [3, 4, 7, 12])
def test_mazes_are_perfect_with_start_and_goal_far_apart(size: int) -> None:
    env = MazeEnv(size=size)
    width = 2 * size + 1
    cells = {(r, c) for r in range(1, width, 2) for c in range(1, width, 2)}
    for task_id in range(0, SPLITS.total, 400):
        env.reset(options={"task_id": task_id})
        grid = env.grid
        assert len(grid) == width and all(len(line) == width for line in grid)
        open_squares = {(r, c) for r in range(width) for c in range(width) if grid[r][c] != WALL}
        assert cells <= open_squares
        # Border is wall; squares between two cell rows and two cell columns are wall too.
        assert all(r % 2 or c % 2 for r, c in open_squares)
        assert all(0 < r < width - 1 and 0 < c < width - 1 for r, c in open_squares)
        links = sum((r, c + 1) in open_squares for r, c in open_squares) + sum(
            (r + 1, c) in open_squares for r, c in open_squares
        )
        from_start = distances(grid, env.position)
        assert set(from_start) == open_squares  # connected
        assert links == len(open_squares) - 1  # a tree: no cycles
        assert env.position in cells and env.goal in cells and env.position != env.goal
        assert grid[env.goal[0]][env.goal[1]] == GOAL
        assert from_start[env.goal] == max(from_start[cell] for cell in cells)


@pytest.mark.parametrize("env_id", IDS)
def test_same_task_same_episode(env_id: str) -> None:
    first, second = gym.make(env_id), gym.make(env_id)
    actions = ["up", "left", "down", "right", "jump", "u", "r", "d", "l"] * 3
    for task_id in (0, 1, 10_500, 11_999):
        assert first.reset(seed=1, options={"task_id": task_id}) == second.reset(seed=2, options={"task_id": task_id})
        for action in actions:
            assert first.step(action) == second.step(action)


def test_tasks_differ_and_views_share_mazes() -> None:
    full, partial = MazeEnv(), MazeEnv(view="partial", view_radius=3)
    layouts = set()
    for task_id in range(100):
        full.reset(options={"task_id": task_id})
        partial.reset(options={"task_id": task_id})
        assert (full.grid, full.position, full.goal) == (partial.grid, partial.position, partial.goal)
        layouts.add(walls_key(full))
    assert len(layouts) == 100


def test_task_zero_is_stable_across_versions() -> None:
    # Changing how mazes are generated changes every published number: bump the env version.
    env = MazeEnv()
    env.reset(options={"task_id": 0})
    digest = hashlib.blake2b("\n".join(env.grid).encode(), digest_size=8).hexdigest()
    assert (digest, env.position, env.goal) == ("1884729723e45d7a", (13, 3), (3, 13))


@pytest.mark.parametrize("radius", [1, 2, 4])
def test_partial_view_shows_only_squares_seen(radius: int) -> None:
    env = MazeEnv(view="partial", view_radius=radius)
    rng = random.Random(radius)
    for task_id in range(20):
        observation, _ = env.reset(options={"task_id": task_id})
        seen: set[tuple[int, int]] = set()
        for _ in range(40):
            row, col = env.position
            seen |= {
                (r, c) for r in range(row - radius, row + radius + 1) for c in range(col - radius, col + radius + 1)
            }
            shown = shown_grid(observation, env.width)
            for r in range(env.width):
                for c in range(env.width):
                    expected = env.grid[r][c] if (r, c) in seen else UNSEEN
                    if (r, c) == env.position:
                        expected = "P"
                    assert shown[r][c] == expected, (task_id, r, c)
            observation, _, terminated, _, _ = env.step(rng.choice(ACTIONS))
            if terminated:
                break


def test_full_view_shows_the_whole_maze() -> None:
    env = MazeEnv()
    observation, _ = env.reset(options={"task_id": 7})
    shown = shown_grid(observation, env.width)
    row, col = env.position
    assert shown[row][col] == "P"
    shown[row][col] = env.grid[row][col]
    assert ["".join(line) for line in shown] == env.grid


@pytest.mark.parametrize("view", ["full", "partial"])
def test_wall_bumps_are_valid_and_change_nothing(view: str) -> None:
    env = MazeEnv(view=view)
    bumps = 0
    for task_id in range(20):
        observation, _ = env.reset(options={"task_id": task_id})
        start = env.position
        for action, (d_row, d_col) in MOVES.items():
            if env.grid[start[0] + d_row][start[1] + d_col] != WALL:
                continue
            bumped, reward, terminated, truncated, info = env.step(action.upper())
            bumps += 1
            assert bumped.splitlines()[0] == f"A wall blocks the way {action}."
            assert shown_grid(bumped, env.width) == shown_grid(observation, env.width)
            assert env.position == start and reward == 0.0
            assert not (terminated or truncated or info["invalid_action"])
    assert bumps > 20


@pytest.mark.parametrize("reply", ["jump", "", "north", "up up", "Action: upward", "🙂", "x" * 10_000])
def test_invalid_text_is_reported_and_changes_nothing(reply: str) -> None:
    env = gym.make("Maze-v0")
    observation, _ = env.reset(options={"task_id": 3})
    start = env.unwrapped.position
    after, reward, terminated, truncated, info = env.step(reply)
    assert info["invalid_action"] and reward == 0.0
    assert not (terminated or truncated)
    assert after.startswith("Invalid action") and "up, down, left, right" in after.splitlines()[0]
    assert env.unwrapped.position == start
    assert shown_grid(after, env.unwrapped.width) == shown_grid(observation, env.unwrapped.width)


@pytest.mark.parametrize(
    ("reply", "action"),
    [("UP", "up"), ("d", "down"), ("Action: Left", "left"), ("I go.\n**Action:** R", "right")],
)
def test_actions_are_case_insensitive_with_first_letters(reply: str, action: str) -> None:
    env = MazeEnv()
    env.reset(options={"task_id": 0})
    observation, _, _, _, info = env.step(reply)
    assert not info["invalid_action"]
    assert observation.splitlines()[0].endswith(f" {action}.")
    assert info["available_actions"] == ["up", "down", "left", "right"]


@pytest.mark.parametrize("size", [3, 7])
def test_splits_are_disjoint_in_content(size: int) -> None:
    # A 3x3 maze has only 192 layouts, so two ids often draw the same one: the buckets
    # must still keep every layout in one split.
    env = MazeEnv(size=size)
    layouts: dict[str, set[str]] = {}
    for split in ("train", "dev", "test"):
        layouts[split] = set()
        for task_id in SPLITS.ids(split)[:200]:
            env.reset(options={"task_id": task_id})
            key = walls_key(env)
            assert SPLITS.bucket(key) == split
            layouts[split].add(key)
    assert not layouts["train"] & layouts["dev"]
    assert not layouts["train"] & layouts["test"]
    assert not layouts["dev"] & layouts["test"]


def test_render_and_config_checks() -> None:
    env = MazeEnv(render_mode="ansi")
    observation, _ = env.reset(options={"task_id": 5})
    assert observation.endswith(env.render())
    for kwargs in ({"size": 2}, {"view": "fog"}, {"view_radius": 0}):
        with pytest.raises(ValueError):
            MazeEnv(**kwargs)
