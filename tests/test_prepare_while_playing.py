"""Preparing and playing at once (issue 49): the runner prepares the tasks a run plays in the background,
a bounded number at once, while the episodes of ready ids play; an episode never plays on an env that is
not ready (it waits, or its id's failed preparation is recorded as its error), and finished work is kept.

The slow preparation is a sleep standing in for a site install; the envs are registered here.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import pytest

import agentgym
from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv
from agentgym.evaluation.preparation import Preparations, prepare_items
from agentgym.evaluation.results import read_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy

#: Seconds the slow preparation takes (unless :data:`FAST_DONE` is set first).
PREPARE_S = 1.5
#: Set when the fast id's episodes have all finished: the slow preparation then ends.
FAST_DONE = threading.Event()
#: What the hooks saw: (label, task ids, start, end) per preparation.
PREPARED: list[tuple[str, list[int] | None, float, float]] = []
_lock = threading.Lock()
BROKEN = {"broken": True}


def prepare_slow(env_id: str, kwargs: dict[str, Any], report: Any, task_ids: Collection[int] | None = None) -> None:
    """A per-task preparation that takes :data:`PREPARE_S`."""
    started = time.monotonic()
    report(f"installing for {len(task_ids or ())} tasks ...")
    FAST_DONE.wait(PREPARE_S)
    with _lock:
        PREPARED.append((env_id, None if task_ids is None else list(task_ids), started, time.monotonic()))


def prepare_slow_too(env_id: str, kwargs: dict[str, Any], report: Any, task_ids: Collection[int] | None = None) -> None:
    """Another family's slow preparation (another hook)."""
    prepare_slow(env_id, kwargs, report, task_ids)


def prepare_broken(env_id: str, kwargs: dict[str, Any], report: Any) -> None:
    """A whole-id preparation that fails while :data:`BROKEN` says so."""
    time.sleep(0.2)
    if BROKEN["broken"]:
        raise RuntimeError("the site would not install")


#: Episodes of :class:`OneAtATimeEnv` in flight now, and the most there were at once.
IN_FLIGHT = {"now": 0, "most": 0}


class SayGoEnv(TextEnv):
    """Say 'go' to win."""

    splits = TaskSplits(train=4, dev=2, test=8)

    @property
    def action_syntax(self) -> str:
        return "Say 'go'."

    def _generate(self, task_id: int) -> str:
        return f"Task {task_id}: say go."

    def _describe(self) -> str:
        return "Say go."

    def _execute(self, command: str) -> str:
        if command != "go":
            raise InvalidAction("say go")
        self.terminated = self.success = True
        self.score = 1.0
        return "Gone."

    def oracle_action(self) -> str:
        return "go"


class OneAtATimeEnv(SayGoEnv):
    """A family that holds one episode at a time (``max_concurrency`` 1); counts its episodes in flight."""

    def _generate(self, task_id: int) -> str:
        with _lock:
            IN_FLIGHT["now"] += 1
            IN_FLIGHT["most"] = max(IN_FLIGHT["most"], IN_FLIGHT["now"])
        return super()._generate(task_id)

    def _execute(self, command: str) -> str:
        time.sleep(0.05)
        with _lock:
            IN_FLIGHT["now"] -= 1
        return super()._execute(command)


ENVS = {
    "OneAtATime-v0": {"entry_point": f"{__name__}:OneAtATimeEnv", "max_concurrency": 1},
    "SlowReady-v0": {"prepare": f"{__name__}:prepare_slow"},
    "SlowReadyToo-v0": {"prepare": f"{__name__}:prepare_slow_too"},
    "SlowReadyTwin-v0": {"prepare": f"{__name__}:prepare_slow"},
    "SlowestReady-v0": {"prepare": f"{__name__}:prepare_slow_too", "prepare_s": 300.0},
    "NeverReady-v0": {"prepare": f"{__name__}:prepare_broken"},
    "Ready-v0": {},
}


@pytest.fixture(scope="module", autouse=True)
def registered_envs() -> Iterator[None]:
    for env_id, extra in ENVS.items():
        agentgym.register(
            env_id,
            **{"entry_point": f"{__name__}:SayGoEnv", **extra},
            family=env_id.lower(),
            description="prepare-while-playing test env",
            splits=SayGoEnv.splits,
            max_episode_steps=3,
        )
    yield
    for env_id in ENVS:
        agentgym.contract.registry.unregister(env_id)


@pytest.fixture(autouse=True)
def fresh() -> None:
    PREPARED.clear()
    BROKEN["broken"] = True
    FAST_DONE.clear()


def evaluate(items: list[EvalItem], out: Path, **options: Any) -> tuple[Any, dict[str, float]]:
    """Run the oracle; returns the stats and, per episode key, when it finished (monotonic clock). Once every
    episode of ``Ready-v0`` has finished, :data:`FAST_DONE` is set."""
    finished: dict[str, float] = {}
    fast = sum(item.episodes for item in items if item.env == "Ready-v0")
    FAST_DONE.clear()

    def on_episode(record: Any) -> None:
        finished[record.key] = time.monotonic()
        fast_done = [key for key in finished if key.startswith("Ready-v0/")]
        if fast and len(fast_done) == fast:
            FAST_DONE.set()

    stats = asyncio.run(run_eval("oracle", OraclePolicy(), items, out, on_episode=on_episode, **options))
    return stats, finished


def test_ready_ids_play_while_a_slow_id_prepares_and_its_episodes_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slow preparation lasts until the fast id's episodes have all finished (at most a minute): they
    finish while it prepares, and the slow id's episodes only after it."""
    monkeypatch.setattr(sys.modules[__name__], "PREPARE_S", 60.0)
    statuses: list[tuple[int, int, tuple[str, ...]]] = []
    stats, finished = evaluate(
        [EvalItem("SlowReady-v0", 2), EvalItem("Ready-v0", 6)],
        tmp_path,
        concurrency=4,
        on_preparing=lambda preparations: statuses.append(
            (preparations.done, preparations.total, tuple(preparations.running))
        ),
    )
    assert stats.played == 8 and stats.errored == 0
    ((label, task_ids, _, prepared_at),) = PREPARED
    test_ids = agentgym.env_info("SlowReady-v0").splits.ids("test")
    assert label == "SlowReady-v0" and task_ids == [test_ids[0], test_ids[1]]  # only the tasks the run plays
    records = read_episodes(tmp_path)
    fast = [finished[key] for key, record in records.items() if record.env_id == "Ready-v0"]
    slow = [finished[key] for key, record in records.items() if record.env_id == "SlowReady-v0"]
    assert FAST_DONE.is_set() and max(fast) <= prepared_at <= min(slow)  # the fast id finished while it prepared
    assert all(record.status == "ok" and record.success for record in records.values())
    assert statuses == [(0, 1, ("SlowReady-v0",)), (1, 1, ())]  # what a progress display shows


def test_preparations_are_bounded_and_ordered(tmp_path: Path) -> None:
    stats, _ = evaluate(
        [EvalItem("SlowReady-v0", 1), EvalItem("SlowReadyToo-v0", 1), EvalItem("Ready-v0", 1)],
        tmp_path,
        prepare_concurrency=1,
    )
    assert stats.errored == 0
    (first, _, _, first_end), (second, _, second_start, _) = PREPARED
    assert (first, second) == ("SlowReady-v0", "SlowReadyToo-v0") and first_end <= second_start
    PREPARED.clear()
    items = [EvalItem("SlowReady-v0", 1), EvalItem("SlowReadyTwin-v0", 1), EvalItem("SlowReadyToo-v0", 1)]
    evaluate(items, tmp_path / "two", prepare_concurrency=2)
    spans = {label: (start, end) for label, _, start, end in PREPARED}
    (start, end), (other_start, other_end) = spans["SlowReady-v0"], spans["SlowReadyToo-v0"]
    assert max(start, other_start) < min(end, other_end)  # two at once: the next with another hook
    assert spans["SlowReadyTwin-v0"][0] >= end  # the same hook (one world to build) waits for the first


def test_the_longest_preparation_starts_first_whatever_the_suites_order(tmp_path: Path) -> None:
    """A site that installs for minutes (``prepare_s``), listed last, is not the one the last episodes wait for."""
    items = [EvalItem("SlowReady-v0", 1), EvalItem("SlowReadyToo-v0", 1), EvalItem("SlowestReady-v0", 1)]
    stats, _ = evaluate(items, tmp_path, prepare_concurrency=1)
    assert stats.errored == 0
    assert [env_id for env_id, *_ in PREPARED] == ["SlowestReady-v0", "SlowReady-v0", "SlowReadyToo-v0"]


def test_policies_played_at_once_share_the_preparation_and_the_families_limits(tmp_path: Path) -> None:
    """Two runs together (`agentgym eval --policies-at-once 2`): the slow id is prepared once for both, and a
    family that holds one episode at a time never has two, whichever run they belong to."""
    from agentgym.evaluation.runner import Together

    items = [EvalItem("SlowReady-v0", 2), EvalItem("OneAtATime-v0", 4), EvalItem("Ready-v0", 2)]
    IN_FLIGHT.update(now=0, most=0)

    async def together() -> list[Any]:
        shared = Together.start(items)
        try:
            runs = [run_eval("oracle", OraclePolicy(), items, tmp_path / name, together=shared) for name in "ab"]
            return await asyncio.gather(*runs)
        finally:
            await shared.aclose()

    stats = asyncio.run(together())
    assert [(one.played, one.errored) for one in stats] == [(8, 0), (8, 0)]
    assert [label for label, *_ in PREPARED] == ["SlowReady-v0"]  # once, for both runs
    assert IN_FLIGHT["most"] == 1
    for name in "ab":
        assert all(record.status == "ok" and record.success for record in read_episodes(tmp_path / name).values())


def test_an_id_whose_preparation_fails_errors_clearly_and_finished_work_is_kept(tmp_path: Path) -> None:
    items = [EvalItem("NeverReady-v0", 2), EvalItem("Ready-v0", 3)]
    lines: list[str] = []
    stats, _ = evaluate(items, tmp_path, on_prepare=lines.append)
    assert stats.played == 5 and stats.errored == 2
    records = read_episodes(tmp_path)
    failed = [record for record in records.values() if record.env_id == "NeverReady-v0"]
    assert all(
        record.status == "error"
        and record.error == "preparing NeverReady-v0 failed: RuntimeError: the site would not install"
        and not record.turns
        for record in failed
    )  # never played on an env that was not ready
    assert "preparing NeverReady-v0 failed: RuntimeError: the site would not install" in lines
    BROKEN["broken"] = False  # the site is fixed: a resume plays the errored episodes, keeps the rest
    stats, _ = evaluate(items, tmp_path, retry_errors=True)
    assert stats.skipped == 3 and stats.played == 2 and stats.errored == 0
    assert all(record.status == "ok" for record in read_episodes(tmp_path).values())


def test_per_task_preparation_outside_a_run() -> None:
    outcome = prepare_items([EvalItem("SlowReady-v0", 1), EvalItem("Ready-v0", 1)], tasks={"SlowReady-v0": {7}})
    assert outcome == {"SlowReady-v0": None, "Ready-v0": None} and PREPARED[0][1] == [7]
    BROKEN["broken"] = False
    assert agentgym.prepare_env("NeverReady-v0", task_ids=[1])  # a whole-id hook is called without the ids
    with pytest.raises(ValueError, match="at least 1"):
        asyncio.run(_preparations(parallel=0))


async def _preparations(parallel: int) -> Preparations:
    return Preparations([], None, print, parallel=parallel)


def test_agentgym_prepare_a_suite_prepares_the_tasks_it_plays(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from agentgym.cli import main

    suite = tmp_path / "suite.yaml"
    suite.write_text("description: two ids\nsplit: test\nepisodes: 3\nenvs: [{env: SlowReady-v0}, {env: Ready-v0}]\n")
    assert main(["prepare", str(suite)]) == 0
    assert "2 of 2 envs ready" in capsys.readouterr().out
    test_ids = agentgym.env_info("SlowReady-v0").splits.ids("test")
    assert [task_ids for _, task_ids, _, _ in PREPARED] == [list(test_ids[:3])]
    PREPARED.clear()
    assert main(["prepare", "--env", "SlowReady-v0"]) == 0  # an id alone: every task
    assert [task_ids for _, task_ids, _, _ in PREPARED] == [None]
