"""The interpreter's kernel: runs inside the sandbox (``python3 -c <this file>``), one cell per request.

Never imported by agentgym: :mod:`agentgym.sandbox.interpreter` passes this file's source to the
sandbox's ``python3`` and talks to it over two pipes. A request is one JSON line on stdin,
``{"code": str, "wall_s": float, "cpu_s": float, "output_bytes": int}``; the answer one JSON line
on stdout, ``{"output": str, "status": str, "omitted": int}``. The kernel starts by answering
``{"ready": true}``.

The cell's code runs in one namespace kept for the whole session (like a notebook kernel); if its
last statement is an expression, the value's ``repr`` is printed (unless it is ``None``). Its
stdout and stderr, the Python objects and the file descriptors 1 and 2 (so subprocesses too), go
to one unlinked file in ``/tmp``, emptied before each cell and read after it: the output keeps the
order of what was written, and at most ``output_bytes`` of it come back (two thirds from the head,
one third from the tail; ``omitted`` counts the bytes between). A cell that writes until the file can
take no more (the file-size limit, or ``/tmp`` full) gets an ``OSError``; its traceback, which the file
cannot hold, follows the output with a line saying so. stdin is ``/dev/null``.

``status``: ``ok``; ``error`` (an exception, its traceback in the output, kernel frames left out);
``time`` or ``cpu`` (the cell ran past ``wall_s`` seconds of wall time, or ``cpu_s`` of CPU time:
it is interrupted by an exception raised where it runs, and the session goes on); ``memory``
(``MemoryError``: the address-space limit was hit). A cell that catches the interruption and runs
on, or blocks in C code, is killed by the host, which starts a fresh kernel.
"""

import ast
import builtins
import contextlib
import json
import linecache
import math
import os
import resource
import signal
import sys
import traceback

OUTPUT_FILE = "/tmp/.agentgym-cell-output"


class CellInterrupted(BaseException):
    """Raised inside a running cell when its wall-time (``"time"``) or CPU-time (``"cpu"``) budget is spent."""


class Kernel:
    """One session: the namespace, the output file and the per-cell limits."""

    def __init__(self) -> None:
        self.requests = os.fdopen(os.dup(0), "rb")
        self.answers = os.fdopen(os.dup(1), "wb")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.output = os.open(OUTPUT_FILE, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        os.unlink(OUTPUT_FILE)
        os.dup2(self.output, 1)
        os.dup2(self.output, 2)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (kept for the session)
        sys.stdout = open(1, "w", 1, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", 1, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.cells = 0
        self.unwritten = ""  # a traceback the full output file could not take
        self.armed = False
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the file-size limit fails instead
        signal.signal(signal.SIGALRM, lambda *_: self.interrupt("time"))
        signal.signal(signal.SIGXCPU, lambda *_: self.interrupt("cpu"))

    def interrupt(self, kind: str) -> None:
        if self.armed:
            self.armed = False
            raise CellInterrupted(kind)

    def serve(self) -> None:
        self.answer({"ready": True})
        for line in self.requests:
            request = json.loads(line)
            try:
                answer = self.run(request["code"], request["wall_s"], request["cpu_s"], request["output_bytes"])
            except MemoryError:
                answer = {"output": "MemoryError", "status": "memory", "omitted": 0}
            self.answer(answer)

    def answer(self, message: dict) -> None:
        self.answers.write(json.dumps(message).encode() + b"\n")
        self.answers.flush()

    def run(self, code: str, wall_s: float, cpu_s: float, output_bytes: int) -> dict:
        """Run one cell under its limits; its output and how it ended."""
        self.empty_output()
        self.cells += 1
        name = f"<cell {self.cells}>"
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        budget = math.ceil(usage.ru_utime + usage.ru_stime + cpu_s)
        resource.setrlimit(resource.RLIMIT_CPU, (budget if hard == resource.RLIM_INFINITY else min(budget, hard), hard))
        status = "ok"
        try:
            self.armed = True
            signal.setitimer(signal.ITIMER_REAL, wall_s)
            self.execute(code, name)
            self.armed = False
        except CellInterrupted as interruption:
            status = interruption.args[0]
        except MemoryError:
            self.armed = False
            status = "memory"
            self.print_traceback()
        except BaseException:  # noqa: BLE001 (the cell's own error, SystemExit and KeyboardInterrupt included)
            self.armed = False
            status = "error"
            self.print_traceback()
        finally:
            self.armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # the cell closed it, or the file-size limit was hit
                stream.flush()
        output, omitted = self.read_output(output_bytes)
        if self.unwritten:  # after what the file holds, so that the cut never takes it
            output += self.unwritten[-max(output_bytes // 3, 200) :]
        return {"output": output, "status": status, "omitted": omitted}

    def empty_output(self) -> None:
        """Empty the output file, and with it what a failed write left in the streams' buffers."""
        os.ftruncate(self.output, 0)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os.ftruncate(self.output, 0)
        self.unwritten = ""

    def execute(self, code: str, name: str) -> None:
        """Run ``code`` in the session's namespace; print the value of a final expression."""
        tree = ast.parse(code, name)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, name, "exec"), self.namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), name, "eval"), self.namespace)
            if value is not None:
                print(repr(value))

    def print_traceback(self) -> None:
        """The current exception's traceback without the kernel's own frames."""
        kind, error, trace = sys.exc_info()
        while trace is not None and trace.tb_frame.f_code.co_filename == "<string>":
            trace = trace.tb_next
        if isinstance(error, SyntaxError):
            trace = None
        text = "".join(traceback.format_exception(kind, error, trace))
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):  # the output file is full (file-size limit, /tmp) or the cell closed stderr
            size = os.fstat(self.output).st_size
            self.unwritten = f"\n[the cell's output stopped after {size} bytes: no more could be written]\n{text}"

    def read_output(self, limit: int) -> tuple[str, int]:
        """The cell's output, cut in the middle to ``limit`` bytes; and how many bytes were cut."""
        size = os.fstat(self.output).st_size
        if size <= limit:
            return os.pread(self.output, size, 0).decode("utf-8", "replace"), 0
        head, tail = limit * 2 // 3, limit // 3
        text = os.pread(self.output, head, 0) + b"\n[...]\n" + os.pread(self.output, tail, size - tail)
        return text.decode("utf-8", "replace"), size - head - tail


if __name__ == "__main__":
    Kernel().serve()
