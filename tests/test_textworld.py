"""TextWorld ids: generated games and their cache, the oracle, scores, losing, clean text, closing.

Games for the default cache are made once per session by the ``pregenerated`` fixture (two
child processes in parallel); tests of the cache itself use a fresh folder each.
"""

from __future__ import annotations

import gc
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest
from processes import alive

import agentgym
from agentgym.environments.textworld import SPLITS, games
from agentgym.environments.textworld.env import TextWorldEnv, clean_output
from agentgym.environments.textworld.games import GameSpec, ensure_game, is_complete, run_generator, task_folder
from agentgym.environments.textworld.pregenerate import pregenerate

IDS = [info.id for info in agentgym.list_envs("textworld")]
ORACLE_TASKS = [0, SPLITS.ids("test")[0]]
SMALL = GameSpec("custom", {"world_size": 2, "nb_objects": 3, "quest_length": 2})


@pytest.fixture(scope="session")
def pregenerated() -> None:
    """The games these tests play from the default cache (each id's ``ORACLE_TASKS`` and task 1)."""
    for env_id in IDS:
        pregenerate(env_id, [*ORACLE_TASKS, 1], workers=2)


def play_oracle(env: gym.Env, task_id: int) -> tuple[dict, list[float]]:
    """Play ``task_id`` with the oracle; the last info and the rewards."""
    env.reset(options={"task_id": task_id})
    rewards, done = [], False
    while not done:
        _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        assert not info["invalid_action"], info["action"]
        rewards.append(reward)
        done = terminated or truncated
    return info, rewards


def test_ids_are_registered() -> None:
    assert set(IDS) == {
        "TextWorld-Cooking-Easy-v0",
        "TextWorld-Cooking-Medium-v0",
        "TextWorld-Cooking-Hard-v0",
        "TextWorld-Custom-v0",
    }
    assert len({json.dumps(agentgym.env_info(env_id).kwargs, sort_keys=True) for env_id in IDS}) == len(IDS)


@pytest.mark.parametrize("env_id", IDS)
def test_oracle_wins(env_id: str, pregenerated: None) -> None:
    with gym.make(env_id) as env:
        for task_id in ORACLE_TASKS:
            info, rewards = play_oracle(env, task_id)
            assert info["success"] and info["score"] == 1.0 and sum(rewards) == pytest.approx(1.0)
            assert info["points"] == info["max_points"] > 0


def test_generation_is_deterministic_and_reuses_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ensure_game(SMALL, 3, "train", tmp_path / "a")
    second = ensure_game(SMALL, 3, "train", tmp_path / "b")
    assert (first / "game.json").read_text() == (second / "game.json").read_text()
    assert first.relative_to(tmp_path / "a") == Path("textworld-1.7.0") / SMALL.key / "task-3"
    other = ensure_game(SMALL, 4, "train", tmp_path / "a")
    assert (other / "game.json").read_text() != (first / "game.json").read_text()

    def no_generation(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(games, "run_generator", no_generation)
    assert ensure_game(SMALL, 3, "train", tmp_path / "a") == first
    env = TextWorldEnv("custom", SMALL.settings, cache_dir=tmp_path / "a")
    observation, info = env.reset(options={"task_id": 3})
    assert info["instruction"] in observation and env.game_folder == first
    env.close()


def test_environment_variable_chooses_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(games.CACHE_ENV_VAR, str(tmp_path))
    assert task_folder(SMALL, 7).is_relative_to(tmp_path)
    assert task_folder(SMALL, 7, tmp_path / "kwarg").is_relative_to(tmp_path / "kwarg")


def test_damaged_cache_entry_is_regenerated(tmp_path: Path) -> None:
    folder = ensure_game(SMALL, 5, "train", tmp_path)
    whole = {path.name: path.read_bytes() for path in folder.iterdir()}
    damages = {
        "truncated story": ("game.z8", whole["game.z8"][:1000]),
        "edited game": ("game.json", whole["game.json"].replace(b"}", b" }", 1)),
        "garbled manifest": ("manifest.json", b"{not json"),
    }
    for name, content in damages.values():
        (folder / name).write_bytes(content)
        assert not is_complete(folder)
        (folder / name).write_bytes(whole[name])
        assert is_complete(folder)
    (folder / "manifest.json").unlink()  # as if a copy stopped before its end
    (folder / "game.z8").write_bytes(damages["truncated story"][1])
    assert ensure_game(SMALL, 5, "train", tmp_path) == folder
    assert is_complete(folder) and {path.name: path.read_bytes() for path in folder.iterdir()} == whole


def test_two_processes_generating_the_same_game_make_one_whole_game(tmp_path: Path) -> None:
    with ThreadPoolExecutor(2) as pool:  # each call runs its own generator process
        jobs = [pool.submit(run_generator, SMALL, [(9, "test")], tmp_path) for _ in range(2)]
        for job in jobs:
            job.result()
    folder = task_folder(SMALL, 9, tmp_path)
    assert is_complete(folder)
    assert sorted(path.name for path in folder.parent.iterdir()) == ["task-9", "task-9.lock"]  # no staging left
    env = TextWorldEnv("custom", SMALL.settings, cache_dir=tmp_path)
    info, _ = play_oracle(env, 9)
    assert info["success"]
    env.close()


def game_digests(folder: Path) -> dict[str, str]:
    return json.loads((folder / "manifest.json").read_text())["sha256"]


def test_a_generator_serves_the_next_game_and_games_do_not_depend_on_the_ones_before(tmp_path: Path) -> None:
    games.GENERATORS.close()
    alone = game_digests(ensure_game(SMALL, 6, "train", tmp_path / "alone"))
    (pid,) = games.GENERATORS.idle_pids()
    ensure_game(SMALL, 7, "train", tmp_path / "after")
    after = game_digests(ensure_game(SMALL, 6, "train", tmp_path / "after"))
    assert games.GENERATORS.idle_pids() == [pid]  # the same child made the three games
    assert after == alone


def test_a_generator_that_died_or_ran_out_of_time_is_replaced(tmp_path: Path) -> None:
    games.GENERATORS.close()
    ensure_game(SMALL, 6, "train", tmp_path)
    (pid,) = games.GENERATORS.idle_pids()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(games.GenerationError, match=r"took over 0\.01 s"):
        ensure_game(SMALL, 7, "train", tmp_path, timeout=0.01)  # the dead child is skipped; the new one is too slow
    assert games.GENERATORS.idle_pids() == []  # the slow child was killed, not kept
    assert is_complete(ensure_game(SMALL, 7, "train", tmp_path))


def test_a_server_with_no_textworld_env_open_keeps_no_generator(tmp_path: Path) -> None:
    games.GENERATORS.close()
    env = TextWorldEnv("custom", SMALL.settings, cache_dir=tmp_path)
    env.reset(options={"task_id": 6})
    (pid,) = games.GENERATORS.idle_pids()  # it waits while the env is open
    env.close()
    assert games.GENERATORS.idle_pids() == [] and not alive(pid)


def test_a_generator_waits_for_the_next_game_only_so_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    games.GENERATORS.close()
    monkeypatch.setattr(games, "GENERATOR_IDLE_S", 0.5)
    ensure_game(SMALL, 6, "train", tmp_path)
    (pid,) = games.GENERATORS.idle_pids()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid) and games.GENERATORS.idle_pids() == []
    while "textworld-generators" in {thread.name for thread in threading.enumerate()} and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "textworld-generators" not in {thread.name for thread in threading.enumerate()}  # its reaper ended too


def test_a_generator_exits_with_the_process_that_started_it(tmp_path: Path) -> None:
    script = (
        "import os, sys; from agentgym.environments.textworld import games; "
        f"games.ensure_game(games.GameSpec('custom', {SMALL.settings!r}), 6, 'train', sys.argv[1]); "
        "print(*games.GENERATORS.idle_pids(), flush=True); os._exit(0)"
    )
    (pid,) = map(
        int,
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
        ).stdout.split(),
    )
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def test_first_observation_is_clean_and_holds_the_objective(pregenerated: None) -> None:
    with gym.make("TextWorld-Cooking-Medium-v0") as env:
        observation, info = env.reset(options={"task_id": 0})
        assert observation.startswith(info["instruction"]) and "cookbook" in info["instruction"]
        assert observation.count(info["instruction"]) == 1
        assert "$$" not in observation and "-= " in observation  # the room, without the banner
        assert not re.search(r"=-\d+/\d+", observation)  # no status line
        observation, *_ = env.step("look")
        assert observation.startswith("> look\n\n-= ") and not observation.rstrip().endswith(">")


def test_clean_output_drops_prompt_and_restart_question() -> None:
    restart = "Would you like to RESTART, RESTORE a saved game, QUIT or UNDO the last command?"
    raw = f"\nYou eat the meal.\n\n\n\n{' ' * 40}*** The End ***\n\n{restart}\n>        -= Kitchen =-8/13"
    assert clean_output(raw) == "You eat the meal.\n\n*** The End ***"


def test_commands_outside_the_admissible_set_are_not_played(pregenerated: None) -> None:
    with gym.make("TextWorld-Cooking-Medium-v0") as env:
        _, info = env.reset(options={"task_id": 0})
        moves = env.unwrapped._state.moves
        observation, reward, terminated, _, info = env.step("dance wildly")
        assert info["invalid_action"] and reward == 0.0 and not terminated
        assert env.unwrapped._state.moves == moves  # the game never saw it
        assert "go south" in observation  # the feedback lists what is admissible
        _, _, _, _, info = env.step("Action: Go  South.")
        assert not info["invalid_action"] and info["action"] == "Go  South"
        _, _, _, _, info = env.step("e")  # shortcut for "go east" (into the kitchen)
        assert not info["invalid_action"]
        takeable = [command for command in info["available_actions"] if re.match(r"take \w+ from ", command)]
        observation, *_, info = env.step(takeable[0].split(" from ")[0])  # "take X" completes to "take X from Y"
        assert not info["invalid_action"] and observation.startswith(f"> {takeable[0]}\n")


def test_score_rises_with_intermediate_rewards(pregenerated: None) -> None:
    with gym.make("TextWorld-Cooking-Medium-v0") as env:
        env.reset(options={"task_id": 0})
        scores, done = [0.0], False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            assert info["score"] == pytest.approx(scores[-1] + reward) and reward >= 0
            assert info["score"] == pytest.approx(info["points"] / info["max_points"])
            assert info["intermediate_reward"] == 1  # every oracle step brings the goal closer
            scores.append(info["score"])
            done = terminated or truncated
        assert len(set(scores)) > 3 and scores == sorted(scores) and scores[-1] == 1.0


@pytest.mark.parametrize("env_id", ["TextWorld-Cooking-Medium-v0", "TextWorld-Custom-v0"])
def test_oracle_finishes_after_the_agent_wandered(env_id: str, pregenerated: None) -> None:
    with gym.make(env_id) as env:
        base = env.unwrapped
        env.reset(options={"task_id": 1})
        for _ in range(6):  # wander: examine things and walk about (never lose)
            options = [command for command in base.available_actions() if command.startswith(("go ", "examine "))]
            env.step(options[(base.steps * 7) % len(options)])
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(base.oracle_action())
            done = terminated or truncated
        assert info["success"] and not truncated


def test_eating_an_ingredient_loses_the_game(pregenerated: None) -> None:
    with gym.make("TextWorld-Cooking-Medium-v0") as env:
        base = env.unwrapped
        env.reset(options={"task_id": 0})
        while not any(command.startswith("eat ") for command in base.available_actions()):
            _, _, _, _, info = env.step(base.oracle_action())
        points = info["points"]
        eat = next(command for command in base.available_actions() if command.startswith("eat "))
        observation, reward, terminated, truncated, info = env.step(eat)
        assert terminated and not truncated and not info["success"]
        assert "You lost" in observation and info["points"] == points and reward == 0.0
        assert info["available_actions"] == []


def test_limited_inventory_games_follow_the_walkthrough(tmp_path: Path) -> None:
    settings = {"recipe": 1, "take": 1, "go": 1, "cut": True, "drop": True}
    env = TextWorldEnv("cooking", settings, cache_dir=tmp_path)
    info, _ = play_oracle(env, 2)
    assert info["success"] and env._state.policy_commands == []  # TextWorld has no policy here
    env.close()


def test_same_task_same_actions_same_text(pregenerated: None) -> None:
    with gym.make("TextWorld-Custom-v0") as env:
        runs = []
        for _ in range(2):
            transcript = [env.reset(options={"task_id": 1})[0]]
            for index in range(8):
                actions = env.unwrapped.available_actions()
                transcript.append(env.step(actions[(index * 5) % len(actions)])[0])
            runs.append(transcript)
        assert runs[0] == runs[1]


def frotz_copies() -> int:
    """How many copies of Jericho's interpreter library are mapped into this process."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    return len({line.split(maxsplit=5)[-1] for line in maps if "libfrotz" in line})


def test_close_unloads_the_interpreter(pregenerated: None) -> None:
    gc.collect()
    before = frotz_copies()
    for _ in range(5):
        env = gym.make("TextWorld-Custom-v0")
        env.reset(options={"task_id": ORACLE_TASKS[0]})
        env.reset(options={"task_id": ORACLE_TASKS[1]})  # a new game replaces the old interpreter
        assert frotz_copies() <= before + 1
        env.close()
        env.close()  # twice is fine
        gc.collect()
    assert frotz_copies() == before


def test_envs_on_several_threads_load_and_play_their_games(pregenerated: None) -> None:
    """The eval runner steps each env on a thread of its own: loading games must not race."""

    def play(env_id: str) -> list[bool]:
        with gym.make(env_id) as env:
            return [play_oracle(env, task_id)[0]["success"] for task_id in ORACLE_TASKS]

    with ThreadPoolExecutor(max_workers=2 * len(IDS)) as pool:
        outcomes = list(pool.map(play, IDS * 2))
    assert outcomes == [[True] * len(ORACLE_TASKS)] * (2 * len(IDS))
