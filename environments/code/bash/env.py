"""Bash-v0: file-system and text-processing tasks in a real shell (InterCode-Bash style).

Task: a generated project tree (sources, docs, logs, CSV and JSON data, scripts, config,
caches; 30-60 files) is written into a fresh sandbox work dir, and the instruction asks
either a question about it ("How many lines of logs/app.log contain ERROR?") or for a
change to it ("Compress every .log file in logs/archive with gzip"). Task ``task_id``
is drawn from a generator seeded with the id: one of :data:`TEMPLATES` (18 question and
23 file-system templates: find by name, size, mtime, content, permissions; count lines,
words, matches, distinct values; filter, sort, deduplicate, extract CSV/JSON fields;
sed/tr/awk edits; rename, move, copy, delete; tar/gzip; chmod; disk usage) with random
parameters and a random tree. File contents, modes and modification times are fixed by
the task, so every command's output is the same on every run.

Observation: the output of the last command (stdout, then stderr, then the exit code;
each truncated in the middle past a few thousand characters) and the current directory.
The first observation holds the instruction and the action syntax.

Action: one shell command line or script, after ``Action:`` or in a fenced ```bash block
(the last block; an ``Action:`` line after it wins). It runs with ``bash`` in the
sandbox (no network, a private writable work dir, the system read-only, limits on wall
time, memory, processes, file and output size), starting in the directory where the
last command ended: ``cd`` persists, shell variables do not. ``submit`` ends a
file-system task; ``submit <answer>`` ends a question (a number, a path, a line of text,
or several paths separated by spaces). Anything else is a shell command; an empty
command, one over 100,000 bytes or with a NUL character, and one whose status is 126 or
127 (not executable, command not found) is an invalid action, its output still shown.

Reward: 1 on a successful submit, else 0 (the score is 0 until the episode ends).
Questions compare the submitted answer with the generator's: integers exactly, money to
the cent, paths as sets (``./`` and the absolute work-dir prefix allowed), text exactly
(surrounding quotes stripped). File-system tasks compare the whole tree under the work
dir with the expected one: the same paths (files, directories, links), the same file
contents, and for permission tasks the same mode bits; a ``.gz`` file the task asks for
is compared by its uncompressed content and a ``.tar.gz`` archive by its members
(regular files, names relative to the work dir, ``./`` allowed). Modification times
and owners are not compared. Leaving extra files behind fails the task.

Termination: a ``submit``. Truncation comes from the registered step limit (30).

Oracle: the generator's command sequence, then ``submit`` (with the answer for
questions). It follows the file-system state: a tree the plan does not know (another
command changed it) is first restored to the generated tree by a command that empties
the work dir and unpacks the task's files from an inline base64 tar, and a ``cd`` back
to the work dir comes first when the agent has left it.
"""

from __future__ import annotations

import base64
import os
import random
import re
from fractions import Fraction

from agentgym.contract.core import InvalidAction, TextEnv, quote
from agentgym.environments.code import BASH_SPLITS
from agentgym.environments.code.bash.checking import answer_matches, compare_tree, state_digest
from agentgym.environments.code.bash.tasks import TEMPLATES, BashTask
from agentgym.environments.code.bash.tree import Tree, base_tree
from agentgym.sandbox import WORK, Limits, Sandbox
from agentgym.utils.text import elide, fenced_blocks, last_action_line, strip_thinking

# ---- limits and output -----------------------------------------------------------------------

#: Limits of one agent command (wall 10 s as in the issue; the rest generous for shell work).
COMMAND_LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=1024, processes=128, file_size_mb=64, output_bytes=1_000_000)
#: Longest command accepted, in UTF-8 bytes (an argument to ``bash`` must stay below 128 KiB).
MAX_COMMAND_BYTES = 100_000
#: How much of stdout and of stderr an observation shows (head and tail around an elision).
STDOUT_CHARS = 4_000
STDERR_CHARS = 2_000
#: How much of a cut output is its head.
HEAD_SHARE = Fraction(2, 3)

_CWD_MARK = "\x1eAGENTGYM-CWD\x1e"
#: Runs the agent's command in the directory where the last one ended, then reports where it ended.
_WRAPPER = (
    'cd -- "$1" 2>/dev/null || cd -- "$2"; umask 022; eval "$3"; __agentgym_status=$?; '
    f"printf '\\n{_CWD_MARK}%s' \"$PWD\"; exit $__agentgym_status"
)


# ---- the environment ---------------------------------------------------------------------------

#: The info strings of a fenced block that holds a shell command (none counts too).
SHELL_FENCES = ("", "bash", "sh", "shell", "console", "zsh")


def extract_command(reply: str) -> str:
    """The shell command in an LLM reply.

    Reasoning up to a closing ``</think>`` is dropped. The command is the text after the last
    ``Action:`` line's colon, unless a fenced ```bash (or ```sh, or plain ```) block comes after
    that line, or that line is empty: then the last block's content. With neither, the whole
    reply. Only surrounding whitespace and one pair of enclosing backticks are removed: quotes
    and a final ``.`` belong to shell syntax.
    """
    body = strip_thinking(reply)
    blocks = [
        block for block in fenced_blocks(body) if block.closed and block.fence == "```" and block.info in SHELL_FENCES
    ]
    action = last_action_line(body)
    if blocks and (action is None or blocks[-1].start > action.start() or not action.group(1).strip()):
        return blocks[-1].content.strip()
    command = (action.group(1) if action else body).strip()
    for fence in ("```", "`"):
        if len(command) > 2 * len(fence) and command.startswith(fence) and command.endswith(fence):
            return command[len(fence) : -len(fence)].strip()
    return command


_SUBMIT = re.compile(r"submit(?:\s+(.*))?", re.I | re.S)
_RANDOM_COMMANDS = ("ls", "ls -a", "pwd", "find . -type f | sort", "find . -type d | sort", "ls -R | head -40")


class BashEnv(TextEnv):
    """Shell tasks in a sandboxed work dir; see the module docstring for the rules."""

    toolset = "bash"  # in tools.yaml

    splits = BASH_SPLITS
    max_observation_chars = 20_000

    def __init__(
        self, limits: Limits | dict | None = None, sandbox_backend: str = "bwrap", render_mode: str | None = None
    ) -> None:
        super().__init__(render_mode)
        self.limits = Limits(**limits) if isinstance(limits, dict) else limits or COMMAND_LIMITS
        self.sandbox_backend = sandbox_backend
        self.sandbox: Sandbox | None = None
        self.task: BashTask | None = None
        self.tree = Tree()
        self.cwd = ""
        self._oracle_states: dict[str, int] = {}
        self._oracle_done = 0
        self._restore = ""

    # ---- text ----

    #: The work dir as commands see it.
    workdir = WORK

    @property
    def action_syntax(self) -> str:
        return (
            "Act with one shell command per reply, after 'Action:' (e.g. 'Action: ls -la') or in a ```bash block "
            "(several lines allowed). It runs in bash; the next command starts where this one ended (cd persists, "
            "variables do not). Each command has 10 seconds. Commands see no network and no stdin.\n"
            "When done, reply 'Action: submit' for a file-system task, or 'Action: submit <answer>' for a question "
            "(several paths: separated by spaces). Submitting ends the episode."
        )

    def _describe(self) -> str:
        return f"Current directory: {self.cwd}"

    # ---- tasks ----

    def template_of(self, task_id: int) -> str:
        """The name of task ``task_id``'s template (the generator's first draw)."""
        names = sorted(TEMPLATES)
        return names[self.task_rng(task_id).randrange(len(names))]

    def make_task(self, task_id: int) -> tuple[BashTask, Tree]:
        """Task ``task_id`` and its initial tree, without a sandbox."""
        rng = self.task_rng(task_id)
        names = sorted(TEMPLATES)
        name = names[rng.randrange(len(names))]  # the first draw: see template_of
        tree = base_tree(rng)
        return TEMPLATES[name](rng, tree), tree

    def _generate(self, task_id: int) -> str:
        task, tree = self.make_task(task_id)
        self.task, self.tree = task, tree
        self._open_sandbox()
        assert self.sandbox is not None
        tree.write(self.sandbox)
        self.cwd = self.workdir
        self._oracle_states = {state_digest(self.sandbox): 0}
        self._oracle_done = 0
        self._restore = ""
        return (
            f"You are in a Linux shell; your work dir is {self.workdir}, holding a small project. "
            f"Task: {task.instruction}"
        )

    def _open_sandbox(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
        self.sandbox = Sandbox(limits=self.limits, backend=self.sandbox_backend)

    # ---- acting ----

    def extract_action(self, reply: str) -> str:
        """The command in a reply: see :func:`extract_command`."""
        return extract_command(reply)

    def _execute(self, command: str) -> str:
        assert self.task is not None and self.sandbox is not None
        if not command.strip():
            raise InvalidAction("the reply holds no command; write 'Action: <command>'.")
        submit = _SUBMIT.fullmatch(command.strip())
        if submit:
            return self._submit((submit.group(1) or "").strip())
        if "\x00" in command:
            raise InvalidAction("a command cannot contain a NUL character.")
        if len(command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
            raise InvalidAction(f"the command is longer than {MAX_COMMAND_BYTES} bytes.")
        plan_index = self._plan_index_for(command)
        status, feedback = self._run(command)
        if plan_index is not None:
            self._advance_plan(plan_index)
        if status in (126, 127):
            raise InvalidAction(f"the shell could not run it (exit code {status}).\n{feedback}")
        return feedback

    def _run(self, command: str) -> tuple[int, str]:
        """Run ``command`` in the sandbox from the current directory; (exit status, observation text)."""
        assert self.sandbox is not None
        try:
            command.encode("utf-8")
        except UnicodeEncodeError:
            command = command.encode("utf-8", "replace").decode("utf-8")
        result = self.sandbox.run(["bash", "-c", _WRAPPER, "bash", self.cwd, self.workdir, command])
        stdout, stderr = result.stdout, result.stderr
        mark = stdout.rfind(_CWD_MARK)
        if mark >= 0:
            cwd = stdout[mark + len(_CWD_MARK) :]
            if cwd.startswith("/") and "\n" not in cwd and len(cwd) < 4096:
                self.cwd = cwd
            stdout = stdout[: mark - 1] if stdout[mark - 1 : mark] == "\n" else stdout[:mark]
        parts = []
        if stdout:
            parts.append(elide(stdout, STDOUT_CHARS, HEAD_SHARE).rstrip("\n"))
        if stderr:
            parts.append("[stderr]\n" + elide(stderr, STDERR_CHARS, HEAD_SHARE).rstrip("\n"))
        if result.limit_hit:
            parts.append(f"[stopped: the {result.limit_hit} limit was hit]")
        parts.append(f"[exit code {result.exit_code}]")
        return result.exit_code, "\n".join(parts)

    def _submit(self, answer: str) -> str:
        assert self.task is not None and self.sandbox is not None
        task = self.task
        if task.answer is not None:
            if not answer:
                raise InvalidAction("this task asks a question: reply 'Action: submit <answer>'.")
            self.success = answer_matches(task.answer_kind, answer, task.answer, self.workdir)
            verdict = "correct" if self.success else f"wrong (expected {task.answer})"
            feedback = f"You submitted {quote(answer, 200)}: {verdict}."
        else:
            assert task.expected is not None
            problems = compare_tree(self.sandbox, task.expected, task.check_modes)
            self.success = not problems
            feedback = (
                "The work dir is as asked: task solved."
                if self.success
                else ("The work dir is not as asked: " + "; ".join(problems) + ".")
            )
        self.score = 1.0 if self.success else 0.0
        self.terminated = True
        return f"{feedback} The episode is over."

    # ---- oracle ----

    def _plan_index_for(self, command: str) -> int | None:
        """If ``command`` is the oracle's next command for the current state, its index in the plan."""
        assert self.task is not None and self.sandbox is not None
        if command == self._restore_command():
            return -1
        if self.task.answer is not None:
            plan = self.task.commands
            return self._oracle_done if self._oracle_done < len(plan) and plan[self._oracle_done] == command else None
        index = self._oracle_states.get(state_digest(self.sandbox))
        plan = self.task.commands
        return index if index is not None and index < len(plan) and plan[index] == command else None

    def _advance_plan(self, index: int) -> None:
        assert self.task is not None and self.sandbox is not None
        if self.task.answer is not None:
            self._oracle_done = 0 if index < 0 else index + 1
            return
        self._oracle_states[state_digest(self.sandbox)] = 0 if index < 0 else index + 1

    def _restore_command(self) -> str:
        """A command that empties the work dir and unpacks the task's initial tree into it."""
        if not self._restore:
            payload = base64.b64encode(self.tree.tarball()).decode()
            lines = [payload[i : i + 76] for i in range(0, len(payload), 76)]
            self._restore = (
                f"cd {self.workdir} && chmod -R u+rwX . 2>/dev/null; find . -mindepth 1 -delete && "
                "base64 -d <<'AGENTGYM_EOF' | tar -xzpf - --no-same-owner\n" + "\n".join(lines) + "\nAGENTGYM_EOF"
            )
        return self._restore

    def oracle_action(self) -> str:
        """The plan's next command, ``submit`` when it is done; ``cd`` home or a restore first if needed."""
        if self.task is None or self.sandbox is None:
            return "submit"
        task = self.task
        if task.answer is not None:
            if self._oracle_done >= len(task.commands):
                return f"submit {task.answer}"
            return task.commands[self._oracle_done] if self.cwd == self.workdir else f"cd {self.workdir}"
        assert task.expected is not None
        index = self._oracle_states.get(state_digest(self.sandbox))
        if index is None:
            if not compare_tree(self.sandbox, task.expected, task.check_modes):
                return "submit"
            return self._restore_command()
        if index >= len(task.commands):
            return "submit"
        return task.commands[index] if self.cwd == self.workdir else f"cd {self.workdir}"

    def random_action(self, rng: random.Random) -> str:
        """A read-only command: a listing, or a look at a random file of the task (the "random" baseline)."""
        files = sorted(self.tree.files)
        choice = rng.randrange(len(_RANDOM_COMMANDS) + 3)
        if choice < len(_RANDOM_COMMANDS) or not files:
            return _RANDOM_COMMANDS[choice % len(_RANDOM_COMMANDS)]
        path = rng.choice(files)
        return rng.choice((f"head -n 5 {path}", f"wc -l {path}", f"ls -a {os.path.dirname(path) or '.'}"))

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        super().close()
