"""ALFWorld-v0: the loader on a tiny set of genuine ALFWorld games, and the error without data."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest
from episodes import play_oracle
from gymnasium.utils.env_checker import check_env

import agentgym
from agentgym.cli import main

pytest.importorskip("alfworld")
pytest.importorskip("textworld")

from agentgym.environments.alfworld import SPLITS  # noqa: E402
from agentgym.environments.alfworld.env import ALFWorldDataMissing, collect_games  # noqa: E402
from agentgym.environments.alfworld.tiny import TINY_GAMES  # noqa: E402


@pytest.fixture(scope="module")
def env(alfworld_games: Path) -> gym.Env:
    made = gym.make("ALFWorld-v0", data_dir=str(alfworld_games))
    yield made
    made.close()


def tiny_task_ids() -> list[int]:
    counts = {"train": TINY_GAMES["train"], "dev": TINY_GAMES["valid_seen"], "test": TINY_GAMES["valid_unseen"]}
    return [task_id for split, count in counts.items() for task_id in SPLITS.ids(split)[:count]]


def test_without_data_making_the_env_says_what_to_fetch_and_where_to_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "nothing-here"))
    with pytest.raises(ALFWorldDataMissing) as error:
        gym.make("ALFWorld-v0")
    message = str(error.value)
    for needed in ("ALFWORLD_DATA", "data_dir", "alfworld-download", "json_2.1.1", "valid_unseen", "Household-v0"):
        assert needed in message
    assert str(tmp_path / "nothing-here") in message
    with pytest.raises(FileNotFoundError, match="alfworld-download"):
        gym.make("ALFWorld-v0", data_dir=str(tmp_path))


def test_registry_and_list_work_without_data(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    info = agentgym.env_info("ALFWorld-v0")
    assert info.splits.counts() == {"train": 3553, "dev": 140, "test": 134}
    assert main(["list", "--family", "alfworld"]) == 0
    assert "ALFWorld-v0" in capsys.readouterr().out


def test_tiny_games_are_in_alfworld_format(alfworld_games: Path) -> None:
    games = sorted((alfworld_games / "json_2.1.1").glob("*/*/*/game.tw-pddl"))
    assert len(games) == sum(TINY_GAMES.values())
    task_types = set()
    for game_file in games:
        game = json.loads(game_file.read_text())
        assert game.keys() >= {"pddl_domain", "grammar", "pddl_problem", "solvable"}
        assert "(:domain alfred)" in game["pddl_problem"] and "UNKNOWN GOAL" not in game["grammar"]
        traj = json.loads((game_file.parent / "traj_data.json").read_text())
        assert game_file.parent.parent.name.startswith(traj["task_type"])
        task_types.add(traj["task_type"])
    assert len(task_types) == 6


def test_the_oracle_solves_every_tiny_game(env: gym.Env) -> None:
    results = [play_oracle(env, task_id) for task_id in tiny_task_ids()]
    assert [result.task_id for result in results if not result.success] == []
    assert all(result.score == 1.0 and result.total_reward == 1.0 for result in results)


def test_check_env_on_the_tiny_set(alfworld_games: Path) -> None:
    with gym.make("ALFWorld-v0", data_dir=str(alfworld_games / "json_2.1.1")) as made:
        check_env(made.unwrapped)


def test_observation_actions_and_invalid_commands(env: gym.Env) -> None:
    observation, info = env.reset(options={"task_id": 1})
    assert "Your task is to: put a apple in microwave" in observation
    assert "you see a cabinet 1" in observation and "go to countertop 1" in info["available_actions"]
    observation, reward, terminated, _, info = env.step("Action: take apple 1 from countertop 1")
    assert info["invalid_action"] and "not a valid command here" in observation and reward == 0.0
    env.step("go to countertop 1")
    _, _, _, _, info = env.step("take apple 1 from countertop 1")
    assert not info["invalid_action"] and "move apple 1 to countertop 1" in info["available_actions"]
    env.step("go to microwave 1")
    observation, _, _, _, info = env.step("put apple 1 in microwave 1")
    assert info["invalid_action"] and "not a valid command" in observation  # the microwave is closed
    env.step("open microwave 1")
    observation, reward, terminated, _, info = env.step("put apple 1 in/on microwave 1")  # ALFWorld's older syntax
    assert not info["invalid_action"] and info["action"] == "put apple 1 in/on microwave 1"
    assert terminated and reward == 1.0 and info["success"] and info["score"] == 1.0


def test_tasks_beyond_the_folder_raise_and_drawn_tasks_exist(env: gym.Env) -> None:
    with pytest.raises(ValueError, match="holds only 6 playable games"):
        env.reset(options={"task_id": SPLITS.ids("test")[6]})
    drawn = {env.reset(seed=seed, options={"split": "test"})[1]["task_id"] for seed in range(20)}
    assert drawn <= set(SPLITS.ids("test")[:6]) and len(drawn) > 1


def test_collect_games_keeps_what_alfworld_keeps(alfworld_games: Path, tmp_path: Path) -> None:
    split = tmp_path / "json_2.1.1" / "train"
    shutil.copytree(alfworld_games / "json_2.1.1" / "train", split)
    kept = collect_games(split)
    first = kept[0].parent.parent
    shutil.copytree(first, split / "pick_and_place_with_movable_recep-Pen-Mug-Desk-309")
    shutil.copytree(first, split / "pick_heat_then_place_in_recep-AppleSliced-None-Fridge-1")
    unsolvable = kept[1]
    unsolvable.write_text(unsolvable.read_text().replace('"solvable": true', '"solvable": false'))
    collect_games.cache_clear()
    assert collect_games(split) == tuple(game for game in kept if game != unsolvable)


def test_envs_on_several_threads_play_their_games(alfworld_games: Path) -> None:
    """The eval runner steps each env on a thread of its own: TextWorld's PDDL parsers must not race."""

    def play(first: int) -> list[bool]:
        with gym.make("ALFWorld-v0", data_dir=str(alfworld_games)) as env:
            return [play_oracle(env, task_id).success for task_id in tiny_task_ids()[first : first + 3]]

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(play, [0, 3, 8, 14]))
    assert outcomes == [[True] * 3] * 4
