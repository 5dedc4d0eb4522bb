"""BugFix-v0: fix a bug in a small generated Python repository (SWE-bench style, offline).

Task: a repository in the sandbox work dir ``/work``: a package of real-looking library
code (statistics, text utilities, an inventory, or dates; see :data:`DOMAINS`), a test
suite of plain ``assert`` tests in ``tests/test_<module>.py``, and ``run_tests.py``, a
tiny pytest stand-in (the sandbox's Python has no pytest; the tests run under pytest
too). One mutation was injected into the package: a flipped comparison, a wrong
arithmetic or boolean operator, an off-by-one constant or bound, a wrong variable,
swapped arguments, ``min`` for ``max``, or a deleted branch. The generator keeps only
mutations that make at least one test fail, which it checks by running the suite
in-process on the mutated code; the test values were computed from the correct code.
``BugFix-v0`` (easy) has 2-3 modules and the bug in a function the tests call
directly, and names the failing tests; ``BugFix-Hard-v0`` has 4-6 modules and the bug in
a helper that the tests reach only through other functions (a private function or an
untested helper module), and does not name the failing tests. Task ``task_id`` is drawn
from a generator seeded with the id and the difficulty: domain, package name, modules,
test inputs and mutation.

Observation: the result of the last tool (file listings, numbered file contents, test
output; long files and outputs are cut with a note on how to see the rest) and a status
line. The first observation holds the instruction (with the repository's file list) and
the action syntax.

Action: one tool per reply, on the line after ``Action:`` (or the reply's first line
when it has no ``Action:`` line); multi-line content goes in fenced blocks after it::

    ls [DIR]                       list a directory of the repository
    cat FILE [START[-END]]         show a file with line numbers (a line range for long files)
    search TEXT                    every line of the repository holding TEXT (plain text)
    write FILE                     replace FILE's content (or create it) with the fenced block that follows
    replace FILE                   two fenced blocks follow: the exact old text (it must occur
                                   once in FILE) and the new text; aider's <<<<<<< SEARCH /
                                   ======= / >>>>>>> REPLACE form is accepted too
    run_tests [FILE|NAME ...]      run the test suite (or some files, or tests whose name holds NAME)
    submit                         end the episode; the suite is run once more and judged

A fence is a line of three or more backticks (an info string such as ``python`` may
follow) and ends at a line of at least as many backticks. An unknown tool, a path outside
the work dir, a missing block, or old text that does not occur exactly once is an invalid
action that changes nothing.

Reward: 1 on a successful submit, else 0. Success: the original test files and
``run_tests.py`` are byte-for-byte unchanged, and running the original test files passes
every test (exit status 0 and as many passed tests as the suite has).

Termination: ``submit``. Truncation comes from the registered step limit (30 easy, 50 hard).

Oracle: restore every file that differs from the correct repository (the ``replace``
that undoes the mutation when the mutated file is as generated, else ``write`` with the
original content), then ``run_tests``, then ``submit``.

The in-process check (generation only) runs the package's own trusted template code and
mutants of it, never agent code, under a budget of executed lines so that a mutant that
loops forever is skipped. Not defended: code written by the agent that forges the test
runner's output from inside the test process (as with pytest on SWE-bench).
"""

from __future__ import annotations

import hashlib
import random

from agentgym.contract.core import InvalidAction, TextEnv, quote
from agentgym.environments.code import BUGFIX_SPLITS
from agentgym.environments.code.bugfix.domains import DOMAINS
from agentgym.environments.code.bugfix.repository import Repo, generate_repo
from agentgym.environments.code.bugfix.tools import (
    MAX_OUTPUT_CHARS,
    MAX_READ_BYTES,
    RUN_TESTS_COMMAND,
    TOOL_ALIASES,
    FileTools,
    extract_tool_call,
    fence_for,
    parse_summary,
)
from agentgym.sandbox import WORK, Limits, Sandbox, SandboxError
from agentgym.utils.text import elide

#: Limits of one test run (the suites take well under a second).
TEST_LIMITS = Limits(wall_s=20.0, cpu_s=10.0, memory_mb=512, processes=32, file_size_mb=16, output_bytes=1_000_000)


class BugFixEnv(TextEnv):
    """Fix the injected bug of a generated repository; see the module docstring for the rules."""

    toolset = "bugfix"  # in tools.yaml

    splits = BUGFIX_SPLITS
    max_observation_chars = 40_000

    def __init__(
        self,
        difficulty: str = "easy",
        limits: Limits | dict | None = None,
        sandbox_backend: str = "bwrap",
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        if difficulty not in ("easy", "hard"):
            raise ValueError(f"difficulty must be 'easy' or 'hard', got {difficulty!r}")
        self.difficulty = difficulty
        self.limits = Limits(**limits) if isinstance(limits, dict) else limits or TEST_LIMITS
        self.sandbox_backend = sandbox_backend
        self.sandbox: Sandbox | None = None
        self.tools: FileTools | None = None
        self.repo: Repo | None = None
        self._status = "The tests have not been run yet."
        self._last_run: tuple[str, bool] | None = None

    @property
    def action_syntax(self) -> str:
        return (
            "Use one tool per reply, on the line after 'Action:'. Tools:\n"
            "  ls [DIR]                   list a directory\n"
            "  cat FILE [START-END]       show a file with line numbers (a line range for long files)\n"
            "  search TEXT                find the lines of the repository that contain TEXT\n"
            "  write FILE                 then one fenced block: the file's whole new content\n"
            "  replace FILE               then two fenced blocks: the exact old text (it must occur once in FILE) "
            "and the new text\n"
            "  run_tests [FILE|NAME]      run the tests (all, or one test file, or tests whose name contains NAME)\n"
            "  submit                     finish: the whole test suite is run and judged\n"
            "A fenced block is a line of three backticks, the lines of text, and a closing line of three backticks. "
            "Example:\n"
            "Action: replace pkg/util.py\n```\n    if count > limit:\n```\n```\n    if count >= limit:\n```"
        )

    # ---- tasks ----

    def _generate(self, task_id: int) -> str:
        rng = self.task_rng(task_id, self.difficulty)
        repo = generate_repo(rng, self.difficulty == "hard", self.splits.split_of(task_id), self.splits)
        self.repo = repo
        if self.sandbox is not None:
            self.sandbox.close()
        self.sandbox = Sandbox(limits=self.limits, backend=self.sandbox_backend)
        self.tools = FileTools(self.sandbox)
        for path, text in sorted(repo.broken_files().items()):
            self.sandbox.write_file(path, text)
        self._status = "The tests have not been run yet."
        self._last_run = None
        listing = "\n".join(f"  {path}" for path in sorted(repo.files))
        if self.difficulty == "easy":
            shown = repo.failing[:3] + (["..."] if len(repo.failing) > 3 else [])
            failing = "Failing tests: " + ", ".join(shown) + "."
        else:
            failing = "Some tests fail."
        return (
            f"The repository in {WORK} holds the Python package '{repo.package}' ({_first_line_of(repo)}) and its "
            f"tests. {failing} Find the bug in the package and fix it so that every test passes "
            "(python3 run_tests.py runs them). Do not change the tests or run_tests.py. "
            f"Files:\n{listing}"
        )

    def _describe(self) -> str:
        return self._status

    # ---- acting ----

    def extract_action(self, reply: str) -> str:
        return extract_tool_call(reply)

    def _execute(self, command: str) -> str:
        assert self.tools is not None and self.repo is not None
        head, _, rest = command.partition("\n")
        head = head.strip()
        if not head:
            raise InvalidAction("the reply names no tool; write e.g. 'Action: ls'.")
        run = RUN_TESTS_COMMAND.match(head)
        if run:
            return self._run_tests(run.group(1).split())
        word, _, argument = head.partition(" ")
        tool = TOOL_ALIASES.get(word.lower().rstrip(".:"))
        argument = argument.strip()
        if tool is None:
            raise InvalidAction(
                f"unknown tool {quote(word, 40)}; use ls, cat, search, write, replace, run_tests or submit."
            )
        if tool == "submit":
            return self._submit()
        if tool == "ls":
            return self.tools.ls(argument or ".")
        if tool == "search":
            return self.tools.search(argument.strip("'\""))
        if not argument:
            raise InvalidAction(f"{tool} needs a file path, e.g. '{tool} {self.repo.mutated_path}'.")
        if tool == "cat":
            return self.tools.cat(argument)
        path = argument.split()[0].strip("'\"`")
        if tool == "write":
            return self.tools.write(path, rest)
        return self.tools.replace(path, rest)

    def _run_suite(self, arguments: list[str]) -> tuple[str, dict[str, int], bool]:
        """Run the runner; (output, counts, whether it exited cleanly)."""
        assert self.sandbox is not None
        result = self.sandbox.run(["python3", "run_tests.py", *arguments], limits=self.limits)
        output = result.stdout + (("\n[stderr]\n" + result.stderr) if result.stderr.strip() else "")
        if result.limit_hit:
            output += f"\n[the test run was stopped: the {result.limit_hit} limit was hit]"
        counts = parse_summary(result.stdout)
        return output, counts, result.exit_code == 0 and result.limit_hit is None

    def _run_tests(self, arguments: list[str]) -> str:
        if any("\x00" in argument for argument in arguments) or len(arguments) > 20:
            raise InvalidAction("run_tests takes a few test files or name parts.")
        selection = []
        for argument in arguments:
            path, _, name = argument.partition("::")  # a pytest node id: tests/test_x.py::test_y
            if path.endswith(".py") or "/" in path:
                selection += [path] + (["-k", name] if name else [])
            else:
                selection += ["-k", argument]
        output, counts, clean = self._run_suite(selection)
        summary = ", ".join(f"{counts[label]} {label}" for label in ("failed", "passed", "error") if counts[label])
        self._status = f"Last test run: {summary or 'no tests ran'}."
        if not arguments:
            self._last_run = (self._files_digest(), clean and counts["passed"] == self.repo.test_count)
        command = f"$ python3 run_tests.py {' '.join(selection)}".rstrip()
        return command + "\n" + elide(output.rstrip(), MAX_OUTPUT_CHARS)

    def _submit(self) -> str:
        assert self.repo is not None
        repo = self.repo
        changed = [path for path in repo.protected if self._current(path) != repo.files[path]]
        if changed:
            self.success = False
            verdict = f"Not accepted: these files were changed: {', '.join(changed)}."
        else:
            output, counts, clean = self._run_suite(repo.test_files)
            self.success = clean and counts["passed"] == repo.test_count and not counts["failed"] + counts["error"]
            if self.success:
                verdict = f"Accepted: all {repo.test_count} tests pass."
            else:
                verdict = f"Not accepted: {counts['failed']} failed, {counts['passed']} of {repo.test_count} passed."
        self.score = 1.0 if self.success else 0.0
        self.terminated = True
        self._status = "The episode is over."
        return verdict

    # ---- oracle ----

    def _current(self, path: str) -> str | None:
        """The text of ``path`` in the work dir now, or ``None`` if it is not a readable regular file."""
        assert self.sandbox is not None
        try:
            return self.sandbox.read_file(path, max_bytes=MAX_READ_BYTES)
        except (SandboxError, OSError, ValueError):
            return None

    def _files_digest(self) -> str:
        assert self.repo is not None
        digest = hashlib.sha256()
        for path in sorted(self.repo.files):
            digest.update(f"{path}\0{self._current(path)}\0".encode("utf-8", "replace"))
        return digest.hexdigest()

    def oracle_action(self) -> str:
        """Undo the mutation (or rewrite whatever differs from the correct repository), run the tests, submit."""
        if self.repo is None or self.sandbox is None:
            return "submit"
        repo = self.repo
        paths = [repo.mutated_path] + sorted(path for path in repo.files if path != repo.mutated_path)
        for path in paths:
            current = self._current(path)
            if current == repo.files[path]:
                continue
            if path == repo.mutated_path and current == repo.mutated_source:
                old, new = repo.fix_old, repo.fix_new
                fence = fence_for(old + new)
                return f"Action: replace {path}\n{fence}\n{old}\n{fence}\n{fence}\n{new}\n{fence}"
            content = repo.files[path]
            fence = fence_for(content)
            return f"Action: write {path}\n{fence}\n{content.removesuffix(chr(10))}\n{fence}"
        if self._last_run is None or self._last_run[0] != self._files_digest():
            return "Action: run_tests"
        return "Action: submit"

    def random_action(self, rng: random.Random) -> str:
        """A look around: ls, cat of a repository file, a search, or a test run (the "random" baseline)."""
        if self.repo is None:
            return "ls"
        files = sorted(self.repo.files)
        choice = rng.randrange(5)
        if choice == 0:
            return rng.choice(("ls", "ls tests", f"ls {self.repo.package}"))
        if choice == 1:
            return "run_tests"
        if choice == 2:
            return f"search {rng.choice(('def ', 'return', 'import', 'assert'))}"
        return f"cat {rng.choice(files)}"

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = self.tools = None
        super().close()


def _first_line_of(repo: Repo) -> str:
    domain = next(domain for domain in DOMAINS if domain.name == repo.domain)
    return domain.description
