"""Helper processes: ones that must not outlive the process that started them, and CPU priorities that keep a
server's own work ahead of what it runs for its envs."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Collection

#: The environment variable a parent sets to its pid for :func:`exit_with_parent` (the child checks it once).
PARENT_PID_VARIABLE = "AGENTGYM_PARENT_PID"
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_CAP_SYS_NICE = 23


def parent_environment() -> dict[str, str]:
    """The environment variables a child that calls :func:`exit_with_parent` needs: this process's pid."""
    return {PARENT_PID_VARIABLE: str(os.getpid())}


def exit_with_parent() -> None:
    """In a child process: be killed (SIGKILL) when the thread that started it dies, and exit now if the
    parent named by :func:`parent_environment` is gone already. Linux only; elsewhere it does nothing.

    A server killed while a helper process works (a game generator, say) then leaves no orphan behind.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    expected = os.environ.get(PARENT_PID_VARIABLE)
    if expected is not None and os.getppid() != int(expected):  # the parent died before prctl took effect
        os._exit(1)


def exit_with_parent_process(poll_s: float = 0.5) -> None:
    """In a child process that outlives the thread that started it (a pooled helper, which :func:`exit_with_parent`
    would kill with that thread): exit as soon as the parent named by :func:`parent_environment` is gone, checked
    every ``poll_s`` seconds by a daemon thread, busy or not."""
    expected = int(os.environ.get(PARENT_PID_VARIABLE, os.getppid()))

    def watch() -> None:
        while os.getppid() == expected:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def descendants(pid: int) -> list[int]:
    """The pids of every live descendant of ``pid`` (Linux: read from ``/proc``; elsewhere none)."""
    parents: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as stat:
                        parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                parents.setdefault(parent, []).append(int(entry))
    found, frontier = [], [pid]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found += children
        frontier += children
    return found


def lower_descendants(steps: int, pid: int | None = None, spared: Collection[int] = ()) -> int:
    """Put every thread of every process descended from ``pid`` (this one by default) at least ``steps`` nice steps
    below ``pid``'s own priority (Linux; at most 19), but for the processes in ``spared``; how many threads were
    lowered.

    The processes an env starts (Chromium, a JVM, a sandbox) then run after the process that serves it. Its own
    threads are left at its priority: one that holds the GIL must run as soon as the event loop asks for it; so are
    the server's own helpers in ``spared`` (the ``/metrics`` relay: a scrape must not wait behind the envs)."""
    if steps <= 0 or not sys.platform.startswith("linux"):
        return 0
    pid = os.getpid() if pid is None else pid
    target = min(19, os.getpriority(os.PRIO_PROCESS, pid) + steps)
    lowered = 0
    for child in set(descendants(pid)) - set(spared):
        try:
            threads = os.listdir(f"/proc/{child}/task")
        except OSError:
            continue
        for thread in map(int, threads):
            with contextlib.suppress(OSError):
                if os.getpriority(os.PRIO_PROCESS, thread) < target:
                    os.setpriority(os.PRIO_PROCESS, thread, target)
                    lowered += 1
    return lowered


def forbid_raising_priority() -> bool:
    """Programs this process starts from now on cannot raise their CPU priority: ``CAP_SYS_NICE`` leaves its
    capability bounding set (Linux, as root; whether it was dropped). Chromium run as root raises its compositor and
    IO threads to nice -8, ahead of the process that serves it; without the capability they stay where they began."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_NICE, 0, 0, 0) == 0
