"""Leaderboard page size and load time: the HTML page of a folder of runs, opened in headless Chromium.

Writes the page (``agentgym leaderboard FOLDER --html``) and measures what a reader downloads
before opening any trajectory (the page itself: it references nothing else until then), the
trajectory files beside it, how long writing and showing it take, and the bytes loaded to open
one trajectory. ``--baseline COMMIT`` also writes the page with the leaderboard of an earlier
commit (``git show COMMIT:agentgym/leaderboard.py`` and its template, as the
leaderboard was laid out before it moved to ``agentgym/evaluation/``; e.g. 8e5cea2) for a before/after row.
``--screenshot PNG`` saves a picture of the page (family expanded, a trajectory opened).

    agentgym eval --suite quick --policy oracle --policy random --out /tmp/lbq
    python benchmarks/leaderboard_page.py /tmp/lbq --baseline 8e5cea2 --screenshot docs/leaderboard.png --about "..."
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recording import record

from agentgym.browser.page import CHROMIUM
from agentgym.evaluation.leaderboard import write_html

ROOT = Path(__file__).resolve().parent.parent


def folder_bytes(folder: Path) -> tuple[int, int, int]:
    """Total bytes, file count and largest file of a folder (0s when it does not exist)."""
    sizes = [path.stat().st_size for path in folder.rglob("*") if path.is_file()] if folder.exists() else []
    return sum(sizes), len(sizes), max(sizes, default=0)


def baseline_page(commit: str, folders: list[Path], page: Path) -> float:
    """Write ``page`` with the leaderboard module of ``commit`` (old API: a list of run folders)."""
    source = subprocess.run(["git", "show", f"{commit}:agentgym/leaderboard.py"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    template = subprocess.run(["git", "show", f"{commit}:agentgym/leaderboard.html"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout  # fmt: skip
    module_path = page.with_name("baseline_leaderboard.py")
    template_path = page.with_name("baseline_leaderboard.html")
    template_path.write_text(template, encoding="utf-8")
    original = 'resources.files("agentgym").joinpath("leaderboard.html").read_text(encoding="utf-8")'
    if original not in source:
        raise SystemExit(f"{commit}'s leaderboard.py does not read its template as expected")
    module_path.write_text(source.replace(original, f"open({str(template_path)!r}, encoding='utf-8').read()"))
    spec = importlib.util.spec_from_file_location("baseline_leaderboard", module_path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    clock = time.perf_counter()
    module.write_html(folders, page)
    return time.perf_counter() - clock


def run_folders(root: Path) -> list[Path]:
    """The run folders under ``root`` (for the baseline, which takes run folders only)."""
    return sorted(path.parent for path in root.rglob("run.json") if (path.parent / "episodes.jsonl").exists())


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])


def load_time(page: Path, selector: str) -> float:
    """Seconds from navigation until ``selector`` is drawn."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        clock = time.perf_counter()
        tab.goto(page.as_uri(), timeout=300_000)
        tab.wait_for_selector(selector, timeout=300_000)
        seconds = time.perf_counter() - clock
        browser.close()
    return seconds


def in_chromium(page: Path, screenshot: Path | None) -> dict[str, Any]:
    """Load time (until the matrix is drawn) and the bytes fetched to open the first trajectory."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        requests: list[str] = []
        tab.on("request", lambda request: requests.append(request.url))
        clock = time.perf_counter()
        tab.goto(page.as_uri())
        tab.wait_for_selector("#matrix tbody tr")
        loaded = time.perf_counter() - clock
        before = list(requests)
        clock = time.perf_counter()
        tab.locator("#episodes tbody tr").first.click()
        tab.wait_for_selector("#viewer h3")
        opened = time.perf_counter() - clock
        fetched = [url for url in requests if url not in before]
        fetched_bytes = sum(Path(url.removeprefix("file://")).stat().st_size for url in fetched)
        if screenshot is not None:
            picture(tab, screenshot)
        browser.close()
    return {"load_s": loaded, "requests_before_opening": len(before), "open_s": opened,
            "bytes_to_open_first_trajectory": fetched_bytes}  # fmt: skip


def picture(tab: Any, path: Path) -> None:
    """The page with a family's envs shown, two runs side by side on one Sokoban task."""
    expandable = tab.locator("#matrix th[data-key='f:sokoban'] button.toggle")
    if expandable.count():
        expandable.click()
    if tab.locator("#compare option").count() > 2:
        tab.select_option("#compare", index=2)
    if tab.locator("#env option", has_text="Sokoban-v0").count():
        tab.select_option("#env", label="Sokoban-v0")
    tab.locator("#episodes tbody tr").first.click()
    tab.wait_for_selector("#viewer .msg")
    tab.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": 0, "width": 1400, "height": 2300})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a folder of runs, e.g. the quick suite's results")
    parser.add_argument("--baseline", metavar="COMMIT", help="also measure the page of this commit's leaderboard")
    parser.add_argument("--screenshot", type=Path, metavar="PNG", help="save a screenshot of the page")
    parser.add_argument("--about", default="", help="how the runs were made, recorded with the results")
    parser.add_argument("--no-write", action="store_true", help="print the table; do not record it")
    args = parser.parse_args()
    rows, data = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        if args.baseline:
            seconds = baseline_page(args.baseline, run_folders(args.folder), out / "before.html")
            size = (out / "before.html").stat().st_size
            shown = load_time(out / "before.html", "#board tbody tr")
            data["before"] = {"commit": args.baseline, "page_bytes": size, "write_s": seconds, "load_s": shown}
            rows.append(
                f"| before ({args.baseline}) | {size / 1e6:,.2f} MB | none: every trajectory inlined | {seconds:.1f} s"
                f" | {shown:.2f} s | (inlined) |"
            )
        clock = time.perf_counter()
        board = write_html([args.folder], out / "board.html")
        seconds = time.perf_counter() - clock
        size = (out / "board.html").stat().st_size
        files, count, largest = folder_bytes(out / "board_files")
        browser = in_chromium(out / "board.html", args.screenshot)
        data["after"] = {"page_bytes": size, "files_bytes": files, "files": count, "largest_file_bytes": largest,
                         "write_s": seconds, "runs": len(board.runs),
                         "episodes": sum(run.episodes + run.errored for run in board.runs), **browser}  # fmt: skip
        rows.append(
            f"| after | {size / 1e6:,.2f} MB | {files / 1e6:,.1f} MB in {count} files (largest {largest / 1e6:.2f} MB)"
            f" | {seconds:.1f} s | {browser['load_s']:.2f} s"
            f" | {browser['bytes_to_open_first_trajectory'] / 1e3:,.0f} kB in {browser['open_s']:.2f} s |"
        )
    table = "\n".join(
        [
            "| page | HTML page (all a reader loads first) | trajectory files beside it | write | show in Chromium | "
            "open one trajectory |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    table += (
        "\n\nThe page is all a reader downloads until a trajectory is opened (it references nothing else"
        " before then); each trajectory file holds at most 50 episodes and about 1 MB, loaded by a"
        " `<script>` element when one of its episodes is opened. *Show in Chromium*: headless Chromium,"
        " from navigation (`file://`) until the first table row is drawn. *Open one trajectory*: bytes"
        " and seconds to show the first episode of the list. *Before*: the page the leaderboard of the"
        " baseline commit wrote from the same runs (one self-contained file, every transcript inlined)."
    )
    if args.about:
        table += f"\n\nThe runs: {args.about}"
    if not args.no_write:
        setup = (
            f"{data['after']['runs']} runs, {data['after']['episodes']:,} episodes under {args.folder};"
            " target: page under 2 MB before any trajectory is opened"
        )
        command = "python benchmarks/leaderboard_page.py " + " ".join(
            arg for arg in sys.argv[1:] if arg != args.about and arg != "--about"
        )
        record("leaderboard_page", "Leaderboard page size", setup, table, data, command)


if __name__ == "__main__":
    main()
