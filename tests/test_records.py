"""Typed episode and match records: old files load, today's JSON is unchanged, newer ones are refused.

``tests/data/records_v1/`` was written by the code before records had a schema (commit bfacc31):
``eval/`` by ``run_eval`` with :class:`TokenOracle` on two FrozenLake-v0 tasks (the second an
error record), ``arena/`` by ``run_arena("TicTacToe-v0", ["minimax", "random"], games_per_pair=2)``.
Running the same today must write the same records, plus ``"schema": 2``.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentgym.evaluation.arena import ratings, run_arena
from agentgym.evaluation.leaderboard import LeaderboardError, collect
from agentgym.evaluation.records import (
    SCHEMA_VERSION,
    EpisodeRecord,
    MatchRecord,
    RecordError,
    Tokens,
    Turn,
    episode_from_json,
    match_from_json,
    to_json,
)
from agentgym.evaluation.results import EPISODES_FILE, ResultsFolder, iter_json, play_missing, read_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies import OraclePolicy
from agentgym.llm.policies.base import Episode, Message, Reply

V1 = Path(__file__).parent / "data" / "records_v1"
#: Fields that differ between two runs of the same episodes (clock readings).
VOLATILE = ("started", "wall_s", "policy_s", "env_s")


class TokenOracle(OraclePolicy):
    """The oracle reporting 11 + 3 tokens a reply; on task 11001 its second reply fails."""

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        if "/11001/" in episode.key and len(messages) > 3:
            raise ConnectionError("model server went away")
        reply = await super().act(messages, episode)
        return Reply(reply.text, prompt_tokens=11, completion_tokens=3)


def lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / EPISODES_FILE).read_text().splitlines()]


def steady(value: Any) -> Any:
    """``value`` without the clock readings."""
    if isinstance(value, dict):
        return {key: steady(item) for key, item in value.items() if key not in VOLATILE}
    if isinstance(value, list):
        return [steady(item) for item in value]
    return value


def test_version_1_episodes_read_as_typed_records_and_write_back_unchanged() -> None:
    old = lines(V1 / "eval")
    assert all("schema" not in data for data in old)
    records = read_episodes(V1 / "eval")
    ok, failed = records.values()
    assert isinstance(ok, EpisodeRecord) and ok.schema == SCHEMA_VERSION
    assert (ok.env, ok.env_id, ok.env_kwargs) == (
        "FrozenLake-v0[is_slippery=False]",
        "FrozenLake-v0",
        {"is_slippery": False},
    )
    assert ok.status == "ok" and ok.success and ok.steps == len(ok.turns) == 6 and ok.return_ == 1.0
    assert ok.tokens == Tokens(prompt=66, completion=18) and ok.node_id is None and ok.screenshots is None
    assert isinstance(ok.turns[0], Turn) and ok.turns[0].action == "right" and ok.turns[0].tool_calls is None
    assert failed.status == "error" and failed.error == "policy ConnectionError: model server went away"
    assert not failed.success and len(failed.turns) == 1
    for data, record in zip(old, records.values()):  # the same keys in the same order, the same values
        assert to_json(record) == {"schema": SCHEMA_VERSION, **data}
        assert list(to_json(record)) == ["schema", *data]


def test_version_1_matches_read_as_typed_records_and_write_back_unchanged() -> None:
    for data in lines(V1 / "arena"):
        record = match_from_json(data)
        assert isinstance(record, MatchRecord) and record.rewards is not None
        assert set(record.seats.values()) == {"minimax", "random"} and record.turns[0].agent == "player_0"
        assert record.tokens == {"minimax": Tokens(), "random": Tokens()}
        assert to_json(record) == {"schema": SCHEMA_VERSION, **data}
        assert list(to_json(record)) == ["schema", *data]
    (best, worst) = ratings(V1 / "arena")
    assert best.policy == "minimax" and best.games == worst.games == 2 and best.losses == 0


def test_today_writes_what_version_1_wrote_plus_the_schema(tmp_path: Path) -> None:
    items = [EvalItem("FrozenLake-v0", 2, split="test", kwargs={"is_slippery": False})]
    stats = asyncio.run(run_eval("oracle", TokenOracle(), items, tmp_path / "eval", seed=0))
    assert (stats.played, stats.errored) == (2, 1)
    asyncio.run(run_arena("TicTacToe-v0", ["minimax", "random"], tmp_path / "arena", games_per_pair=2))
    for kind in ("eval", "arena"):  # in the order of their keys: which episode ends first is the machine's
        new, old = (sorted(lines(folder / kind), key=lambda data: data["key"]) for folder in (tmp_path, V1))
        assert [data.pop("schema") for data in new] == [SCHEMA_VERSION] * len(old)
        assert steady(new) == steady(old) and [list(data) for data in new] == [list(data) for data in old]


def test_older_and_sparser_records_take_defaults() -> None:
    """Before Ray (no ``node_id``), and hand-written files without ids, kwargs, tokens or policy."""
    data = lines(V1 / "eval")[0]
    for key in ("node_id", "env_id", "env_kwargs", "tokens", "policy", "split", "started", "wall_s"):
        del data[key]
    record = episode_from_json(data)
    assert (record.node_id, record.env_id, record.env_kwargs) == (None, "FrozenLake-v0", {})
    assert (record.tokens, record.policy, record.split, record.started, record.wall_s) == (None, None, None, None, 0.0)
    assert "tokens" in to_json(record) and to_json(record)["tokens"] is None
    arena = lines(V1 / "arena")[0]
    del arena["tokens"], arena["game"]
    assert match_from_json(arena).tokens == {} and match_from_json(arena).game is None


def test_unreadable_records_are_refused_with_the_reason(tmp_path: Path) -> None:
    data = lines(V1 / "eval")[0]
    with pytest.raises(RecordError, match="schema 3; this agentgym reads versions 1 to 2"):
        episode_from_json({**data, "schema": 3})
    with pytest.raises(RecordError, match="has no 'env'"):
        episode_from_json({key: value for key, value in data.items() if key != "env"})
    with pytest.raises(RecordError, match="JSON object, not list"):
        episode_from_json([data])
    folder = tmp_path / "newer"
    shutil.copytree(V1 / "eval", folder)
    (folder / EPISODES_FILE).write_text(json.dumps({**data, "schema": 3}) + "\n")
    with pytest.raises(LeaderboardError, match="schema 3"):
        collect([folder])


def test_play_missing_resumes_bounds_workers_and_retries_errors(tmp_path: Path) -> None:
    class Item:
        def __init__(self, key: str) -> None:
            self.key = key

    in_flight, most, fail = 0, 0, {"b"}

    async def play(item: Item, worker: int) -> EpisodeRecord:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        status = "error" if item.key in fail else "ok"
        return EpisodeRecord(key=item.key, env="X-v0", status=status, policy=f"worker {worker}")

    items = [Item(key) for key in "abcdefg"]
    plans: list[tuple[int, int]] = []

    def run(**options: Any) -> Any:
        return asyncio.run(
            play_missing(tmp_path, {"policy": "p"}, items, play, on_plan=lambda *n: plans.append(n), **options)
        )

    first = run(concurrency=3)
    assert (first.planned, first.skipped, first.played, first.errored, most) == (7, 0, 7, 1, 3)
    assert run(concurrency=3).played == 0
    fail.clear()
    again = run(concurrency=3, retry_errors=True)
    assert (again.skipped, again.played, again.errored) == (6, 1, 0) and plans == [(7, 0), (7, 7), (7, 6)]
    assert [data["schema"] for data in iter_json(tmp_path)] == [SCHEMA_VERSION] * 8
    assert read_episodes(tmp_path)["b"].status == "ok"
    with pytest.raises(ValueError, match="different run"):
        asyncio.run(play_missing(tmp_path, {"policy": "q"}, items, play, concurrency=1))
    results = ResultsFolder(tmp_path)
    results.open({"policy": "p"})
    results.close()
    assert results.statuses == {key: "ok" for key in "abcdefg"}


def test_a_worker_takes_the_first_item_that_can_play_now(tmp_path: Path) -> None:
    """Items whose env is still preparing are passed over while others can play, and taken in their planned
    place as soon as it is ready: an id prepared in seconds is not left to the end of the run."""

    class Item:
        def __init__(self, key: str) -> None:
            self.key = key

    ready, order = {"a", "b"}, []

    async def play(item: Item, worker: int) -> EpisodeRecord:
        order.append(item.key)
        if item.key == "a1":
            ready.add("s")  # the slow id's preparation ends while a1 plays
        return EpisodeRecord(key=item.key, env="X-v0", status="ok", policy="p")

    items = [Item(key) for key in ("s1", "a1", "s2", "b1", "a2", "t1")]  # t: prepared only after every other
    played = asyncio.run(
        play_missing(tmp_path, {"policy": "p"}, items, play, concurrency=1, playable=lambda item: item.key[0] in ready)
    )
    assert played.played == 6 and order == ["a1", "s1", "s2", "b1", "a2", "t1"]


def test_the_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/results.md's example, on the version 1 folders instead of the main job's."""
    page = (Path(__file__).parent.parent / "docs" / "results.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    code = code.replace('"results/quick/oracle"', repr(str(V1 / "eval"))).replace(
        '"results/arena"', repr(str(V1 / "arena"))
    )
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/results.md", "exec"), namespace)
    assert (
        "FrozenLake-v0[is_slippery=False]/test/11000/0 ok True 1.0 6 Tokens(prompt=66, completion=18)"
        in capsys.readouterr().out
    )
    assert len(namespace["matches"]) == 2
