"""BabyAI-Text: the text description, the action words, feedback, determinism and the bot oracle."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest
from minigrid.core.world_object import Ball, Door, Key, Wall

import agentgym
from agentgym.environments.babyai import LEVELS, SPLITS
from agentgym.environments.babyai.env import ACTIONS, BabyAITextEnv

IDS = [f"BabyAI-Text-{name}-v0" for name in LEVELS]


def empty_room() -> gym.Env:
    """A GoToLocal env whose single 8x8 room is emptied, the agent at (3, 3) facing up (north).

    Walls are the border squares (x or y equal to 0 or 7); with the agent facing up, forward
    is -y and right is +x.
    """
    env = gym.make("BabyAI-Text-GoToLocal-v0", render_mode="ansi")
    env.reset(options={"task_id": 0})
    world = env.unwrapped.world
    for x in range(1, 7):
        for y in range(1, 7):
            world.grid.set(x, y, None)
    world.agent_pos, world.agent_dir = np.array([3, 3]), 3
    return env


def test_ids_are_registered_per_level() -> None:
    assert {info.id for info in agentgym.list_envs("babyai")} == set(IDS)
    for name, (level, max_steps, _) in LEVELS.items():
        info = agentgym.env_info(f"BabyAI-Text-{name}-v0")
        assert info.kwargs == {"level": level} and info.max_episode_steps == max_steps
    assert gym.make("BabyAI-Text-BossLevel-v0").unwrapped.world.spec.id == "BabyAI-BossLevel-v0"


@pytest.mark.parametrize("level", ["GoTo", "MiniGrid-Empty-5x5-v0", "BabyAI-NoSuchLevel-v0"])
def test_unknown_levels_are_rejected(level: str) -> None:
    with pytest.raises(ValueError, match="BabyAI level"):
        BabyAITextEnv(level=level)


def test_description_places_objects_relative_to_the_agent() -> None:
    env = empty_room()
    world = env.unwrapped.world
    world.grid.set(3, 2, Ball("red"))
    world.grid.set(1, 2, Key("blue"))
    world.grid.set(5, 1, Door("yellow", is_locked=True))
    world.carrying = Key("green")
    lines = env.render().split("\n")
    assert lines[0] == f"Mission: {world.mission}."
    assert "- a red ball 1 step forward" in lines
    assert "- a blue key 2 steps left and 1 step forward" in lines
    assert "- a locked yellow door 2 steps right and 2 steps forward" in lines
    # Objects do not block the view: the wall behind the ball is seen.
    assert "- a wall 3 steps forward" in lines and "- a wall 3 steps left" in lines
    # The wall 4 steps right is outside the 7x7 view (3 squares either side).
    assert not any(line.startswith("- a wall") and "right" in line for line in lines)
    assert "Directly in front of you: a red ball." in lines
    assert "You are carrying a green key." in lines
    # Nearer objects come first.
    assert lines.index("- a red ball 1 step forward") < lines.index("- a blue key 2 steps left and 1 step forward")


def test_description_hides_what_is_behind_a_closed_door() -> None:
    env = empty_room()
    world = env.unwrapped.world
    for x in range(1, 7):
        world.grid.set(x, 2, Door("purple") if x == 3 else Wall())
    world.grid.set(3, 1, Ball("blue"))  # behind the closed door
    text = env.render()
    assert "a closed purple door 1 step forward" in text and "blue ball" not in text
    world.grid.get(3, 2).is_open = True
    assert "a blue ball 2 steps forward" in env.render()


def test_action_words_drive_minigrid() -> None:
    env = empty_room()
    world = env.unwrapped.world
    world.grid.set(3, 1, Ball("red"))
    _, _, _, _, info = env.step("turn left")
    assert world.agent_dir == 2 and info["action"] == "turn left" and not info["invalid_action"]
    env.step("Action: TURN RIGHT")
    assert world.agent_dir == 3
    observation, *_ = env.step("go forward")
    assert tuple(world.agent_pos) == (3, 2) and observation.startswith("You went forward.")
    observation, *_ = env.step("pick up")
    assert world.carrying is not None and world.carrying.color == "red"
    assert observation.startswith("You picked up a red ball.") and "You are carrying a red ball." in observation
    env.step("turn right")
    observation, *_ = env.step("drop")
    assert world.carrying is None and world.grid.get(4, 2).type == "ball"
    assert observation.startswith("You dropped a red ball.")
    assert env.unwrapped.available_actions() == list(ACTIONS)


def test_feedback_for_actions_that_change_nothing() -> None:
    env = empty_room()
    world = env.unwrapped.world
    env.step("forward")
    env.step("forward")
    observation, reward, _, _, info = env.step("forward")
    assert tuple(world.agent_pos) == (3, 1) and not info["invalid_action"]
    assert observation.startswith("You cannot go forward: a wall is in the way.")
    assert env.step("pick up")[0].startswith("There is nothing to pick up in front of you (a wall).")
    assert env.step("drop")[0].startswith("You carry nothing to drop.")
    assert env.step("toggle")[0].startswith("Nothing happens: you cannot toggle a wall.")


def test_toggle_opens_closes_and_unlocks_doors() -> None:
    env = empty_room()
    world = env.unwrapped.world
    world.grid.set(3, 2, Door("yellow", is_locked=True))
    assert env.step("toggle")[0].startswith("The yellow door is locked; you need to carry a yellow key")
    world.carrying = Key("yellow")
    assert env.step("toggle")[0].startswith("You unlocked and opened the yellow door.")
    assert env.step("toggle")[0].startswith("You closed the yellow door.")
    assert env.step("toggle")[0].startswith("You opened the yellow door.")


@pytest.mark.parametrize("reply", ["jump", "turn", "go forward please", "pick", ""])
def test_invalid_words_list_the_actions_and_change_nothing(reply: str) -> None:
    env = gym.make("BabyAI-Text-GoTo-v0")
    env.reset(options={"task_id": 5})
    world = env.unwrapped.world
    before = (tuple(world.agent_pos), world.agent_dir, world.step_count)
    observation, reward, terminated, _, info = env.step(reply)
    assert info["invalid_action"] and reward == 0.0 and not terminated
    assert "expected one of turn left, turn right, go forward, pick up, drop, toggle" in observation
    assert (tuple(world.agent_pos), world.agent_dir, world.step_count) == before


def test_task_is_the_level_seeded_with_its_id() -> None:
    env = gym.make("BabyAI-Text-GoTo-v0")
    reference = gym.make("BabyAI-GoTo-v0").unwrapped
    for task_id in (0, 17, SPLITS.ids("test")[0]):
        observation, info = env.reset(seed=99, options={"task_id": task_id})
        reference.reset(seed=task_id)
        assert reference.mission in info["instruction"]
        assert np.array_equal(env.unwrapped.world.grid.encode(), reference.grid.encode())
        assert observation == env.reset(seed=1, options={"task_id": task_id})[0]


@pytest.mark.parametrize("env_id", ["BabyAI-Text-GoTo-v0", "BabyAI-Text-PutNext-v0", "BabyAI-Text-BossLevel-v0"])
def test_success_reports_minigrids_reward(env_id: str) -> None:
    env = gym.make(env_id)
    _, info = env.reset(options={"task_id": SPLITS.ids("dev")[2]})
    assert info["babyai_reward"] == 0.0
    terminated = False
    while not terminated:
        _, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
    world = env.unwrapped.world
    assert info["success"] and info["score"] == 1.0 and reward == 1.0
    assert info["babyai_reward"] == pytest.approx(1 - 0.9 * world.step_count / world.max_steps)


@pytest.mark.parametrize("env_id", ["BabyAI-Text-GoTo-v0", "BabyAI-Text-Unlock-v0", "BabyAI-Text-PutNextLocal-v0"])
def test_oracle_finishes_after_random_detours(env_id: str) -> None:
    """The bot replans from wherever random moves (turns, steps, picking up, dropping) left the agent."""
    env = gym.make(env_id)
    detour_actions = ["turn left", "turn right", "go forward", "go forward", "pick up", "drop"]
    for task_id in SPLITS.ids("test")[:6]:
        rng = random.Random(task_id)
        env.reset(options={"task_id": task_id})
        terminated = truncated = False
        for step in range(env.spec.max_episode_steps):
            # Detours at the start and in the middle of the bot's own play.
            detour = step < 10 or 20 <= step < 25
            reply = rng.choice(detour_actions) if detour else env.unwrapped.oracle_action()
            *_, terminated, truncated, info = env.step(reply)
            if terminated or truncated:
                break
        assert info["success"], f"{env_id} task {task_id}: oracle failed after detours"


@pytest.mark.parametrize("env_id", ["BabyAI-Text-BossLevel-v0", "BabyAI-Text-Unlock-v0", "BabyAI-Text-PutNext-v0"])
def test_the_kept_view_is_the_one_minigrid_computes(env_id: str) -> None:
    """The agent's view is computed once per world state (minigrid's step, the description and the bot
    each ask for it): after every step, reset and bot move it equals a fresh ``gen_obs_grid``, and each
    observation equals the description of the world computed afresh (``render``)."""
    env = gym.make(env_id, render_mode="ansi")
    world = env.unwrapped.world
    rng = random.Random(0)
    for task_id in SPLITS.ids("test")[:3]:
        observation, _ = env.reset(options={"task_id": task_id})
        for step in range(60):
            grid, visible = world.gen_obs_grid()
            fresh_grid, fresh_visible = type(world).gen_obs_grid(world)
            assert np.array_equal(grid.encode(visible), fresh_grid.encode(fresh_visible))
            assert observation.endswith(env.render())
            reply = env.unwrapped.oracle_action() if step % 3 else rng.choice(list(ACTIONS))
            observation, *_, terminated, truncated, _ = env.step(reply)
            if terminated or truncated:
                break


def test_resets_on_threads_keep_the_process_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    """minigrid prints each rejected sample of a level's generation (BabyAI-GoTo-v0's tasks 1, 3, 5, ...
    reject some): a reset keeps those prints out of stdout in its own thread only. Swapping sys.stdout for
    the process instead made envs on threads restore each other's buffers, and stdout was lost for good."""
    import sys
    import threading

    stdout = sys.stdout
    envs = [gym.make("BabyAI-Text-GoTo-v0") for _ in range(8)]

    def play(env: gym.Env) -> None:
        for task_id in (1, 3, 5, 6, 9, 10, 11, 12):
            env.reset(options={"task_id": task_id})

    threads = [threading.Thread(target=play, args=(env,)) for env in envs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sys.stdout is stdout
    from minigrid.envs.babyai.core import roomgrid_level

    roomgrid_level.print("Sampling rejected: outside a reset this still prints")
    print("the process still prints")
    out = capfd.readouterr().out
    assert "the process still prints" in out and "outside a reset this still prints" in out
    assert out.count("Sampling rejected") == 1
