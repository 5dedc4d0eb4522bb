"""Helper processes: ones that must not outlive the process that started them, and CPU priorities that keep a
server's own work ahead of what it runs for its envs."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading

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


def lower_thread_priority(steps: int) -> None:
    """Lower the calling thread's CPU priority by ``steps`` nice steps (at most to 19). Linux only, where nice is a
    thread's own and the processes it starts inherit it; elsewhere it would be the whole process's: nothing done."""
    if steps <= 0 or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + steps))


def forbid_raising_priority() -> bool:
    """Programs this process starts from now on cannot raise their CPU priority: ``CAP_SYS_NICE`` leaves its
    capability bounding set (Linux, as root; whether it was dropped). Chromium run as root raises its compositor and
    IO threads to nice -8, ahead of the process that serves it; without the capability they stay where they began."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_NICE, 0, 0, 0) == 0
