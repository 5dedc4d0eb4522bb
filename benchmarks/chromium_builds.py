"""Debian's two Chromium builds under agentgym's browser envs, in one run: the headless shell against the full browser.

Each round, for each build installed (``agentgym.browser.page.CHROMIUM_BUILDS``), a fresh Python process with
``AGENTGYM_CHROMIUM`` set to it renders the same MiniWoB++ grounding screenshots into an empty folder (each a page
load, its screenshot and its elements read, checked against the shipped task index: the same boxes within a pixel,
or the render fails) and plays the same MiniWoB++ oracle episodes. The machine's busy CPU time over the process is
what it cost (Chromium's renderers are not children the process waits for, so its own rusage misses them): run
it on an otherwise idle machine. Rounds alternate the builds; the best round of each is reported, and the ratio.

    python benchmarks/chromium_builds.py               # writes results/chromium_builds.{md,json}
    python benchmarks/chromium_builds.py --screens 50 --rounds 1 --no-write
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recording import record

from agentgym.browser.page import CHROMIUM_BUILDS

#: MiniWoB++ tasks whose oracle episodes each round plays (a few steps each: clicks, typing, a form).
EPISODE_TASKS = ("click-button", "click-checkboxes", "enter-text", "login-user", "choose-list", "click-tab")


def busy_cpu_s() -> float:
    """CPU seconds the machine has spent busy since boot (all cores, every process)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def work(screens: int, episodes: int) -> dict[str, float]:
    """In this process: render ``screens`` screenshots and play ``episodes`` oracle episodes per task; their seconds."""
    import gymnasium as gym

    from agentgym.browser.page import BrowserPool
    from agentgym.environments.grounding import dataset

    with tempfile.TemporaryDirectory() as folder:
        data = dataset.load_index("MiniWoB", Path(folder))
        firsts: dict[str, dict] = {}
        for split in ("train", "dev", "test"):
            for task in data.tasks[split]:
                firsts.setdefault(task["screen"], task)
        started = time.perf_counter()
        rendered = dataset.render_screens(data, list(firsts.values())[:screens], lambda line: None)
        render_s = time.perf_counter() - started
    started, successes = time.perf_counter(), 0
    for task in EPISODE_TASKS:
        with gym.make(f"MiniWoB-{task}-v0") as env:
            for task_id in range(episodes):
                env.reset(options={"task_id": task_id})
                for _ in range(20):
                    _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
                    if terminated or truncated:
                        break
                successes += bool(info.get("success"))
    BrowserPool.shared().close()
    episodes_s = time.perf_counter() - started
    return {"rendered": rendered, "render_s": render_s, "episodes_s": episodes_s, "successes": successes}


def measure(build: str, screens: int, episodes: int) -> dict[str, float]:
    """One round for ``build``: the worker's result and the machine's busy CPU seconds over it."""
    before = busy_cpu_s()
    command = [sys.executable, __file__, "--worker", "--screens", str(screens), "--episodes", str(episodes)]
    done = subprocess.run(
        command, env={**os.environ, "AGENTGYM_CHROMIUM": build}, capture_output=True, text=True, check=True
    )
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "cpu_s": busy_cpu_s() - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screens", type=int, default=150, help="MiniWoB++ grounding screenshots rendered a round")
    parser.add_argument("--episodes", type=int, default=5, help="oracle episodes a round per MiniWoB++ task")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(work(args.screens, args.episodes)))
        return
    builds = [build for build in CHROMIUM_BUILDS if Path(build).exists()]
    if len(builds) < 2:
        sys.exit(f"needs both Chromium builds installed ({', '.join(CHROMIUM_BUILDS)}); found {builds}")
    rounds: dict[str, list[dict[str, float]]] = {build: [] for build in builds}
    for _ in range(args.rounds):
        for build in builds:
            rounds[build].append(measure(build, args.screens, args.episodes))
    version = subprocess.run([builds[0], "--version"], capture_output=True, text=True).stdout.strip()
    best = {build: min(runs, key=lambda run: run["cpu_s"]) for build, runs in rounds.items()}
    shell, full = builds
    result = {
        "chromium": version,
        "screens": args.screens,
        "episodes": args.episodes * len(EPISODE_TASKS),
        "rounds": rounds,
        "best_cpu_s": {build: round(run["cpu_s"], 1) for build, run in best.items()},
        "ratio_shell_to_full": round(best[shell]["cpu_s"] / best[full]["cpu_s"], 3),
    }
    print(json.dumps(result, indent=2))
    if args.no_write:
        return
    rows = "\n".join(
        f"| `{build}` | {run['cpu_s']:.1f} | {run['render_s']:.1f} | {run['episodes_s']:.1f} | "
        f"{int(run['successes'])} of {result['episodes']} |"
        for build, run in best.items()
    )
    table = (
        f"{version}. Each round: {args.screens} MiniWoB++ grounding screenshots rendered (boxes checked against the "
        f"shipped index) and {result['episodes']} MiniWoB++ oracle episodes, in a fresh process; the best of "
        f"{args.rounds} rounds per build, the builds alternating.\n\n"
        "| build | machine CPU s | render s | episodes s | oracle successes |\n|---|---:|---:|---:|---:|\n"
        f"{rows}\n\nRatio of CPU, headless shell / full browser: **{result['ratio_shell_to_full']}**."
    )
    record("chromium_builds", "Chromium's headless shell against the full browser", "idle machine", table, result)


if __name__ == "__main__":
    main()
