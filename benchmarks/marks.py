"""Set-of-marks drawing cost per screenshot, beside what an observation costs anyway.

On real screenshots of three pages (a MiniWoB++ task at 500x400, WebShop-Browser's search results
at 1280x720, the MediaWiki site of the web apps at 1280x720), each with the marks of its
interactive elements: the time of :func:`agentgym.utils.marks.draw_marks` per screenshot, next to
the screenshot capture it is drawn on and the PNG encoding the chat wrapper does to send it (under
the default 1024x768 image budget). All three are measured in the same run, interleaved, so the
ratios hold on a loaded machine even where the absolute times do not.

    python benchmarks/marks.py                 # writes results/marks.{md,json}
    python benchmarks/marks.py --repeats 10 --no-write
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from recording import record

import agentgym  # noqa: F401  (registers the ids)
from agentgym.images import ImageOptions, encode_screenshot
from agentgym.utils.marks import draw_marks

PAGES: dict[str, tuple[str, dict[str, Any], int, list[str]]] = {
    # name: (env id, kwargs, task id, commands played before measuring)
    "MiniWoB click-checkboxes 500x400": ("MiniWoB-click-checkboxes-v0", {}, 5, []),
    "WebShop-Browser results 1280x720": ("WebShop-Browser-v0", {}, 7, ["oracle", "oracle"]),
    "WebApps wiki page 1280x720": ("WebApps-Wiki-v0", {}, 0, ["oracle"]),
}


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def measure(name: str, env_id: str, kwargs: dict[str, Any], task_id: int, prefix: list[str], repeats: int) -> dict:
    env = gym.make(env_id, marks=True, **kwargs)
    try:
        browser = env.unwrapped
        env.reset(options={"task_id": task_id})
        for command in prefix:
            env.step(browser.oracle_action() if command == "oracle" else command)
        marks = browser.set_of_marks()
        pixels = browser.pixels()
        options = ImageOptions("screenshot")
        steps: dict[str, Callable[[], Any]] = {
            "capture": lambda: browser.tab.screenshot(),
            "draw marks": lambda: draw_marks(pixels, marks),
            "encode PNG": lambda: encode_screenshot(pixels, options),
        }
        samples: dict[str, list[float]] = {step: [] for step in steps}
        for _ in range(repeats):  # interleaved, so that load changes hit all three alike
            for step, function in steps.items():
                start = time.perf_counter()
                function()
                samples[step].append(time.perf_counter() - start)
        height, width = pixels.shape[:2]
        result = {step: median_ms(times) for step, times in samples.items()}
        return {"page": name, "size": f"{width}x{height}", "marks": len(marks), **result}
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = [measure(name, *page, args.repeats) for name, page in PAGES.items()]
    lines = [
        "| page | marks | draw marks (ms) | screenshot capture (ms) | PNG encode (ms) | draw / capture |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratio = row["draw marks"] / row["capture"]
        lines.append(
            f"| {row['page']} | {row['marks']} | {row['draw marks']} | {row['capture']} | {row['encode PNG']} "
            f"| {ratio:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        setup = f"medians of {args.repeats} interleaved repeats per page, on a shared 2-core machine under load"
        record("marks", "Set-of-marks drawing cost per screenshot", setup, table, rows)


if __name__ == "__main__":
    main()
