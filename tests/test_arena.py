"""The arena: schedules, matches, resume after kill -9, ratings; the self-play hook."""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

from agentgym.cli import main
from agentgym.evaluation.arena import bradley_terry, ratings, run_arena, schedule
from agentgym.evaluation.results import EPISODES_FILE, read_matches
from agentgym.multiagent import GameEnv


def test_schedule_swaps_seats_and_shares_seeds_within_a_pair_of_games() -> None:
    matches = schedule("TicTacToe-v0", ["a", "b", "c"], games_per_pair=4, seed=0)
    assert len(matches) == 3 * 4 and len({match.key for match in matches}) == 12
    ab = [match for match in matches if match.key.startswith("a|b|")]
    assert [match.seats for match in ab] == [("a", "b"), ("b", "a")] * 2
    assert ab[0].seed == ab[1].seed != ab[2].seed == ab[3].seed
    assert schedule("TicTacToe-v0", ["a", "b", "c"], 4, seed=1)[0].seed != matches[0].seed


def test_bradley_terry_recovers_known_strengths() -> None:
    rng = random.Random(0)
    # a beats b three times in four: 400 * log10(3) = 191 Elo apart.
    results = [("a", "b", float(rng.random() < 0.75)) for _ in range(4000)]
    elo = bradley_terry(results, ["a", "b"])
    assert abs(elo["a"] - elo["b"] - 400 * math.log10(3)) < 25
    assert math.isclose((elo["a"] + elo["b"]) / 2, 1500)
    even = bradley_terry([("a", "b", 1.0), ("a", "b", 0.0), ("a", "b", 0.5)], ["a", "b"])
    assert math.isclose(even["a"], even["b"])
    assert bradley_terry([("a", "b", 1.0)] * 5, ["a", "b"])["a"] < 2500  # finite for a perfect record


def test_minimax_never_loses_and_ratings_rank_it_first(tmp_path: Path) -> None:
    played = asyncio.run(run_arena("TicTacToe-v0", ["minimax", "random"], tmp_path, games_per_pair=60))
    assert played == 60
    records = list(read_matches(tmp_path).values())
    assert all(record.status == "ok" for record in records)
    assert not [record for record in records if record.winner == "random"]
    first, second = ratings(tmp_path)
    assert first.policy == "minimax" and first.losses == 0 and first.wins > 40
    assert first.low <= first.rating <= first.high and second.high < first.low
    assert first.games == second.games == 60 and first.wins + first.draws == 60
    record = records[0]
    assert set(record.seats.values()) == {"minimax", "random"} and record.turns[0].observation
    assert asyncio.run(run_arena("TicTacToe-v0", ["minimax", "random"], tmp_path, games_per_pair=60)) == 0


@pytest.mark.parametrize(
    ("game_id", "players", "strong"),
    [("OpenSpiel-Hex-v0", ["mcts", "random"], "mcts"), ("TextArena-TicTacToe-v0", ["random", "oracle"], None)],
)
def test_the_arena_rates_players_on_openspiel_and_textarena_games(
    tmp_path: Path, game_id: str, players: list[str], strong: str | None
) -> None:
    """OpenSpiel's and TextArena's games are registered games: the arena plays and rates them like its own."""
    pytest.importorskip("pyspiel" if game_id.startswith("OpenSpiel") else "textarena")
    assert asyncio.run(run_arena(game_id, players, tmp_path, games_per_pair=4)) == 4
    records = list(read_matches(tmp_path).values())
    assert all(record.status == "ok" and record.game == game_id and record.turns for record in records)
    first, second = ratings(tmp_path)
    assert first.games == second.games == 4
    if strong is not None:  # OpenSpiel's MCTS bot against uniform random moves
        assert first.policy == strong and first.wins >= 3


def test_failing_llm_policy_games_are_errors_and_can_be_retried(tmp_path: Path) -> None:
    specs = ["random", "openai:nobody@http://127.0.0.1:9/v1"]
    options = {"max_retries": 0}
    asyncio.run(run_arena("TicTacToe-v0", specs, tmp_path, games_per_pair=4, policy_options=options))
    records = read_matches(tmp_path)
    assert len(records) == 4 and all(record.status == "error" for record in records.values())
    assert all("ConnectError" in record.error for record in records.values())
    assert asyncio.run(run_arena("TicTacToe-v0", specs, tmp_path, games_per_pair=4, policy_options=options)) == 0
    again = asyncio.run(
        run_arena("TicTacToe-v0", specs, tmp_path, games_per_pair=4, policy_options=options, retry_errors=True)
    )
    assert again == 4 and len(read_matches(tmp_path)) == 4


def test_bad_arena_configurations(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="two different policies"):
        asyncio.run(run_arena("TicTacToe-v0", ["random", "random"], tmp_path))
    with pytest.raises(ValueError, match="unknown player 'alphazero'"):
        asyncio.run(run_arena("TicTacToe-v0", ["random", "alphazero"], tmp_path))
    with pytest.raises(KeyError, match="unknown game"):
        asyncio.run(run_arena("Chess-v0", ["random", "minimax"], tmp_path))


def test_kill_9_during_arena_then_resume(tmp_path: Path) -> None:
    out = tmp_path / "arena"
    command = [sys.executable, "-m", "agentgym.cli", "arena", "TicTacToe-v0", "--policy", "minimax",
               "--policy", "random", "--games", "6000", "--out", str(out), "--no-progress"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path = out / EPISODES_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (path.exists() and path.read_bytes().count(b"\n") >= 300):
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    written = path.read_bytes().count(b"\n")
    assert 300 <= written < 6000
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 6000
    assert "TicTacToe-v0 arena" in resumed.stdout


def test_arena_and_leaderboard_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["arena", "TicTacToe-v0", "--policy", "minimax", "--policy", "random", "--games", "10",
            "--out", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    assert "rating [95% CI]" in capsys.readouterr().out
    assert main(["leaderboard", str(tmp_path)]) == 0
    assert "minimax" in capsys.readouterr().out


def test_self_play_hook_takes_any_opponent_function() -> None:
    asked = []

    def current_policy(game, agent, rng):  # a trainer would query its model here
        asked.append(game.observe(agent)["text"])
        return game.legal_moves(agent)[0]

    env = GameEnv("TicTacToe-v0", opponent=current_policy, seat="player_1")
    observation, info = env.reset(options={"task_id": 0})
    assert asked and "player_0 (X) marked a1" in observation and info["seat"] == "player_1"
    assert "fixed opponent" in info["instruction"]
    env = gym.make("TicTacToe-vs-Minimax-v0")
    env.reset(options={"task_id": 4})
    assert env.unwrapped.learner == "player_0"
