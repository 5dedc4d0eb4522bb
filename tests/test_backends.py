"""Backends: ``gym.make(ID, backend=...)``, and the process backend's server subprocess from start to cleanup."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.wrappers import RenderCollection
from processes import alive
from test_server import PUZZLES, assert_same_transitions, trajectory

import agentgym
from agentgym.contract.core import TextEnv
from agentgym.contract.registry import inline_safe
from agentgym.evaluation.results import read_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy, RandomPolicy
from agentgym.serving.backends.process import ServerProcess
from agentgym.serving.client import RemoteEnv


def wait_until_gone(pid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def server_children() -> list[int]:
    """The env servers this process started that still run."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if ppid == os.getpid() and b"agentgym.serving.server" in command and alive(int(stat.parent.name)):
            children.append(int(stat.parent.name))
    return children


@pytest.mark.parametrize(("env_id", "kwargs"), PUZZLES)
def test_process_backend_plays_the_same_episodes_as_local(env_id: str, kwargs: dict[str, Any]) -> None:
    local, remote = gym.make(env_id, **kwargs), gym.make(env_id, backend="process", **kwargs)
    try:
        assert isinstance(remote.unwrapped, RemoteEnv) and remote.spec.max_episode_steps == local.spec.max_episode_steps
        assert repr(remote.observation_space) == repr(local.observation_space)
        test_task = agentgym.env_info(env_id).splits.ids("test")[2]
        assert_same_transitions(trajectory(remote, test_task, seed=7), trajectory(local, test_task, seed=7))
    finally:
        remote.close()


def test_step_limits_are_applied_where_gym_make_applies_them() -> None:
    """Wordle's registered limit is 20; a larger one given to gym.make holds on both backends."""
    runs = []
    for backend in ("process", "local"):
        env = gym.make("Wordle-v0", backend=backend, max_episode_steps=25)
        runs.append([env.reset(seed=0, options={"task_id": 3})] + [env.step("Action: ?") for _ in range(25)])
        env.close()
    assert_same_transitions(*runs)
    assert [transition[3] for transition in runs[0][1:]] == [False] * 24 + [True]


def test_ids_dispatch_through_backends_and_keep_their_real_entry_points() -> None:
    info = agentgym.env_info("Sokoban-2Boxes-v0")
    assert info.entry_point == "agentgym.environments.sokoban.env:SokobanEnv"
    assert gym.spec("Sokoban-2Boxes-v0").entry_point == "agentgym.serving.backends:Sokoban-2Boxes-v0"
    for env in (gym.make("Sokoban-2Boxes-v0"), gym.make("Sokoban-2Boxes-v0", backend="local")):
        assert isinstance(env.unwrapped, TextEnv) and env.unwrapped.num_boxes == 2
        again = gym.make(EnvSpec.from_json(env.spec.to_json()))  # the spec stays JSON-serialisable
        assert type(again.unwrapped) is type(env.unwrapped)
    collecting = gym.make("Sokoban-v0", render_mode="ansi_list")  # Gymnasium reads the real class's render modes
    assert isinstance(collecting, RenderCollection)
    collecting.reset(options={"task_id": 0})
    collecting.step("up")
    assert len(collecting.render()) == 2
    with pytest.raises(ValueError, match="unknown backend 'nope'; known backends: local, process, docker"):
        gym.make("Sokoban-v0", backend="nope")
    assert inline_safe("Sokoban-v0") and not inline_safe("Sokoban-v0", {"backend": "process"})


def test_importing_agentgym_and_making_a_local_env_loads_no_server_or_http_code() -> None:
    code = (
        "import sys, gymnasium as gym, agentgym\n"
        "gym.make('Maze-v0').reset(options={'task_id': 0})\n"
        "print(sorted(m for m in ('fastapi', 'uvicorn', 'httpx', 'agentgym.serving.server', 'agentgym.serving.client') "
        "if m in sys.modules))\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def test_closing_a_process_env_stops_its_server() -> None:
    env = gym.make("Maze-v0", backend="process")
    pid = env.unwrapped.owned_server.pid
    env.reset(options={"task_id": 0})
    assert alive(pid)
    env.close()
    assert not alive(pid)
    env.close()


MAKE_AND_REPORT = (
    "import sys, time, gymnasium as gym, agentgym\n"
    "env = gym.make('Sokoban-v0', backend='process')\n"
    "env.reset(options={'task_id': 0})\n"
    "print(env.unwrapped.owned_server.pid, flush=True)\n"
)


def test_the_server_stops_when_the_interpreter_exits_without_closing() -> None:
    output = subprocess.run([sys.executable, "-c", MAKE_AND_REPORT], capture_output=True, text=True, check=True)
    assert wait_until_gone(int(output.stdout))


def test_the_server_stops_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", MAKE_AND_REPORT + "time.sleep(120)\n"], stdout=subprocess.PIPE, text=True
    )
    try:
        server_pid = int(parent.stdout.readline())
        assert alive(server_pid)
        parent.send_signal(signal.SIGKILL)  # no atexit, no finalizers: only the lifeline pipe closes
        parent.wait()
        assert wait_until_gone(server_pid)
    finally:
        parent.kill()
        parent.stdout.close()


def test_a_server_that_cannot_start_is_reported_with_its_output() -> None:
    with pytest.raises(RuntimeError, match="no registered env id matches 'Nope-v0'"):
        ServerProcess(["Nope-v0"])


def test_eval_runner_on_the_process_backend_plays_the_episodes_local_envs_play(tmp_path: Path) -> None:
    """Every episode of an eval on process envs, replayed on a local env, gives the same turns.

    (The runner's episode seeds derive from the item's label, which includes ``backend``,
    so the episodes are compared with local replays at their own seeds.)
    """
    runs = [
        (OraclePolicy(), [EvalItem("Sokoban-v0", 3), EvalItem("FrozenLake-v0", 3, kwargs={"is_slippery": True})]),
        (RandomPolicy(), [EvalItem("Maze-v0", 2, max_turns=15)]),
    ]
    for index, (policy, items) in enumerate(runs):
        items = [EvalItem(**{**vars(item), "kwargs": {**item.kwargs, "backend": "process"}}) for item in items]
        asyncio.run(run_eval(policy.name, policy, items, tmp_path / str(index), concurrency=2))
        records = read_episodes(tmp_path / str(index)).values()
        assert len(records) == sum(item.episodes for item in items)
        for record in records:
            assert record.status == "ok" and (record.success or policy.name == "random")
            kwargs = {key: value for key, value in record.env_kwargs.items() if key != "backend"}
            env = gym.make(record.env_id, max_episode_steps=15 if policy.name == "random" else None, **kwargs)
            observation, _ = env.reset(seed=record.seed, options={"task_id": record.task_id})
            observations, rng = [observation], random.Random(record.seed)
            for turn in record.turns:
                base = env.unwrapped
                action = base.oracle_action() if policy.name == "oracle" else base.random_action(rng)
                observation, reward, terminated, truncated, _ = env.step(action)
                observations.append(observation)
                assert (turn.action, turn.reward, turn.terminated, turn.truncated) == (
                    action,
                    reward,
                    terminated,
                    truncated,
                )
            assert observations == [message["content"] for message in record.messages if message["role"] == "user"]
    assert all(wait_until_gone(pid) for pid in server_children())  # the runner closes envs without waiting
