"""A stateful Python interpreter tool: a persistent ``python3`` in the bwrap sandbox, like a notebook kernel.

::

    from agentgym.sandbox.interpreter import Interpreter

    with Interpreter() as python:
        python.run("import math\\nx = math.factorial(20)").status   # "ok"
        python.run("x % 1000").output                              # "0\\n" (a final expression is shown)
        python.run("while True: pass").status                      # "time" (x is still defined)

:class:`Interpreter` keeps one kernel (:mod:`agentgym.sandbox.kernel`) running in a
:meth:`~agentgym.sandbox.Sandbox.spawn`-ed bwrap sandbox: no network, a private work dir at
``/work`` (files persist between cells), the system's ``python3`` with its standard library, and
read-only the host's site-packages that hold the ``packages`` asked for (``numpy``, ``sympy``...;
they must be built for the sandbox's Python version). The kernel starts on the first cell, not
before. Variables, imports and definitions persist from cell to cell.

Per-cell limits (:class:`~agentgym.sandbox.Limits`): ``wall_s`` and ``cpu_s`` (the cell is
interrupted where it runs and the session goes on, status ``time`` or ``cpu``), ``memory_mb``
(the kernel's address space: ``MemoryError``, status ``memory``), ``output_bytes`` (what comes
back of the cell's stdout and stderr, cut in the middle); ``processes``, ``file_size_mb``,
``open_files`` and ``tmp_mb`` as for any sandbox; ``disk_mb`` (the work dir, measured by the host while
the cell runs: past it the kernel is stopped, status ``died``). The kernel's CPU time over its whole life is
capped by ``session_cpu_s``.

Recovery: when the kernel dies (it exits, is killed by a limit, segfaults) or ignores its
interruption for :data:`GRACE_S` seconds (the host then kills it), the cell's status is ``died``
and the next cell starts a fresh kernel: variables, imports and definitions are gone, files in
``/work`` remain. :meth:`Interpreter.restart` starts over on purpose (empty work dir too).

:class:`InterpreterMixin` offers the tool to any :class:`~agentgym.contract.core.TextEnv` family: a
``python`` function tool (declared in ``interpreter.yaml``) and the text form of the same call (a
fenced ```python block, or ``Action: python`` followed by the code), a fresh interpreter per
episode, and the cell's result as the observation.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentgym.contract.core import InfrastructureError, InvalidAction, TextEnv
from agentgym.contract.reply_text import fenced_blocks, last_action_line, strip_thinking
from agentgym.contract.tools import Tool, load_tools
from agentgym.sandbox.box import Sandbox, kill_sandbox
from agentgym.sandbox.disk import DiskWatch
from agentgym.sandbox.errors import SandboxError
from agentgym.sandbox.limits import Limits

CellStatus = Literal["ok", "error", "time", "cpu", "memory", "died"]

#: Per-cell limits unless the caller gives others (a scratch work dir: 256 MB of files).
DEFAULT_LIMITS = Limits(
    wall_s=10.0,
    cpu_s=10.0,
    memory_mb=1024,
    processes=16,
    file_size_mb=16,
    output_bytes=8_000,
    tmp_mb=64,
    disk_mb=256,
)
#: The kernel's CPU seconds over its whole life (the hard RLIMIT_CPU): past it, the kernel is killed.
SESSION_CPU_S = 600.0
#: How long past a cell's wall-time limit the host waits for the kernel's answer before killing it.
GRACE_S = 2.0
#: How long a fresh kernel may take to say it is ready.
START_TIMEOUT_S = 30.0
#: Where the host's site-packages folders appear inside the sandbox (``/opt/python/0``, ...).
PACKAGES_ROOT = "/opt/python"
#: Environment of the kernel: BLAS libraries single-threaded (the same numbers every run, less memory).
KERNEL_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: The kernel's code, run by the sandbox's ``python3 -c``.
KERNEL_SOURCE = Path(__file__).with_name("kernel.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class CellResult:
    """How one cell ended.

    ``output``: its stdout and stderr, interleaved as written (a traceback for ``error``), at most
    ``output_bytes`` of it; ``omitted``: the bytes cut from its middle. ``status``: ``ok``, ``error``,
    ``time``/``cpu``/``memory`` (a limit interrupted it; the session goes on; ``memory`` with a ``reason`` when the
    cell's processes together passed ``run_memory_mb``) or ``died`` (the kernel died; ``reason`` says why, and the
    next cell starts a fresh one). ``wall_s``: seen from the host.
    """

    output: str
    status: CellStatus
    wall_s: float
    omitted: int = 0
    reason: str = ""


class Interpreter:
    """One persistent Python session in a bwrap sandbox (see the module docstring).

    ``limits`` are per cell; ``packages`` name host packages whose site-packages folders the
    sandbox shows read-only (on its ``PYTHONPATH``). Calls on one interpreter are serialised.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        packages: Sequence[str] = (),
        session_cpu_s: float = SESSION_CPU_S,
    ) -> None:
        self.limits = limits or DEFAULT_LIMITS
        self.session_cpu_s = session_cpu_s
        folders = site_folders(packages)
        binds = {f"{PACKAGES_ROOT}/{index}": folder for index, folder in enumerate(folders)}
        self.sandbox = Sandbox(limits=self.limits, ro_binds=binds)
        self.env = dict(KERNEL_ENV) | ({"PYTHONPATH": ":".join(binds)} if binds else {})
        self.starts = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._pending = b""
        self._memory_kills = 0  # the sandbox's OOM kills when the current cell began
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The process id of the running kernel's sandbox (bwrap), or ``None`` when no kernel is up."""
        return None if self._process is None else self._process.pid

    def start(self) -> float:
        """Start a kernel now if none is running (else it starts with the next cell); the seconds it took."""
        with self._lock:
            started = time.monotonic()
            if self._process is None:
                self._start()
            return time.monotonic() - started

    def run(self, code: str) -> CellResult:
        """Run one cell in the session; never raises for anything the code does.

        Raises :class:`~agentgym.sandbox.SandboxError` (or ``SandboxUnavailable``) only when no
        kernel can be started at all.
        """
        with self._lock:
            started = time.monotonic()
            if self._process is None:
                self._start()
            assert self._process is not None and self._process.stdin is not None
            self._memory_kills = self.sandbox.memory_kills()
            request = {
                "code": code,
                "wall_s": self.limits.wall_s,
                "cpu_s": self.limits.cpu_s,
                "output_bytes": self.limits.output_bytes,
            }
            try:
                os.write(self._process.stdin.fileno(), json.dumps(request).encode() + b"\n")
            except OSError:
                return self._died("it had exited before the cell was sent", started)
            answer = self._read(
                started + self.limits.wall_s + GRACE_S, DiskWatch(self.sandbox.workdir, self.limits.disk_mb)
            )
            if isinstance(answer, str):
                return self._died(answer, started)
            status, reason = answer.get("status", "error"), ""
            if status in ("ok", "error") and self.sandbox.memory_kills() > self._memory_kills:
                status = "memory"  # the kernel lived, but processes of the cell were ended for the run's memory
                reason = f"the call's processes held more than {self.limits.run_memory_mb} MB together"
            return CellResult(
                output=str(answer.get("output", "")),
                status=status,
                wall_s=time.monotonic() - started,
                omitted=int(answer.get("omitted", 0)),
                reason=reason,
            )

    def restart(self) -> None:
        """Stop the kernel and empty the work dir: the next cell starts a fresh session."""
        with self._lock:
            self._stop()
            self.sandbox.clear()

    def close(self) -> None:
        """Stop the kernel and remove the sandbox; safe to call twice."""
        with self._lock:
            self._stop()
            self.sandbox.close()

    def __enter__(self) -> Interpreter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- the kernel process ----

    def _start(self) -> None:
        limits = self.limits.replace(cpu_s=self.session_cpu_s)
        argv = ["python3", "-c", KERNEL_SOURCE]
        self._process = self.sandbox.spawn(argv, limits, env=self.env)
        self._pending = b""
        self.starts += 1
        ready = self._read(time.monotonic() + START_TIMEOUT_S)
        if ready != {"ready": True}:
            output = self._pending.decode("utf-8", "replace").strip()[:500]
            self._stop()
            raise SandboxError(f"the Python interpreter did not start ({ready}): {output}")

    def _read(self, deadline: float, disk: DiskWatch | None = None) -> dict[str, Any] | str:
        """The kernel's next answer; or why none came (the kernel is then stopped): the deadline passed, or the
        work dir went past ``disk``'s quota (the cell's files stay; the session's state is lost)."""
        assert self._process is not None and self._process.stdout is not None
        descriptor = self._process.stdout.fileno()
        poller = select.poll()
        poller.register(descriptor, select.POLLIN)
        limit = 4 * self.limits.output_bytes + 65_536  # JSON escapes at most multiply the output by 6, rarely
        while (end := self._pending.find(b"\n")) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return f"it did not answer within {self.limits.wall_s + GRACE_S:g} s and was stopped"
            if len(self._pending) > limit:
                return "it wrote more than its answer may hold and was stopped"
            if disk is not None:
                if disk.over():
                    return f"it filled the work dir past its {self.limits.disk_mb} MB disk quota and was stopped"
                remaining = min(remaining, disk.due_in())
            if poller.poll(remaining * 1000):
                data = os.read(descriptor, 65_536)
                if not data:
                    return self._exit_reason()
                self._pending += data
        line, self._pending = self._pending[:end], self._pending[end + 1 :]
        try:
            answer = json.loads(line)
        except ValueError:
            return "its answer was garbled (the cell wrote to the kernel's own channel)"
        return answer if isinstance(answer, dict) else "its answer was garbled"

    def _exit_reason(self) -> str:
        assert self._process is not None
        try:
            code = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "it closed its channel"
        if self.sandbox.memory_kills() > self._memory_kills:
            return f"it ran out of memory: its processes held more than {self.limits.run_memory_mb} MB together"
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            with contextlib.suppress(ValueError):
                return f"it was killed by {signal.Signals(number).name}"
        return f"it exited with status {code}"

    def _died(self, reason: str, started: float) -> CellResult:
        self._stop()
        return CellResult("", "died", time.monotonic() - started, reason=reason)

    def _stop(self) -> None:
        """Kill the kernel's sandbox (its init takes every process in it) and reap it."""
        process, self._process = self._process, None
        if process is None:
            return
        kill_sandbox(process)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        process.wait()


def site_folders(packages: Sequence[str]) -> list[str]:
    """The host folders (site-packages) that hold the importable ``packages``, each once, in order."""
    folders: list[str] = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"package {name!r} is not installed here, so the interpreter cannot show it")
        location = Path(spec.origin).parent
        folder = str(location.parent if spec.submodule_search_locations else location)
        if folder not in folders:
            folders.append(folder)
    return folders


# ---- the tool, for any family --------------------------------------------------------------------

#: The info strings of a fenced block that holds Python code.
PYTHON_FENCES = ("python", "py", "python3", "")
#: A command that runs code starts with this word on a line of its own; the code follows.
PYTHON_COMMAND = "python"
#: The longest cell accepted, in characters.
MAX_CODE_CHARS = 100_000


def python_tools() -> tuple[Tool, ...]:
    """The ``python`` function tool (``interpreter.yaml``)."""
    tools = load_tools(__package__, "interpreter.yaml")
    assert tools is not None
    return tools


def read_reply(reply: str, code: bool) -> str:
    """The command in an LLM reply to an env that may offer the interpreter.

    Reasoning up to ``</think>`` is dropped. With ``code``, the last fenced Python block
    (```python, ```py or a bare ```) is the command ``python\\n<code>``, unless an ``Action:`` line
    comes after it. Otherwise the command is everything after the last ``Action:`` line's colon
    (several lines: an answer may span them), or the whole reply when there is none; stripped of
    surrounding whitespace.
    """
    body = strip_thinking(reply)
    blocks = [block for block in fenced_blocks(body) if block.closed and block.info.lower() in PYTHON_FENCES]
    action = last_action_line(body, outside=blocks if code else ())
    if code and blocks and (action is None or blocks[-1].start > action.start()):
        return f"{PYTHON_COMMAND}\n{blocks[-1].content}"
    return (body[action.start(1) :] if action else body).strip()


def code_of(command: str) -> str | None:
    """The code of a ``python`` command (``python`` on the first line, the code below), else ``None``."""
    first, newline, rest = command.partition("\n")
    return rest if newline and first.strip().lower() == PYTHON_COMMAND else None


class InterpreterMixin(TextEnv):
    """Offers a stateful Python interpreter tool to a :class:`~agentgym.contract.core.TextEnv` family.

    A family subclasses it (``class MyEnv(InterpreterMixin): ...``), calls
    :meth:`init_interpreter` in its ``__init__``, and in ``_execute`` runs
    ``code_of(command)`` through :meth:`run_cell` when it is not ``None``. It gets: the ``python``
    function tool next to its own tools, replies read by :func:`read_reply`, a fresh session at
    every ``reset`` (started on the first cell) and the sandbox closed with the env.
    """

    interpreter: Interpreter | None = None
    interpreter_enabled: bool = False

    def init_interpreter(
        self, enabled: bool, limits: Limits | Mapping[str, Any] | None = None, packages: Sequence[str] = ()
    ) -> None:
        """Whether this env offers the interpreter, with its per-cell ``limits`` and host ``packages``."""
        self.interpreter_enabled = enabled
        self.interpreter_limits = Limits(**limits) if isinstance(limits, Mapping) else limits or DEFAULT_LIMITS
        self.interpreter_packages = tuple(packages)
        site_folders(self.interpreter_packages)  # a missing package fails at make time, not in an episode

    @property
    def interpreter_syntax(self) -> str:
        """How to run code, for the family's ``action_syntax``."""
        limits = self.interpreter_limits
        return (
            "To run Python, put the code in a ```python block (or write 'Action: python' and the code on the lines "
            "below). It runs in a persistent interpreter: variables, imports and definitions stay for later calls. "
            f"Each call has {limits.wall_s:g} s and {limits.memory_mb} MB; the interpreter has no network and no "
            "input; print what you want to see (the value of a final expression is shown)."
        )

    def tool_specs(self) -> tuple[Tool, ...]:
        tools = super().tool_specs()
        return (*tools, *python_tools()) if self.interpreter_enabled else tools

    def extract_action(self, reply: str) -> str:
        return read_reply(reply, self.interpreter_enabled)

    def run_cell(self, code: str) -> str:
        """Run ``code`` in the episode's interpreter; the observation text of its result.

        Raises :class:`~agentgym.contract.core.InvalidAction` when the env offers no interpreter or the
        code is empty or too long, and :class:`~agentgym.contract.core.InfrastructureError` when no
        sandbox can run here.
        """
        if not self.interpreter_enabled:
            raise InvalidAction("this environment has no Python interpreter; answer directly.")
        if not code.strip():
            raise InvalidAction("the python call holds no code.")
        if len(code) > MAX_CODE_CHARS or "\x00" in code:
            raise InvalidAction(f"the code is longer than {MAX_CODE_CHARS} characters or holds a NUL character.")
        try:
            if self.interpreter is None:
                self.interpreter = Interpreter(self.interpreter_limits, packages=self.interpreter_packages)
            result = self.interpreter.run(code)
        except SandboxError as error:
            raise InfrastructureError(f"the Python interpreter cannot run here: {error}") from error
        return describe_cell(result, self.interpreter_limits)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if self.interpreter is not None:
            self.interpreter.restart()
        return super().reset(seed=seed, options=options)

    def close(self) -> None:
        if self.interpreter is not None:
            self.interpreter.close()
            self.interpreter = None
        super().close()


def describe_cell(result: CellResult, limits: Limits) -> str:
    """A cell's result as an observation."""
    output = result.output.rstrip("\n")
    notes = {
        "time": f"[stopped: the call ran past its {limits.wall_s:g} s time limit; the interpreter keeps its state]",
        "cpu": f"[stopped: the call used more than {limits.cpu_s:g} s of CPU; the interpreter keeps its state]",
        "memory": (
            f"[stopped: the call ran out of memory ({result.reason or f'{limits.memory_mb} MB'}); "
            "the interpreter keeps its state]"
        ),
        "died": (
            f"[the interpreter died: {result.reason}. The next call starts a fresh interpreter: variables, imports "
            "and definitions of earlier calls are gone (files in the work dir remain)]"
        ),
    }
    parts = [f"Python output:\n{output}" if output else "Python output: (none)"]
    if result.omitted:
        parts.append(f"[{result.omitted} bytes of output omitted]")
    if result.status in notes:
        parts.append(notes[result.status])
    return "\n".join(parts)
