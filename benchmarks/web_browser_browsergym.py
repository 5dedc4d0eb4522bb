"""The BrowserGym side of ``web_browser.py``: BrowserGym's MiniWoB++ envs driven by scripted solvers.

Runs in a separate virtual environment that has ``browsergym-miniwob`` (it pins an older
Playwright than agentgym's), started by ``web_browser.py``; it does not import agentgym.
Every Chromium it launches (the task's browser and the chat's browser, two per episode) is
Debian's ``--chromium`` with ``--chromium-args`` appended, the same binary and flags as
agentgym's pool. Prints one JSON object on stdout.

* ``latency``: per task, episodes of reset, three extra actions (a key press, a scroll, a
  click at a blank point) and the scripted solution; the time of every ``reset`` and
  ``step``, by action kind.
* ``throughput``: ``--concurrency`` worker processes (BrowserGym uses one synchronous
  Playwright per process, so threads cannot share it), one env each, task ``w % len(tasks)``
  for worker ``w`` (with one worker: each task in turn, for an equal share of the time). Once
  each round's envs are reset (a reset that raises is tried up to three times, as a harness
  would) it prints ``{"ready": round, "live_envs": n}`` and waits for a line on stdin (the
  caller measures memory then), then plays episodes for its share of ``--seconds``.

    /work/bgvenv/bin/python benchmarks/web_browser_browsergym.py --miniwob-url file:///.../html/miniwob/ \\
        latency --tasks click-button,enter-text --episodes 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
import time
import traceback
from typing import Any

#: Actions of the kinds the scripted solutions do not use, done once per latency episode.
EXTRA_ACTIONS = ('keyboard_press("Tab")', "scroll(0, 200)", "mouse_click(300, 180)")
#: BrowserGym's MiniWoB++ defaults are ``slow_mo=100`` (ms per Playwright call) and a 0.5 s
#: pause before each observation; "nowait" turns both off.
VARIANTS: dict[str, dict[str, Any]] = {"default": {}, "nowait": {"slow_mo": 0, "pre_observation_delay": 0.0}}
MAX_STEPS = 10


def use_chromium(executable: str, extra_args: list[str]) -> None:
    """Make every Playwright launch (BrowserGym's and its chat's) use ``executable`` with ``extra_args``."""
    from playwright.sync_api import BrowserType

    launch = BrowserType.launch

    def launch_chromium(self: Any, **options: Any) -> Any:
        options["executable_path"] = executable
        options["args"] = [*(options.get("args") or []), *extra_args]
        return launch(self, **options)

    BrowserType.launch = launch_chromium  # type: ignore[method-assign]


def make_env(task: str, variant: str) -> Any:
    import gymnasium as gym
    from browsergym.core.action.highlevel import HighLevelActionSet

    actions = HighLevelActionSet(subsets=["bid", "coord"])  # coord: mouse_click, keyboard_press
    return gym.make(f"browsergym/miniwob.{task}", action_mapping=actions.to_python_code, **VARIANTS[variant])


# ---- scripted solutions on BrowserGym's observation (goal + accessibility tree) -------------


class AXTree:
    """The nodes of an observation's accessibility tree that carry a BrowserGym id (bid)."""

    def __init__(self, observation: dict[str, Any]) -> None:
        self.nodes = observation["axtree_object"]["nodes"]
        self.by_id = {node["nodeId"]: node for node in self.nodes}
        self.parent = {child: node["nodeId"] for node in self.nodes for child in node.get("childIds", [])}

    @staticmethod
    def name(node: dict[str, Any]) -> str:
        return node.get("name", {}).get("value", "")

    @staticmethod
    def role(node: dict[str, Any]) -> str:
        return node["role"]["value"]

    def with_role(self, *roles: str) -> list[dict[str, Any]]:
        return [node for node in self.nodes if node.get("browsergym_id") and self.role(node) in roles]

    def bid(self, name: str, *roles: str) -> str:
        """The bid of the element ``name`` with one of ``roles``, or else of the nearest marked parent of its text."""
        for node in self.nodes:
            if self.name(node) == name and (node.get("browsergym_id") and self.role(node) in roles):
                return node["browsergym_id"]
        for node in self.nodes:  # a <span> link: its text node, then up to the element
            if self.role(node) == "StaticText" and self.name(node) == name:
                while node.get("browsergym_id") is None:
                    node = self.by_id[self.parent[node["nodeId"]]]
                return node["browsergym_id"]
        raise LookupError(f"no element {name!r}")

    def checked(self, node: dict[str, Any]) -> bool:
        return any(p["name"] == "checked" and p["value"]["value"] == "true" for p in node.get("properties", []))


def plan(task: str, observation: dict[str, Any]) -> list[str]:
    """The actions that solve ``task`` from its first observation."""
    goal, tree = observation["goal"], AXTree(observation)
    quoted = re.findall(r'"([^"]*)"', goal)
    textboxes = [node["browsergym_id"] for node in tree.with_role("textbox")]
    if task == "click-button":
        return [f'click("{tree.bid(quoted[0], "button")}")']
    if task == "click-link":
        return [f'click("{tree.bid(quoted[0], "link")}")']
    if task == "click-dialog":
        return [f'click("{tree.bid("Close", "button")}")']
    if task == "click-tab":
        number = re.search(r"Tab #(\d+)", goal).group(1)  # type: ignore[union-attr]
        return [f'click("{tree.bid(f"Tab #{number}", "link")}")']
    if task == "click-checkboxes":
        listed = re.search(r"Select (.*) and click Submit", goal).group(1)  # type: ignore[union-attr]
        wanted = set() if listed == "nothing" else {word.strip() for word in listed.split(",") if word.strip()}
        boxes = tree.with_role("checkbox")
        toggles = [node["browsergym_id"] for node in boxes if (tree.name(node) in wanted) != tree.checked(node)]
        return [f'click("{bid}")' for bid in toggles] + [f'click("{tree.bid("Submit", "button")}")']
    if task == "enter-text":
        return [f"fill({textboxes[0]!r}, {quoted[0]!r})", f'click("{tree.bid("Submit", "button")}")']
    if task == "login-user":
        fills = [f"fill({textboxes[0]!r}, {quoted[0]!r})", f"fill({textboxes[1]!r}, {quoted[1]!r})"]
        return [*fills, f'click("{tree.bid("Login", "button")}")']
    if task == "choose-list":
        name = re.search(r"Select (.*) from the", goal).group(1)  # type: ignore[union-attr]
        menu = tree.with_role("combobox")[0]["browsergym_id"]
        return [f"select_option({menu!r}, {name!r})", f'click("{tree.bid("Submit", "button")}")']
    raise ValueError(f"no scripted solution for {task!r}")


def kind(action: str) -> str:
    return action.split("(", 1)[0]


def play(env: Any, task: str, seed: int, timings: dict[str, list[float]] | None, extras: bool) -> dict[str, Any]:
    """One episode; with ``timings``, the seconds of every reset and step are appended by kind."""

    def timed(name: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = call(*args, **kwargs)
        if timings is not None:
            timings.setdefault(name, []).append(time.perf_counter() - start)
        return result

    observation, _ = timed("reset", env.reset, seed=seed)
    actions = list(EXTRA_ACTIONS if extras else ()) + plan(task, observation)
    reward, terminated, errors, steps, last_error = 0.0, False, 0, 0, ""
    for action in actions[:MAX_STEPS]:
        observation, reward, terminated, _, _ = timed(kind(action), env.step, action)
        steps += 1
        errors += bool(observation["last_action_error"])
        last_error = observation["last_action_error"] or last_error
        if terminated:
            break
    success = bool(terminated and reward > 0)
    failure = None if success else f"{task}, seed {seed}: {'reward 0' if terminated else 'not done'} {last_error[:200]}"
    return {"success": success, "steps": steps, "errors": errors, "failure": failure}


def latency(args: argparse.Namespace) -> dict[str, Any]:
    timings: dict[str, list[float]] = {}
    outcomes = []
    for task in args.tasks:
        env = make_env(task, args.variant)
        try:
            for episode in range(args.episodes):
                outcomes.append(play(env, task, 100 + episode, timings, extras=True))
        finally:
            env.close()
    return {
        "timings_s": timings,
        "episodes": len(outcomes),
        "successes": sum(o["success"] for o in outcomes),
        "action_errors": sum(o["errors"] for o in outcomes),
        "failures": [o["failure"] for o in outcomes if o["failure"]],
    }


# ---- throughput ------------------------------------------------------------------------------


def attempt(env: Any, task: str, seed: int) -> dict[str, Any]:
    """:func:`play`, or a failed outcome when the episode raises (a reset timing out while many browsers start)."""
    try:
        return play(env, task, seed, None, extras=False)
    except Exception as error:
        first_line = (str(error).strip().splitlines() or [""])[0]
        return {"success": False, "steps": 0, "errors": 1, "failure": f"{task}, seed {seed}: {first_line[:200]}"}


def worker(task: str, variant: str, seed: int, seconds: float, ready: Any, go: Any, results: Any) -> None:
    try:
        env = make_env(task, variant)
        warm_ups = [attempt(env, task, seed)]  # the env is live when the caller measures memory
        while warm_ups[-1]["errors"] and warm_ups[-1]["steps"] == 0 and len(warm_ups) < 3:
            warm_ups.append(attempt(env, task, seed))  # as a user's harness would: try the reset again
        ready.put(warm_ups[-1]["steps"] > 0)
        go.wait()
        deadline = time.monotonic() + seconds
        outcomes = []
        while time.monotonic() < deadline:
            outcomes.append(attempt(env, task, seed + 1 + len(outcomes)))
        results.put(
            {
                "episodes": len(outcomes),
                "successes": sum(o["success"] for o in outcomes),
                "steps": sum(o["steps"] for o in outcomes),
                "failures": [o["failure"] for o in [*warm_ups[:-1], *outcomes] if o["failure"]],
                "finished": time.monotonic(),
            }
        )
        env.close()
    except Exception:
        ready.put(False)
        results.put({"error": traceback.format_exc(limit=3)})


def rounds(tasks: list[str], concurrency: int) -> list[list[str]]:
    """The tasks of the workers of each round: every task gets an equal share of worker time."""
    if concurrency == 1:
        return [[task] for task in tasks]
    if concurrency % len(tasks):
        raise ValueError(f"concurrency {concurrency} must be 1 or a multiple of {len(tasks)} tasks")
    return [[tasks[w % len(tasks)] for w in range(concurrency)]]


def throughput(args: argparse.Namespace) -> dict[str, Any]:
    context = multiprocessing.get_context("fork")  # workers inherit the imported modules, no Playwright yet
    plan_rounds = rounds(args.tasks, args.concurrency)
    totals = {"episodes": 0, "successes": 0, "steps": 0, "seconds": 0.0, "errors": [], "failures": []}
    for number, round_tasks in enumerate(plan_rounds):
        ready, results, go = context.Queue(), context.Queue(), context.Event()
        seconds = args.seconds / len(plan_rounds)
        processes = [
            context.Process(target=worker, args=(task, args.variant, 1000 * (w + 1), seconds, ready, go, results))
            for w, task in enumerate(round_tasks)
        ]
        for process in processes:
            process.start()
        live = sum(ready.get(timeout=args.setup_timeout_s) for _ in processes)
        print(json.dumps({"ready": number, "live_envs": live}), flush=True)
        sys.stdin.readline()
        start = time.monotonic()
        go.set()
        outcomes = [results.get(timeout=args.seconds + args.setup_timeout_s) for _ in processes]
        for process in processes:
            process.join(30)
        finished = [o["finished"] for o in outcomes if "finished" in o]
        totals["seconds"] += (max(finished) if finished else time.monotonic()) - start
        for outcome in outcomes:
            if "error" in outcome:
                totals["errors"].append(outcome["error"])
                continue
            for key in ("episodes", "successes", "steps", "failures"):
                totals[key] += outcome[key]
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium-headless-shell")
    parser.add_argument("--chromium-args", default="[]", help="JSON list of extra Chromium flags")
    parser.add_argument("--miniwob-url", required=True, help="file:// URL of miniwob's html/miniwob/ folder")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="default")
    modes = parser.add_subparsers(dest="mode", required=True)
    latency_parser = modes.add_parser("latency")
    latency_parser.add_argument("--tasks", type=lambda s: s.split(","), required=True)
    latency_parser.add_argument("--episodes", type=int, default=2, help="episodes per task")
    throughput_parser = modes.add_parser("throughput")
    throughput_parser.add_argument("--tasks", type=lambda s: s.split(","), required=True)
    throughput_parser.add_argument("--concurrency", type=int, default=1)
    throughput_parser.add_argument("--seconds", type=float, default=30.0)
    throughput_parser.add_argument("--setup-timeout-s", type=float, default=300.0)
    args = parser.parse_args()

    os.environ["MINIWOB_URL"] = args.miniwob_url.rstrip("/") + "/"
    use_chromium(args.chromium, json.loads(args.chromium_args))
    import browsergym.miniwob  # noqa: F401  (registers browsergym/miniwob.*)

    started = time.perf_counter()
    result = latency(args) if args.mode == "latency" else throughput(args)
    result["wall_s"] = time.perf_counter() - started
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
