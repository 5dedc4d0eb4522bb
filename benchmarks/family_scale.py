"""Per family, at 1, 16, 128 and 256 concurrent envs in one process: steps/s, reset time, memory per
extra env, and whether the family's envs are thread-safe (issue #33's table).

For each family's representative id (``family_scale.yaml``) and each level N up to the family's limit:
N envs are made (``gym.make``) and reset on the pool's tasks (each task already reset once, so that what
its first reset builds is not timed; the median reset is reported), then N threads each step their
own env with random legal commands for ``step_window_s`` seconds, resetting on the next pool task when an
episode ends (a trainer's workers do the same); steps/s counts every step of every thread. Memory per extra
env: the growth of the process tree's proportional set size (this process and its children: JVMs,
Chromium, X servers; a shared page counted once in all) from the first level to the largest, per env.

Thread safety is checked, not assumed: ``thread_check_envs`` envs play the same scripted episode (the same
task, the same seeded random commands) side by side on threads; the family is thread-safe when every one of
them sees the observations one env alone sees, and none raises.

    python benchmarks/family_scale.py                           # every family; writes results/family_scale.*
    python benchmarks/family_scale.py --family sokoban --levels 1 16 --no-write
    python benchmarks/family_scale.py --family textworld alfworld --merge  # these rows; keep the others
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml
from recording import record
from soak_harness import descendants

import agentgym

CONFIG = Path(__file__).with_name("family_scale.yaml")
GIB = 1024**3


def tree_pss_bytes() -> int:
    """The proportional set size of this process and its descendants (a page shared by k processes counts
    1/k in each: Chromium's renderers share most of theirs, so their summed RSS would count it k times)."""
    total = 0
    for pid in [os.getpid(), *descendants(os.getpid())]:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                total += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:")) * 1024
        except (OSError, StopIteration):
            continue  # a process that ended meanwhile
    return total


def observation_digest(observation: Any) -> str:
    """A digest of an observation: its text, and its screenshot's pixels when it has one."""
    digest = hashlib.sha256()
    if isinstance(observation, dict):
        digest.update(str(observation.get("text", "")).encode())
        screenshot = observation.get("screenshot")
        if isinstance(screenshot, np.ndarray):
            digest.update(screenshot.tobytes())
    else:
        digest.update(str(observation).encode())
    return digest.hexdigest()


def pool_tasks(env: gym.Env, size: int) -> list[int]:
    return list(env.unwrapped.splits.ids("train")[:size])


def scripted_episode(env: gym.Env, task_id: int, steps: int) -> list[str]:
    """The digests of a reset and ``steps`` seeded random commands on ``task_id`` (stopping at the end)."""
    rng = random.Random(task_id)
    observation, _ = env.reset(seed=0, options={"task_id": task_id})
    digests = [observation_digest(observation)]
    for _ in range(steps):
        observation, _, terminated, truncated, _ = env.step(env.unwrapped.random_action(rng))
        digests.append(observation_digest(observation))
        if terminated or truncated:
            break
    return digests


def thread_safety(env_id: str, envs: int, steps: int) -> str:
    """``"yes"`` when ``envs`` envs on threads play what one env plays alone and leave the process's
    ``sys.stdout`` and ``sys.stderr`` as they found them, else what differed."""
    streams = sys.stdout, sys.stderr
    made = [gym.make(env_id) for _ in range(envs)]
    try:
        task_id = pool_tasks(made[0], 1)[0]
        alone = scripted_episode(made[0], task_id, steps)
        with ThreadPoolExecutor(envs) as pool:
            results = list(pool.map(lambda env: _or_error(scripted_episode, env, task_id, steps), made))
    finally:
        for env in made:
            env.close()
    if (sys.stdout, sys.stderr) != streams:  # a process-wide swap (redirect_stdout) that threads undo out of order
        sys.stdout, sys.stderr = streams
        return "no: the envs replaced the process's sys.stdout or sys.stderr"
    errors = [result for result in results if isinstance(result, str)]
    if errors:
        return f"no: {errors[0][:120]}"
    differing = sum(result != alone for result in results)
    return "yes" if not differing else f"no: {differing} of {envs} threads saw other observations"


def _or_error(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except Exception as error:  # a family that is not thread-safe may raise anything: that is the finding
        return f"{type(error).__name__}: {error}"


def measure_level(env_id: str, count: int, tasks: int, window_s: float) -> dict[str, Any]:
    """Make and reset ``count`` envs, then step them on ``count`` threads for ``window_s`` seconds."""
    started = time.perf_counter()
    envs = [gym.make(env_id) for _ in range(count)]
    made_s = time.perf_counter() - started
    pool = pool_tasks(envs[0], tasks)
    resets: list[float] = []
    try:
        for task_id in pool:  # what a task's first reset builds (a generated game) is built before timing
            envs[0].reset(seed=0, options={"task_id": task_id})
        for index, env in enumerate(envs):
            begin = time.perf_counter()
            env.reset(seed=0, options={"task_id": pool[index % len(pool)]})
            resets.append(time.perf_counter() - begin)
        memory = tree_pss_bytes()
        deadline = time.perf_counter() + window_s
        counts = [0] * count
        failures: list[str] = []

        def play(index: int) -> None:
            env, rng, episode = envs[index], random.Random(index), index
            try:
                while time.perf_counter() < deadline:
                    _, _, terminated, truncated, _ = env.step(env.unwrapped.random_action(rng))
                    counts[index] += 1
                    if terminated or truncated:
                        episode += count
                        env.reset(seed=0, options={"task_id": pool[episode % len(pool)]})
            except Exception as error:  # reported in the table, not raised: the other levels go on
                failures.append(f"{type(error).__name__}: {error}")

        begin = time.perf_counter()
        threads = [threading.Thread(target=play, args=(index,)) for index in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - begin
    finally:
        for env in envs:
            env.close()
    return {
        "envs": count,
        "make_s": round(made_s, 2),
        "reset_ms_median": round(1000 * statistics.median(resets), 2),
        "steps": sum(counts),
        "steps_per_s": round(sum(counts) / elapsed, 1),
        "tree_pss_bytes": memory,
        "failures": failures[:3],
    }


def measure_family(entry: dict[str, Any], config: dict[str, Any], levels: list[int]) -> dict[str, Any]:
    env_id = entry["id"]
    registered = agentgym.env_info(env_id).max_concurrency
    limit = min(value for value in (entry.get("limit"), registered, max(levels)) if value is not None)
    why = entry.get("why", "")
    if registered is not None and registered == limit and "why" not in entry:
        why = f"its registered max_concurrency ({registered})"
    result: dict[str, Any] = {"family": entry["family"], "id": env_id, "limit": limit, "why": why, "levels": []}
    if "note" in entry:
        result["note"] = entry["note"]
    for count in levels:
        if count > limit:
            break
        measured = result["levels"]
        if len(measured) >= 2:  # the first env also pays what its envs share (a browser pool, an index)
            per_env = (measured[-1]["tree_pss_bytes"] - measured[0]["tree_pss_bytes"]) / (
                measured[-1]["envs"] - measured[0]["envs"]
            )
            needed = measured[0]["tree_pss_bytes"] + per_env * (count - measured[0]["envs"])
            if needed > config["memory_limit_gib"] * GIB:
                result["skipped"] = f"{count} envs would need about {needed / GIB:.1f} GiB"
                break
        if measured:  # making envs costs what it cost per env at the last level
            making = measured[-1]["make_s"] / measured[-1]["envs"] * count
            if making > config["make_budget_s"]:
                result["skipped"] = f"making {count} envs would take about {making:,.0f} s"
                break
        level = measure_level(env_id, count, config["task_pool"], config["step_window_s"])
        measured.append(level)
        print(
            f"{env_id} x{count}: {level['steps_per_s']:,.0f} steps/s, reset {level['reset_ms_median']} ms, "
            f"tree PSS {level['tree_pss_bytes'] / 2**20:,.0f} MiB",
            flush=True,
        )
    first, last = result["levels"][0], result["levels"][-1]
    if last["envs"] > first["envs"]:
        extra = (last["tree_pss_bytes"] - first["tree_pss_bytes"]) / (last["envs"] - first["envs"])
        result["memory_per_extra_env_mib"] = round(extra / 2**20, 1)
    per_make = max(first["make_s"] / first["envs"], 1e-3)
    side_by_side = max(2, min(config["thread_check_envs"], limit, int(config["make_budget_s"] / per_make)))
    result["thread_safe"] = thread_safety(env_id, side_by_side, config["thread_check_steps"])
    return result


def table(results: list[dict[str, Any]], levels: list[int]) -> str:
    header = (
        "| family | id | "
        + " | ".join(f"steps/s at {n}" for n in levels)
        + " | reset (median) | memory per extra env | thread-safe (checked) | limit | load average |"
    )
    rows = [header, "|" + "---|" * (len(levels) + 7)]
    for result in results:
        by_count = {level["envs"]: level for level in result["levels"]}
        cells = []
        for count in levels:
            level = by_count.get(count)
            if level is None:
                cells.append("—")
            else:
                failed = " (errors)" if level["failures"] else ""
                cells.append(f"{level['steps_per_s']:,.0f}{failed}")
        resets = [level["reset_ms_median"] for level in result["levels"]]
        memory = result.get("memory_per_extra_env_mib")
        limit = f"{result['limit']}" + (f": {result['why']}" if result["why"] else "")
        if "skipped" in result:
            limit += f" (stopped: {result['skipped']})"
        note = f" ({result['note']})" if "note" in result else ""
        rows.append(
            f"| {result['family']} | {result['id']}{note} | "
            + " | ".join(cells)
            + f" | {min(resets):,.1f}–{max(resets):,.1f} ms | "
            + (f"{memory:,.1f} MiB" if memory is not None else "—")
            + f" | {result['thread_safe']} | {limit} | {result.get('load_average', '—')} |"
        )
    return "\n".join(rows)


def merged(measured: list[dict[str, Any]], config: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded results (``results/family_scale.json``) with the rows of ``measured`` replacing theirs,
    in the order of the YAML's families."""
    recorded = Path(__file__).parent / "results" / "family_scale.json"
    rows = {row["id"]: row for row in (json.loads(recorded.read_text()) if recorded.exists() else [])}
    rows.update({row["id"]: row for row in measured})
    order = [entry["id"] for entry in config["families"]]
    return sorted(rows.values(), key=lambda row: order.index(row["id"]) if row["id"] in order else len(order))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", nargs="*", help="only these families (by family name or id)")
    parser.add_argument("--levels", nargs="*", type=int, help="concurrency levels (default: the YAML's)")
    parser.add_argument("--no-write", action="store_true", help="print only; do not write results/")
    parser.add_argument(
        "--merge", action="store_true", help="keep the recorded rows of the families not measured now (results/*.json)"
    )
    args = parser.parse_args()
    config = yaml.safe_load(CONFIG.read_text())
    levels = args.levels or config["levels"]
    entries = [
        entry
        for entry in config["families"]
        if not args.family or entry["family"] in args.family or entry["id"] in args.family
    ]
    results = []
    for entry in entries:
        load = os.getloadavg()[0]
        try:
            results.append(measure_family(entry, config, levels) | {"load_average": round(load, 1)})
        except Exception as error:  # one family's missing data or engine must not end the table
            print(f"{entry['id']}: not measured ({type(error).__name__}: {error})", flush=True)
    if args.merge:
        results = merged(results, config)
    text = table(results, levels)
    print(text)
    if not args.no_write:
        setup = (
            f"one process, N envs stepped on N threads for {config['step_window_s']} s per level with random "
            "legal commands; memory: the process tree's proportional set size; load average: the machine's "
            "1-minute load when the family was measured (other jobs ran beside some rows)"
        )
        title = "Per-family scale: steps/s by concurrency, reset, memory, thread safety"
        record("family_scale", title, setup, text, results)


if __name__ == "__main__":
    main()
