"""The Python interpreter tool under load: fresh starts, warm-cell latency, and many idle sessions held at once.

* **start**: :meth:`Interpreter.start` of a fresh kernel (bwrap sandbox + ``python3`` + the kernel
  ready), ``--starts`` times, one after another.
* **warm cell**: ``--calls`` small cells (``x = x + 1``, then ``x``) on one warm interpreter, one
  after another: p50/p99 latency from :meth:`Interpreter.run` called to answer read, and calls/s.
* **idle sessions**: ``--sessions`` interpreters started (4 at a time) and kept idle together, each
  having run one cell that defines a variable; started while the machine keeps ``--reserve-gib``
  available (fewer are held if it would not). Memory per idle session: the PSS (shared pages divided
  among the processes that map them) and RSS of each sandbox's processes (bwrap, its init, the
  kernel), from ``/proc/PID/smaps_rollup``. Then one cell on every held session (each still has its
  variable): calls/s across sessions, from 4 threads.

Targets (issue 51): at least 1,000 idle sessions held at once; warm-cell p50 < 20 ms.

    python benchmarks/interpreter_load.py                 # writes results/interpreter_load.{json,md}
    python benchmarks/interpreter_load.py --sessions 100 --no-write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentgym.sandbox.interpreter import Interpreter

RESULTS = Path(__file__).resolve().parent / "results"
MIB = 2**20
THREADS = 4


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def available_gib() -> float:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 / 2**30
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc/PID/task/*/children)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                queue += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def memory_of(pids: list[int]) -> tuple[float, float]:
    """(PSS, RSS) of ``pids`` together, in bytes."""
    pss = rss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return pss, rss


def measure_starts(count: int) -> dict[str, float]:
    times = []
    for _ in range(count):
        with Interpreter() as python:
            times.append(python.start())
    return {"median_ms": statistics.median(times) * 1000, "p90_ms": percentile(times, 0.9) * 1000, "n": count}


def measure_warm(count: int) -> dict[str, float]:
    with Interpreter() as python:
        python.run("x = 0")
        for _ in range(50):  # warm-up
            python.run("x = x + 1")
        latencies = []
        started = time.perf_counter()
        for index in range(count):
            begin = time.perf_counter()
            result = python.run("x = x + 1" if index % 2 else "x")
            latencies.append(time.perf_counter() - begin)
            assert result.status == "ok", result
        elapsed = time.perf_counter() - started
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "calls_per_s": count / elapsed,
        "n": count,
    }


def measure_sessions(target: int, reserve_gib: float) -> dict[str, Any]:
    sessions: list[Interpreter] = []

    def open_one(index: int) -> Interpreter | None:
        if available_gib() < reserve_gib:
            return None
        python = Interpreter()
        result = python.run(f"mine = {index}")
        assert result.status == "ok", result
        return python

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        for python in pool.map(open_one, range(target)):
            if python is not None:
                sessions.append(python)
    start_s = time.perf_counter() - started
    try:
        time.sleep(2)  # idle
        pss = rss = 0.0
        for python in sessions:
            assert python.pid is not None
            session_pss, session_rss = memory_of(tree(python.pid))
            pss, rss = pss + session_pss, rss + session_rss

        def check(pair: tuple[int, Interpreter]) -> bool:
            index, python = pair
            return python.run("mine").output == f"{index}\n"

        started = time.perf_counter()
        with ThreadPoolExecutor(THREADS) as pool:
            alive = sum(pool.map(check, enumerate(sessions)))
        calls_s = time.perf_counter() - started
    finally:
        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(Interpreter.close, sessions))
    held = len(sessions)
    return {
        "target": target,
        "held": held,
        "kept_state": alive,
        "start_all_s": start_s,
        "pss_per_session_mib": pss / held / MIB,
        "rss_per_session_mib": rss / held / MIB,
        "pss_total_gib": pss / 2**30,
        "calls_per_s_across_sessions": held / calls_s,
    }


def markdown(results: dict[str, Any]) -> str:
    start, warm, idle = results["start"], results["warm"], results["sessions"]
    return "\n".join(
        [
            "# Python interpreter tool under load",
            "",
            f"`python benchmarks/interpreter_load.py` on {results['machine']} ({results['date']}); "
            "issue 51's targets: >= 1,000 idle sessions, warm-cell p50 < 20 ms.",
            "",
            "| measure | value |",
            "|---|---|",
            f"| fresh interpreter start (bwrap + python3 + kernel ready) | median {start['median_ms']:.0f} ms, "
            f"p90 {start['p90_ms']:.0f} ms ({start['n']} starts) |",
            f"| warm small cell, latency | p50 {warm['p50_ms']:.2f} ms, p99 {warm['p99_ms']:.2f} ms |",
            f"| warm small cell, one session | {warm['calls_per_s']:,.0f} calls/s |",
            f"| idle sessions held at once | {idle['held']:,} of {idle['target']:,} asked "
            f"({idle['kept_state']:,} kept their state; all started in {idle['start_all_s']:.0f} s) |",
            f"| memory per idle session | PSS {idle['pss_per_session_mib']:.1f} MiB, "
            f"RSS {idle['rss_per_session_mib']:.1f} MiB (total PSS {idle['pss_total_gib']:.2f} GiB) |",
            f"| one cell on every held session, {THREADS} threads | "
            f"{idle['calls_per_s_across_sessions']:,.0f} calls/s |",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--reserve-gib", type=float, default=4.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    results = {
        "machine": f"{os.cpu_count()} cores, {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "start": measure_starts(args.starts),
        "warm": measure_warm(args.calls),
        "sessions": measure_sessions(args.sessions, args.reserve_gib),
    }
    text = markdown(results)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "interpreter_load.json").write_text(json.dumps(results, indent=1) + "\n")
        (RESULTS / "interpreter_load.md").write_text(text)


if __name__ == "__main__":
    main()
