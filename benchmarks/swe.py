"""SWE family benchmark: per repository, its venv, its test suite, validating a task, resetting, judging.

For every repository of ``repositories.yaml`` that has tasks:

* ``prepare_s``: :func:`prepare_repository` (cold: download + venv build, only the first time on a
  machine; warm: the cached folders found), this run's time;
* ``suite_s``: the slowest of the baseline runs of its whole suite in the sandbox, at build time;
* ``validate_s``: what one candidate bug costs at build time: a run of the relevant test files on
  the mutated code (measured here on the first task);
* ``reset_first_s`` / ``reset_s``: ``env.reset`` on its first task, then again (the target is < 1 s
  after the first);
* ``judge_s``: a ``submit`` (the task's test files run), with the unpatched verdict (must be 0) and the
  oracle's (must be 1): every repository's tasks are replayed here, not only the test file's;
* ``tasks``: validated tasks (all variants), and the process's peak RSS at the end;
* ``build_s_per_task``: from the synthesis rounds' logs (``--synthesis-logs``): the seconds of mutant
  runs per kept task, and ``mutants`` / ``kept`` (how many candidates ran, how many the tests caught);
  without logs, the recorded build columns stay.

Timings are taken on a loaded shared 2-core machine: compare them with each other, not with other
machines. ``python benchmarks/swe.py [--repositories N ...] [--keep-others] [--synthesis-logs LOG ...]``
writes benchmarks/results/swe.{json,md} (``--keep-others``: the other repositories' recorded rows stay;
``--recount``: nothing measured, the recorded rows with the current task counts).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import time
from collections import Counter
from pathlib import Path

from agentgym.environments.swe.checkout import Checkout
from agentgym.environments.swe.env import SWEEnv
from agentgym.environments.swe.repositories import prepare_repository, repositories
from agentgym.environments.swe.tasks import all_tasks, baseline, counts

RESULTS = Path(__file__).parent / "results"


def measure(name: str, environment: SWEEnv) -> dict:
    started = time.perf_counter()
    prepared = prepare_repository(repositories()[name])
    prepare_s = time.perf_counter() - started
    task_id = next(index for index, task in enumerate(environment.tasks) if task.repository == name)
    task = environment.tasks[task_id]
    with Checkout.of(prepared) as checkout:
        original = checkout.read(task.path)
        lines = original.splitlines(keepends=True)
        checkout.write(task.path, "".join(lines[: task.first - 1]) + task.after + "".join(lines[task.last :]))
        started = time.perf_counter()
        checkout.run_tests(list(task.test_files))
        validate_s = time.perf_counter() - started
    started = time.perf_counter()
    environment.reset(options={"task_id": task_id})
    reset_first_s = time.perf_counter() - started
    started = time.perf_counter()
    environment.reset(options={"task_id": task_id})
    reset_s = time.perf_counter() - started
    started = time.perf_counter()
    _, unpatched, _, _, _ = environment.step("submit")
    judge_s = time.perf_counter() - started
    environment.reset(options={"task_id": task_id})
    oracle = 0.0
    for _ in range(5):
        _, oracle, terminated, _, _ = environment.step(environment.oracle_action())
        if terminated:
            break
    return {
        "repository": name,
        "prepare_s": round(prepare_s, 2),
        "suite_s": baseline(name)["suite_seconds"],
        "stable_tests": sum(map(len, baseline(name)["stable"].values())),
        "validate_s": round(validate_s, 2),
        "reset_first_s": round(reset_first_s, 3),
        "reset_s": round(reset_s, 3),
        "judge_s": round(judge_s, 2),
        "unpatched_reward": unpatched,
        "oracle_reward": oracle,
    }


#: The line a synthesis round prints per repository (environments/swe/synthesis.py).
ROUND_LINE = re.compile(
    r"^(?P<name>[\w.-]+): (?P<kept>\d+) tasks kept of (?P<mutants>\d+) mutants run in (?P<seconds>\d+) s"
)


def build_costs(logs: list[Path]) -> dict[str, dict]:
    """Per repository, over the synthesis rounds' logs: mutants run, tasks kept, seconds of mutant runs."""
    totals: dict[str, dict] = {}
    for log in logs:
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            match = ROUND_LINE.match(line)
            if match:
                row = totals.setdefault(match["name"], {"mutants": 0, "kept": 0, "build_s": 0})
                row["mutants"] += int(match["mutants"])
                row["kept"] += int(match["kept"])
                row["build_s"] += int(match["seconds"])
    for row in totals.values():
        row["build_s_per_task"] = round(row["build_s"] / row["kept"], 1) if row["kept"] else None
    return totals


def _build_columns(costs: dict | None) -> dict:
    """The build columns of a repository's costs (:func:`build_costs`) or recorded row; None where missing."""
    return {key: (costs or {}).get(key) for key in ("mutants", "kept", "build_s_per_task")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repositories", nargs="*", help="default: every repository with tasks")
    parser.add_argument("--synthesis-logs", nargs="*", type=Path, default=[], help="logs of synthesis rounds")
    parser.add_argument(
        "--keep-others",
        action="store_true",
        help="keep the recorded rows of repositories not measured now (their tasks, and their build columns from "
        "--synthesis-logs when given)",
    )
    parser.add_argument(
        "--recount", action="store_true", help="measure nothing: the recorded rows with today's task counts"
    )
    arguments = parser.parse_args()
    recorded = json.loads((RESULTS / "swe.json").read_text()) if (RESULTS / "swe.json").exists() else None
    costs = build_costs(arguments.synthesis_logs)
    if not arguments.synthesis_logs and recorded is not None:  # no logs given: the recorded build columns stand
        costs = {row["repository"]: _build_columns(row) for row in recorded["repositories"]}
    per_repository = Counter(task.repository for task in all_tasks())
    names = arguments.repositories or [name for name in repositories() if per_repository[name]]
    if arguments.recount:
        names, arguments.keep_others = [], True
    environment = SWEEnv(variant="edit")
    rows = []
    try:
        for name in names:
            if not any(task.repository == name for task in environment.tasks):
                continue
            row = measure(name, environment)
            row["tasks"] = per_repository[name]
            row.update(_build_columns(costs.get(name)))
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        environment.close()
    if arguments.keep_others and recorded is not None:
        measured = {row["repository"] for row in rows}
        for row in recorded["repositories"]:
            name = row["repository"]
            if name in measured or name not in per_repository:
                continue
            row["tasks"] = per_repository[name]
            row.update(_build_columns(costs.get(name)))
            rows.append(row)
        order = list(repositories())
        rows.sort(key=lambda row: order.index(row["repository"]))
    kinds = Counter(task.kind for task in all_tasks())
    summary = {
        "tasks": sum(per_repository.values()),
        "repositories_with_tasks": len(per_repository),
        "tasks_per_kind": dict(sorted(kinds.items())),
        "splits": {"SWE-v0": counts("edit"), "SWE-Rewrite-v0": counts("rewrite")},
        "tasks_per_repository": dict(sorted(per_repository.items())),
        "build": (
            {
                "mutants": sum(row["mutants"] for row in costs.values()),
                "kept": sum(row["kept"] for row in costs.values()),
                "build_s": sum(row["build_s"] for row in costs.values()),
            }
            if arguments.synthesis_logs or recorded is None
            else recorded["summary"]["build"]
        ),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "machine": f"shared 2-core machine, load average {os.getloadavg()[0]:.1f} at the end; one process",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "swe.json").write_text(json.dumps({"summary": summary, "repositories": rows}, indent=1) + "\n")
    columns = [
        "repository",
        "tasks",
        "stable_tests",
        "suite_s",
        "validate_s",
        "mutants",
        "kept",
        "build_s_per_task",
        "prepare_s",
        "reset_first_s",
        "reset_s",
        "judge_s",
        "unpatched_reward",
        "oracle_reward",
    ]
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        table.append("| " + " | ".join(str(row[column]) for column in columns) + " |")
    text = f"# SWE benchmark\n\n{json.dumps(summary)}\n\n" + "\n".join(table) + "\n"
    (RESULTS / "swe.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
