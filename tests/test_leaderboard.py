"""Leaderboards from hand-written results folders: numbers, tables, and the HTML page in Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentgym.leaderboard import (
    LeaderboardError,
    LeaderboardRow,
    collect,
    format_markdown,
    format_terminal,
    overall,
    write_html,
)

SYSTEM_PROMPT = "You are an agent. End every reply with a line `Action: <command>`."
HOSTILE = "</script><img src=x onerror=alert(1)>"
UNICODE = "Box ☐ → 目标 ✓ 🎯 naïve"


def episode(
    env: str,
    task_id: int,
    policy: str,
    *,
    success: bool,
    score: float,
    steps: int,
    tokens: tuple[int, int] | None,
    wall_s: float,
    error: str | None = None,
    observations: list[str] | None = None,
    replies: list[str] | None = None,
    info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An episode record as ``agentgym eval`` writes it, with ``steps`` turns."""
    observations = observations or [f"{env} observation {k}" for k in range(steps + 1)]
    replies = replies or [f"Let me try.\nAction: {['up', 'left', 'down', 'right'][k % 4]}" for k in range(steps)]
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": observations[0]}]
    turns = []
    for k, reply in enumerate(replies):
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": observations[k + 1]}]
        last = k == len(replies) - 1
        turns.append(
            {
                "action": reply.rsplit("Action: ", 1)[-1],
                "reward": 1.0 if last and success else 0.0,
                "invalid_action": reply.endswith("fly"),
                "terminated": last and error is None,
                "truncated": False,
                "info": {"task_id": task_id, "steps": k + 1, **(info or {})},
                "policy_s": 0.5,
                "env_s": 0.0002,
                "prompt_tokens": 100,
                "completion_tokens": 20,
            }
        )
    return {
        "key": f"{env}/test/{task_id}/0",
        "env": env,
        "split": "test",
        "task_id": task_id,
        "repeat": 0,
        "seed": task_id + 7,
        "policy": policy,
        "status": "error" if error else "ok",
        "error": error,
        "success": success,
        "score": score,
        "return": 1.0 if success else 0.0,
        "steps": steps,
        "terminated": error is None,
        "truncated": False,
        "instruction": f"Solve task {task_id}.",
        "messages": messages,
        "turns": turns,
        "tokens": None if tokens is None else {"prompt": tokens[0], "completion": tokens[1]},
        "started": "2026-11-22T10:00:01Z",
        "wall_s": wall_s,
    }


def write_folder(folder: Path, spec: str, name: str, records: list[dict[str, Any]], split: str = "test") -> Path:
    """A results folder with ``run.json`` and ``episodes.jsonl`` (records in file order)."""
    folder.mkdir()
    envs = sorted({record["env"] for record in records})
    run = {
        "agentgym_version": "0.1.0",
        "created": "2026-11-22T10:00:00Z",
        "policy": spec,
        "policy_info": {"name": name},
        "split": split,
        "seed": 0,
        "system_prompt": SYSTEM_PROMPT,
        "history_window": None,
        "items": [{"env": env, "episodes": 20, "max_turns": 100, "kwargs": {}} for env in envs],
        "suite": None,
    }
    (folder / "run.json").write_text(json.dumps(run, indent=2))
    (folder / "episodes.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    return folder


@pytest.fixture
def folders(tmp_path: Path) -> list[Path]:
    qwen, llama, rand = "Qwen2.5-7B", "Llama-3-8B", "random"
    return [
        write_folder(
            tmp_path / "qwen",
            "openai:Qwen2.5-7B@http://127.0.0.1:8000/v1",
            qwen,
            [
                episode("Sokoban-v0", 11000, qwen, success=True, score=1.0, steps=12, tokens=(1200, 300), wall_s=3.0),
                # 11001 errored first, then was redone: the later record wins.
                episode(
                    "Sokoban-v0",
                    11001,
                    qwen,
                    success=False,
                    score=0.0,
                    steps=1,
                    tokens=None,
                    wall_s=1.0,
                    error="connection refused",
                ),
                episode(
                    "Sokoban-v0",
                    11002,
                    qwen,
                    success=False,
                    score=0.0,
                    steps=3,
                    tokens=(300, 90),
                    wall_s=2.0,
                    error="server timeout after 60 s",
                ),
                episode("Sokoban-v0", 11003, qwen, success=True, score=1.0, steps=20, tokens=(2000, 500), wall_s=5.0),
                episode(
                    "Sokoban-v0", 11001, qwen, success=False, score=0.5, steps=100, tokens=(9000, 1000), wall_s=20.0
                ),
                episode("Wordle-v0", 20000, qwen, success=True, score=1.0, steps=4, tokens=(800, 100), wall_s=2.5),
                episode("Wordle-v0", 20001, qwen, success=False, score=0.0, steps=6, tokens=(1000, 150), wall_s=3.5),
            ],
        ),
        write_folder(
            tmp_path / "llama-sokoban",
            "openai:Llama-3-8B@http://127.0.0.1:8001/v1",
            llama,
            [
                episode(
                    "Sokoban-v0",
                    11000,
                    llama,
                    success=True,
                    score=1.0,
                    steps=2,
                    tokens=(1000, 200),
                    wall_s=2.0,
                    observations=[f"Push the box.\n{UNICODE}", f"You see {HOSTILE}", "Solved."],
                    replies=["I try to fly.\nAction: fly", f"Quoting {HOSTILE}\nAction: up"],
                    info={"note": HOSTILE, "ratio": float("nan")},
                ),
                episode(
                    "Sokoban-v0", 11001, llama, success=False, score=0.0, steps=100, tokens=(5000, 800), wall_s=10.0
                ),
            ],
        ),
        write_folder(
            tmp_path / "llama-wordle",
            "openai:Llama-3-8B@http://127.0.0.1:8001/v1",
            llama,
            [
                episode("Wordle-v0", 20000, llama, success=True, score=1.0, steps=3, tokens=(700, 100), wall_s=1.0),
                episode("Wordle-v0", 20001, llama, success=True, score=1.0, steps=5, tokens=(900, 100), wall_s=1.0),
            ],
        ),
        write_folder(
            tmp_path / "random",
            "random",
            rand,
            [
                episode(
                    "Sokoban-v0",
                    11000,
                    rand,
                    success=False,
                    score=0.0,
                    steps=100,
                    tokens=None,
                    wall_s=0.25,
                    info={"lone surrogate": "\ud800"},
                ),
                episode("Sokoban-v0", 11001, rand, success=False, score=0.0, steps=100, tokens=None, wall_s=0.25),
            ],
        ),
    ]


def test_collect_aggregates_per_policy_and_env(folders: list[Path]) -> None:
    rows = collect(folders)
    assert [(row.env, row.policy) for row in rows] == [
        ("Sokoban-v0", "Qwen2.5-7B"),
        ("Sokoban-v0", "Llama-3-8B"),
        ("Sokoban-v0", "random"),
        ("Wordle-v0", "Llama-3-8B"),
        ("Wordle-v0", "Qwen2.5-7B"),
    ]
    by = {(row.policy, row.env): row for row in rows}
    qwen = by["Qwen2.5-7B", "Sokoban-v0"]
    # ok: 11000 (success, 12 steps), 11001 redone (score 0.5, 100 steps), 11003 (success, 20 steps); 11002 errored.
    assert (qwen.episodes, qwen.errored, qwen.successes) == (3, 1, 2)
    assert qwen.success_rate == pytest.approx(2 / 3)
    assert (round(qwen.ci_low, 4), round(qwen.ci_high, 4)) == (0.2077, 0.9385)
    assert qwen.mean_score == pytest.approx(2.5 / 3)
    assert qwen.mean_steps == pytest.approx(44.0)
    assert qwen.mean_tokens == pytest.approx((1500 + 10000 + 2500) / 3)
    assert qwen.wall_s == pytest.approx(3.0 + 20.0 + 2.0 + 5.0)  # the replaced record's 1.0 s is gone
    assert qwen.folders == (str(folders[0]),)
    llama = by["Llama-3-8B", "Wordle-v0"]
    assert (llama.episodes, llama.errored, llama.success_rate, llama.mean_steps, llama.mean_tokens) == (2, 0, 1, 4, 900)
    assert (round(llama.ci_low, 4), llama.ci_high) == (0.3424, 1.0)
    assert by["Llama-3-8B", "Sokoban-v0"].folders == (str(folders[1]),)
    rand = by["random", "Sokoban-v0"]
    assert (rand.success_rate, rand.mean_score, rand.mean_tokens, rand.wall_s) == (0, 0, None, 0.5)
    assert (rand.ci_low, round(rand.ci_high, 4)) == (0, 0.6576)


def test_overall_is_a_macro_average_within_each_env_set(folders: list[Path]) -> None:
    both = ("Sokoban-v0", "Wordle-v0")
    result = [
        (row.policy, row.envs, round(row.success_rate, 4), round(row.mean_score, 4), row.episodes, row.errored)
        for row in overall(collect(folders))
    ]
    assert result == [
        ("Llama-3-8B", both, round((1 / 2 + 1) / 2, 4), 0.75, 4, 0),
        ("Qwen2.5-7B", both, round((2 / 3 + 1 / 2) / 2, 4), round((2.5 / 3 + 0.5) / 2, 4), 5, 1),
        ("random", ("Sokoban-v0",), 0, 0, 2, 0),
    ]


def test_format_terminal(folders: list[Path]) -> None:
    lines = format_terminal(collect(folders)).splitlines()
    assert lines[0].split() == [
        "env",
        "rank",
        "policy",
        "success",
        "[95%",
        "CI]",
        "episodes",
        "errored",
        "score",
        "steps",
        "tokens/ep",
        "wall",
    ]
    assert lines[2].split() == [
        "Sokoban-v0",
        "1",
        "Qwen2.5-7B",
        "66.7%",
        "[20.8,",
        "93.9]",
        "3",
        "1",
        "0.833",
        "44.0",
        "4,667",
        "30.0s",
    ]
    assert lines[3].split() == [
        "Sokoban-v0",
        "2",
        "Llama-3-8B",
        "50.0%",
        "[9.5,",
        "90.5]",
        "2",
        "0",
        "0.500",
        "51.0",
        "3,500",
        "12.0s",
    ]
    assert lines[4].split() == [
        "Sokoban-v0",
        "3",
        "random",
        "0.0%",
        "[0.0,",
        "65.8]",
        "2",
        "0",
        "0.000",
        "100.0",
        "—",
        "0.5s",
    ]
    assert lines[5].split()[:6] == ["Wordle-v0", "1", "Llama-3-8B", "100.0%", "[34.2,", "100.0]"]
    start = lines.index("Overall: macro-averaged over 2 envs (Sokoban-v0, Wordle-v0)")
    assert lines[start + 3].split() == ["1", "Llama-3-8B", "75.0%", "0.750", "4", "0"]
    assert lines[start + 4].split() == ["2", "Qwen2.5-7B", "58.3%", "0.667", "5", "1"]
    assert lines[start + 5 :] == []  # random ran one env: it has no overall


def test_single_env_has_no_overall_section(folders: list[Path]) -> None:
    text = format_terminal(collect(folders[1:2]))
    assert "Overall" not in text and "Llama-3-8B" in text


def test_format_markdown(folders: list[Path]) -> None:
    lines = format_markdown(collect(folders)).splitlines()
    assert lines[0] == (
        "| Env | Rank | Policy | Success [95% CI] | Episodes | Errored | Score | Steps | Tokens/ep | Wall |"
    )
    assert lines[1] == "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    assert lines[2] == "| Sokoban-v0 | 1 | Qwen2.5-7B | 66.7% [20.8, 93.9] | 3 | 1 | 0.833 | 44.0 | 4,667 | 30.0s |"
    assert "| 2 | Qwen2.5-7B | 58.3% | 0.667 | 5 | 1 |" in lines
    hostile = LeaderboardRow("a|b <i>x</i>", "E-v0", 0, 1, 0, None, 0.0, 1.0, None, None, None, 4.0, ("f",))
    assert format_markdown([hostile]).splitlines()[2] == (
        "| E-v0 | — | a\\|b &lt;i&gt;x&lt;/i&gt; | — | 0 | 1 | — | — | — | 4.0s |"
    )


def test_bad_folders_are_clear_errors(folders: list[Path], tmp_path: Path) -> None:
    with pytest.raises(LeaderboardError, match="nowhere is not a results folder .does not exist."):
        collect([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(LeaderboardError, match="empty is not a results folder .has no run.json."):
        collect([folders[0], tmp_path / "empty"])
    copy = tmp_path / "copy"
    shutil.copytree(folders[1], copy)
    with pytest.raises(LeaderboardError, match="'Llama-3-8B' has episode Sokoban-v0/test/11000/0 in both"):
        collect([folders[1], copy])
    with pytest.raises(LeaderboardError, match="in both"):
        write_html([folders[1], copy], tmp_path / "board.html")
    assert not list(tmp_path.glob("board.html*"))  # no page, no temporary file
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


def test_html_embeds_each_episode_as_inert_json(folders: list[Path], tmp_path: Path) -> None:
    page = tmp_path / "board.html"
    assert write_html(folders, page) == collect(folders)
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"<(img|link|iframe)|<script[^>]*\ssrc=", html)  # no element from data, nothing external
    details = re.findall(r'<script type="application/json" id="ep-(\d+)">(.*?)</script>', html)
    assert len(details) == 12  # every episode once, the replaced record of 11001 not at all
    data = json.loads(re.search(r'<script type="application/json" id="agentgym-data">(.*?)</script>', html)[1])
    assert [run["label"] for run in data["runs"]] == [
        "Qwen2.5-7B · qwen",
        "Llama-3-8B · llama-sokoban",
        "Llama-3-8B · llama-wordle",
        "random · random",
    ]
    position = next(
        i for i, ep in enumerate(data["episodes"]) if ep[:3] == [1, data["envs"].index("Sokoban-v0"), 11000]
    )
    detail = json.loads(details[position][1])
    assert detail["messages"][0] == ["system", None]  # the run's system prompt, held once
    assert detail["messages"][3] == ["user", f"You see {HOSTILE}"]
    assert detail["turns"][0]["info"]["ratio"] is None  # NaN is not JSON


def test_html_page_in_chromium(browser: Any, folders: list[Path], tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page_path = tmp_path / "board.html"
    write_html(folders, page_path)
    page = browser.new_page()
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(page_path.as_uri())

    # The leaderboard: ranked rows, sortable headers, env filter.
    policies = page.locator("#board tbody td:nth-child(3)")
    expect(policies).to_have_text(["Qwen2.5-7B", "Llama-3-8B", "random", "Llama-3-8B", "Qwen2.5-7B"])
    expect(page.locator("#board tbody tr").first).to_contain_text("66.7% [20.8, 93.9]")
    policy_header = page.locator("#board th[data-key=policy]")
    policy_header.locator("button").click()
    expect(policy_header).to_have_attribute("aria-sort", "ascending")
    expect(policies).to_have_text(["Llama-3-8B", "Llama-3-8B", "Qwen2.5-7B", "Qwen2.5-7B", "random"])
    policy_header.locator("button").click()
    expect(policies).to_have_text(["random", "Qwen2.5-7B", "Qwen2.5-7B", "Llama-3-8B", "Llama-3-8B"])
    page.locator("#board th[data-key=success_rate] button").click()
    expect(page.locator("#board tbody td:nth-child(4)")).to_have_text(
        ["100.0% [34.2, 100.0]", "66.7% [20.8, 93.9]", "50.0% [9.5, 90.5]", "50.0% [9.5, 90.5]", "0.0% [0.0, 65.8]"]
    )
    page.select_option("#env-filter", "Wordle-v0")
    expect(policies).to_have_text(["Llama-3-8B", "Qwen2.5-7B"])
    expect(page.locator("#overall-table tbody tr")).to_have_count(2)

    # The viewer: pick a run, env and episode and read its turns.
    page.select_option("#run", label="Llama-3-8B · llama-sokoban")
    page.select_option("#env", "Sokoban-v0")
    page.select_option("#episode", label="task 11000 · ✓ success · score 1.00 · 2 steps")
    viewer = page.locator("#viewer")
    expect(viewer.locator("h3")).to_have_text("Llama-3-8B · Sokoban-v0 · task 11000 success")
    expect(viewer.locator(".msg.user pre")).to_have_text([f"Push the box.\n{UNICODE}", f"You see {HOSTILE}", "Solved."])
    expect(viewer.locator("code.action")).to_have_text(["fly", "up"])
    expect(viewer.locator(".badge.invalid")).to_have_count(1)
    expect(viewer.locator(".msg.assistant").nth(1)).to_contain_text(f"Quoting {HOSTILE}")
    expect(viewer.locator(".msg.system pre")).to_have_text(SYSTEM_PROMPT)
    expect(viewer).to_contain_text("reward +1.000")
    expect(viewer.locator(".turn pre").first).to_contain_text(f'"note": "{HOSTILE}"')

    # Errors are listed and shown; clicking a leaderboard row opens its trajectories.
    page.select_option("#run", label="Qwen2.5-7B · qwen")
    page.select_option("#outcome", "error")
    expect(page.locator("#episode option")).to_have_count(1)
    expect(viewer.locator("pre.error")).to_have_text("server timeout after 60 s")
    page.select_option("#outcome", "all")
    page.locator("#board tbody tr", has_text="Llama-3-8B").click()
    expect(page.locator("#run option:checked")).to_have_text("Llama-3-8B · llama-wordle")
    expect(page.locator("#episode option")).to_have_count(2)

    assert page.locator("img").count() == 0
    assert problems == []
    assert requests == [page_path.as_uri()]
    page.close()


def test_viewer_pages_long_episode_lists(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    records = [
        episode(
            "Maze-v0",
            task,
            "tiny",
            success=task % 2 == 0,
            score=1.0 * (task % 2 == 0),
            steps=1,
            tokens=(10, 1),
            wall_s=0.01,
        )
        for task in range(1001)
    ]
    write_html([write_folder(tmp_path / "tiny", "tiny", "tiny", records)], tmp_path / "tiny.html")
    page = browser.new_page()
    page.goto((tmp_path / "tiny.html").as_uri())
    expect(page.locator("#page option")).to_have_text(["1–500", "501–1000", "1001–1001"])
    expect(page.locator("#episode option")).to_have_count(500)
    page.select_option("#episode", index=499)
    page.click("#next")  # crosses into the second page
    expect(page.locator("#page")).to_have_value("1")
    expect(page.locator("#viewer h3")).to_have_text("tiny · Maze-v0 · task 500 success")
    page.select_option("#page", "2")
    expect(page.locator("#episode option")).to_have_count(1)
    expect(page.locator("#viewer h3")).to_have_text("tiny · Maze-v0 · task 1000 success")
    page.close()
