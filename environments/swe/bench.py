"""SWE-bench-format instances supplied by the user, played with the SWE tools and scored by the same rule.

The user provides (nothing is downloaded):

* ``instances``: a ``.json`` file (a list) or ``.jsonl`` file of SWE-bench instances, or ``$SWE_BENCH_INSTANCES``.
  Each has ``instance_id``, ``repo`` (``owner/name``), ``base_commit``, ``problem_statement``,
  ``test_patch``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (pytest node ids, as lists or as
  SWE-bench's JSON-encoded strings), and optionally the gold ``patch`` (the oracle applies it).
* ``repositories``: a folder with a git clone of each repository, named as SWE-bench names its
  testbeds (``owner__name``), holding ``base_commit``; or ``$SWE_BENCH_REPOSITORIES``.
* ``venvs``: a folder with a virtual environment per repository (``owner__name``), made with the
  system's Python (``/usr/bin/python3 -m venv``) and holding pytest and the repository's
  requirements, plus agentgym's ``pytest_outcomes`` plugin (:func:`install_plugin`); or
  ``$SWE_BENCH_VENVS``. With ``backend="docker"`` and ``image=`` the user's image runs instead,
  the venv still mounted at ``/opt/venv``.

Episode: the repository at ``base_commit`` with ``test_patch`` applied is the work dir ``/work``
(``/work`` and ``/work/src`` on ``PYTHONPATH``); tools, observation and actions as
:class:`~agentgym.environments.swe.env.SWEEnv`. ``submit`` puts the test patch's files back, runs
the test files of the FAIL_TO_PASS and PASS_TO_PASS tests and scores 1 only when all of those
pass (``info`` holds both fractions). Every instance is in the ``test`` split, in file order.
Only repositories whose tests run under pytest are supported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.contract.core import TaskSplits
from agentgym.environments.swe.checkout import Checkout, TestRun
from agentgym.environments.swe.env import SWEEnv
from agentgym.environments.swe.repositories import PLUGIN, venv_purelib
from agentgym.sandbox import WORK

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
HOW_TO = (
    "SWE-bench-format data is the user's: pass instances= (a .json or .jsonl file of instances with "
    f"{', '.join(REQUIRED)}), repositories= (a folder of git clones named owner__name) and venvs= (a folder of "
    "venvs named owner__name, with pytest), or set $SWE_BENCH_INSTANCES, $SWE_BENCH_REPOSITORIES and $SWE_BENCH_VENVS"
)


class SWEBenchDataMissing(FileNotFoundError):
    """The instance files, repositories or venvs are not where the arguments point."""


@dataclass(frozen=True)
class Instance:
    """One SWE-bench instance, its test lists decoded."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    patch: str = ""

    @property
    def testbed(self) -> str:
        return self.repo.replace("/", "__")


def load_instances(path: str | os.PathLike[str]) -> list[Instance]:
    """The instances of a ``.json`` (list) or ``.jsonl`` file; a missing field is a clear error."""
    path = Path(path)
    if not path.is_file():
        raise SWEBenchDataMissing(f"no instance file at {path}. {HOW_TO}")
    text = path.read_text(encoding="utf-8")
    rows = (
        json.loads(text) if path.suffix == ".json" else [json.loads(line) for line in text.splitlines() if line.strip()]
    )
    instances = []
    for number, row in enumerate(rows):
        missing = [key for key in REQUIRED if key not in row]
        if missing:
            raise ValueError(f"{path}: instance {number} ({row.get('instance_id', '?')}) lacks {', '.join(missing)}")
        tests = {
            key: json.loads(row[key]) if isinstance(row[key], str) else list(row[key])
            for key in ("FAIL_TO_PASS", "PASS_TO_PASS")
        }
        instances.append(
            Instance(
                row["instance_id"],
                row["repo"],
                row["base_commit"],
                row["problem_statement"],
                row["test_patch"],
                tuple(tests["FAIL_TO_PASS"]),
                tuple(tests["PASS_TO_PASS"]),
                row.get("patch") or "",
            )
        )
    if not instances:
        raise SWEBenchDataMissing(f"{path} holds no instances. {HOW_TO}")
    return instances


def install_plugin(venv: str | os.PathLike[str]) -> None:
    """Put the ``pytest_outcomes`` plugin (per-test outcomes for the judge) into a user's venv."""
    python = Path(venv) / "bin" / "python"
    purelib = venv_purelib(python)
    shutil.copyfile(PLUGIN, Path(purelib) / PLUGIN.name)


def _git(*arguments: str, cwd: str | os.PathLike[str] | None = None, stdin: str | None = None) -> bytes:
    done = subprocess.run(
        ["git", *arguments],
        cwd=cwd,
        input=stdin.encode() if stdin is not None else None,
        capture_output=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(arguments[:2])} failed: {done.stderr.decode(errors='replace')[-1000:]}")
    return done.stdout


def _tree(repository: Path, commit: str, patches: list[str]) -> dict[str, bytes]:
    """The files of ``commit`` with ``patches`` applied in order."""
    with tempfile.TemporaryDirectory(prefix="agentgym-swe-bench-") as folder:
        archive = _git("-C", str(repository), "archive", "--format=tar", commit)
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        for patch in patches:
            if patch.strip():
                _git("apply", "--whitespace=nowarn", "-", cwd=folder, stdin=patch)
        root = Path(folder)
        return {
            path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()
        }


def _patched_paths(patch: str) -> list[str]:
    return sorted({line[6:].strip() for line in patch.splitlines() if line.startswith("+++ b/")})


class SWEBenchEnv(SWEEnv):
    """SWE-bench-format instances on the user's repositories and venvs; see the module docstring."""

    def __init__(
        self,
        instances: str | os.PathLike[str] | None = None,
        repositories: str | os.PathLike[str] | None = None,
        venvs: str | os.PathLike[str] | None = None,
        backend: str = "bwrap",
        image: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        instances = instances or os.environ.get("SWE_BENCH_INSTANCES")
        repositories = repositories or os.environ.get("SWE_BENCH_REPOSITORIES")
        venvs = venvs or os.environ.get("SWE_BENCH_VENVS")
        if not (instances and repositories and venvs):
            raise SWEBenchDataMissing(f"SWEBenchEnv has no data. {HOW_TO}")
        self.instances = load_instances(instances)
        self.repositories_dir, self.venvs_dir = Path(repositories), Path(venvs)
        for instance in self.instances:
            for folder, what in ((self.repositories_dir, "git clone"), (self.venvs_dir, "venv")):
                if not (folder / instance.testbed).is_dir():
                    raise SWEBenchDataMissing(f"no {what} of {instance.repo} at {folder / instance.testbed}. {HOW_TO}")
        super().__init__(variant="edit", backend=backend, render_mode=render_mode)
        self.image = image
        self.tasks = ()
        self.splits = TaskSplits(train=0, dev=0, test=len(self.instances))
        self.instance: Instance | None = None
        self._start: dict[str, bytes] = {}
        self._gold: dict[str, bytes] = {}

    def _generate(self, task_id: int) -> str:
        instance = self.instances[task_id]
        self.instance = instance
        repository = self.repositories_dir / instance.testbed
        self._start = _tree(repository, instance.base_commit, [instance.test_patch])
        self._gold = (
            _tree(repository, instance.base_commit, [instance.test_patch, instance.patch]) if instance.patch else {}
        )
        if self.checkout is not None:
            self.checkout.close()
        self.checkout = Checkout(
            self._start, self.venvs_dir / instance.testbed, f"{WORK}:{WORK}/src", backend=self.backend, image=self.image
        )
        self._status = "The tests have not been run yet."
        self.result = {}
        top = sorted({path.split("/", 1)[0] + ("/" if "/" in path else "") for path in self._start})
        return (
            f"The repository {instance.repo} is checked out in {WORK} at {instance.base_commit[:12]} "
            f"(instance {instance.instance_id}). An issue was reported:\n\n{instance.problem_statement}\n\n"
            f"Fix it (not the tests). Top level of {WORK}: {' '.join(top)}"
        )

    def default_test_targets(self) -> list[str]:
        """The test files of the FAIL_TO_PASS and PASS_TO_PASS tests."""
        assert self.instance is not None
        return sorted({test.split("::", 1)[0] for test in self.instance.fail_to_pass + self.instance.pass_to_pass})

    def judge(self) -> tuple[TestRun, float, float]:
        assert self.checkout is not None and self.instance is not None
        for path in _patched_paths(self.instance.test_patch):
            if path in self._start:
                self.checkout.write(path, self._start[path])
        run = self.checkout.run_tests(self.default_test_targets())
        fraction = lambda tests: sum(map(run.passed, tests)) / len(tests) if tests else 1.0  # noqa: E731
        return run, fraction(self.instance.fail_to_pass), fraction(self.instance.pass_to_pass)

    def oracle_action(self) -> str:
        """The gold patch, a file at a time (``write``), then submit; without a gold patch, submit."""
        if self.instance is None or not self._gold:
            return "Action: submit"
        for path in _patched_paths(self.instance.patch):
            if path in self._gold and self._read_or_none(path) != self._gold[path].decode("utf-8", "replace"):
                content = self._gold[path].decode("utf-8", "replace")
                fence = "`" * max(3, max((len(run) for run in content.split("\n") if set(run) == {"`"}), default=0) + 1)
                return f"Action: write {path}\n{fence}\n{content.removesuffix(chr(10))}\n{fence}"
        return "Action: submit"

    def _read_or_none(self, path: str) -> str | None:
        try:
            return self._read(path)
        except Exception:  # noqa: BLE001 - a file the agent removed
            return None

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super(SWEEnv, self)._info(command, invalid)
        info.update(self.result)
        if self.instance is not None:
            info["instance_id"] = self.instance.instance_id
        return info

    def random_action(self, rng: Any) -> str:
        return rng.choice(["shell ls", "search def ", "run_tests", "shell git log -1 || true"])
