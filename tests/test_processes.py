"""Helper processes die with the process that started them (agentgym.utils.processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

CHILD = "from agentgym.utils.processes import exit_with_parent; exit_with_parent(); import time; time.sleep(120)"
PARENT = f"""
import subprocess, sys
from agentgym.utils.processes import parent_environment
import os
child = subprocess.Popen([sys.executable, "-c", {CHILD!r}], env={{**os.environ, **parent_environment()}})
print(child.pid, flush=True)
child.wait()
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_helper_process_is_killed_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())  # type: ignore[union-attr]
    time.sleep(1.0)  # the child has called exit_with_parent
    assert alive(child)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the child outlived its killed parent"
