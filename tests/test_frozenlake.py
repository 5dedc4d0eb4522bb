"""FrozenLake-v0's rules, maps and oracle."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import pytest

from agentgym.environments.frozenlake.env import FrozenLakeEnv, _reachable

# Task 3 of the default config is a 4x4 lake without holes; task 0 has holes.
OPEN_LAKE = 3


def make(**kwargs: object) -> FrozenLakeEnv:
    env = FrozenLakeEnv(**kwargs)
    env.reset(options={"task_id": OPEN_LAKE})
    return env


def test_maps_are_solvable_deterministic_and_varied() -> None:
    env = FrozenLakeEnv(size=6)
    maps = []
    for task_id in range(300):
        env.reset(options={"task_id": task_id})
        assert _reachable(env.grid) and env.grid[0][0] == "S" and env.grid[-1][-1] == "G"
        assert len(env.grid) == 6 and all(len(row) == 6 for row in env.grid)
        maps.append(tuple(env.grid))
    env.reset(options={"task_id": 17})
    assert tuple(env.grid) == maps[17]
    assert len(set(maps)) > 250


def test_train_and_test_maps_never_coincide() -> None:
    env = FrozenLakeEnv()

    def maps(ids: range) -> set[tuple[str, ...]]:
        found = set()
        for task_id in ids:
            env.reset(options={"task_id": task_id})
            found.add(tuple(env.grid))
        return found

    train, test = maps(range(0, 3000)), maps(range(11_000, 12_000))
    assert not train & test


def test_edge_bump_keeps_position_and_is_valid() -> None:
    env = make()
    observation, reward, terminated, _, info = env.step("up")
    assert env.position == (0, 0) and not info["invalid_action"] and not terminated
    assert "edge" in observation and reward == 0.0


def test_moves_and_goal() -> None:
    env = make()
    for command in ["down", "d", "DOWN", "Action: right", "r", "right"]:
        observation, reward, terminated, _, info = env.step(command)
    assert env.position == (3, 3) and terminated and info["success"] and reward == 1.0


def test_hole_ends_the_episode_with_failure() -> None:
    env = FrozenLakeEnv(hole_probability=0.5)
    env.reset(options={"task_id": 0})
    hole = next((r, c) for r, row in enumerate(env.grid) for c, cell in enumerate(row) if cell == "H")
    env.position = (hole[0] - 1, hole[1]) if hole[0] > 0 else (hole[0], hole[1] - 1)
    _, reward, terminated, _, info = env.step("down" if hole[0] > 0 else "right")
    assert terminated and not info["success"] and reward == 0.0 and info["score"] == 0.0


def test_slippery_moves_follow_gymnasium_probabilities() -> None:
    env = FrozenLakeEnv(size=5, is_slippery=True)
    outcomes: Counter[tuple[int, int]] = Counter()
    for seed in range(3000):
        env.reset(seed=seed, options={"task_id": OPEN_LAKE})
        env.position = (2, 2)
        env.grid = ["SFFFF", "FFFFF", "FFFFF", "FFFFF", "FFFFG"]
        env.step("down")
        outcomes[env.position] += 1
    # Intended (down) and the two perpendicular moves, a third each; never up.
    assert set(outcomes) == {(3, 2), (2, 1), (2, 3)}
    assert all(abs(count / 3000 - 1 / 3) < 0.04 for count in outcomes.values())


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        FrozenLakeEnv(size=1)
    with pytest.raises(ValueError):
        FrozenLakeEnv(hole_probability=1.0)


def test_larger_lakes_through_make() -> None:
    env = gym.make("FrozenLake-v0", size=8)
    observation, _ = env.reset(options={"task_id": 0})
    assert "8x8" in observation and len(env.unwrapped.grid) == 8
