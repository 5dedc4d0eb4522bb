"""A repository checked out in a sandbox, and its tests run there with per-test outcomes.

:class:`Checkout` writes a prepared repository's files into a fresh :class:`~agentgym.sandbox.Sandbox`
work dir (``/work``), mounts its venv read-only at ``/opt/venv``, and runs pytest in it
(:meth:`Checkout.run_tests`), reading each test's outcome from the ``pytest_outcomes`` plugin. The
sandbox has no network; its limits end a runaway suite (``limit_hit`` says which).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass

from agentgym.environments.swe.repositories import VENV, Prepared
from agentgym.sandbox import WORK, Limits, Sandbox, SandboxError

#: Where the plugin writes the outcomes during a run (removed right after).
OUTCOMES_FILE = ".swe-outcomes.json"
#: Limits of one test run: real suites take seconds, a mutant that loops is stopped by the wall time.
TEST_LIMITS = Limits(
    wall_s=120.0, cpu_s=100.0, memory_mb=2048, processes=64, file_size_mb=64, output_bytes=2_000_000, tmp_mb=256
)
PYTEST = [
    "python",
    "-m",
    "pytest",
    "-p",
    "pytest_outcomes",
    "-p",
    "no:cacheprovider",
    "-o",
    "addopts=",
    "-q",
    "--tb=short",
    "-rfE",
    "--color=no",
    "--continue-on-collection-errors",
]


@dataclass(frozen=True)
class TestRun:
    """One pytest run: each test's outcome, the output, and which sandbox limit ended it (if one did)."""

    outcomes: dict[str, str]
    output: str
    exit_code: int
    limit_hit: str | None
    seconds: float

    def passed(self, test: str) -> bool:
        return self.outcomes.get(test) == "passed"


class Checkout:
    """A repository's files in a sandbox work dir, with a venv at ``/opt/venv``; see the module docstring.

    ``pythonpath`` is where the repository's source is imported from inside (e.g. ``/work/src``);
    ``env`` adds variables the repository's tests need.
    """

    def __init__(
        self,
        files: dict[str, bytes],
        venv: str | os.PathLike[str],
        pythonpath: str,
        *,
        limits: Limits | None = None,
        backend: str = "bwrap",
        image: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.pythonpath = pythonpath
        self.extra_env = dict(env or {})
        self.limits = limits or TEST_LIMITS
        options = {"image": image} if image else {}
        self.sandbox = Sandbox(limits=self.limits, backend=backend, ro_binds={VENV: venv}, **options)
        self.files = files
        for path, data in self.files.items():
            self.sandbox.write_file(path, data)

    @classmethod
    def of(cls, prepared: Prepared, files: dict[str, bytes] | None = None, **options) -> Checkout:  # noqa: ANN003
        """A checkout of a prepared repository (its files, or the ``files`` given), with its venv."""
        return cls(
            prepared.files() if files is None else files,
            prepared.venv,
            prepared.repository.pythonpath(),
            env=dict(prepared.repository.env),
            **options,
        )

    @property
    def environment(self) -> dict[str, str]:
        """Variables every command in the checkout runs with: the venv first on ``PATH``, the source importable."""
        return {
            **self.extra_env,
            "PATH": f"{VENV}/bin:/usr/bin:/bin",
            "VIRTUAL_ENV": VENV,
            "PYTHONPATH": self.pythonpath,
        }

    def run(self, command: str | list[str], limits: Limits | None = None):  # noqa: ANN201 - RunResult
        """A shell line (or argv) in the checkout, with :attr:`environment`."""
        return self.sandbox.run(command, limits=limits or self.limits, env=self.environment)

    def run_tests(self, targets: list[str], limits: Limits | None = None) -> TestRun:
        """pytest on ``targets`` (files or node ids); outcomes per node id."""
        self._remove_outcomes()
        result = self.sandbox.run(
            [*PYTEST, *targets],
            limits=limits or self.limits,
            env={**self.environment, "SWE_OUTCOMES": f"{WORK}/{OUTCOMES_FILE}"},
        )
        outcomes: dict[str, str] = {}
        with contextlib.suppress(SandboxError, OSError, ValueError):  # no file: the run never got to its end
            outcomes = json.loads(self.sandbox.read_file(OUTCOMES_FILE, max_bytes=50_000_000))
        self._remove_outcomes()
        output = result.stdout + (("\n" + result.stderr) if result.stderr.strip() else "")
        return TestRun(outcomes, output, result.exit_code, result.limit_hit, result.wall_s)

    def _remove_outcomes(self) -> None:
        try:
            path = self.sandbox.path(OUTCOMES_FILE)
        except SandboxError:
            return
        if path.is_file() or path.is_symlink():
            os.unlink(path)

    def drop_bytecode(self) -> None:
        """Remove every ``__pycache__`` of the checkout: Python (and pytest's assertion rewriting) trusts a
        cached module whose source has the same size and whole-second time, so a test file edited and put
        back within a second could otherwise run as the agent's edit, or an agent could plant one."""
        self.sandbox.run("find . -name __pycache__ -type d -prune -exec rm -rf {} +", limits=self.limits)

    def write(self, path: str, text: str) -> None:
        self.sandbox.write_file(path, text)

    def read(self, path: str) -> str:
        return self.sandbox.read_file(path, max_bytes=20_000_000)

    def close(self) -> None:
        self.sandbox.close()

    def __enter__(self) -> Checkout:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def test_files(repository_files: dict[str, bytes], tests: tuple[str, ...]) -> list[str]:
    """The repository's test files (``test*.py`` / ``*_test.py`` under its test folders), sorted."""
    found = []
    for path in repository_files:
        name = path.rsplit("/", 1)[-1]
        if not (name.startswith("test") or name.endswith("_test.py")) or not name.endswith(".py"):
            continue
        if any(path == root or path.startswith(root.rstrip("/") + "/") for root in tests):
            found.append(path)
    return sorted(found)


def relevant_test_files(
    module_path: str, package: str, files: dict[str, bytes], candidates: list[str], function: str = ""
) -> list[str]:
    """The test files relevant to a change in ``function`` of ``module_path``.

    Those that name the function (a public name, as a word) when some do; else those that name the
    changed module (its import name as a word); else all of them (also for the package's
    ``__init__`` and for a single-module package).
    """
    if function and not function.startswith("_"):
        pattern = re.compile(rf"\b{re.escape(function)}\b")
        named = [path for path in candidates if pattern.search(files[path].decode("utf-8", "replace"))]
        if named:
            return named
    stem = module_path.rsplit("/", 1)[-1].removesuffix(".py")
    if stem == "__init__" or package.endswith(".py"):
        return candidates
    pattern = re.compile(rf"\b{re.escape(stem)}\b")
    named = [path for path in candidates if pattern.search(files[path].decode("utf-8", "replace"))]
    return named or candidates
