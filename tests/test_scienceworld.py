"""ScienceWorld-v0: task table vs the simulator, oracle per task type, commands, the JVM's life."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator

import gymnasium as gym
import pytest
from episodes import in_turn, play_oracle

import agentgym
from agentgym.environments.scienceworld import SPLITS as REGISTERED_SPLITS
from agentgym.environments.scienceworld.engine import EngineError
from agentgym.environments.scienceworld.env import ScienceWorldEnv
from agentgym.environments.scienceworld.tasks import SPLITS, TASK_NAMES, TASK_TYPES, task_ids, task_of, task_table

pytest.importorskip("scienceworld")
needs_java = pytest.mark.skipif(
    subprocess.run(["which", "java"], capture_output=True).returncode != 0 and not os.environ.get("JAVA_HOME"),
    reason="no Java runtime (apt-get install openjdk-17-jre-headless)",
)


@pytest.fixture(scope="module")
def env() -> Iterator[ScienceWorldEnv]:
    made = gym.make("ScienceWorld-v0")
    yield made.unwrapped
    made.close()


def process_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(") ")[-1].startswith("Z"):  # a zombie has exited
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


# ---- tasks and splits (no JVM) -------------------------------------------------------------


def test_registered_splits_are_the_tables() -> None:
    assert REGISTERED_SPLITS == SPLITS == agentgym.env_info("ScienceWorld-v0").splits
    assert (SPLITS.train, SPLITS.dev, SPLITS.test) == (3592, 1796, 1819)
    assert len(TASK_TYPES) == 30 and len(set(TASK_NAMES)) == 30
    assert sum(task.variations for task in TASK_TYPES) == SPLITS.total == len(task_table())


def test_task_ids_map_to_official_split_variations_once_each() -> None:
    assert Counter(task_table()).most_common(1)[0][1] == 1
    for task_id, (name, variation) in enumerate(task_table()):
        task = next(task for task in TASK_TYPES if task.name == name)
        assert variation in task.split_variations(SPLITS.split_of(task_id))
    # Inside a split the task types take turns: the first 30 ids of each split cover all of them.
    for split in ("train", "dev", "test"):
        first = [task_of(task_id) for task_id in SPLITS.ids(split)[:30]]
        assert [name for name, _ in first] == list(TASK_NAMES)
        assert [variation for _, variation in first] == [task.split_variations(split)[0] for task in TASK_TYPES]


def test_task_ids_of_one_task_type() -> None:
    boil_test = task_ids("boil", "test")
    assert [task_of(task_id) for task_id in boil_test] == [("boil", variation) for variation in range(21, 30)]
    assert all(task_id in SPLITS.ids("test") for task_id in boil_test)
    with pytest.raises(ValueError, match="unknown ScienceWorld task"):
        task_ids("boiling", "test")
    with pytest.raises(ValueError):
        task_of(SPLITS.total)


def test_unknown_simplification_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown ScienceWorld simplifications"):
        ScienceWorldEnv(simplifications="easy,fly")


# ---- against the simulator -----------------------------------------------------------------


@needs_java
def test_task_table_matches_the_simulators_official_split() -> None:
    """The shipped table against the ``scienceworld`` package's own API (its own JVM)."""
    from scienceworld import ScienceWorldEnv as PackageEnv

    package = PackageEnv("", envStepLimit=100)
    try:
        assert sorted(package.get_task_names()) == sorted(TASK_NAMES)
        for task in TASK_TYPES:
            package.load(task.name, 0, "")
            assert package.get_max_variations(task.name) == task.variations
            for split, variations in (
                ("train", package.get_variations_train()),
                ("dev", package.get_variations_dev()),
                ("test", package.get_variations_test()),
            ):
                assert sorted(variations) == list(task.split_variations(split)), (task.name, split)
    finally:
        package.close()


#: The task types whose oracle a run plays: every third, in turn (every type within 3 days; the contract check
#: plays the oracle on tasks of any type every run).
ORACLE_STRIDE = 3


@needs_java
@pytest.mark.parametrize("name", in_turn(list(TASK_NAMES), ORACLE_STRIDE))
def test_oracle_solves_first_test_variation_of_every_task_type(env: ScienceWorldEnv, name: str) -> None:
    """The gold sequence reaches 100 (benchmarks/scienceworld_env.py plays more variations per task type);
    a third of the task types a run, in turn."""
    steps = agentgym.env_info("ScienceWorld-v0").max_episode_steps
    result = play_oracle(gym.wrappers.TimeLimit(env, steps), task_ids(name, "test")[0])
    assert result.success and result.score == 1.0 and abs(result.total_reward - 1.0) < 1e-9, result


@needs_java
def test_first_observation_and_info(env: ScienceWorldEnv) -> None:
    observation, info = env.reset(options={"task_id": 0})
    assert info["task_name"] == "boil" and info["variation"] == 0 and info["split"] == "train"
    assert info["instruction"].startswith("Your task is to boil")
    assert "This room is called the hallway" in observation and env.action_syntax in observation
    assert "available_actions" not in info


@needs_java
def test_invalid_commands(env: ScienceWorldEnv) -> None:
    env.reset(options={"task_id": 0})
    for reply, says in [
        ("xyzzy", "No known action matches that input."),
        ("Action: ", "type a command"),
        ("go " * 200, "commands are short"),
        ("open\x00door", "control characters"),
        ("\ud800", "control characters"),
        ("reset task", "call reset()"),
    ]:
        observation, reward, terminated, truncated, info = env.step(reply)
        assert info["invalid_action"] and reward == 0.0 and not terminated, reply
        assert says in observation
    assert env.engine_score == 0


@needs_java
def test_ambiguous_command_asks_for_a_number(env: ScienceWorldEnv) -> None:
    env.reset(options={"task_id": 0})
    observation, _, _, _, info = env.step("open door")
    assert not info["invalid_action"] and "Ambiguous request" in observation and "0:\topen door between" in observation
    observation, _, _, _, info = env.step("2")
    assert not info["invalid_action"] and "The door is now open." in observation
    assert env.engine.look().count("(that is open)") == 1
    env.step("open door")
    observation, _, _, _, info = env.step("look around")  # not a number: the choice is cancelled
    assert info["invalid_action"] and "Unknown action" in observation


@needs_java
def test_focusing_on_the_wrong_thing_fails_the_task(env: ScienceWorldEnv) -> None:
    env.reset(options={"task_id": 0})
    _, reward, terminated, _, info = env.step("focus on agent")
    assert terminated and not info["success"] and info["score"] == 0.0 and reward == 0.0
    assert info["engine_score"] < 0


@needs_java
def test_oracle_is_a_walkthrough_from_the_start(env: ScienceWorldEnv) -> None:
    env.reset(options={"task_id": task_ids("find-animal", "dev")[0]})
    gold = env.gold_actions()
    assert env.oracle_action() == gold[0]
    env.step("look at agent")  # not the gold step: the walkthrough stays where it was
    assert env.oracle_action() == gold[0]
    env.step(gold[0])
    assert env.oracle_action() == gold[1]


@needs_java
def test_available_actions_on_request() -> None:
    with gym.make("ScienceWorld-v0", list_actions=True) as made:
        _, info = made.reset(options={"task_id": 0})
        actions = info["available_actions"]
        assert "look around" in actions and "open door to kitchen" in actions and "reset task" not in actions
        assert actions == sorted(set(actions))
        command = made.unwrapped.random_action(random.Random(0))
        _, _, _, _, info = made.step(command)
        assert command in actions and not info["invalid_action"]


@needs_java
def test_easy_simplifications_add_teleport() -> None:
    with gym.make("ScienceWorld-v0", simplifications="easy") as made:
        observation, _ = made.reset(options={"task_id": 0})
        assert "teleport to OBJ" in observation
        observation, _, _, _, info = made.step("teleport to kitchen")
        assert not info["invalid_action"] and "You teleport to the kitchen." in observation


@needs_java
def test_episodes_are_the_same_in_another_jvm(env: ScienceWorldEnv) -> None:
    """Ambiguity choices pick the same object in every JVM (constant identity hashes)."""
    script = ["open door to kitchen", "go to kitchen", "pick up seed jar", "move apple seed to inventory", "3"]
    script += ["look at inventory", "open door", "1", "wait1", "look around"]

    def play(player: ScienceWorldEnv) -> list:
        trajectory = [player.reset(options={"task_id": task_ids("grow-plant", "train")[2]})]
        trajectory += [player.step(command) for command in script]
        return trajectory

    other = ScienceWorldEnv()
    try:
        assert play(env) == play(other)
    finally:
        other.close()


# ---- the JVM's life ------------------------------------------------------------------------


@needs_java
def test_one_jvm_reused_across_resets_and_stopped_by_close() -> None:
    made = gym.make("ScienceWorld-v0")
    base = made.unwrapped
    assert base.engine is None  # nothing started before the first reset
    made.reset(options={"task_id": 5})
    pid = base.engine.pid
    made.reset(options={"task_id": 6})
    made.step("look around")
    assert base.engine.pid == pid
    made.close()
    assert process_gone(pid) and base.engine is None


@needs_java
def test_jvm_dies_with_its_python_process() -> None:
    code = textwrap.dedent(
        """
        import os, signal, gymnasium as gym, agentgym
        env = gym.make("ScienceWorld-v0")
        env.reset(options={"task_id": 0})
        print(env.unwrapped.engine.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300).stdout
    assert process_gone(int(output.split()[0]))


@needs_java
def test_killed_jvm_gives_a_clear_error_and_reset_recovers() -> None:
    with gym.make("ScienceWorld-v0") as made:
        made.reset(options={"task_id": 0})
        pid = made.unwrapped.engine.pid
        os.kill(pid, signal.SIGKILL)
        assert process_gone(pid)
        with pytest.raises(EngineError, match="died"):
            made.step("look around")
        _, info = made.reset(options={"task_id": 0})
        assert made.unwrapped.engine.pid != pid and info["task_name"] == "boil"


def test_missing_java_says_how_to_install_it(tmp_path) -> None:  # noqa: ANN001
    code = textwrap.dedent(
        """
        import gymnasium as gym, agentgym
        from agentgym.environments.scienceworld.engine import JavaNotFoundError
        env = gym.make("ScienceWorld-v0")
        try:
            env.reset(options={"task_id": 0})
        except JavaNotFoundError as error:
            print(error)
        """
    )
    environment = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    environment["PATH"] = str(tmp_path)  # no java there
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120)
    assert "install Java 17, e.g. apt-get install openjdk-17-jre-headless" in output.stdout, output.stderr
    environment["JAVA_HOME"] = str(tmp_path / "no-such-jdk")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120)
    assert "JAVA_HOME" in output.stdout and "openjdk-17-jre-headless" in output.stdout, output.stderr
