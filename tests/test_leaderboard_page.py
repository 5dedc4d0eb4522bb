"""The leaderboard's HTML page in a real headless Chromium: matrix, plots, trajectories loaded on demand."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from leaderboard_runs import (
    HOSTILE,
    SYSTEM_PROMPT,
    UNICODE,
    episode,
    four_runs,
    png,
    write_arena,
    write_folder,
    write_training,
)

from agentgym.evaluation.leaderboard import CHUNK_EPISODES, LeaderboardError, write_html


def open_page(browser: Any, url: str) -> tuple[Any, list[str], list[str]]:
    """A Chromium tab on ``url``, with the problems (console errors, exceptions, dialogs) and requests it sees."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    return page, problems, requests


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A page over four eval runs, an arena and a training run (all under ``results/``)."""
    results = tmp_path / "results"
    four_runs(results / "evals")
    write_arena(results / "arena", "TicTacToe-v0", [("minimax", "random", "minimax"), ("random", "minimax", None)])
    write_training(results / "train" / "grpo", {2: 1, 4: 3})
    write_html([results], tmp_path / "site" / "board.html")
    return tmp_path / "site" / "board.html"


def test_page_renders_sorts_plots_and_loads_trajectories_on_demand(browser: Any, site: Path) -> None:
    from playwright.sync_api import expect

    html = site.read_text(encoding="utf-8")
    external = r'<(img|iframe)|<link(?! rel="icon" href="data:,">)|<script[^>]*\ssrc='
    assert not re.search(external, html)  # nothing external, no element from data
    assert "Push the box" not in html  # transcripts live in the files beside the page
    chunks = sorted(path.name for path in (site.parent / "board_files").glob("*.js"))
    assert len(chunks) == 6  # one per run and env: llama 1 + 1, qwen 2, random 1, grpo's latest evaluation 1
    page, problems, requests = open_page(browser, site.as_uri())

    # The matrix: ranked within env-set groups (A: Sokoban + Wordle, B: Maze, C: Sokoban alone).
    policies = page.locator("#matrix tbody td:nth-child(2)")
    expect(policies).to_have_text(["Llama-3-8B", "Qwen2.5-7B", "results/train/grpo @ iteration 4", "random"])
    expect(page.locator("#matrix tbody td:nth-child(1)")).to_have_text(["1 A", "2 A", "1 B", "1 C"])
    expect(page.locator("#matrix tbody tr").first).to_contain_text("75.0% [")
    wordle = page.locator("#matrix th[data-key='f:wordle']")
    wordle.locator("button").first.click()
    expect(wordle).to_have_attribute("aria-sort", "descending")
    expect(policies).to_have_text(["Llama-3-8B", "Qwen2.5-7B", "results/train/grpo @ iteration 4", "random"])
    page.locator("#matrix th[data-key=policy] button").click()
    expect(policies).to_have_text(["Llama-3-8B", "Qwen2.5-7B", "random", "results/train/grpo @ iteration 4"])
    wordle_cell = page.locator("#matrix tr[data-policy='Llama-3-8B'] td.rate").last
    assert "rgb(12, 44, 132)" in wordle_cell.get_attribute("style")  # the darkest colour: 100%
    expect(page.locator("#matrix th[data-key='a:0']")).to_have_text("Elo TicTacToe-v0")
    expect(page.locator("#matrix tr[data-policy=random] td").nth(7)).not_to_have_text("—")  # its arena rating
    expect(page.locator("#arenas table.arena tbody tr")).to_have_count(2)

    # Plots: a bar per (policy, family), a point per (policy, env), a learning curve.
    expect(page.locator("#plot-families rect.bar")).to_have_count(6)
    expect(page.locator("#plot-families line.whisker")).to_have_count(6)
    expect(page.locator("#plot-scatter circle.point")).to_have_count(6)
    page.select_option("#scatter-x", "mean_tokens")
    expect(page.locator("#plot-scatter circle.point")).to_have_count(5)  # random reports no tokens
    expect(page.locator("#plot-curves circle.eval-point")).to_have_count(2)
    expect(page.locator("#plot-curves polyline.train")).to_have_count(1)
    assert not [url for url in requests if url.endswith(".js")]  # nothing loaded until a trajectory is opened

    # Expand a family, click an env cell: that policy's trajectories, the first one opened (loaded now).
    page.locator("#matrix th[data-key='f:sokoban'] button.toggle").click()
    expect(page.locator("#matrix th[data-key='e:Sokoban-v0']")).to_have_count(1)
    page.locator("#matrix tr[data-policy='Llama-3-8B'] td.env").click()
    viewer = page.locator("#viewer")
    expect(viewer.locator("h3")).to_have_text("Llama-3-8B · Sokoban-v0 · task 11000 success")
    assert [url.rsplit("/", 2)[-2:] for url in requests if url.endswith(".js")] == [["board_files", "r0-e0-c0.js"]]
    expect(viewer.locator(".msg.user pre")).to_have_text([f"Push the box.\n{UNICODE}", f"You see {HOSTILE}", "Solved."])
    expect(viewer.locator("code.action")).to_have_text(["fly", "up"])
    expect(viewer.locator(".badge.invalid")).to_have_count(1)
    expect(viewer.locator(".msg.system pre")).to_have_text(SYSTEM_PROMPT)
    expect(viewer.locator(".turn pre").first).to_contain_text(f'"note": "{HOSTILE}"')

    # Filters: run, outcome, search; two policies side by side on the same task.
    page.select_option("#run", label="Qwen2.5-7B · results/evals/qwen")
    expect(page.locator("#episodes tbody tr")).to_have_count(4)  # the env filter stays on Sokoban-v0
    page.select_option("#env", "")
    expect(page.locator("#episodes tbody tr")).to_have_count(6)
    page.select_option("#outcome", "error")
    expect(page.locator("#episodes tbody tr")).to_have_count(1)
    page.locator("#episodes tbody tr").click()
    expect(viewer.locator("pre.error")).to_have_text("server timeout after 60 s")
    page.select_option("#outcome", "all")
    page.fill("#search", "11000")
    expect(page.locator("#episodes tbody tr")).to_have_count(1)
    page.select_option("#compare", label="Llama-3-8B · results/evals/llama-sokoban")
    page.locator("#episodes tbody tr").click()
    expect(viewer.locator("h3")).to_have_text("Qwen2.5-7B · Sokoban-v0 · task 11000 success")
    expect(page.locator("#viewer2 h3")).to_have_text("Llama-3-8B · Sokoban-v0 · task 11000 success")
    page.fill("#search", "solve task 2000")  # instructions are searched too
    expect(page.locator("#episodes tbody td:nth-child(2)")).to_have_text(["20000", "20001"])

    expect(page.locator("#runs tbody tr")).to_have_count(5)
    assert page.locator("img").count() == 0
    assert problems == []
    assert all(url.startswith(site.parent.as_uri()) for url in requests)
    page.close()


def test_trajectory_files_hold_at_most_a_chunk_and_show_screenshots_over_http(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    records = [
        episode("Maze-v0", task, "tiny", success=task % 2 == 0, score=0, steps=1, tokens=(10, 1), wall_s=0.01)
        for task in range(CHUNK_EPISODES + 5)
    ]
    shot = episode("Desktop-v0", 0, "tiny", success=True, score=1.0, steps=1, tokens=(10, 1), wall_s=1.0)
    shot["screenshots"] = ["screenshots/Desktop-v0_test_0_0/0.png", "screenshots/Desktop-v0_test_0_0/1.png"]
    # Paths out of the run folder are never copied (nor shown): a record is data.
    shot["screenshots"] += [str(tmp_path / "secret.png"), "../secret.png", "screenshots/missing.png"]
    (tmp_path / "secret.png").write_bytes(png(2, 2, (0, 0, 0)))
    run = write_folder(tmp_path / "run", "tiny", "tiny", [*records, shot])
    for number, colour in enumerate([(200, 30, 30), (30, 30, 200)]):
        path = run / "screenshots" / "Desktop-v0_test_0_0" / f"{number}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png(64, 48, colour))
    board = tmp_path / "www" / "board.html"
    write_html([run], board)
    files = board.parent / "board_files"
    assert sorted(path.name for path in files.glob("*.js")) == ["r0-e0-c0.js", "r0-e1-c0.js", "r0-e1-c1.js"]
    assert len(json.loads(re.search(r",(\[.*\])\);", (files / "r0-e1-c1.js").read_text())[1])) == 5
    copied = files / "shots" / "r0" / "screenshots" / "Desktop-v0_test_0_0" / "1.png"
    assert copied.read_bytes() == png(64, 48, (30, 30, 200))
    assert sorted(path.name for path in (files / "shots").rglob("*.png")) == ["0.png", "1.png"]

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(board.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page, problems, requests = open_page(browser, f"http://127.0.0.1:{server.server_port}/board.html")
        page.select_option("#env", label="Desktop-v0")
        page.locator("#episodes tbody tr").click()
        shots = page.locator("#viewer img.shot")
        expect(shots).to_have_count(2)
        expect(shots.first).to_have_js_property("naturalWidth", 64)  # loaded, not a broken image
        page.select_option("#env", label="Maze-v0")
        expect(page.locator("#episodes tbody tr")).to_have_count(CHUNK_EPISODES + 5)
        page.locator("#episodes tbody tr").last.click()
        expect(page.locator("#viewer h3")).to_have_text(f"tiny · Maze-v0 · task {CHUNK_EPISODES + 4} success")
        loaded = sorted(url.rsplit("/", 1)[-1] for url in requests if url.endswith(".js"))
        assert loaded == ["r0-e0-c0.js", "r0-e1-c1.js"]  # only the files of the episodes opened
        assert problems == []
        page.close()
    finally:
        server.shutdown()
        server.server_close()


def test_mismatched_fingerprints_show_a_banner_and_strict_writes_nothing(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    folders = []
    for name, fingerprint in (("old", "aaaa"), ("new", "bbbb")):
        records = [episode("Sokoban-v0", 1, name, success=True, score=1, steps=1, tokens=None, wall_s=1)]
        folders.append(write_folder(tmp_path / name, name, name, records, env_fingerprints={"Sokoban-v0": fingerprint}))
    with pytest.raises(LeaderboardError, match="fingerprints differ"):
        write_html(folders, tmp_path / "strict.html", strict=True)
    assert not list(tmp_path.glob("strict*"))  # no page, no files folder, no temporary
    write_html(folders, tmp_path / "board.html")
    page, problems, _ = open_page(browser, (tmp_path / "board.html").as_uri())
    expect(page.locator("#banner")).to_be_visible()
    expect(page.locator("#banner li")).to_have_text("Sokoban-v0: aaaa in old; bbbb in new")
    expect(page.locator("#matrix td.mismatch")).to_have_count(2)
    expect(page.locator("#matrix tbody td:nth-child(4)")).to_have_text(["—", "—"])  # no overall without Sokoban
    assert problems == []
    page.close()
