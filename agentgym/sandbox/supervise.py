"""Running a sandboxed process to its end: stdin fed, output read under its cap, the wall-time limit and the
work dir's disk quota enforced by a kill, and the run's CPU time reported by a small shell around the command."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agentgym.sandbox.disk import DiskWatch
from agentgym.sandbox.limits import Backend, LimitName, Limits, RunResult, limit_from

#: After the first process exits, how long to keep reading output that other processes hold open.
DRAIN_GRACE_S = 0.5
READ_CHUNK = 65_536
#: Output read beyond ``output_bytes`` for the CPU-time report that ends stderr (see ``timed``).
TIMES_RESERVE = 256


@dataclass
class _Outputs:
    """Bytes read so far from stdout and stderr, capped together at ``limit``."""

    limit: int
    chunks: dict[str, list[bytes]] = field(default_factory=lambda: {"stdout": [], "stderr": []})
    size: int = 0
    truncated: bool = False

    def add(self, stream: str, data: bytes) -> bool:
        """Keep ``data`` (as much as fits); ``False`` once the cap is exceeded."""
        room = self.limit - self.size
        if len(data) > room:
            data, self.truncated = data[:room], True
        self.chunks[stream].append(data)
        self.size += len(data)
        return not self.truncated


def supervise(
    process: subprocess.Popen[bytes],
    stdin: str | bytes | None,
    limits: Limits,
    kill: Any,
    backend: Backend,
    marker: str,
    disk: DiskWatch,
) -> RunResult:
    """Feed stdin, read output under the caps, kill at the wall limit (or past ``disk``'s quota), reap and report.

    The run's stderr ends with ``marker`` and the CPU times of the run (see :func:`timed`).
    """
    start = time.monotonic()
    deadline = start + limits.wall_s
    outputs = _Outputs(limits.output_bytes + TIMES_RESERVE)  # room for the CPU-time report
    killed_for: LimitName | None = None
    pending = b""
    if process.stdin is not None:
        pending = stdin.encode("utf-8", "surrogateescape") if isinstance(stdin, str) else bytes(stdin or b"")
        os.set_blocking(process.stdin.fileno(), False)
    pidfd = _pidfd(process.pid)
    selector = selectors.DefaultSelector()
    try:
        assert process.stdout is not None and process.stderr is not None
        selector.register(process.stdout, selectors.EVENT_READ, "stdout")
        selector.register(process.stderr, selectors.EVENT_READ, "stderr")
        if process.stdin is not None:
            if pending:
                selector.register(process.stdin, selectors.EVENT_WRITE, "stdin")
            else:
                process.stdin.close()
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ, "exit")
        exited_at: float | None = None
        pipes = 2
        # Until the output ends, or the process has exited and the grace to drain its output is over.
        while pipes and killed_for is None:
            now = time.monotonic()
            if exited_at is None and pidfd is None and process.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_GRACE_S:
                break  # the run is over; something it left behind holds the pipes open
            if now >= deadline:
                killed_for = "wall"
                break
            if disk.over():
                killed_for = "disk"
                break
            timeout = deadline - now
            if exited_at is not None:
                timeout = min(timeout, exited_at + DRAIN_GRACE_S - now)
            elif pidfd is None:
                timeout = min(timeout, 0.02)
            timeout = min(timeout, disk.due_in())
            for key, _ in selector.select(timeout):
                if key.data == "exit":
                    selector.unregister(key.fileobj)
                    exited_at = time.monotonic()
                elif key.data == "stdin":
                    try:
                        pending = pending[os.write(key.fd, pending[:READ_CHUNK]) :]
                    except BlockingIOError:
                        pass
                    except OSError:  # the command closed its stdin
                        pending = b""
                    if not pending:
                        selector.unregister(key.fileobj)
                        _close_quietly(process.stdin)
                else:
                    data = os.read(key.fd, READ_CHUNK)
                    if not data:
                        selector.unregister(key.fileobj)
                        pipes -= 1
                    elif not outputs.add(key.data, data):
                        killed_for = "output"
                        break
        while killed_for is None:  # the output has ended: wait for the exit
            remaining = max(deadline - time.monotonic(), 0.0)
            try:
                process.wait(timeout=min(remaining, disk.due_in()))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    killed_for = "wall"
                elif disk.over():
                    killed_for = "disk"
        if killed_for is not None:
            kill()
    finally:
        selector.close()
        for stream in (process.stdin, process.stdout, process.stderr):
            _close_quietly(stream)
        if pidfd is not None:
            os.close(pidfd)
    status = _reap(process)
    stdout = b"".join(outputs.chunks["stdout"])
    stderr, cpu_s = _split_cpu_times(b"".join(outputs.chunks["stderr"]), marker)
    excess = len(stdout) + len(stderr) - limits.output_bytes
    if excess > 0:  # cut stdout's end first: stderr tends to hold the error that explains the run
        cut = min(excess, len(stdout))
        stdout, stderr = stdout[: len(stdout) - cut], stderr[: len(stderr) - (excess - cut)]
        killed_for = killed_for or "output"
    wall_s = time.monotonic() - start
    return RunResult(
        exit_code=status,
        stdout=stdout.decode("utf-8", "replace"),
        stderr=stderr.decode("utf-8", "replace"),
        wall_s=wall_s,
        cpu_s=cpu_s,
        limit_hit=killed_for or limit_from(status, stderr.decode("utf-8", "replace"), backend),
        truncated=outputs.truncated or excess > 0,
        backend=backend,
    )


def _reap(process: subprocess.Popen[bytes]) -> int:
    """Wait for the process; its exit status, shell style (128 + N for signal N)."""
    code = process.wait()
    return 128 - code if code < 0 else code


_TIMES = re.compile(r"(\d+)m([\d.]+)s")


def new_marker() -> str:
    """A line no command prints by chance: it ends the command's stderr and starts the CPU-time report."""
    return f"agentgym-sandbox-cpu-{uuid.uuid4().hex}"


def timed(marker: str) -> list[str]:
    """The shell that runs a command and then reports its CPU time on stderr.

    bwrap exits before reaping the sandbox's processes, and docker's are not our children, so
    ``wait4`` cannot see their CPU time; the shell's ``times`` (its children's user and system
    time) after a line holding ``marker`` can. It is not PID 1, so the command isn't either: PID 1
    ignores the SIGXCPU and SIGXFSZ that enforce the CPU-time and file-size limits.
    """
    script = 'marker=$1; shift; "$@"; status=$?; printf \'\\n%s\\n\' "$marker" >&2; times >&2; exit $status'
    return ["/bin/sh", "-c", script, "sandbox", marker]


def _split_cpu_times(stderr: bytes, marker: str) -> tuple[bytes, float | None]:
    """The command's own stderr, and the CPU seconds the shell of :func:`timed` reported (None if absent)."""
    before, found, after = stderr.rpartition(f"\n{marker}\n".encode())
    if not found:
        return stderr.split(f"\n{marker}".encode(), 1)[0], None
    times = _TIMES.findall(after.decode("ascii", "replace"))
    if len(times) != 4:
        return before, None
    return before, round(sum(int(minutes) * 60 + float(seconds) for minutes, seconds in times), 6)


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux 5.3+), or ``None``."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _close_quietly(stream: Any) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()
