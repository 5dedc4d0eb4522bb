"""MiniWoB++ in Chromium: registration, the benchmark's reward (raw and time-decayed), seeds, oracles."""

from __future__ import annotations

import os

import pytest
from browsers import needs_chromium
from gymnasium.utils.env_checker import check_env

import agentgym

pytestmark = needs_chromium
pytest.importorskip("miniwob")

from agentgym.environments.miniwob import TASK_TIME_LIMITS_MS  # noqa: E402
from agentgym.environments.miniwob.env import MiniWoBEnv  # noqa: E402
from agentgym.environments.miniwob.oracles import ORACLES  # noqa: E402

#: Seeds per oracle task here; ``AGENTGYM_MINIWOB_SEEDS=20`` runs the full check.
SEEDS = int(os.environ.get("AGENTGYM_MINIWOB_SEEDS", "2"))


def test_every_task_is_registered() -> None:
    ids = {info.id for info in agentgym.list_envs("miniwob")}
    assert ids == {f"MiniWoB-{task}-v0" for task in TASK_TIME_LIMITS_MS} and len(ids) == 130
    assert len(ORACLES) >= 30 and set(ORACLES) <= set(TASK_TIME_LIMITS_MS)


def play_oracle(env: MiniWoBEnv, task_id: int) -> dict:
    env.reset(options={"task_id": task_id})
    for _ in range(30):
        _, _, terminated, _, info = env.step(env.oracle_action())
        if terminated:
            return info
    return info


@pytest.mark.parametrize("task", sorted(ORACLES))
def test_oracle_solves_task(task: str) -> None:
    env = MiniWoBEnv(task)
    try:
        for seed in range(SEEDS):
            info = play_oracle(env, SPLITS_TEST_START + seed)
            assert info["success"] and info["score"] == 1.0 and info["raw_reward"] == 1.0, (task, seed, info)
            assert 0 < info["miniwob_reward"] <= 1.0
    finally:
        env.close()


SPLITS_TEST_START = 11_000


def test_reward_raw_and_time_decayed() -> None:
    env = MiniWoBEnv("click-button-sequence", ms_per_action=500)
    info = play_oracle(env, 3)
    # Two clicks: the second comes 500 ms of page time after the start, of a 10 s limit.
    assert info["raw_reward"] == 1.0 and info["miniwob_reward"] == pytest.approx(0.95)
    env.reset(options={"task_id": 3})
    terminated, steps = False, 0
    while not terminated and steps < 40:  # scrolling until the page's own 10 s limit ends the episode
        _, reward, terminated, _, info = env.step("scroll(down)")
        steps += 1
    assert steps == 20 and info["raw_reward"] == -1.0 and info["reason"] == "timed out"
    assert info["score"] == 0.0 and not info["success"] and reward == 0.0
    env.close()


def test_wrong_answer_ends_with_raw_minus_one() -> None:
    env = MiniWoBEnv("click-test-2")
    observation, info = env.reset(options={"task_id": 5})
    right = env.oracle_action()
    wrong = "click(2)" if right == "click(1)" else "click(1)"
    _, reward, terminated, _, info = env.step(wrong)
    assert terminated and info["raw_reward"] == -1.0 and info["score"] == 0.0 and not info["success"]
    env.close()


def test_seeds_give_instances_and_repeat() -> None:
    env = MiniWoBEnv("click-button")
    first = [env.reset(options={"task_id": task_id})[0]["text"] for task_id in (1, 2, 1)]
    assert first[0] == first[2] != first[1]
    env.close()


def test_screenshots_and_check_env() -> None:
    env = MiniWoBEnv("click-checkboxes", screenshot=True, render_mode="rgb_array")
    check_env(env)
    observation, _ = env.reset(options={"task_id": 0})
    assert observation["screenshot"].shape == (400, 500, 3) and observation["screenshot"].dtype.name == "uint8"
    assert observation["screenshot"].std() > 0 and env.render().shape == (400, 500, 3)
    env.close()


def test_invalid_commands_get_feedback() -> None:
    env = MiniWoBEnv("click-button")
    env.reset(options={"task_id": 0})
    for reply in ("click(999)", "frobnicate", 'type(1, "x"', 'goto("http://example.com")', "click_xy(9999, 1)"):
        observation, reward, terminated, _, info = env.step(reply)
        assert info["invalid_action"] and reward == 0.0 and not terminated
        assert "Invalid action" in observation["text"]
    env.close()
