"""A short soak of ``agentgym serve`` (families with native or external parts, churned for a minute)
that fails when the server's process tree grows from rest to rest; and faults that must leave it serving."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from asgi import serving_in_thread

import agentgym
from agentgym.contract.core import INFRA_ERROR_KEY
from agentgym.environments.sokoban.env import SokobanEnv
from agentgym.serving.backends.process import ServerProcess
from agentgym.serving.client import RemoteEnv, RemoteEnvError
from agentgym.serving.server import create_app
from benchmarks.soak_harness import Churn, GrowthBounds, SoakReport, growth_failures, kill_children, soak

#: Sessions per env id: puzzles, WebShop's index, TextWorld's engine, ScienceWorld's JVM, the sandbox, Chromium.
MIX = {
    "Sokoban-v0": 6,
    "WebShop-v0": 3,
    "TextWorld-Cooking-Easy-v0": 2,
    "ScienceWorld-v0": 1,
    "Bash-v0": 2,
    "MiniWoB-click-button-v0": 2,
}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    process = ServerProcess(list(MIX), max_sessions=64, session_ttl_s=10.0, startup_timeout_s=300)
    yield process
    process.stop()


def test_a_short_soak_leaves_nothing_behind(server: ServerProcess) -> None:
    churn = Churn(max_episodes=2, max_steps=6)
    report = asyncio.run(soak(server.url, server.pid, MIX, cycles=3, cycle_s=20.0, rest_timeout_s=120, churn=churn))
    assert not report.errors, report.error_examples
    for env_id in MIX:
        assert report.steps[env_id] > 0 and report.sessions_opened[env_id] >= MIX[env_id], env_id
    assert sum(report.sessions_abandoned.values()) > 0  # left to the reaper: the rests found none of them
    assert growth_failures(report, GrowthBounds(rss_mib=48, threads=2, fds=8, children=0)) == []
    assert httpx.get(f"{server.url}/health").status_code == 200


class SlowResetSokoban(SokobanEnv):
    """Sokoban whose reset takes longer than a soak cycle, as a JVM's start does on a loaded machine."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):  # type: ignore[override]
        time.sleep(1.5)
        return super().reset(seed=seed, options=options)


def test_an_env_whose_reset_outlasts_the_cycle_is_still_stepped() -> None:
    agentgym.register(
        "SlowResetSokoban-v0",
        entry_point=f"{__name__}:SlowResetSokoban",
        family="test",
        description="soak test env",
        splits=SokobanEnv.splits,
        max_episode_steps=10,
    )
    try:
        with serving_in_thread(create_app(["SlowResetSokoban-v0"], session_ttl_s=5.0)) as url:
            churn = Churn(max_episodes=1, max_steps=3, abandon_probability=0.0, close_probability=1.0)
            report = asyncio.run(
                soak(
                    url, os.getpid(), {"SlowResetSokoban-v0": 2}, cycles=2, cycle_s=0.5, rest_timeout_s=30, churn=churn
                )
            )
    finally:
        agentgym.contract.registry.unregister("SlowResetSokoban-v0")
    assert not report.errors, report.error_examples
    assert report.sessions_opened["SlowResetSokoban-v0"] >= 4  # two workers, two cycles
    assert report.steps["SlowResetSokoban-v0"] >= 4  # each reset episode took its first step


def test_a_server_that_exits_ends_the_soak_with_what_was_measured() -> None:
    """The server killed in the middle of the second cycle: the soak ends there (an event says so) instead of
    crashing, keeping the first cycle's rest and its samples, which the checkpoint had handed over already."""
    process = ServerProcess(["Sokoban-v0"], max_sessions=16, session_ttl_s=1.0, startup_timeout_s=120)
    checkpoints: list[str] = []

    def kill_server() -> dict:
        os.kill(process.pid, signal.SIGKILL)
        return {"fault": "kill the server", "pid": process.pid}

    try:
        report = asyncio.run(
            soak(
                process.url,
                process.pid,
                {"Sokoban-v0": 2},
                cycles=3,
                cycle_s=2.0,
                rest_timeout_s=30,
                sample_every_s=0.2,
                faults={1: kill_server},
                checkpoint=lambda report: checkpoints.append(json.dumps(report.as_json())),
            )
        )
    finally:
        process.stop()
    assert [event["fault"] for event in report.events] == ["kill the server", "server exited"]
    assert [rest["cycle"] for rest in report.rests] == [-1, 0] and len(checkpoints) == 1
    assert report.steps["Sokoban-v0"] > 0 and any(sample["cycle"] == 1 for sample in report.samples)
    saved = SoakReport.from_json(json.loads(checkpoints[0]))
    assert saved.rests == report.rests and saved.steps["Sokoban-v0"] > 0 and isinstance(saved.steps, type(report.steps))


def test_a_killed_jvm_ends_its_session_with_a_clear_error_and_the_server_goes_on(server: ServerProcess) -> None:
    victim, bystander = RemoteEnv(server.url, "ScienceWorld-v0"), RemoteEnv(server.url, "Sokoban-v0")
    victim.reset(seed=1)
    bystander.reset(seed=1)
    assert kill_children(server.pid, "java")
    with pytest.raises(RemoteEnvError, match="EnvError.*ScienceWorld JVM .* died") as failed:
        victim.step("look around")
    assert failed.value.status == 500
    assert bystander.step("Action: up")[0]  # the other sessions go on
    victim.reset(seed=2)  # a new session, with a new JVM
    assert "look around" in victim.step("look around")[4]["action"]
    for env in (victim, bystander):
        env.close()
    assert httpx.get(f"{server.url}/health").status_code == 200


def test_a_killed_browser_ends_the_episode_as_an_infrastructure_error(server: ServerProcess) -> None:
    victim = RemoteEnv(server.url, "MiniWoB-click-button-v0")
    victim.reset(seed=1)
    assert kill_children(server.pid, "chromium")  # every browser: the victim's is one of them
    observation, reward, terminated, _, info = victim.step(victim.oracle_action())
    assert terminated and reward == 0.0 and "The browser failed" in observation["text"]
    assert info[INFRA_ERROR_KEY]  # the runner retries it: not the agent's failure
    fresh = RemoteEnv(server.url, "MiniWoB-click-button-v0")  # a new browser serves new sessions
    fresh.reset(seed=2)
    assert fresh.step(fresh.oracle_action())[1] > 0
    for env in (victim, fresh):
        env.close()


def test_a_killed_sandbox_command_is_an_exit_code_and_the_session_goes_on(server: ServerProcess) -> None:
    env = RemoteEnv(server.url, "Bash-v0")
    env.reset(seed=1)
    killed: list[int] = []

    def kill_the_sandbox() -> None:
        deadline = time.monotonic() + 10
        while not killed and time.monotonic() < deadline:
            killed.extend(kill_children(server.pid, "bwrap"))
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_sandbox)
    killer.start()
    observation = env.step("Action: sleep 8; echo finished")[0]
    killer.join()
    assert killed and "[exit code 137]" in observation and "finished" not in observation
    assert "hello" in env.step("Action: echo hello")[0]
    env.close()
