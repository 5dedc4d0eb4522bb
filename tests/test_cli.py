"""The ``agentgym`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentgym
from agentgym.cli import main


def test_list_prints_every_env(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    output = capsys.readouterr().out
    assert all(info.id in output for info in agentgym.list_envs())
    assert main(["list", "--json", "--family", "frozenlake"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["id"] == "FrozenLake-v0" and entry["splits"] == {"train": 10_000, "dev": 1_000, "test": 1_000}


def test_info_shows_metadata_and_first_observation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "FrozenLake-v0"]) == 0
    output = capsys.readouterr().out
    assert "max_episode_steps: 100" in output and "Actions: left, down, right, up" in output


def test_unknown_env_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "Nope-v0"]) == 2
    assert "unknown env id 'Nope-v0'" in capsys.readouterr().err


def test_eval_prints_the_leaderboard_of_its_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--env", "FrozenLake-v0", "--episodes", "10", "--policy", "oracle", "--policy", "random",
            "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    oracle = next(line for line in lines if line.startswith("FrozenLake-v0") and "oracle" in line)
    assert "100.0% [72.2, 100.0]" in oracle and any("random" in line for line in lines)
    assert (tmp_path / "oracle" / "episodes.jsonl").exists() and (tmp_path / "random" / "run.json").exists()
    assert main(argv) == 0
    assert "10 were already done" in capsys.readouterr().out


def test_eval_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--no-progress"]) == 2
    assert "--env ID" in capsys.readouterr().err
    assert main(["eval", "--env", "FrozenLake-v0", "--policy", "vllm:x", "--out", str(tmp_path)]) == 2
    assert "bad policy spec" in capsys.readouterr().err
    assert main(["eval", "--suite", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err


def test_leaderboard_command_writes_markdown_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["eval", "--env", "Maze-v0", "--episodes", "3", "--out", str(tmp_path / "run"), "--no-progress"])
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "run"), "--markdown", str(tmp_path / "board.md"),
                 "--html", str(tmp_path / "board.html")]) == 0
    assert "Maze-v0" in capsys.readouterr().out
    assert "| Maze-v0 |" in (tmp_path / "board.md").read_text()
    assert "<html" in (tmp_path / "board.html").read_text()
    assert main(["leaderboard", str(tmp_path / "missing")]) == 2


def run_play(*args: str, stdin: str) -> str:
    command = [sys.executable, "-m", "agentgym.cli", "play", *args]
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60, check=True)
    return result.stdout


def test_play_reads_commands_until_the_episode_ends() -> None:
    # Task 3's lake has no holes: down x3 and right x3 reach the goal.
    output = run_play("FrozenLake-v0", "--task-id", "3", stdin=":hint\nfly\n" + "down\n" * 3 + "right\n" * 3)
    assert "oracle: " in output and "Invalid action 'fly'" in output
    assert "reached the goal" in output and "Success!" in output


def test_play_stops_on_quit_and_end_of_input() -> None:
    assert "Task 0" in run_play("FrozenLake-v0", "--task-id", "0", stdin=":quit\n")
    assert "Task " in run_play("FrozenLake-v0", "--split", "test", "--seed", "1", stdin="")
