"""Desktop-v0 costs: session start, reset per app, step latency per action kind, screenshot capture, memory.

* session start: a new :class:`DesktopSession` (Xvfb + openbox, ready for input);
* reset per app: a new home folder and the task's app started and settled (X server reused);
* step latency per action kind through ``env.step`` (the action, waiting until the screen and
  window list are quiet for 0.2 s, then the observation) and the parts alone: the ``xdotool``
  call, a screenshot capture, the window list;
* memory per desktop: proportional set size (PSS, shared pages split between sharers) of
  every process of one desktop, per app.

    python benchmarks/desktop.py                  # writes results/desktop.{md,json}
    python benchmarks/desktop.py --repeats 3 --no-write
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
from recording import record

import agentgym  # noqa: F401  (registers Desktop-v0)
from agentgym.environments.desktop.actions import parse_command, xdotool_calls
from agentgym.environments.desktop.session import DesktopSession, processes_with_token

#: A task id per app (templates: terminal first, then editor, file manager, spreadsheet).
APP_TASKS = {"terminal": 0, "editor": 19, "files": 29, "spreadsheet": 35}
ACTIONS = {
    "click": "click(700, 600)",
    "double_click": "double_click(700, 600)",
    "right_click": "right_click(700, 600)",
    "move": "move(300, 300)",
    "drag": "drag(600, 400, 650, 450)",
    "type (10 chars)": 'type("abcdefghij")',
    "key": 'key("Escape")',
    "scroll": "scroll(0, 2)",
    "wait(0)": "wait(0)",
}


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def timed(function, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return samples


def pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    starts = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        session = DesktopSession()
        starts.append(time.perf_counter() - start)
        session.close()

    env = gym.make("Desktop-v0")
    base = env.unwrapped
    resets, memory = {}, {}
    for app, task_id in APP_TASKS.items():
        resets[app] = median_ms(timed(lambda task_id=task_id: env.reset(options={"task_id": task_id}), args.repeats))
        memory[app] = sum(pss_bytes(pid) for pid in processes_with_token(base.session.token)) / 2**20

    env.reset(options={"task_id": APP_TASKS["files"]})  # a window that tolerates clicks and typing
    session = base.session
    steps, raw = {}, {}
    for kind, action in ACTIONS.items():
        steps[kind] = median_ms(timed(lambda action=action: env.step(action), args.repeats))
        calls = xdotool_calls(parse_command(action, base.width, base.height))

        def run(calls=calls) -> None:
            for arguments in calls:
                session.xdotool(*arguments)

        raw[kind] = median_ms(timed(run, args.repeats)) if calls else 0.0
        env.step('key("Escape")')
    parts = {
        "screenshot capture (1024x768)": median_ms(timed(session.screenshot, args.repeats * 4)),
        "window list (wmctrl)": median_ms(timed(session.windows, args.repeats * 4)),
        "pointer position": median_ms(timed(session.cursor, args.repeats * 4)),
        "settle (quiet screen)": median_ms(timed(session.settle, args.repeats)),
    }
    env.close()

    lines = [
        f"Session start (Xvfb + openbox ready): median {median_ms(starts)} ms over {args.repeats}",
        "",
        "| app | reset (ms, median) | memory per desktop (PSS, MiB) |",
        "|---|---:|---:|",
        *(f"| {app} | {resets[app]} | {memory[app]:.0f} |" for app in APP_TASKS),
        "",
        "| action | env.step (ms, median) | xdotool alone (ms) |",
        "|---|---:|---:|",
        *(f"| {kind} | {steps[kind]} | {raw[kind]} |" for kind in ACTIONS),
        "",
        "| part of a step | ms (median) |",
        "|---|---:|",
        *(f"| {name} | {value} |" for name, value in parts.items()),
        "",
        "A step waits until the screen and window list are unchanged for 0.2 s, so 0.2 s plus two "
        "captures is its floor.",
    ]
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        data = {
            "session_start_ms": median_ms(starts),
            "reset_ms": resets,
            "memory_mib": memory,
            "step_ms": steps,
            "xdotool_ms": raw,
            "parts_ms": parts,
        }
        record("desktop", "Desktop-v0: start, step latency per action, memory", f"{args.repeats} repeats", table, data)


if __name__ == "__main__":
    main()
