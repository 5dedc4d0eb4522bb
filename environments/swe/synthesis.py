"""Task synthesis: procedural bugs in a real repository, each kept only if the repository's own tests catch it.

For one repository (:func:`synthesize`):

1. The baseline: its whole test suite runs ``baseline_runs`` times in the sandbox on the
   original code; a test is *stable* when it passed every time (flaky tests, and tests that fail or
   skip on the original, are left out of every task).
2. For each module of the package (never its tests), candidate mutations
   (:mod:`~agentgym.environments.swe.mutations`) are drawn, ``per_kind`` of each kind. Each is
   applied and the test files relevant to it run (those that name the changed function, else those
   that name the module, else all). A
   mutation is kept when at least one stable test no longer passes: those are its FAIL_TO_PASS;
   the other stable tests of those files are its PASS_TO_PASS. A mutant that hits a sandbox limit
   (a loop that never ends) is dropped.
3. The problem statement is written from the failing run's output (the failing tests and the
   first failures' short tracebacks), never from the patch.

Tasks are appended to ``data/tasks/<repository>.jsonl`` as they are found, so a build under a time
budget can stop and go on later; ``data/baselines/<repository>.json`` keeps the stable tests
(``.json.gz`` when large).
Mutants run and not kept are listed in the family's cache (``tried/<repository>.txt``), so a later
round with a new seed does not run them again. Run it with
``python -m agentgym.environments.swe.synthesis [--budget-s S] [--seed N] [--jobs J] [NAME ...]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import random
import re
import time
from pathlib import Path

from agentgym.environments.swe.checkout import Checkout, TestRun, relevant_test_files, test_files
from agentgym.environments.swe.mutations import Mutation, sample
from agentgym.environments.swe.repositories import Repository, prepare_repository, repositories, swe_home
from agentgym.environments.swe.tasks import baseline as read_baseline
from agentgym.environments.swe.tasks import baseline_file, write_baseline

DATA = Path(__file__).parent / "data"
MAX_STATEMENT_CHARS = 3_000
#: The wall-time limit of a baseline run (a whole suite on a loaded machine).
BASELINE_WALL_S = 600.0
#: A mutant's run is stopped (a loop that never ends) after this many times the whole suite's baseline
#: time, at least MIN_MUTANT_WALL_S; it ran only some of the suite's files, so this is generous. (It was
#: 6x: a single runaway mutant of more-itertools held a worker for 350 s.)
MUTANT_WALL_FACTOR = 3.0
MIN_MUTANT_WALL_S = 20.0


def tasks_path(repository: Repository) -> Path:
    return DATA / "tasks" / f"{repository.name}.jsonl"


def source_modules(files: dict[str, bytes], repository: Repository, tests: list[str]) -> list[str]:
    """The package's Python modules, tests and test helpers left out."""
    root = repository.package_path
    modules = []
    for path in files:
        if not path.endswith(".py") or path in tests:
            continue
        inside = path == root or path.startswith(root.rstrip("/") + "/")
        parts = path.split("/")
        if inside and not any(part in ("tests", "test", "testing") or part.startswith("test_") for part in parts):
            modules.append(path)
    return sorted(modules)


def stable_baseline(checkout: Checkout, tests: list[str], runs: int) -> tuple[dict[str, list[str]], float]:
    """{test file: stable passing node ids} over ``runs`` runs, and the slowest run's seconds."""
    passing: set[str] | None = None
    slowest = 0.0
    limits = checkout.limits.replace(wall_s=BASELINE_WALL_S, cpu_s=BASELINE_WALL_S)  # a whole suite, maybe slow
    for _ in range(runs):
        run = checkout.run_tests(tests, limits)
        slowest = max(slowest, run.seconds)
        passed = {test for test, outcome in run.outcomes.items() if outcome == "passed"}
        passing = passed if passing is None else passing & passed
    by_file: dict[str, list[str]] = {}
    for test in sorted(passing or ()):
        by_file.setdefault(test.split("::", 1)[0], []).append(test)
    return by_file, slowest


def problem_statement(run: TestRun, failing: list[str]) -> str:
    """What a user would report: which tests fail and how (the output's failures, trimmed)."""
    shown = failing[:8]
    lines = [f"{len(failing)} test(s) of the repository's own suite fail on the current code:"]
    lines += [f"  {test}" for test in shown] + (["  ..."] if len(failing) > len(shown) else [])
    failures = re.search(r"^=+ FAILURES =+$(.*?)(?=^=+ short test summary|\Z)", run.output, re.M | re.S)
    if failures:
        body = failures.group(1).strip()
        lines += [
            "",
            "The first failures:",
            body[:MAX_STATEMENT_CHARS] + (" [...]" if len(body) > MAX_STATEMENT_CHARS else ""),
        ]
    else:
        errors = run.output.strip()[-MAX_STATEMENT_CHARS:]
        lines += ["", "The test run ended with:", errors]
    lines += [
        "",
        "Find the cause in the library's code and fix it so that these tests pass again, "
        "without breaking the other tests.",
    ]
    return "\n".join(lines)


def tried_path(repository: Repository) -> Path:
    """The mutants already run and not kept (one key a line), in the family's cache: a later round skips them."""
    return swe_home() / "tried" / f"{repository.key}.txt"


def synthesize(
    repository: Repository, *, budget_s: float, per_kind: int = 6, baseline_runs: int = 2, seed: int = 0, report=print
) -> int:  # noqa: ANN001
    """Find and validate tasks for ``repository`` for up to ``budget_s`` seconds of mutant runs (the one-time
    baseline is not counted: a slow suite's two baseline runs used to take the whole budget); the number of
    new tasks."""
    started = time.perf_counter()
    prepared = prepare_repository(repository, report)
    files = prepared.files()
    tests = test_files(files, repository.tests)
    with Checkout.of(prepared, files) as checkout:
        if baseline_file(repository.name).exists():
            baseline = read_baseline(repository.name)
        else:
            stable, seconds = stable_baseline(checkout, tests, baseline_runs)
            baseline = {
                "repository": repository.name,
                "version": repository.version,
                "suite_seconds": round(seconds, 2),
                "test_files": tests,
                "stable": stable,
            }
            write_baseline(repository.name, baseline)
        stable = baseline["stable"]
        report(
            f"{repository.name}: {sum(map(len, stable.values()))} stable tests in {len(stable)} files, "
            f"suite {baseline['suite_seconds']} s"
        )
        out = tasks_path(repository)
        out.parent.mkdir(parents=True, exist_ok=True)
        seen = set()
        if out.exists():
            for line in out.read_text().splitlines():
                task = json.loads(line)
                seen.add((task["path"], task["first"], task["before"], task["after"]))
        tried_file = tried_path(repository)
        tried_file.parent.mkdir(parents=True, exist_ok=True)
        rejected = set(tried_file.read_text().splitlines()) if tried_file.exists() else set()
        rng = random.Random(f"{repository.name}-{seed}")
        modules = source_modules(files, repository, tests)
        rng.shuffle(modules)
        queue: list[tuple[str, Mutation]] = []
        for module in modules:
            text = files[module].decode("utf-8", "replace")
            queue += [(module, mutation) for mutation in sample(module, text, rng, per_kind)]
        rng.shuffle(queue)
        wall = max(MIN_MUTANT_WALL_S, MUTANT_WALL_FACTOR * float(baseline["suite_seconds"]))
        found = tried = 0
        mutants_started = time.perf_counter()
        with out.open("a", encoding="utf-8") as sink, tried_file.open("a", encoding="utf-8") as tried_sink:
            for module, mutation in queue:
                if time.perf_counter() - mutants_started > budget_s:
                    break
                identity = (mutation.path, mutation.first, mutation.before, mutation.after)
                if identity in seen or _mutation_key(mutation) in rejected:
                    continue
                relevant = [
                    path
                    for path in relevant_test_files(module, repository.package, files, tests, mutation.function)
                    if stable.get(path)
                ]
                if not relevant:
                    continue
                tried += 1
                left = budget_s - (time.perf_counter() - mutants_started)
                limit_s = min(wall, max(MIN_MUTANT_WALL_S, left + MIN_MUTANT_WALL_S))
                original = files[module].decode("utf-8", "replace")
                checkout.write(module, mutation.apply(original))
                try:
                    run = checkout.run_tests(relevant, checkout.limits.replace(wall_s=limit_s, cpu_s=limit_s))
                finally:
                    checkout.write(module, original)
                if run.limit_hit is not None and limit_s < wall:
                    continue  # stopped by the round's budget, not by its own limit: not judged, tried again later
                expected = [test for path in relevant for test in stable[path]]
                failing = [test for test in expected if not run.passed(test)]
                if run.limit_hit is not None or not failing or len(failing) == len(expected) and len(expected) > 20:
                    # a runaway mutant, not caught, or the whole suite broke (an import error): not a useful bug
                    tried_sink.write(_mutation_key(mutation) + "\n")
                    tried_sink.flush()
                    continue
                task = {
                    "repository": repository.name,
                    "version": repository.version,
                    "path": module,
                    "kind": mutation.kind,
                    "function": mutation.function,
                    "first": mutation.first,
                    "last": mutation.last,
                    "before": mutation.before,
                    "after": mutation.after,
                    "test_files": relevant,
                    "fail_to_pass": failing,
                    "problem_statement": problem_statement(run, failing),
                }
                sink.write(json.dumps(task, sort_keys=True) + "\n")
                sink.flush()
                seen.add(identity)  # two candidates of a round can make the same text (val[0] -> val[1] twice)
                found += 1
        report(
            f"{repository.name}: {found} tasks kept of {tried} mutants run in "
            f"{time.perf_counter() - mutants_started:.0f} s ({time.perf_counter() - started:.0f} s in all)"
        )
    return found


def _mutation_key(mutation: Mutation) -> str:
    """One line that names a mutation (its place and its text's hash)."""
    digest = hashlib.sha256(f"{mutation.before}\0{mutation.after}".encode()).hexdigest()[:16]
    return f"{mutation.path}:{mutation.first}:{mutation.kind}:{digest}"


def _synthesize_one(name: str, budget_s: float, per_kind: int, seed: int) -> tuple[str, int]:
    """One repository's round in a worker process (errors reported, not raised: the others go on)."""
    try:
        return name, synthesize(repositories()[name], budget_s=budget_s, per_kind=per_kind, seed=seed)
    except Exception as error:  # one broken repository must not stop the others' build
        print(f"{name}: failed: {error}", flush=True)
        return name, 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="repositories (default: all)")
    parser.add_argument("--budget-s", type=float, default=120.0, help="seconds of mutant runs per repository")
    parser.add_argument("--per-kind", type=int, default=6, help="candidates of each kind drawn per module")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="repositories built at once (one process each)")
    parser.add_argument(
        "--max-tasks", type=int, default=0, help="skip repositories that already hold this many tasks (0: no cap)"
    )
    arguments = parser.parse_args()
    names = arguments.names or list(repositories())
    unknown = sorted(set(names) - set(repositories()))
    if unknown:
        parser.error(f"unknown repositories {unknown}; known: {sorted(repositories())}")
    if arguments.max_tasks:
        names = [name for name in names if _task_count(repositories()[name]) < arguments.max_tasks]
    started = time.perf_counter()
    work = [(name, arguments.budget_s, arguments.per_kind, arguments.seed) for name in names]
    if arguments.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(arguments.jobs) as pool:
            found = dict(pool.starmap(_synthesize_one, work, chunksize=1))
    else:
        found = dict(_synthesize_one(*row) for row in work)
    minutes = (time.perf_counter() - started) / 60
    print(
        f"round: {sum(found.values())} new tasks from {len(found)} repositories in {minutes:.1f} min "
        f"({sum(found.values()) / max(minutes, 1e-9) / arguments.jobs:.1f} per worker-minute, "
        f"{arguments.jobs} workers)",
        flush=True,
    )


def _task_count(repository: Repository) -> int:
    path = tasks_path(repository)
    return len(path.read_text().splitlines()) if path.exists() else 0


if __name__ == "__main__":
    main()
