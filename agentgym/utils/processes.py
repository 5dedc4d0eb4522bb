"""Helper processes that must not outlive the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

#: The environment variable a parent sets to its pid for :func:`exit_with_parent` (the child checks it once).
PARENT_PID_VARIABLE = "AGENTGYM_PARENT_PID"
_PR_SET_PDEATHSIG = 1


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
