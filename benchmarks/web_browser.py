"""MiniWoB++ in agentgym's browser layer side by side with BrowserGym's MiniWoB++ envs, in one run.

Both sides play the same MiniWoB++ tasks from the same ``miniwob`` package pages, in the same
Debian Chromium with the same extra flags, solved by scripted solutions (agentgym's oracles;
``web_browser_browsergym.py``'s solutions on BrowserGym's accessibility tree).

* step latency per action kind: per task, episodes of reset, a key press, a scroll, a click
  at a blank point, then the solution; every ``reset`` and ``step`` timed. agentgym's "reset"
  reuses the env's tab (the first reset of an env opens it: "reset, new env"); BrowserGym
  launches its browsers on every reset. Also agentgym with ``screenshot=True`` (BrowserGym's
  observation always has one) and BrowserGym without its deliberate waits (``slow_mo=0``,
  ``pre_observation_delay=0``; its MiniWoB++ default is 100 ms per Playwright call and 0.5 s
  before each observation).
* episodes per minute (reset + solution) at each concurrency: agentgym in threads of one
  process, one env each (the browser pool is shared); BrowserGym in worker processes, one env
  each (its synchronous Playwright is global to a process). Worker ``w`` plays task
  ``w % len(tasks)``; with one worker each task gets an equal share of the time.
* memory per env: proportional set size (PSS, shared pages split between their processes) and
  RSS of the browser processes (Chromium and the Playwright driver) with 1, 8, 32 live envs,
  measured when the throughput workers have reset their envs.

BrowserGym runs in its own virtual environment (it pins an older Playwright):

    python3 -m venv /work/bgvenv && /work/bgvenv/bin/pip install browsergym-miniwob
    python benchmarks/web_browser.py                       # writes results/web_browser.{md,json}
    python benchmarks/web_browser.py --seconds 10 --concurrency 1,8 --no-write
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
import psutil
from env_latency import percentile
from recording import record
from web_browser_browsergym import MAX_STEPS, rounds

import agentgym  # noqa: F401  (registers MiniWoB-*)
from agentgym.browser.page import CHROMIUM, LAUNCH_ARGS
from agentgym.environments.miniwob.env import miniwob_html_dir

TASKS = (
    "click-button",
    "click-link",
    "click-dialog",
    "click-tab",
    "click-checkboxes",
    "enter-text",
    "login-user",
    "choose-list",
)
#: Actions of the kinds the oracles do not use, done once per latency episode (as the driver's EXTRA_ACTIONS).
EXTRA_ACTIONS = ('press("Tab")', "scroll(down)", "click_xy(400, 300)")
#: agentgym's action kinds and BrowserGym's equivalents (its function names).
KINDS = {
    "reset": "reset",
    "click": "click",
    "type": "fill",
    "select": "select_option",
    "press": "keyboard_press",
    "scroll": "scroll",
    "click_xy": "mouse_click",
}
DRIVER = Path(__file__).with_name("web_browser_browsergym.py")
MiB = 1024 * 1024


def summary(seconds: list[float]) -> dict[str, float]:
    return {
        "n": len(seconds),
        "median_ms": statistics.median(seconds) * 1000,
        "p99_ms": percentile(seconds, 0.99) * 1000,
    }


def browser_memory(root_pid: int) -> dict[str, float]:
    """Processes below ``root_pid``: browser ones (Chromium, Playwright's driver) and Python workers, RSS and PSS."""
    totals = {"browser_processes": 0, "browser_rss_mib": 0.0, "browser_pss_mib": 0.0, "python_pss_mib": 0.0}
    for process in psutil.Process(root_pid).children(recursive=True):
        try:
            name, memory = process.name(), process.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if name.startswith("python"):
            totals["python_pss_mib"] += memory.pss / MiB
        else:
            totals["browser_processes"] += 1
            totals["browser_rss_mib"] += memory.rss / MiB
            totals["browser_pss_mib"] += memory.pss / MiB
    return totals


# ---- agentgym -------------------------------------------------------------------------------


def play(env: gym.Env, task_id: int, timings: dict[str, list[float]] | None, extras: bool) -> dict[str, Any]:
    """One episode with the oracle (after ``EXTRA_ACTIONS`` if ``extras``); timings appended by kind."""

    def timed(name: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = call(*args, **kwargs)
        if timings is not None:
            timings.setdefault(name, []).append(time.perf_counter() - start)
        return result

    first = env.unwrapped.task_id is None
    timed("reset, new env" if first else "reset", env.reset, options={"task_id": task_id})
    info: dict[str, Any] = {"success": False}
    steps = invalid = 0
    for step in range(MAX_STEPS):
        action = EXTRA_ACTIONS[step] if extras and step < len(EXTRA_ACTIONS) else env.unwrapped.oracle_action()
        _, _, terminated, truncated, info = timed(action.split("(", 1)[0], env.step, action)
        steps, invalid = steps + 1, invalid + info["invalid_action"]
        if terminated or truncated:
            break
    return {"success": bool(info["success"]), "steps": steps, "invalid": invalid}


def agentgym_latency(tasks: list[str], episodes: int, screenshot: bool) -> dict[str, Any]:
    timings: dict[str, list[float]] = {}
    outcomes = []
    for task in tasks:
        env = gym.make(f"MiniWoB-{task}-v0", screenshot=screenshot)
        try:
            outcomes += [play(env, 100 + episode, timings, extras=True) for episode in range(episodes)]
        finally:
            env.close()
    return {
        "kinds": {kind: summary(samples) for kind, samples in timings.items()},
        "episodes": len(outcomes),
        "successes": sum(o["success"] for o in outcomes),
        "invalid_actions": sum(o["invalid"] for o in outcomes),
    }


def play_until(env: gym.Env, worker: int, deadline: float) -> dict[str, Any]:
    """Oracle episodes until ``deadline`` (the last one started before it is finished)."""
    outcomes = []
    while time.monotonic() < deadline:
        task_id = (1000 * (worker + 1) + len(outcomes)) % env.unwrapped.splits.total
        outcomes.append(play(env, task_id, None, extras=False))
    return {
        "episodes": len(outcomes),
        "successes": sum(o["success"] for o in outcomes),
        "steps": sum(o["steps"] for o in outcomes),
        "finished": time.monotonic(),
    }


def agentgym_throughput(tasks: list[str], concurrency: int, seconds: float) -> dict[str, Any]:
    """Episodes played by ``concurrency`` threads for ``seconds``; memory once the first round's envs are live."""
    plan_rounds = rounds(tasks, concurrency)
    totals: dict[str, Any] = {"episodes": 0, "successes": 0, "steps": 0, "seconds": 0.0}
    for number, round_tasks in enumerate(plan_rounds):
        envs = [gym.make(f"MiniWoB-{task}-v0") for task in round_tasks]
        workers = range(len(envs))
        with ThreadPoolExecutor(len(envs)) as executor:
            list(executor.map(play, envs, [0] * len(envs), [None] * len(envs), [False] * len(envs)))  # warm-up
            if number == 0:
                totals["memory"] = browser_memory(os.getpid()) | {"live_envs": len(envs)}
            start = time.monotonic()
            deadlines = [start + seconds / len(plan_rounds)] * len(envs)
            outcomes = list(executor.map(play_until, envs, workers, deadlines))
        totals["seconds"] += max(o["finished"] for o in outcomes) - start
        for key in ("episodes", "successes", "steps"):
            totals[key] += sum(o[key] for o in outcomes)
        for env in envs:
            env.close()
    return totals


# ---- BrowserGym (a subprocess in its own virtual environment) -------------------------------


class Driver:
    """``web_browser_browsergym.py`` under the BrowserGym venv's Python; every process it starts is ended."""

    def __init__(self, python: Path, miniwob_url: str) -> None:
        self.command = [
            str(python),
            str(DRIVER),
            f"--chromium={CHROMIUM}",
            f"--chromium-args={json.dumps(LAUNCH_ARGS)}",
            f"--miniwob-url={miniwob_url}",
        ]

    def run(self, arguments: list[str], timeout_s: float, on_ready: Any = None) -> dict[str, Any]:
        """Run the driver; ``on_ready(pid, live_envs)`` is called at the first ``{"ready": ...}`` line."""
        process = subprocess.Popen(
            [*self.command, *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        timer = threading.Timer(timeout_s, self._end, args=(process,))
        timer.start()
        try:
            for line in process.stdout:  # type: ignore[union-attr]
                message = json.loads(line)
                if "ready" not in message:
                    return message
                if on_ready is not None and message["ready"] == 0:
                    on_ready(process.pid, message["live_envs"])
                process.stdin.write("\n")  # type: ignore[union-attr]
                process.stdin.flush()  # type: ignore[union-attr]
            raise RuntimeError(f"the BrowserGym driver ended without a result (exit status {process.wait()})")
        finally:
            timer.cancel()
            self._end(process)

    @staticmethod
    def _end(process: subprocess.Popen) -> None:
        """End the driver and everything below it (Playwright starts Chromium in its own process group)."""
        try:
            family = [*psutil.Process(process.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            family = []
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        process.kill()
        process.wait()


def browsergym_latency(driver: Driver, tasks: list[str], episodes: int, variant: str) -> dict[str, Any]:
    arguments = [f"--variant={variant}", "latency", f"--tasks={','.join(tasks)}", f"--episodes={episodes}"]
    result = driver.run(arguments, timeout_s=120 + 60 * episodes * len(tasks))
    # The first reset also starts Playwright's driver for the process: left out, as agentgym's warm-up.
    timings = {kind: samples[1:] if kind == "reset" else samples for kind, samples in result["timings_s"].items()}
    return {
        "kinds": {kind: summary(samples) for kind, samples in timings.items() if samples},
        "episodes": result["episodes"],
        "successes": result["successes"],
        "action_errors": result["action_errors"],
        "failures": result["failures"],
    }


def browsergym_throughput(driver: Driver, tasks: list[str], concurrency: int, seconds: float) -> dict[str, Any]:
    memory: dict[str, Any] = {}
    arguments = ["throughput", f"--tasks={','.join(tasks)}", f"--concurrency={concurrency}", f"--seconds={seconds}"]
    result = driver.run(
        arguments,
        timeout_s=seconds + 120 + 30 * concurrency,
        on_ready=lambda pid, live_envs: memory.update(browser_memory(pid), live_envs=live_envs),
    )
    return result | {"memory": memory}


def browsergym_predicted_mib(throughput: dict[int, dict[str, Any]], envs: int) -> float:
    """Memory (PSS, browsers and Python workers) ``envs`` BrowserGym envs will take, from the levels measured so far."""
    measured = {
        memory["live_envs"]: memory["browser_pss_mib"] + memory["python_pss_mib"]
        for memory in (sides["browsergym"].get("memory") for sides in throughput.values())
        if memory
    }
    if len(measured) < 2:
        return 0.0
    fewest, most = min(measured), max(measured)
    per_env = (measured[most] - measured[fewest]) / (most - fewest)
    return measured[most] + per_env * (envs - most)


# ---- the tables ------------------------------------------------------------------------------


def cell(kind_summary: dict[str, float] | None) -> str:
    if not kind_summary:
        return "–"
    return f"{kind_summary['median_ms']:,.1f} / {kind_summary['p99_ms']:,.1f} ({kind_summary['n']})"


def ratio(numerator: float | None, denominator: float | None, digits: int = 3) -> str:
    return f"{numerator / denominator:.{digits}f}" if numerator and denominator else "–"


def median_of(result: dict[str, Any] | None, kind: str) -> float | None:
    found = (result or {}).get("kinds", {}).get(kind)
    return found["median_ms"] if found else None


def latency_table(latency: dict[str, Any]) -> str:
    lines = [
        "| action: agentgym (BrowserGym) | agentgym | BrowserGym | agentgym ÷ BrowserGym "
        "| agentgym, screenshot=True | BrowserGym, no waits | agentgym ÷ BrowserGym no waits |",
        "|" + "---|" * 7,
    ]
    rows = [("reset, new env", "reset"), *KINDS.items()]
    for ours, theirs in rows:
        text, shot = latency["agentgym"]["kinds"].get(ours), latency["agentgym_screenshot"]["kinds"].get(ours)
        default, nowait = latency["browsergym"]["kinds"].get(theirs), latency["browsergym_nowait"]["kinds"].get(theirs)
        lines.append(
            f"| {ours} (`{theirs}`) | {cell(text)} | {cell(default)} | "
            f"{ratio(median_of(latency['agentgym'], ours), median_of(latency['browsergym'], theirs))} | "
            f"{cell(shot)} | {cell(nowait)} | "
            f"{ratio(median_of(latency['agentgym'], ours), median_of(latency['browsergym_nowait'], theirs))} |"
        )
    successes = " · ".join(
        f"{name}: {latency[key]['successes']}/{latency[key]['episodes']}"
        for name, key in [
            ("agentgym", "agentgym"),
            ("screenshot", "agentgym_screenshot"),
            ("BrowserGym", "browsergym"),
            ("no waits", "browsergym_nowait"),
        ]
    )
    return "\n".join(lines) + f"\n\nSolved episodes — {successes}"


def throughput_table(throughput: dict[int, dict[str, Any]]) -> str:
    def rate(result: dict[str, Any]) -> float | None:
        return 60 * result["successes"] / result["seconds"] if result.get("seconds") else None

    def described(result: dict[str, Any]) -> str:
        if "skipped" in result:
            return f"skipped: {result['skipped']}"
        solved = f"{result['successes']}/{result['episodes']} episodes solved"
        errors = f", {len(result['errors'])} workers failed" if result.get("errors") else ""
        if result.get("failures"):
            example = result["failures"][0].splitlines()[0][:90]
            errors += f"; {len(result['failures'])} raised or failed, e.g. {example!r}"
        return f"{rate(result):,.1f} ({solved}{errors})" if rate(result) else f"no episode{errors}"

    lines = [
        "| concurrency | agentgym solved episodes/min | BrowserGym solved episodes/min | agentgym ÷ BrowserGym |",
        "|---|---|---|---|",
    ]
    for concurrency, sides in throughput.items():
        ours, theirs = sides["agentgym"], sides["browsergym"]
        lines.append(
            f"| {concurrency} | {described(ours)} | {described(theirs)} | {ratio(rate(ours), rate(theirs), 1)} |"
        )
    return "\n".join(lines)


def memory_table(throughput: dict[int, dict[str, Any]]) -> str:
    def memory_of(side: str, level: int) -> dict[str, float]:
        return throughput[level][side].get("memory") or {}

    def per_extra_env(side: str, level: int) -> float | None:
        ours, base = memory_of(side, level), memory_of(side, min(throughput))
        if not ours or not base or ours["live_envs"] <= base["live_envs"]:
            return None
        return (ours["browser_pss_mib"] - base["browser_pss_mib"]) / (ours["live_envs"] - base["live_envs"])

    def described(side: str, level: int) -> str:
        memory = memory_of(side, level)
        if not memory:
            return "–"
        extra = per_extra_env(side, level)
        live = "" if memory["live_envs"] == level else f" (only {memory['live_envs']} envs live)"
        return (
            f"{memory['browser_processes']}, {memory['browser_rss_mib']:,.0f}, {memory['browser_pss_mib']:,.0f}, "
            + (f"**{extra:,.1f}**" if extra is not None else "–")
            + live
        )

    lines = [
        "| live envs | agentgym: processes, RSS, PSS, PSS per extra env | BrowserGym: processes, RSS, PSS, "
        "PSS per extra env | per extra env, agentgym ÷ BrowserGym | BrowserGym's Python workers, PSS |",
        "|---|---|---|---|---|",
    ]
    for envs, sides in throughput.items():
        theirs = sides["browsergym"].get("memory")
        workers = f"{theirs['python_pss_mib']:,.0f}" if theirs else "–"
        ratio_cell = ratio(per_extra_env("agentgym", envs), per_extra_env("browsergym", envs))
        lines.append(
            f"| {envs} | {described('agentgym', envs)} | {described('browsergym', envs)} | {ratio_cell} | {workers} |"
        )
    return "\n".join(lines)


# ---- main ------------------------------------------------------------------------------------


def versions(python: Path) -> str:
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    query = "import importlib.metadata as m; print(m.version('browsergym-miniwob'), m.version('playwright'))"
    browsergym, playwright = subprocess.run([python, "-c", query], capture_output=True, text=True).stdout.split()
    from importlib.metadata import version

    ours = version("playwright")
    return f"{chromium}; agentgym with Playwright {ours}; BrowserGym {browsergym} with Playwright {playwright}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=lambda s: s.split(","), default=list(TASKS), help="comma-separated")
    parser.add_argument("--episodes", type=int, default=8, help="agentgym latency episodes per task")
    parser.add_argument("--browsergym-episodes", type=int, default=1, help="BrowserGym latency episodes per task")
    parser.add_argument("--concurrency", type=lambda s: [int(c) for c in s.split(",")], default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=30.0, help="timed play per concurrency and side")
    parser.add_argument(
        "--reserve-mib", type=float, default=6144, help="skip a BrowserGym level that would leave less memory free"
    )
    parser.add_argument("--browsergym-python", type=Path, default=Path("/work/bgvenv/bin/python"))
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    started, load_before = time.monotonic(), os.getloadavg()
    driver = Driver(args.browsergym_python, miniwob_html_dir().as_uri() + "/")
    setup_versions = versions(args.browsergym_python)
    warm_up = gym.make(f"MiniWoB-{args.tasks[0]}-v0")
    play(warm_up, 0, None, extras=False)  # starts the shared browser pool
    warm_up.close()

    latency = {
        "agentgym": agentgym_latency(args.tasks, args.episodes, screenshot=False),
        "browsergym": browsergym_latency(driver, args.tasks, args.browsergym_episodes, "default"),
        "agentgym_screenshot": agentgym_latency(args.tasks, max(1, args.episodes // 2), screenshot=True),
        "browsergym_nowait": browsergym_latency(driver, args.tasks, args.browsergym_episodes, "nowait"),
    }
    print(latency_table(latency), flush=True)

    throughput: dict[int, dict[str, Any]] = {}
    for concurrency in args.concurrency:
        ours = agentgym_throughput(args.tasks, concurrency, args.seconds)
        needed_mib = browsergym_predicted_mib(throughput, concurrency)
        free_mib = psutil.virtual_memory().available / MiB
        if needed_mib > free_mib - args.reserve_mib:
            theirs = {"skipped": f"would take about {needed_mib:,.0f} MiB of the {free_mib:,.0f} MiB free"}
        else:
            theirs = browsergym_throughput(driver, args.tasks, concurrency, args.seconds)
        throughput[concurrency] = {"agentgym": ours, "browsergym": theirs}
        print(throughput_table({concurrency: throughput[concurrency]}), flush=True)

    load_after = os.getloadavg()
    tables = (
        "Step latency in ms, median / p99 (samples), `env.step` / `env.reset` through `gym.make`:\n\n"
        f"{latency_table(latency)}\n\n"
        f"Episodes per minute (reset + scripted solution, {len(args.tasks)} tasks):\n\n"
        f"{throughput_table(throughput)}\n\n"
        "Memory of the browser processes (Chromium + Playwright's driver) with live envs, MiB; per extra env: "
        f"(PSS(n) - PSS({min(args.concurrency)})) / (n - {min(args.concurrency)}):\n\n"
        f"{memory_table(throughput)}"
    )
    print(tables)
    if args.no_write:
        return
    setup = (
        f"tasks {', '.join(args.tasks)}; latency: {args.episodes} agentgym and {args.browsergym_episodes} BrowserGym "
        f"episodes per task; {args.seconds:g} s of play per concurrency and side; {setup_versions}; "
        f"{psutil.cpu_count()} CPUs shared with other work, 1-minute load average {load_before[0]:.1f} at start "
        f"and {load_after[0]:.1f} at the end; {time.monotonic() - started:.0f} s in all"
    )
    data = {
        "setup": setup,
        "latency": latency,
        "throughput": {str(c): sides for c, sides in throughput.items()},
    }
    record("web_browser", "Browser envs: agentgym vs BrowserGym on MiniWoB++", setup, tables, data)


if __name__ == "__main__":
    sys.exit(main())
