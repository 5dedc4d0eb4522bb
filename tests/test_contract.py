"""The environment contract (DESIGN.md), checked on every registered id."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections.abc import Iterator

import gymnasium as gym
import pytest
from episodes import play_oracle, sampled
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym
from agentgym.core import TextEnv, observation_text

ENV_IDS = [info.id for info in agentgym.list_envs()]
EPISODE_IDS = sampled(ENV_IDS)
#: Single-agent views of games: their oracle is a strong player, not a solver that always wins.
PUZZLE_IDS = [env_id for env_id in EPISODE_IDS if agentgym.env_info(env_id).family != "multiagent"]
GAME_IDS = [env_id for env_id in EPISODE_IDS if agentgym.env_info(env_id).family == "multiagent"]
ORACLE_TASKS = 200
#: Families whose episodes are slow (a JVM, a browser, a desktop) play fewer oracle tasks here
#: (the number given) and fewer fuzz examples; their own tests and benchmarks go further.
SLOW_FAMILIES: dict[str, int] = {
    "alfworld": 8,
    "babyai": 60,
    "desktop": 8,
    "miniwob": 10,
    "scienceworld": 20,
    "textworld": 4,
    "web": 6,
}
SLOW_FUZZ_EXAMPLES = 8
FAST_IDS = [env_id for env_id in EPISODE_IDS if agentgym.env_info(env_id).family not in SLOW_FAMILIES]
SLOW_IDS = [env_id for env_id in EPISODE_IDS if agentgym.env_info(env_id).family in SLOW_FAMILIES]


_MADE: dict[tuple, gym.Env] = {}


def shared_env(env_id: str, **kwargs: object) -> gym.Env:
    """One env per (id, kwargs), reused across these tests and closed at the end of the session
    (engines, browsers and desktops are expensive to start; reset makes a reused env as good as new)."""
    key = (env_id, tuple(sorted(kwargs.items())))
    if key not in _MADE:
        _MADE[key] = gym.make(env_id, **kwargs)
    return _MADE[key]


@pytest.fixture(scope="module", autouse=True)
def close_shared_envs() -> Iterator[None]:
    yield
    while _MADE:
        _MADE.popitem()[1].close()


def oracle_task_count(env_id: str) -> int:
    return SLOW_FAMILIES.get(agentgym.env_info(env_id).family, ORACLE_TASKS)


def text_only(transition: tuple) -> tuple:
    """A reset or step result with the observation reduced to its text (screenshots differ by a pixel)."""
    return (observation_text(transition[0]), *transition[1:])


REQUIRED_INFO = {"task_id", "split", "instruction", "action", "invalid_action", "success", "score", "steps"}


def spread_task_ids(env_id: str, count: int) -> list[int]:
    """``count`` task ids: half from test, a quarter each from dev and train."""
    splits = agentgym.env_info(env_id).splits
    quarter = count // 4
    return (
        list(splits.ids("test")[: count - 2 * quarter])
        + list(splits.ids("dev")[:quarter])
        + list(splits.ids("train")[:quarter])
    )


def test_families_are_registered() -> None:
    families = {info.family for info in agentgym.list_envs()}
    assert {"sokoban", "frozenlake", "maze", "wordle"} <= families


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env(env_id: str) -> None:
    for render_mode in (None, "ansi"):
        with gym.make(env_id, render_mode=render_mode) as env:
            check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_metadata_matches_env(env_id: str) -> None:
    info = agentgym.env_info(env_id)
    env = shared_env(env_id)
    assert isinstance(env.unwrapped, TextEnv)
    assert env.unwrapped.splits == info.splits
    assert env.spec.max_episode_steps == info.max_episode_steps
    assert all(count > 0 for count in info.splits.counts().values())
    json.dumps(info.to_dict())


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_first_observation_explains_task_and_syntax(env_id: str) -> None:
    env = shared_env(env_id)
    observation, info = env.reset(options={"task_id": 0})
    assert isinstance(observation, str) or isinstance(observation.get("text"), str)
    text = observation_text(observation)
    assert info["instruction"] and info["instruction"] in text
    assert env.unwrapped.action_syntax in text
    assert info.keys() >= REQUIRED_INFO
    assert info["task_id"] == 0 and info["split"] == "train"


def random_trajectory(env_id: str, task_id: int, seed: int, steps: int, **kwargs: object) -> list:
    """A trajectory of legal-or-garbage replies chosen by a seeded generator."""
    env = shared_env(env_id, **kwargs)
    rng = random.Random(seed)
    trajectory = [text_only(env.reset(seed=seed, options={"task_id": task_id}))]
    for _ in range(steps):
        base = env.unwrapped
        reply = rng.choice(
            [base.random_action(rng), base.oracle_action(), "garbage", "Action: " + base.oracle_action()]
        )
        transition = text_only(env.step(reply))
        trajectory.append(transition)
        if transition[2] or transition[3]:
            break
    return trajectory


@pytest.mark.parametrize("env_id", EPISODE_IDS)
def test_same_task_and_actions_give_same_trajectory(env_id: str) -> None:
    for task_id in (0, 7, agentgym.env_info(env_id).splits.ids("test")[3]):
        first = random_trajectory(env_id, task_id, seed=task_id, steps=30)
        assert first == random_trajectory(env_id, task_id, seed=task_id, steps=30)
    # Tasks differ (Wordle's first observations are alike by design: the word is hidden).
    assert random_trajectory(env_id, 0, 0, 3) != random_trajectory(env_id, 1, 0, 3)


def test_slippery_frozenlake_is_deterministic_per_seed() -> None:
    trajectories = [random_trajectory("FrozenLake-v0", 5, seed, 40, is_slippery=True) for seed in (1, 1, 2)]
    assert trajectories[0] == trajectories[1]


@pytest.mark.parametrize("env_id", PUZZLE_IDS)
def test_oracle_solves_tasks(env_id: str) -> None:
    env = shared_env(env_id)
    if not env.unwrapped.has_oracle:
        pytest.skip(f"{env_id} has no scripted solver (the family's tests cover the tasks that do)")
    task_ids = spread_task_ids(env_id, oracle_task_count(env_id))
    results = [play_oracle(env, task_id, seed=task_id) for task_id in task_ids]
    failures = [result.task_id for result in results if not result.success]
    assert not failures, f"oracle failed on tasks {failures[:10]}"
    for result in results:
        assert result.score == 1.0
        assert math.isclose(result.total_reward, result.score, abs_tol=1e-9)


def test_slippery_frozenlake_oracle_matches_optimal_success_rate() -> None:
    """The optimal policy's empirical success rate agrees with value iteration's prediction."""
    env = shared_env("FrozenLake-v0", is_slippery=True)
    task_ids = spread_task_ids("FrozenLake-v0", ORACLE_TASKS)
    successes, predicted = [], []
    for task_id in task_ids:
        successes.append(play_oracle(env, task_id, seed=task_id).success)
        predicted.append(env.unwrapped.success_probability())
    rate, expected = sum(successes) / len(task_ids), sum(predicted) / len(task_ids)
    standard_error = math.sqrt(expected * (1 - expected) / len(task_ids))
    print(f"slippery FrozenLake: optimal policy success {rate:.3f} (value iteration predicts {expected:.3f})")
    assert abs(rate - expected) < 4 * standard_error + 0.01
    assert 0.5 < rate < 1.0


@pytest.mark.parametrize("env_id", PUZZLE_IDS)
def test_truncation_at_max_episode_steps(env_id: str) -> None:
    env = shared_env(env_id)
    env.reset(options={"task_id": 0})
    limit = env.spec.max_episode_steps
    for step in range(1, limit + 1):
        observation, reward, terminated, truncated, info = env.step("this is not an action")
        assert info["invalid_action"] and reward == 0.0 and not terminated
        assert truncated == (step == limit)
    assert {"success", "score"} <= info.keys() and info["success"] is False


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_games_forfeit_after_repeated_illegal_moves(env_id: str) -> None:
    env = shared_env(env_id)
    env.reset(options={"task_id": 0})
    tries = env.unwrapped.game.max_illegal_moves + 1
    for step in range(1, tries + 1):
        observation, reward, terminated, truncated, info = env.step("this is not a move")
        assert info["invalid_action"] and reward == 0.0 and not truncated
        assert terminated == (step == tries)
    assert info["success"] is False and info["score"] == 0.0 and "forfeit" in info["reason"]


@pytest.mark.parametrize("env_id", EPISODE_IDS)
def test_observations_and_info_are_json_serialisable(env_id: str) -> None:
    for observation, *rest in random_trajectory(env_id, 3, seed=3, steps=20):
        info = rest[-1]
        json.dumps({"observation": observation, "info": info, "rest": rest[:-1]})


HOSTILE_REPLIES = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8")),
    st.text(alphabet=st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"])),
    st.builds(lambda text: f"Action: {text}", st.text()),
    st.builds(lambda text: f"<think>{text}</think>\nAction: {text}", st.text()),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\x00" * 1000,
            "Action:",
            "Action: \n",
            "a" * 1_000_000,
            "Action: " + "up " * 350_000,
            "\n" * 1_000_000,
            "<think>" * 100_000,
            "\ud800\udfff",
            "Ünïcödé 中文 🙂 \u202e\u200b",
        ]
    ),
)


def check_hostile_replies(env_id: str, replies: list[str]) -> None:
    env = shared_env(env_id)
    env.reset(seed=0, options={"task_id": 1})
    for reply in replies:
        observation, reward, terminated, truncated, info = env.step(reply)
        assert env.observation_space.contains(observation)
        assert math.isfinite(reward) and info.keys() >= REQUIRED_INFO
        assert 0.0 <= info["score"] <= 1.0
        if info["invalid_action"]:
            assert reward == 0.0
        if terminated or truncated:
            env.reset(seed=0, options={"task_id": 1})


@pytest.mark.parametrize("env_id", FAST_IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(HOSTILE_REPLIES, min_size=1, max_size=4))
def test_step_never_raises_on_any_string(env_id: str, replies: list[str]) -> None:
    check_hostile_replies(env_id, replies)


@pytest.mark.parametrize("env_id", SLOW_IDS)
@settings(max_examples=SLOW_FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(HOSTILE_REPLIES, min_size=1, max_size=4))
def test_slow_env_step_never_raises_on_any_string(env_id: str, replies: list[str]) -> None:
    check_hostile_replies(env_id, replies)


def test_make_with_module_prefix_in_fresh_interpreter() -> None:
    """``gym.make("agentgym:<id>")`` imports agentgym itself; importing it loads no env module."""
    code = (
        "import sys, gymnasium as gym\n"
        "env = gym.make('agentgym:Sokoban-v0')\n"
        "obs, info = env.reset(options={'task_id': 0})\n"
        "assert 'Sokoban' in type(env.unwrapped).__name__ and info['task_id'] == 0\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('agentgym.environments.') and m.endswith('.env'))\n"
        "print(loaded)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "['agentgym.environments.sokoban.env']"


def test_import_agentgym_loads_no_env_module() -> None:
    code = (
        "import sys, agentgym\n"
        "assert len(agentgym.list_envs()) >= 4\n"
        "print([m for m in sys.modules if m.startswith('agentgym.environments.') and m.count('.') > 2])\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"
