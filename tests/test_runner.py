"""The evaluation runner: planning, records, resume after kill -9, failing envs and policies."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentgym
from agentgym.contract.core import TaskSplits, TextEnv
from agentgym.contract.registry import env_info
from agentgym.evaluation.plan import plan
from agentgym.evaluation.records import Tokens
from agentgym.evaluation.results import EPISODES_FILE, read_episodes, read_run
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy, RandomPolicy
from agentgym.llm.policies.base import Episode, Message, Policy, Reply


class CountdownEnv(TextEnv):
    """Say 'go' three times to win. Task ids that are multiples of 3 misbehave on step 2."""

    splits = TaskSplits(train=30, dev=3, test=30)
    misbehaviour = "none"

    @property
    def action_syntax(self) -> str:
        return "Say 'go'."

    def _generate(self, task_id: int) -> str:
        self.left = 3
        return f"Task {task_id}: say go three times."

    def _describe(self) -> str:
        return f"{self.left} to go."

    def _execute(self, command: str) -> str:
        if self.task_id % 3 == 0 and self.left == 2:
            if self.misbehaviour == "crash":
                raise RuntimeError("the engine fell over")
            if self.misbehaviour == "hang":
                time.sleep(30)
        if command != "go":
            from agentgym.contract.core import InvalidAction

            raise InvalidAction("say go")
        self.left -= 1
        self.score = (3 - self.left) / 3
        self.terminated = self.success = self.left == 0
        return "Going."

    def oracle_action(self) -> str:
        return "go"

    def available_actions(self) -> list[str]:
        return ["go", "stop"]


class CrashingEnv(CountdownEnv):
    misbehaviour = "crash"


class HangingEnv(CountdownEnv):
    misbehaviour = "hang"


class SlowFirstUseEnv(CountdownEnv):
    """Inline-safe, but its oracle's first call builds a table for a second (as Wordle's solver does); records the
    env and the thread of every step."""

    metadata = {**CountdownEnv.metadata, "inline_safe": True}
    table: dict[str, float] = {}
    step_threads: list[tuple[int, str]] = []

    def _execute(self, command: str) -> str:
        self.step_threads.append((id(self), threading.current_thread().name))
        return super()._execute(command)

    def oracle_action(self) -> str:
        if not self.table:
            time.sleep(1.0)
            self.table["built"] = time.monotonic()
        return "go"


class LongInlineEnv(CountdownEnv):
    """Inline-safe; an episode is 800 steps of a millisecond each."""

    metadata = {**CountdownEnv.metadata, "inline_safe": True}

    def _generate(self, task_id: int) -> str:
        self.left = 800
        return "Say go 800 times."

    def _execute(self, command: str) -> str:
        until = time.perf_counter() + 0.001
        while time.perf_counter() < until:  # a millisecond of the env's own work
            pass
        self.left -= 1
        self.terminated = self.success = self.left == 0
        self.score = float(self.success)
        return "Going."


class FlakyPolicy(Policy):
    """The oracle, except that it fails on task ids ending in 5."""

    name = "flaky"

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        if episode.env.task_id % 10 == 5:
            raise ConnectionError("model server went away")
        return Reply("Action: go", prompt_tokens=10, completion_tokens=2)


@pytest.fixture(scope="module", autouse=True)
def registered_envs() -> Iterator[None]:
    """The runner's test envs (family ``test``), registered for this module."""
    envs = [("Countdown-v0", CountdownEnv), ("Crashing-v0", CrashingEnv), ("Hanging-v0", HangingEnv)]
    envs += [("SlowFirstUse-v0", SlowFirstUseEnv), ("LongInline-v0", LongInlineEnv)]
    for name, env_class in envs:
        agentgym.register(
            name,
            entry_point=f"{__name__}:{env_class.__name__}",
            family="test",
            description="runner test env",
            splits=env_class.splits,
            max_episode_steps=1000 if env_class is LongInlineEnv else 10,
        )
    yield
    for name, _ in envs:
        agentgym.contract.registry.unregister(name)


def evaluate(policy: Policy, items: list[EvalItem], out: Path, **options: object):
    return asyncio.run(run_eval(policy.name, policy, items, out, **options))


def test_plan_covers_the_split_and_repeats_beyond_it() -> None:
    planned = plan([EvalItem("Countdown-v0", 35, split="test")], seed=1)
    assert len({episode.key for episode in planned}) == 35
    assert [episode.task_id for episode in planned[:2]] == [33, 34]
    assert planned[30].task_id == 33 and planned[30].repeat == 1
    assert plan([EvalItem("Countdown-v0", 35, split="test")], seed=1) == planned
    assert plan([EvalItem("Countdown-v0", 35, split="test")], seed=2)[0].seed != planned[0].seed


def test_oracle_run_writes_complete_records(tmp_path: Path) -> None:
    items = [EvalItem("Sokoban-v0", 6), EvalItem("FrozenLake-v0", 6, kwargs={"is_slippery": True})]
    stats = evaluate(OraclePolicy(), items, tmp_path, concurrency=4)
    assert stats.played == 12 and stats.errored == 0 and stats.skipped == 0
    episodes = read_episodes(tmp_path)
    assert {record.env for record in episodes.values()} == {"Sokoban-v0", "FrozenLake-v0[is_slippery=True]"}
    sokoban = [record for record in episodes.values() if record.env == "Sokoban-v0"]
    assert all(record.success and record.score == 1.0 and record.status == "ok" for record in sokoban)
    record = sokoban[0]
    assert record.steps == len(record.turns) and record.terminated
    assert [message["role"] for message in record.messages][:3] == ["system", "user", "assistant"]
    assert len(record.messages) == 2 + 2 * record.steps
    assert record.instruction in record.messages[1]["content"]
    assert record.turns[0].action in ("up", "down", "left", "right")
    assert "available_actions" in record.turns[0].info
    run = read_run(tmp_path)
    assert run["policy"] == "oracle" and [item["env"] for item in run["items"]] == ["Sokoban-v0", "FrozenLake-v0"]


def eval_beside_a_ticker(items: list[EvalItem], out: Path, concurrency: int, tick_s: float) -> list[float]:
    """Run the oracle on ``items`` while a task on the same event loop ticks every ``tick_s``: the gaps between
    its ticks (how long the loop stood still at most, and so every other episode and run sharing it)."""
    gaps: list[float] = []

    async def main() -> None:
        done = asyncio.Event()

        async def tick() -> None:
            last = time.monotonic()
            while not done.is_set():
                await asyncio.sleep(tick_s)
                gaps.append(time.monotonic() - last)
                last = time.monotonic()

        ticker = asyncio.create_task(tick())
        stats = await run_eval("oracle", OraclePolicy(), items, out, concurrency=concurrency)
        done.set()
        await ticker
        assert stats.played == sum(item.episodes for item in items) and stats.errored == 0

    asyncio.run(main())
    return gaps


def test_an_inline_safe_envs_first_turn_runs_off_the_event_loop_then_it_goes_inline(tmp_path: Path) -> None:
    """A first use that takes a second (imports, a solver's table) does not stop the loop that every other episode
    and run shares; after its first turn each env is stepped inline, also when its id's episodes began together."""
    SlowFirstUseEnv.step_threads.clear()
    gaps = eval_beside_a_ticker([EvalItem("SlowFirstUse-v0", 4)], tmp_path, concurrency=2, tick_s=0.01)
    assert SlowFirstUseEnv.table, "the oracle's first call ran"
    assert max(gaps) < 0.5  # the 1-second first call ran on the env's thread
    threads: dict[int, list[str]] = {}
    for env, name in SlowFirstUseEnv.step_threads:
        threads.setdefault(env, []).append(name)
    assert len(threads) == 2 and sum(map(len, threads.values())) == 12  # two envs at once, four episodes of 3 steps
    for first, *later in threads.values():
        assert first.startswith("env-SlowFirstUse") and later == ["MainThread"] * len(later)


def test_an_inline_episode_gives_the_event_loop_turns_while_it_plays(tmp_path: Path) -> None:
    """An inline episode does not hold the loop to its end (0.8 s here): the loop takes up other work every few
    milliseconds, as the replies of episodes on threads, browsers and servers need."""
    gaps = eval_beside_a_ticker([EvalItem("LongInline-v0", 2)], tmp_path, concurrency=1, tick_s=0)
    assert all(record.success and record.steps == 800 for record in read_episodes(tmp_path).values())
    assert max(gaps) < 0.2, max(gaps)


def test_same_command_resumes_and_other_config_is_refused(tmp_path: Path) -> None:
    items = [EvalItem("Countdown-v0", 8)]
    evaluate(RandomPolicy(), items, tmp_path)
    again = evaluate(RandomPolicy(), items, tmp_path)
    assert again.played == 0 and again.skipped == 8
    more = evaluate(RandomPolicy(), [EvalItem("Countdown-v0", 10)], tmp_path / "other")
    assert more.played == 10
    with pytest.raises(ValueError, match="different run"):
        evaluate(OraclePolicy(), items, tmp_path)


def test_random_policy_is_reproducible(tmp_path: Path) -> None:
    items = [EvalItem("Sokoban-v0", 4)]
    evaluate(RandomPolicy(), items, tmp_path / "a", concurrency=4)
    evaluate(RandomPolicy(), items, tmp_path / "b", concurrency=1)

    def actions(folder: Path) -> dict[str, list[str]]:
        return {key: [turn.action for turn in record.turns] for key, record in read_episodes(folder).items()}

    assert actions(tmp_path / "a") == actions(tmp_path / "b")


def test_crashing_and_hanging_envs_do_not_stop_the_run(tmp_path: Path) -> None:
    items = [EvalItem("Crashing-v0", 6), EvalItem("Hanging-v0", 6), EvalItem("Countdown-v0", 6)]
    clock = time.monotonic()
    stats = evaluate(OraclePolicy(), items, tmp_path, concurrency=8, env_timeout_s=1.0)
    assert time.monotonic() - clock < 20
    episodes = read_episodes(tmp_path)
    assert len(episodes) == 18 and stats.played == 18
    for record in episodes.values():
        broken = record.task_id % 3 == 0 and record.env != "Countdown-v0"
        assert (record.status == "error") == broken, record.key
        if broken:
            assert not record.success and record.score == 0.0
        else:
            assert record.success
    errors = {record.env: record.error for record in episodes.values() if record.status == "error"}
    assert "RuntimeError: the engine fell over" in errors["Crashing-v0"]
    assert "timeout" in errors["Hanging-v0"]


def test_errored_episodes_are_kept_or_retried(tmp_path: Path) -> None:
    items = [EvalItem("Countdown-v0", 12)]
    stats = evaluate(FlakyPolicy(), items, tmp_path, concurrency=3)
    episodes = read_episodes(tmp_path)
    failed = {key for key, record in episodes.items() if record.status == "error"}
    assert stats.errored == len(failed) == 1  # task 35 of test ids 33..44
    assert "policy ConnectionError: model server went away" in episodes[failed.pop()].error
    ok = [record for record in episodes.values() if record.status == "ok"]
    assert all(record.tokens == Tokens(prompt=30, completion=6) for record in ok)
    assert evaluate(FlakyPolicy(), items, tmp_path).played == 0
    assert evaluate(FlakyPolicy(), items, tmp_path, retry_errors=True).played == 1
    lines = (tmp_path / EPISODES_FILE).read_text().splitlines()
    assert len(lines) == 13 and len(read_episodes(tmp_path)) == 12


def test_partial_last_line_is_cut_on_resume(tmp_path: Path) -> None:
    items = [EvalItem("Countdown-v0", 5)]
    evaluate(OraclePolicy(), items, tmp_path)
    path = tmp_path / EPISODES_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + lines[3][:40])  # a crash in the middle of a write
    assert len(read_episodes(tmp_path)) == 3
    assert evaluate(OraclePolicy(), items, tmp_path).played == 2
    assert len(path.read_text().splitlines()) == 5 and all(json.loads(line) for line in path.read_text().splitlines())


def test_kill_9_during_eval_then_resume_completes_without_duplicates(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "agentgym.cli",
        "eval",
        "--env",
        "Sokoban-2Boxes-v0",
        "--episodes",
        "400",
        "--split",
        "train",
        "--policy",
        "random",
        "--concurrency",
        "16",
        "--out",
        str(out),
        "--no-progress",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    episodes_path = out / EPISODES_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if episodes_path.exists() and episodes_path.read_bytes().count(b"\n") >= 30:
            break
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    written = episodes_path.read_bytes().count(b"\n")
    assert 30 <= written < 400, "the run should have been killed mid-way"

    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{written} were already done" in resumed.stdout
    keys = [json.loads(line)["key"] for line in episodes_path.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 400
    assert set(keys) == {episode.key for episode in plan([EvalItem("Sokoban-2Boxes-v0", 400, split="train")], 0)}


def test_suites_cover_every_registered_env() -> None:
    """full: every id; quick: every family; ALFWorld-v0 (the user's game files) has a suite of its own."""
    from agentgym.evaluation.suites import load_suite, suite_names

    assert {"quick", "full", "alfworld"} <= set(suite_names())
    offline = [info for info in agentgym.list_envs() if info.family not in ("test", "alfworld")]
    assert {item.env for item in load_suite("full").items} == {info.id for info in offline}
    assert {env_info(item.env).family for item in load_suite("quick").items} == {info.family for info in offline}
    assert {item.env for item in load_suite("alfworld").items} == {"ALFWorld-v0"}
    assert all(item.episodes == 1_000 for item in load_suite("full").items if item.env == "Sokoban-v0")
