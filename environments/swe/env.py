"""SWE-v0: fix a bug in a real open-source Python repository, judged by the repository's own tests.

Task: one of the pinned real repositories (``repositories.yaml``: cachetools, more-itertools,
pyparsing, packaging, ...) checked out in the sandbox work dir ``/work``, with one bug put into
its package by a procedural edit (:mod:`~agentgym.environments.swe.mutations`: a flipped
comparison, a changed operator, a negated condition, an off-by-one constant, a deleted statement
or branch, swapped call arguments; ``SWE-Rewrite-v0``: a function's body removed). Every task
was validated at build time (:mod:`~agentgym.environments.swe.synthesis`): the original passes
its tests, the bug makes at least one of them fail. The instruction is the problem statement
written from the failing tests' output, never from the patch. The repository's venv (pytest and
what the tests import) is mounted read-only at ``/opt/venv`` and first on ``PATH``; the sandbox
has no network.

Observation: the result of the last tool (command output, numbered file lines, test output; long
outputs are cut with a note) and a status line. The first observation holds the problem
statement, the repository's layout and the action syntax.

Action: one tool per reply, on the line after ``Action:`` (or the reply's first line); multi-line
text goes in fenced blocks after it, as in the code family::

    shell COMMAND                  run a shell command in /work (a fenced block may hold a longer script)
    view FILE [START-END]          a file with line numbers
    search TEXT                    the lines of the repository's Python files that contain TEXT
    write FILE                     replace FILE's content with the fenced block that follows
    replace FILE                   two fenced blocks: the exact old text (once in FILE) and the new text
    run_tests [TARGET ...]         pytest on test files or node ids (the task's test files by default)
    submit                         end the episode: the FAIL_TO_PASS and PASS_TO_PASS tests are run

Reward: 1 on a submit after which every FAIL_TO_PASS and every PASS_TO_PASS test passes, else 0.
The test files are put back as they were before the judging run, so editing tests does not help.
``info`` at the end holds ``fail_to_pass`` and ``pass_to_pass``: the fractions that passed.

Termination: ``submit``. Truncation: the registered step limit. A command or test run that
exceeds the sandbox's limits is stopped and reported (the ``wall`` limit, as in the code family).

Oracle: the reverse patch (a ``replace`` of the mutated lines by the original ones, or a
``write`` of the original file), then ``submit``.
"""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Sequence
from functools import cache

from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv, quote
from agentgym.environments.swe.checkout import Checkout, TestRun
from agentgym.environments.swe.repositories import Prepared, prepare_repository, repositories
from agentgym.environments.swe.tasks import Task, counts, ordered
from agentgym.sandbox import WORK, Limits, SandboxError
from agentgym.utils.text import elide, fenced_blocks, last_action_line, strip_thinking

MAX_OUTPUT_CHARS = 8_000
#: pytest's summary line ends with the run's duration ("3 failed, 9 passed in 0.42s"): left out of what the
#: agent reads, so that the same actions give the same observations.
PYTEST_DURATION = re.compile(
    r"((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)(?:, )?)+) in \d+(?:\.\d+)?s"
    r"(?: \(\d+:\d\d:\d\d\))?"
)
#: Object addresses in reprs (``<Foo object at 0x7f3a...>``) and Unix times (``1795750329.33``, as boltons'
#: tracing tests print them past pytest's capture): they differ from run to run, so a run's output shows neither.
MEMORY_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
UNIX_TIME = re.compile(r"\b1[0-9]{9}\.[0-9]+\b")
#: The random names of :mod:`tempfile` folders and files (``/tmp/tmpaffgp_be``, as pathspec's tests print
#: them in their assertion messages): they differ from run to run too.
TEMP_NAME = re.compile(r"(?<![\w.-])tmp[a-z0-9_]{8}(?![\w-])")


def steady_output(output: str) -> str:
    """A test run's output with what differs from run to run (durations, addresses, Unix times, temporary
    names) shown as placeholders: the same run reads the same."""
    output = PYTEST_DURATION.sub(r"\1", output)
    return TEMP_NAME.sub("tmp…", UNIX_TIME.sub("<time>", MEMORY_ADDRESS.sub("0x…", output)))


MAX_VIEW_LINES = 200
#: A shell command's limits (the judging and run_tests use the checkout's test limits).
SHELL_LIMITS = Limits(wall_s=30.0, cpu_s=30.0, memory_mb=2048, processes=64, file_size_mb=64, output_bytes=200_000)
TOOLS = ("shell", "view", "search", "write", "replace", "run_tests", "submit")
ALIASES = {
    "bash": "shell",
    "cat": "view",
    "open": "view",
    "grep": "search",
    "edit": "replace",
    "create": "write",
    "pytest": "run_tests",
    "test": "run_tests",
}


@cache
def _prepared(name: str) -> Prepared:
    return prepare_repository(repositories()[name])


class SWEEnv(TextEnv):
    """Fix a validated bug in a real repository; see the module docstring for the rules."""

    toolset = "swe"  # in tools.yaml
    max_observation_chars = 40_000

    def __init__(self, variant: str = "edit", backend: str = "bwrap", render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.variant = variant
        self.tasks = ordered(variant)
        self.splits = TaskSplits(**counts(variant))
        self.backend = backend
        self.checkout: Checkout | None = None
        self.task: Task | None = None
        self._status = "The tests have not been run yet."
        self.result: dict[str, float] = {}

    @property
    def action_syntax(self) -> str:
        return (
            "Use one tool per reply, on the line after 'Action:'. Tools:\n"
            "  shell COMMAND            run a shell command in /work (python is the repository's venv)\n"
            "  view FILE [START-END]    show a file with line numbers\n"
            "  search TEXT              find the lines of the repository's Python files that contain TEXT\n"
            "  write FILE               then one fenced block: the file's whole new content\n"
            "  replace FILE             then two fenced blocks: the exact old text (once in FILE) and the new text\n"
            "  run_tests [TARGET ...]   run pytest on test files or node ids (default: the failing tests' files)\n"
            "  submit                   finish: the failing tests and the tests that passed are run and judged\n"
            "A fenced block is a line of three backticks, the lines of text, and a closing line of three backticks.\n"
            "Example:\nAction: replace pkg/util.py\n```\n    if count > limit:\n```\n```\n    if count >= limit:\n```"
        )

    # ---- tasks ----

    def _generate(self, task_id: int) -> str:
        task = self.tasks[task_id]
        self.task = task
        prepared = _prepared(task.repository)
        if self.checkout is not None:
            self.checkout.close()
        files = dict(_files(task.repository))
        files[task.path] = self._mutated(task, files[task.path]).encode()
        self.checkout = Checkout.of(prepared, files, backend=self.backend)
        self._status = "The tests have not been run yet."
        self.result = {}
        repository = repositories()[task.repository]
        top = sorted({path.split("/", 1)[0] + ("/" if "/" in path else "") for path in files})
        return (
            f"The repository {task.repository} {task.version} is checked out in {WORK} (its package: "
            f"{repository.package_path}; the tests: {', '.join(repository.tests)}). An issue was reported:\n\n"
            f"{task.problem_statement}\n\nFix the library code (not the tests). Top level of {WORK}: {' '.join(top)}"
        )

    @staticmethod
    def _mutated(task: Task, original: bytes) -> str:
        text = original.decode("utf-8")
        lines = text.splitlines(keepends=True)
        if "".join(lines[task.first - 1 : task.last]) != task.before:
            raise RuntimeError(f"task {task.key}: the repository's file does not match the recorded mutation")
        return "".join(lines[: task.first - 1]) + task.after + "".join(lines[task.last :])

    def _describe(self) -> str:
        return self._status

    # ---- acting ----

    def extract_action(self, reply: str) -> str:
        body = strip_thinking(reply)
        action = last_action_line(body, outside=fenced_blocks(body))
        if action is None:
            lines = body.strip("\n").split("\n")
            head, rest = lines[0], lines[1:]
        else:
            head, rest = action.group(1), body[action.end() :].split("\n")[1:]
        return "\n".join([head.strip().strip("`*").strip(), *rest]).rstrip()

    def default_test_targets(self) -> list[str]:
        """What ``run_tests`` and the judge run: the task's test files."""
        assert self.task is not None
        return list(self.task.test_files)

    def _execute(self, command: str) -> str:
        assert self.checkout is not None
        head, _, rest = command.partition("\n")
        word, _, argument = head.strip().partition(" ")
        tool = ALIASES.get(word.lower(), word.lower())
        argument = argument.strip()
        if tool not in TOOLS:
            raise InvalidAction(f"unknown tool {quote(word, 40)}; use {', '.join(TOOLS)}.")
        if tool == "submit":
            return self._submit()
        if tool == "run_tests":
            return self._run_tests(shlex.split(argument) if argument else self.default_test_targets())
        if tool == "shell":
            blocks = _blocks(rest)
            script = blocks[0] if blocks and not argument else argument
            if not script.strip():
                raise InvalidAction("shell needs a command, e.g. 'shell ls'.")
            result = self.checkout.run(script, SHELL_LIMITS)
            output = result.stdout + (("\n[stderr]\n" + result.stderr) if result.stderr.strip() else "")
            note = f"\n[stopped: the {result.limit_hit} limit was hit]" if result.limit_hit else ""
            return f"$ {script}\n{elide(output.rstrip(), MAX_OUTPUT_CHARS)}{note}\n[exit code {result.exit_code}]"
        if tool == "search":
            if not argument:
                raise InvalidAction("search needs a text, e.g. 'search def parse'.")
            result = self.checkout.run(
                ["grep", "-rnF", "--include=*.py", "--", argument.strip("'\""), "."], SHELL_LIMITS
            )
            lines = result.stdout.splitlines()
            shown = "\n".join(line[:220] for line in lines[:80]) + (
                f"\n... and {len(lines) - 80} more" if len(lines) > 80 else ""
            )
            return shown if lines else f"No line contains {quote(argument, 100)}."
        if not argument:
            raise InvalidAction(f"{tool} needs a file path.")
        path = argument.split()[0].strip("'\"`")
        if tool == "view":
            return self._view(path, argument.split()[1:])
        blocks = _blocks(rest)
        if tool == "write":
            if len(blocks) != 1:
                raise InvalidAction(f"write takes one fenced block with the file's content (found {len(blocks)}).")
            self._write(path, blocks[0] + "\n" if blocks[0] else "")
            return f"Wrote {path}."
        if len(blocks) != 2:
            raise InvalidAction(
                f"replace takes two fenced blocks, the old text and the new text (found {len(blocks)})."
            )
        old, new = blocks
        text = self._read(path)
        if not old or text.count(old) != 1:
            raise InvalidAction(
                f"the old text must occur exactly once in {path} (it occurs {text.count(old) if old else 0} times)."
            )
        self._write(path, text.replace(old, new))
        return (
            f"Replaced {old.count(chr(10)) + 1} line(s) of {path} at line {text[: text.index(old)].count(chr(10)) + 1}."
        )

    def _read(self, path: str) -> str:
        assert self.checkout is not None
        try:
            return self.checkout.read(path)
        except (SandboxError, OSError, ValueError) as error:
            raise InvalidAction(f"cannot read {quote(path, 100)}: {error}") from None

    def _write(self, path: str, text: str) -> None:
        assert self.checkout is not None
        try:
            self.checkout.write(path, text)
        except (SandboxError, OSError, ValueError) as error:
            raise InvalidAction(f"cannot write {quote(path, 100)}: {error}") from None

    def _view(self, path: str, bounds: list[str]) -> str:
        lines = self._read(path).splitlines()
        first, last = 1, MAX_VIEW_LINES
        if bounds:
            match = re.fullmatch(r"(\d+)(?:\s*[-:]\s*(\d+))?", " ".join(bounds))
            if not match:
                raise InvalidAction("a line range is START-END, e.g. 'view pkg/mod.py 40-80'.")
            first = max(1, int(match.group(1)))
            last = min(int(match.group(2) or first + MAX_VIEW_LINES - 1), first + MAX_VIEW_LINES - 1)
        body = "\n".join(
            f"{number:>5} | {lines[number - 1][:300]}" for number in range(first, min(last, len(lines)) + 1)
        )
        more = f"\n(lines {first}-{min(last, len(lines))} of {len(lines)})" if first > 1 or last < len(lines) else ""
        return f"{path}:\n{body}{more}"

    def _run_tests(self, targets: list[str]) -> str:
        assert self.checkout is not None
        if len(targets) > 50 or any(target.startswith("-") and target not in ("-x", "-q") for target in targets):
            raise InvalidAction("run_tests takes test files or node ids (and -x).")
        # What failing tests printed is left out (it may hold clocks, temporary paths, addresses): the same
        # run must read the same, and the tracebacks and assertion messages say what failed.
        run = self.checkout.run_tests(["--show-capture=no", *targets])
        failed = sum(outcome in ("failed", "error") for outcome in run.outcomes.values())
        passed = sum(outcome == "passed" for outcome in run.outcomes.values())
        self._status = f"Last test run: {failed} failed, {passed} passed."
        note = f"\n[the test run was stopped: the {run.limit_hit} limit was hit]" if run.limit_hit else ""
        output = steady_output(run.output.rstrip())
        return f"$ pytest {' '.join(targets)}\n{elide(output, MAX_OUTPUT_CHARS)}{note}"

    def judge(self) -> tuple[TestRun, float, float]:
        """Restore the test files, run the task's test files; (run, FAIL_TO_PASS fraction, PASS_TO_PASS fraction)."""
        assert self.checkout is not None and self.task is not None
        for path in self.task.test_files:  # the judging tests are the original ones, whatever the agent did
            self.checkout.write(path, _files(self.task.repository)[path])
        self.checkout.drop_bytecode()  # and compiled from them, not from a cache the agent's runs left
        run = self.checkout.run_tests(list(self.task.test_files))
        f2p, p2p = self.task.fail_to_pass, self.task.pass_to_pass()
        fraction = lambda tests: sum(map(run.passed, tests)) / len(tests) if tests else 1.0  # noqa: E731
        return run, fraction(f2p), fraction(p2p)

    def _submit(self) -> str:
        run, f2p, p2p = self.judge()
        self.success = f2p == 1.0 and p2p == 1.0 and run.limit_hit is None
        self.score = 1.0 if self.success else 0.0
        self.result = {"fail_to_pass": f2p, "pass_to_pass": p2p}
        self.terminated = True
        self._status = "The episode is over."
        verdict = "Accepted" if self.success else "Not accepted"
        return f"{verdict}: FAIL_TO_PASS {f2p:.0%} passed, PASS_TO_PASS {p2p:.0%} passed."

    def _info(self, command: str, invalid: bool) -> dict:
        info = super()._info(command, invalid)
        if self.result:
            info.update(self.result)
        if self.task is not None:
            info["repository"] = self.task.repository
        return info

    def fingerprint_task(self, task_id: int) -> dict:
        """The task's definition (agentgym.evaluation.fingerprint): the mutation, its tests, its statement."""
        task = self.tasks[task_id]
        return {**task.__dict__, "pass_to_pass": list(task.pass_to_pass())}

    # ---- baselines ----

    def oracle_action(self) -> str:
        """The reverse patch, then submit."""
        if self.task is None or self.checkout is None:
            return "submit"
        task = self.task
        original = _files(task.repository)[task.path].decode("utf-8")
        current = self._read(task.path)
        if current == original:
            return "Action: submit"
        if task.after and current.count(task.after) == 1 and current.replace(task.after, task.before) == original:
            fence = _fence(task.after + task.before)
            old, new = task.after.removesuffix("\n"), task.before.removesuffix("\n")
            return f"Action: replace {task.path}\n{fence}\n{old}\n{fence}\n{fence}\n{new}\n{fence}"
        fence = _fence(original)
        return f"Action: write {task.path}\n{fence}\n{original.removesuffix(chr(10))}\n{fence}"

    def random_action(self, rng: random.Random) -> str:
        """A look around: a listing, a view of the changed package, a search, or a test run."""
        if self.task is None:
            return "shell ls"
        return rng.choice(
            ["shell ls", f"view {self.task.path}", "search def ", "run_tests", "shell git status || true"]
        )

    def close(self) -> None:
        if self.checkout is not None:
            self.checkout.close()
            self.checkout = None
        super().close()


@cache
def _files(name: str) -> dict[str, bytes]:
    return _prepared(name).files()


def _blocks(text: str) -> list[str]:
    blocks = fenced_blocks(text)
    if blocks and not blocks[-1].closed:
        raise InvalidAction("a fenced block is never closed.")
    return [block.content for block in blocks]


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def prepare(env_id: str, kwargs: dict, report, task_ids: Sequence[int] | None = None) -> None:  # noqa: ANN001
    """The family's preparation: download the repositories of the id's tasks (of ``task_ids`` alone, where
    given) and build their venvs; each repository once, file-locked (:func:`prepare_repository`)."""
    tasks = ordered(kwargs.get("variant", "edit"))
    chosen = tasks if task_ids is None else [tasks[task_id] for task_id in task_ids]
    for name in sorted({task.repository for task in chosen}):
        prepared = prepare_repository(repositories()[name], report)
        report(f"{name}: ready ({prepared.seconds:.1f} s)")
