"""Leaderboards from hand-written results folders: discovery, aggregates, wall time, fingerprints, tables."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from leaderboard_runs import episode, four_runs, write_arena, write_folder, write_training

from agentgym.evaluation.leaderboard import (
    LeaderboardError,
    busy_time,
    collect,
    discover,
    format_markdown,
    format_terminal,
    load_prices,
    parse_price,
)
from agentgym.evaluation.stats import macro_interval, wilson_interval
from agentgym.wrappers.screenshots import ScreenshotRecorder


@pytest.fixture
def folders(tmp_path: Path) -> list[Path]:
    return four_runs(tmp_path / "results")


def test_discover_finds_runs_arenas_and_training_runs_at_any_depth(tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_folder(root / "quick" / "oracle", "oracle", "oracle", [])
    write_folder(root / "quick" / "random", "random", "random", [])
    write_arena(root / "arena" / "TicTacToe-v0", "TicTacToe-v0", [("minimax", "random", "minimax")])
    write_training(root / "train" / "grpo", {2: 1, 4: 3})
    evals = root / "train" / "grpo" / "eval"
    shutil.copytree(evals / "iteration-000004", evals / "iteration-000004-temperature-1")
    found = discover([root, root / "quick" / "oracle"])  # a run reached twice is taken once
    assert [run.label for run in found.evals] == [
        "results/quick/oracle",
        "results/quick/random",
        "results/train/grpo/eval/iteration-000004",  # a training run's latest greedy evaluation
    ]
    assert [run.label for run in found.arenas] == ["results/arena/TicTacToe-v0"]
    (training,) = found.trainings
    assert training.label == "results/train/grpo" and len(training.metrics) == 4
    assert [(run.iteration, run.temperature) for run in training.evals] == [(2, None), (4, None), (4, 1.0)]
    assert [run.label for run in discover([root / "quick"]).evals] == ["quick/oracle", "quick/random"]
    only_evals = discover([root / "train" / "grpo" / "eval"])  # still known as the training run's evaluations
    assert [(t.label, len(t.evals)) for t in only_evals.trainings] == [("grpo", 3)]
    assert [run.label for run in only_evals.evals] == ["eval/iteration-000004"]

    with pytest.raises(LeaderboardError, match="nowhere does not exist"):
        discover([tmp_path / "nowhere"])
    (tmp_path / "empty" / "deep").mkdir(parents=True)
    with pytest.raises(LeaderboardError, match="empty holds no runs .folders with run.json and episodes.jsonl"):
        discover([root, tmp_path / "empty"])


def test_collect_aggregates_per_policy_and_env(folders: list[Path]) -> None:
    board = collect(folders)
    assert [(row.env, row.policy) for row in board.rows] == [
        ("Sokoban-v0", "Qwen2.5-7B"),
        ("Sokoban-v0", "Llama-3-8B"),
        ("Sokoban-v0", "random"),
        ("Wordle-v0", "Llama-3-8B"),
        ("Wordle-v0", "Qwen2.5-7B"),
    ]
    by = {(row.policy, row.env): row for row in board.rows}
    qwen = by["Qwen2.5-7B", "Sokoban-v0"]
    # ok: 11000 (success, 12 steps), 11001 redone (score 0.5, 100 steps), 11003 (success, 20 steps); 11002 errored.
    assert (qwen.episodes, qwen.errored, qwen.successes) == (3, 1, 2)
    assert (qwen.family, qwen.action_format) == ("sokoban", "text")
    assert qwen.success_rate == pytest.approx(2 / 3)
    assert (round(qwen.ci_low, 4), round(qwen.ci_high, 4)) == (0.2077, 0.9385)
    assert qwen.mean_score == pytest.approx(2.5 / 3)
    assert qwen.mean_steps == pytest.approx(44.0)
    assert qwen.mean_tokens_in == pytest.approx((1200 + 9000 + 2000) / 3)
    assert qwen.mean_tokens_out == pytest.approx((300 + 1000 + 500) / 3)
    assert qwen.episode_s == pytest.approx((3.0 + 20.0 + 5.0) / 3)  # ok episodes; the replaced record is gone
    assert qwen.runs == ("qwen",)  # a run folder given itself is labelled by its name
    llama = by["Llama-3-8B", "Wordle-v0"]
    assert (llama.episodes, llama.errored, llama.success_rate, llama.mean_steps, llama.mean_tokens) == (2, 0, 1, 4, 900)
    assert by["Llama-3-8B", "Sokoban-v0"].runs == ("llama-sokoban",)
    rand = by["random", "Sokoban-v0"]
    assert (rand.success_rate, rand.mean_score, rand.mean_tokens_in, rand.mismatch) == (0, 0, None, False)
    assert board.families == {"sokoban": ["Sokoban-v0"], "wordle": ["Wordle-v0"]}


def test_macro_interval_by_hand() -> None:
    # One env: the Agresti-Coull interval, which Wilson's centre and width approximate.
    mean, low, high = macro_interval([[(10, 20)]])
    assert (mean, round(low, 3), round(high, 3)) == (0.5, 0.299, 0.701)
    assert (round(low, 3), round(high, 3)) == tuple(round(x, 3) for x in wilson_interval(10, 20))
    # Two families; the first has two envs: weights 1/4, 1/4, 1/2.
    z2 = 1.959963984540054**2
    groups = [[(2, 4), (4, 4)], [(0, 10)]]
    expected_mean = (2 / 4 + 4 / 4) / 4 + 0 / 2
    variance = 0.0
    for (s, n), weight in zip([(2, 4), (4, 4), (0, 10)], [1 / 4, 1 / 4, 1 / 2]):
        p = (s + z2 / 2) / (n + z2)
        variance += weight**2 * p * (1 - p) / (n + z2)
    mean, low, high = macro_interval(groups)
    assert mean == pytest.approx(expected_mean)
    half = 1.96 * variance**0.5
    assert (low, high) == pytest.approx((expected_mean - half, expected_mean + half), abs=1e-3)
    assert macro_interval([[(20, 20)]])[1:] == pytest.approx((0.8908, 1.0), abs=1e-4)  # 100% still uncertain
    with pytest.raises(ValueError):
        macro_interval([[(1, 0)]])


def test_overall_is_a_macro_average_over_families_ranked_within_env_sets(tmp_path: Path, folders: list[Path]) -> None:
    board = collect(folders)
    summary = [
        (row.rank, row.group, row.policy, round(row.success_rate, 4), row.episodes, row.errored)
        for row in board.policies
    ]
    assert summary == [
        (1, 0, "Llama-3-8B", round((1 / 2 + 1) / 2, 4), 4, 0),
        (2, 0, "Qwen2.5-7B", round((2 / 3 + 1 / 2) / 2, 4), 5, 1),
        (1, 1, "random", 0, 2, 0),
    ]
    assert board.groups == [("Sokoban-v0", "Wordle-v0"), ("Sokoban-v0",)]
    llama = board.policies[0]
    assert (llama.ci_low, llama.ci_high) == pytest.approx(macro_interval([[(1, 2)], [(2, 2)]])[1:])
    assert llama.families["wordle"].success_rate == 1.0 and llama.families["sokoban"].envs == 1
    # Two envs of one family count as one family: the family's mean, then the mean over families.
    records = [
        episode("Sokoban-v0", 1, "p", success=True, score=1, steps=1, tokens=None, wall_s=1),
        episode("Sokoban-2Boxes-v0", 1, "p", success=False, score=0, steps=1, tokens=None, wall_s=1),
        episode("Wordle-v0", 1, "p", success=True, score=1, steps=1, tokens=None, wall_s=1),
    ]
    (policy,) = collect([write_folder(tmp_path / "p", "p", "p", records)]).policies
    assert policy.success_rate == pytest.approx(((1 + 0) / 2 + 1) / 2)
    assert policy.families["sokoban"].envs == 2


def test_wall_time_is_the_union_of_episode_intervals_not_their_sum(tmp_path: Path) -> None:
    assert busy_time([]) is None
    assert busy_time([(0, 10), (5, 12), (100, 103), (101, 102)]) == 15
    timed = [(10, "2026-11-22T10:00:00Z"), (7, "2026-11-22T10:00:05Z"), (3, "2026-11-22T11:00:00.500000Z")]
    records = [  # the third one resumed an hour later: the gap is not run time
        episode("Maze-v0", k, "p", success=True, score=1, steps=1, tokens=(10, 2), wall_s=wall, started=started)
        for k, (wall, started) in enumerate(timed)
    ]
    board = collect([write_folder(tmp_path / "run", "p", "p", records)])
    (run,) = board.runs
    assert (run.wall_s, run.episode_s, run.episodes) == (pytest.approx(15), pytest.approx(20), 3)
    assert (run.first_start, run.last_end) == ("2026-11-22T10:00:00.000Z", "2026-11-22T11:00:03.500Z")
    (policy,) = board.policies
    assert (policy.wall_s, policy.episode_s) == (pytest.approx(15), pytest.approx(20))
    assert (policy.tokens_in, policy.tokens_out) == (30, 6)
    assert "15.0s" in format_terminal(board) and "20.0s" in format_terminal(board)


def test_mismatched_fingerprints_are_marked_and_left_out_or_refused(tmp_path: Path) -> None:
    def run(name: str, fingerprints: dict[str, str | None], sokoban: bool) -> Path:
        records = [
            episode("Sokoban-v0", 1, name, success=sokoban, score=float(sokoban), steps=2, tokens=None, wall_s=1),
            episode("Wordle-v0", 1, name, success=True, score=1, steps=2, tokens=None, wall_s=1),
        ]
        return write_folder(tmp_path / name, name, name, records, env_fingerprints=fingerprints)

    folders = [
        run("old", {"Sokoban-v0": "aaaa1111", "Wordle-v0": "cccc"}, sokoban=True),
        run("new", {"Sokoban-v0": "bbbb2222", "Wordle-v0": "cccc"}, sokoban=False),
        run("unknown", {"Sokoban-v0": None, "Wordle-v0": None}, sokoban=False),  # null: nothing to compare
    ]
    board = collect(folders)
    (mismatch,) = board.mismatches
    assert mismatch.env_id == "Sokoban-v0"
    assert mismatch.fingerprints == {"aaaa1111": ["old"], "bbbb2222": ["new"]}
    assert all(row.mismatch == (row.env == "Sokoban-v0") for row in board.rows)
    # Sokoban is out of every overall aggregate: all three rank on Wordle alone and tie.
    ranks = {(row.policy, row.rank, row.success_rate) for row in board.policies}
    assert ranks == {("old", 1, 1.0), ("new", 1, 1.0), ("unknown", 1, 1.0)}
    assert all("sokoban" not in row.families for row in board.policies)
    text = format_terminal(board)
    assert text.startswith("Warning: Sokoban-v0 has different task sets (aaaa1111 in old; bbbb2222 in new)")
    assert "fingerprint!" in text
    sokoban_rows = [line.split() for line in text.splitlines() if line.startswith("Sokoban-v0")]
    assert [row[1] for row in sokoban_rows] == ["—", "—", "—"]  # not ranked against each other
    assert format_markdown(board).startswith("> **Warning: Sokoban-v0 has different task sets")
    with pytest.raises(LeaderboardError, match="fingerprints differ.*Sokoban-v0 has different task sets"):
        collect(folders, strict=True)
    assert collect(folders[:1] + folders[2:], strict=True).mismatches == []


def test_action_format_makes_its_own_row_and_prices_give_cost(tmp_path: Path) -> None:
    def run(name: str, **fields: str) -> Path:
        records = [episode("Maze-v0", 1, "qwen", success=True, score=1, steps=2, tokens=(1_000_000, 200_000), wall_s=1)]
        return write_folder(tmp_path / name, "openai:qwen", "qwen", records, **fields)

    folders = [run("text"), run("tools", action_format="tools")]
    board = collect(folders, prices={"qwen": (0.5, 2.0)})
    assert [(row.policy, row.action_format) for row in board.rows] == [("qwen", "text"), ("qwen", "tools")]
    assert [row.cost for row in board.policies] == [pytest.approx(0.5 + 0.4)] * 2
    assert "tools" in format_terminal(board) and "$0.9000" in format_terminal(board)
    assert collect(folders).policies[0].cost is None
    assert parse_price("openai:m@x=1.25,10") == ("openai:m@x", (1.25, 10.0))
    with pytest.raises(LeaderboardError, match="POLICY=IN,OUT"):
        parse_price("qwen=1")
    (tmp_path / "prices.yaml").write_text("qwen: {input: 0.5, output: 2}\nllama: [0.1, 0.2]\n")
    assert load_prices(tmp_path / "prices.yaml") == {"qwen": (0.5, 2.0), "llama": (0.1, 0.2)}
    (tmp_path / "prices.json").write_text(json.dumps({"qwen": "cheap"}))
    with pytest.raises(LeaderboardError, match="price of 'qwen'"):
        load_prices(tmp_path / "prices.json")


def test_training_runs_give_curves_and_their_latest_evaluation_ranks(tmp_path: Path) -> None:
    write_training(tmp_path / "runs" / "grpo", {2: 1, 4: 3})
    board = collect([tmp_path / "runs"])
    (curve,) = board.curves
    assert curve.label == "runs/grpo" and len(curve.metrics) == 4
    assert [(p.iteration, p.episodes, p.success_rate) for p in curve.evals] == [(2, 4, 0.25), (4, 4, 0.75)]
    assert [row.policy for row in board.rows] == ["runs/grpo @ iteration 4"]
    assert "Training run runs/grpo: evaluations" in format_terminal(board)


def test_arena_ratings_join_the_board(tmp_path: Path) -> None:
    matches = [("minimax", "random", "minimax"), ("random", "minimax", "minimax"), ("minimax", "random", None)]
    write_arena(tmp_path / "arena", "TicTacToe-v0", matches)
    board = collect([tmp_path])
    (arena,) = board.arenas
    assert arena.game == "TicTacToe-v0" and [r.policy for r in arena.ratings] == ["minimax", "random"]
    assert board.rows == [] and "Arena: TicTacToe-v0" in format_terminal(board)


def test_format_terminal_and_markdown(folders: list[Path]) -> None:
    board = collect(folders)
    lines = format_terminal(board).splitlines()
    assert lines[0].split() == [
        "env", "rank", "policy", "format", "success", "[95%", "CI]", "episodes", "errored", "score", "steps",
        "tokens", "in/ep", "tokens", "out/ep", "time/ep", "check",
    ]  # fmt: skip
    assert lines[2].split() == [
        "Sokoban-v0", "1", "Qwen2.5-7B", "text", "66.7%", "[20.8,", "93.9]", "3", "1", "0.833", "44.0",
        "4,067", "600", "9.3s",
    ]  # fmt: skip
    assert lines[4].split()[:7] == ["Sokoban-v0", "3", "random", "text", "0.0%", "[0.0,", "65.8]"]
    title = "Overall (group A): macro average over 2 families (2 envs)"
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    assert lines[start + 3].split()[:4] == ["1", "Llama-3-8B", "text", "75.0%"]
    assert lines[start + 4].split()[:4] == ["2", "Qwen2.5-7B", "text", "58.3%"]
    assert any(line.startswith("Overall (group B: lacks Wordle-v0 of group A; ranked apart)") for line in lines)
    family = lines.index("Success per family (macro over its envs)")
    assert lines[family + 1].split() == ["policy", "sokoban", "wordle"]
    assert lines[family + 3].split() == ["Llama-3-8B", "50.0%", "100.0%"]
    markdown = format_markdown(board).splitlines()
    assert markdown[0].startswith("| Env | Rank | Policy | Format | Success [95% CI] |")
    assert markdown[2].startswith("| Sokoban-v0 | 1 | Qwen2.5-7B | text | 66.7% [20.8, 93.9] | 3 | 1 | 0.833 |")
    assert "**Runs (wall: time with an episode in flight)**" in markdown


def test_bad_folders_are_clear_errors(folders: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(folders[1], copy)
    with pytest.raises(LeaderboardError, match="'Llama-3-8B' has episode Sokoban-v0/test/11000/0 in both"):
        collect([folders[1], copy])
    dev = write_folder(tmp_path / "dev", "random", "random", [], split="dev")
    (dev / "episodes.jsonl").write_text(
        json.dumps(
            episode("Sokoban-v0", 100, "random", success=False, score=0, steps=1, tokens=None, wall_s=0)
            | {"split": "dev", "key": "Sokoban-v0/dev/100/0"}
        )
        + "\n"
    )
    with pytest.raises(LeaderboardError, match="one split"):
        collect([folders[0], dev])
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("[1, 2]")
    (tmp_path / "broken" / "episodes.jsonl").write_text("")
    with pytest.raises(LeaderboardError, match="not a run configuration"):
        collect([tmp_path / "broken"])


class _Pixels(gym.Env):
    """Dict observations with a screenshot whose colour is the step count (a text env when ``text_only``)."""

    def __init__(self, text_only: bool = False) -> None:
        self.text_only, self.count = text_only, 0

    def _observation(self) -> Any:
        if self.text_only:
            return f"step {self.count}"
        return {"text": f"step {self.count}", "screenshot": np.full((4, 6, 3), 40 * self.count, np.uint8)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self.count = 0
        return self._observation(), {}

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.count += 1
        return self._observation(), 0.0, self.count == 2, False, {}


def test_screenshot_recorder_saves_each_observation_as_png(tmp_path: Path) -> None:
    from PIL import Image

    env = ScreenshotRecorder(_Pixels())
    env.reset()  # not recording yet: nothing written
    assert env.saved == [] and not any(tmp_path.iterdir())
    env.record_to(tmp_path / "episode", relative_to=tmp_path)
    observation, _ = env.reset()
    env.step("a")
    env.step("b")
    assert "screenshot" in observation  # observations pass through unchanged
    assert env.saved == ["episode/0.png", "episode/1.png", "episode/2.png"]
    assert np.asarray(Image.open(tmp_path / "episode" / "2.png")).tolist() == np.full((4, 6, 3), 80).tolist()
    text = ScreenshotRecorder(_Pixels(text_only=True))
    text.record_to(tmp_path / "text")
    text.reset()
    assert text.saved == [None] and not (tmp_path / "text").exists()


@pytest.mark.skipif(shutil.which("Xvfb") is None or shutil.which("xdotool") is None, reason="no Xvfb/xdotool")
def test_runner_records_screenshots_of_desktop_episodes(tmp_path: Path) -> None:
    import asyncio

    from agentgym.evaluation.runner import EvalItem, run_eval
    from agentgym.llm.policies import make_policy

    asyncio.run(run_eval("oracle", make_policy("oracle"), [EvalItem("Desktop-v0", 1)], tmp_path / "run"))
    (record,) = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert record["status"] == "ok" and len(record["screenshots"]) == record["steps"] + 1
    assert all((tmp_path / "run" / path).read_bytes().startswith(b"\x89PNG") for path in record["screenshots"])


def test_leaderboard_command_finds_runs_prices_them_and_refuses_mismatches_when_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentgym.cli import main

    for name, fingerprint in (("a", "f1"), ("b", "f2")):
        records = [episode("Maze-v0", 1, name, success=True, score=1, steps=1, tokens=(2_000_000, 0), wall_s=1)]
        write_folder(
            tmp_path / "results" / "quick" / name, name, name, records, env_fingerprints={"Maze-v0": fingerprint}
        )
    root = str(tmp_path / "results")
    assert main(["leaderboard", root, "--price", "a=0.5,1", "--markdown", str(tmp_path / "board.md")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Warning: Maze-v0 has different task sets (f1 in results/quick/a; f2 in results/quick/b)")
    assert "$1.00" in out and "| quick/a |" not in out  # a's cost; runs are labelled from the folder given
    assert "| results/quick/a | a | text |" in (tmp_path / "board.md").read_text()
    (tmp_path / "prices.yaml").write_text("b: {input: 2, output: 0}\n")
    assert main(["leaderboard", root, "--prices", str(tmp_path / "prices.yaml")]) == 0
    assert "$4.00" in capsys.readouterr().out
    assert main(["leaderboard", root, "--strict"]) == 2
    assert "fingerprints differ" in capsys.readouterr().err
    assert main(["leaderboard", root, "--price", "a=cheap"]) == 2
    assert "POLICY=IN,OUT" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
