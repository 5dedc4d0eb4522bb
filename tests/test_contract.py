"""The environment contract (DESIGN.md), checked on every registered id with agentgym.utils.check_text_env."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from episodes import play_oracle, sampled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgym
from agentgym.contract.core import TextEnv
from agentgym.evaluation.fingerprint import check_fingerprint
from agentgym.utils import HOSTILE_REPLIES, check_replies, check_text_env
from agentgym.utils.env_checker import spread_task_ids

ENV_IDS = [info.id for info in agentgym.list_envs()]
#: The ids whose contract and fingerprint are checked, their episodes played in full: every id, but of
#: MiniWoB++ every 13th id and of TextWorld every other (rotating daily, tests/episodes.py), and one WebApps id
#: and one grounding id; all 130 MiniWoB++ ids are checked within 13 days, or every id in one run with
#: AGENTGYM_TEST_SAMPLE=all (docs/testing.md).
CHECKED_IDS = sampled(ENV_IDS)
ORACLE_TASKS = 200
#: Families (or single ids) whose episodes are slow (a JVM, a browser, a desktop; a grounding task whose
#: screenshot the run has not rendered renders its page first) play fewer oracle tasks here (the number given)
#: and fewer fuzz examples; their own tests and benchmarks go further.
#: Their own test files play their oracles on many more tasks (test_alfworld: every tiny game; test_babyai,
#: test_scienceworld, test_textworld, test_desktop, test_miniwob, test_webapps: per level, task type or template;
#: test_grounding: 300 tasks of a whole source; test_swe and benchmarks/swe.py: each episode runs a real
#: repository's tests).
SLOW: dict[str, int] = {
    "alfworld": 4,
    "babyai": 20,
    "desktop": 4,
    "grounding": 20,
    "miniwob": 10,
    "scienceworld": 10,
    "swe": 2,
    "textworld": 2,
    "webapps": 2,
    "WebShop-Browser-v0": 6,
}
#: Games' oracle is a strong player, not a solver that always wins: fewer tasks, only the return checked.
GAME_ORACLE_TASKS = 10
#: Ids whose own tests play their oracle on 100+ tasks (tests/test_bash_env.py, tests/test_bugfix_env.py;
#: each episode runs commands or a test suite in a sandbox): the oracle plays this many tasks here, the rest
#: of the contract is checked in full.
ORACLE_TESTED_ELSEWHERE: dict[str, int] = {"Bash-v0": 20, "BugFix-v0": 20, "BugFix-Hard-v0": 20}


def slow_tasks(env_id: str) -> int | None:
    """The oracle tasks a slow id plays (its own entry in :data:`SLOW`, else its family's), or None."""
    return SLOW.get(env_id, SLOW.get(agentgym.env_info(env_id).family))


FAST_IDS = [env_id for env_id in CHECKED_IDS if slow_tasks(env_id) is None]
SLOW_IDS = [env_id for env_id in CHECKED_IDS if slow_tasks(env_id) is not None]
GAME_IDS = [env_id for env_id in CHECKED_IDS if agentgym.env_info(env_id).family == "multiagent"]


@pytest.fixture(scope="module")
def env(request: pytest.FixtureRequest, alfworld_games: Path) -> Iterator[gym.Env]:
    """The env of the test's id (indirect parametrization), shared by every test of that id and closed
    after the last one. pytest runs a module-scoped parametrized fixture's tests together, one param
    at a time, so a single env of this module is open at once: browsers, JVMs and desktops of ids
    already checked are gone instead of running for the rest of the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ALFWORLD_DATA", str(alfworld_games))  # ALFWorld's ids read the user's game files
        env = gym.make(request.param)
        try:
            yield env
        finally:
            env.close()


@pytest.fixture(scope="module")
def slippery_lake() -> Iterator[gym.Env]:
    env = gym.make("FrozenLake-v0", is_slippery=True)
    yield env
    env.close()


def check_budget(env_id: str) -> dict[str, Any]:
    """check_text_env's arguments for ``env_id``: the full check, smaller for slow families and games."""
    family = agentgym.env_info(env_id).family
    if family in ("multiagent", "openspiel", "textarena"):
        return {"oracle_tasks": GAME_ORACLE_TASKS, "oracle_must_win": False}
    if family == "webapps":
        # Real apps put ids of their own into pages an action opens (Roundcube's compose id), which no
        # seed reaches: replays are compared on the reset only; the tasks themselves are pinned by
        # their fingerprints (docs/webapps.md, deviations).
        return {"oracle_tasks": slow_tasks(env_id), "random_replies": 8, "determinism_steps": 0}
    if slow_tasks(env_id) is not None:
        return {"oracle_tasks": slow_tasks(env_id), "random_replies": 8, "determinism_tasks": 1}
    return {"oracle_tasks": ORACLE_TESTED_ELSEWHERE.get(env_id, ORACLE_TASKS)}


def test_families_are_registered() -> None:
    families = {info.family for info in agentgym.list_envs()}
    assert {"sokoban", "frozenlake", "maze", "wordle"} <= families


@pytest.mark.parametrize("env", CHECKED_IDS, indirect=True)
def test_contract_and_fingerprint(env: gym.Env) -> None:
    """check_text_env passes, and the id's tasks still have their recorded fingerprint
    (agentgym/evaluation/fingerprints.json)."""
    env_id = env.spec.id
    report = check_text_env(env, **check_budget(env_id))
    assert {"gymnasium", "spaces", "info-keys", "never-raises", "determinism", "truncation"} <= set(report.checked)
    if env.unwrapped.has_oracle:
        assert "oracle" in report.checked
    check_fingerprint(env_id, env)


@pytest.mark.parametrize("env", ENV_IDS, indirect=True)
def test_metadata_matches_env(env: gym.Env) -> None:
    info = agentgym.env_info(env.spec.id)
    assert isinstance(env.unwrapped, TextEnv)
    assert env.unwrapped.splits == info.splits
    assert env.spec.max_episode_steps == info.max_episode_steps
    assert all(count > 0 for count in info.splits.counts().values())
    json.dumps(info.to_dict())


def test_slippery_frozenlake_keeps_the_contract(slippery_lake: gym.Env) -> None:
    """Slippery moves are drawn from the env's seeded generator: the same seed replays the same episode."""
    check_text_env(slippery_lake, oracle_must_win=False, gymnasium_check=False)


def test_slippery_frozenlake_oracle_matches_optimal_success_rate(slippery_lake: gym.Env) -> None:
    """The optimal policy's empirical success rate agrees with value iteration's prediction."""
    env = slippery_lake
    task_ids = spread_task_ids(env.unwrapped.splits, ORACLE_TASKS)
    successes, predicted = [], []
    for task_id in task_ids:
        successes.append(play_oracle(env, task_id, seed=task_id).success)
        predicted.append(env.unwrapped.success_probability())
    rate, expected = sum(successes) / len(task_ids), sum(predicted) / len(task_ids)
    standard_error = math.sqrt(expected * (1 - expected) / len(task_ids))
    print(f"slippery FrozenLake: optimal policy success {rate:.3f} (value iteration predicts {expected:.3f})")
    assert abs(rate - expected) < 4 * standard_error + 0.01
    assert 0.5 < rate < 1.0


@pytest.mark.parametrize("env", GAME_IDS, indirect=True)
def test_games_forfeit_after_repeated_illegal_moves(env: gym.Env) -> None:
    env.reset(options={"task_id": 0})
    tries = env.unwrapped.game.max_illegal_moves + 1
    for step in range(1, tries + 1):
        observation, reward, terminated, truncated, info = env.step("this is not a move")
        assert info["invalid_action"] and reward == 0.0 and not truncated
        assert terminated == (step == tries)
    assert info["success"] is False and info["score"] == 0.0 and "forfeit" in info["reason"]


HOSTILE_REPLY_STRATEGY = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8")),
    st.text(alphabet=st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"])),
    st.builds(lambda text: f"Action: {text}", st.text()),
    st.builds(lambda text: f"<think>{text}</think>\nAction: {text}", st.text()),
    st.sampled_from(HOSTILE_REPLIES),
)


@pytest.mark.parametrize("env", FAST_IDS, indirect=True)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(HOSTILE_REPLY_STRATEGY, min_size=1, max_size=4))
def test_step_never_raises_on_any_string(env: gym.Env, replies: list[str]) -> None:
    check_replies(env, replies)


@pytest.mark.parametrize("env", SLOW_IDS, indirect=True)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(HOSTILE_REPLY_STRATEGY, min_size=1, max_size=4))
def test_slow_env_step_never_raises_on_any_string(env: gym.Env, replies: list[str]) -> None:
    check_replies(env, replies)


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
