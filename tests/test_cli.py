"""The ``agentgym`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agentgym
from agentgym.cli import main


def test_list_prints_every_env(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    output = capsys.readouterr().out
    assert all(info.id in output for info in agentgym.list_envs())
    assert main(["list", "--json", "--family", "frozenlake"]) == 0
    visual, entry = json.loads(capsys.readouterr().out)
    assert visual["id"] == "FrozenLake-Visual-v0" and visual["observation"] == "text+screenshot"
    assert entry["id"] == "FrozenLake-v0" and entry["splits"] == {"train": 10_000, "dev": 1_000, "test": 1_000}


def test_info_shows_metadata_and_first_observation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "FrozenLake-v0"]) == 0
    output = capsys.readouterr().out
    assert "max_episode_steps: 100" in output and "Actions: left, down, right, up" in output


def test_unknown_env_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "Nope-v0"]) == 2
    assert "unknown env id 'Nope-v0'" in capsys.readouterr().err


def test_eval_prints_the_leaderboard_of_its_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "eval",
        "--env",
        "FrozenLake-v0",
        "--episodes",
        "10",
        "--policy",
        "oracle",
        "--policy",
        "random",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    oracle = next(line for line in lines if line.startswith("FrozenLake-v0") and "oracle" in line)
    assert "100.0% [72.2, 100.0]" in oracle and any("random" in line for line in lines)
    assert (tmp_path / "oracle" / "episodes.jsonl").exists() and (tmp_path / "random" / "run.json").exists()
    assert main(argv) == 0
    assert "10 were already done" in capsys.readouterr().out


def test_policies_played_at_once_score_as_one_after_another(tmp_path: Path) -> None:
    from agentgym.evaluation.results import read_episodes

    def outcomes(folder: Path) -> dict[str, tuple]:
        return {key: (r.score, r.success, r.steps) for key, r in read_episodes(folder).items()}

    base = ["eval", "--env", "FrozenLake-v0", "--env", "Maze-v0", "--episodes", "6", "--no-progress"]
    for name, at_once in (("apart", "1"), ("together", "2")):
        argv = [*base, "--policy", "oracle", "--policy", "random", "--policies-at-once", at_once]
        assert main([*argv, "--out", str(tmp_path / name)]) == 0
    for policy in ("oracle", "random"):
        assert outcomes(tmp_path / "apart" / policy) == outcomes(tmp_path / "together" / policy)
        assert len(outcomes(tmp_path / "together" / policy)) == 12


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
    assert (
        main(
            [
                "leaderboard",
                str(tmp_path / "run"),
                "--markdown",
                str(tmp_path / "board.md"),
                "--html",
                str(tmp_path / "board.html"),
            ]
        )
        == 0
    )
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


def test_eval_an_openai_policy_against_serve_model(tmp_path: Path, tiny_model_with_long_context_path: Path) -> None:
    """The whole LLM path: `agentgym serve-model` in its own process, `agentgym eval` over HTTP."""
    import socket

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentgym.cli",
            "serve-model",
            str(tiny_model_with_long_context_path),
            "--port",
            str(port),
            "--device",
            "cpu",
            "--served-model-name",
            "tiny",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail(
                f"serve-model did not start: {server.stderr.read().decode() if server.poll() is not None else ''}"
            )
        out = tmp_path / "tiny"
        argv = [
            "eval",
            "--env",
            "FrozenLake-v0",
            "--env",
            "Wordle-v0",
            "--episodes",
            "2",
            "--max-turns",
            "3",
            "--policy",
            f"openai:tiny@http://127.0.0.1:{port}/v1",
            "--max-tokens",
            "8",
            "--out",
            str(out),
            "--no-progress",
        ]
        assert main(argv) == 0
    finally:
        server.terminate()
        server.wait(timeout=30)
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 4 and all(record["status"] == "ok" for record in episodes)
    for record in episodes:
        assert record["steps"] == 3 and record["truncated"]
        assert record["tokens"]["prompt"] > 0 and 3 <= record["tokens"]["completion"] <= 24
        replies = [message["content"] for message in record["messages"] if message["role"] == "assistant"]
        assert len(replies) == 3


def test_eval_an_in_process_hf_policy(tmp_path: Path, tiny_model_with_long_context_path: Path) -> None:
    argv = [
        "eval",
        "--env",
        "Maze-v0",
        "--episodes",
        "4",
        "--max-turns",
        "2",
        "--concurrency",
        "4",
        "--policy",
        f"hf:{tiny_model_with_long_context_path}",
        "--max-tokens",
        "6",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(argv) == 0
    episodes = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 4 and all(record["status"] == "ok" and record["steps"] == 2 for record in episodes)
    assert all(record["policy"] == "tiny-llama-2k" and record["tokens"]["completion"] > 0 for record in episodes)


def test_family_commands_receive_their_own_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    """`agentgym webshop-site` is provided by the webshop family; the core only passes it argv."""
    with pytest.raises(SystemExit) as exit_info:
        main(["webshop-site", "--help"])
    assert exit_info.value.code == 0
    assert "usage: agentgym webshop-site" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "webshop-site" in capsys.readouterr().out
