"""The tests' local Ray cluster: node sizes, a start that is retried and reported, Ray's processes.

conftest's session-scoped ``cluster`` fixture starts it once per test run; with ``-n``, conftest's
scheduler sends every test of :data:`RAY_TEST_MODULES` to one pytest worker, which alone holds it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentgym.utils.processes import descendants

#: A Ray node of the tests' local cluster: one CPU (two nodes fit this 2-core machine), no dashboard,
#: a small object store.
RAY_NODE = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
#: Ray waits a fixed 30 s for a new node's raylet to register (ray/_private/node.py); on a loaded machine
#: that can pass. A start that times out is retried, and reported as a warning, up to this many times in all.
RAY_START_TRIES = 3
#: The test modules that use the cluster: one unit of work for pytest-xdist (a single worker runs them all).
RAY_TEST_MODULES = ("tests/test_ray.py", "tests/test_train_ray.py")


class RayStartRetried(UserWarning):
    """A Ray node of the tests' cluster did not start in time and was started again."""


def start_ray_node(start: Callable[[], Any], what: str) -> Any:
    """``start()`` a part of the tests' Ray cluster, retried up to :data:`RAY_START_TRIES` times.

    A failed try's Ray processes (a raylet that registered too late) are killed; each retry is reported
    as a :class:`RayStartRetried` warning, and a start that fails every time fails the test with a
    message that says so.
    """
    for attempt in range(1, RAY_START_TRIES + 1):
        before = ray_processes()
        try:
            return start()
        except Exception as error:  # Ray raises a bare Exception when a raylet does not register in time
            for pid in ray_processes() - before:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if attempt == RAY_START_TRIES:
                pytest.fail(
                    f"could not start {what} of the tests' local Ray cluster in {RAY_START_TRIES} tries "
                    f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): {error}",
                    pytrace=False,
                )
            message = f"{what} of the tests' Ray cluster did not start (try {attempt}): {error}"
            warnings.warn(message, RayStartRetried, stacklevel=2)
            time.sleep(5 * attempt)
    raise AssertionError("unreachable")


def is_ray_process(pid: int) -> bool:
    """Whether ``pid`` is one of Ray's: its program lives in the ray package (raylet, GCS, agents,
    workers) or it is a worker renamed ``ray::...``."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return command.startswith(b"ray::") or b"/ray/" in command


def ray_processes() -> set[int]:
    """The Ray processes this process started (it may hold browsers, JVMs or desktops of other tests too)."""
    return {pid for pid in descendants(os.getpid()) if is_ray_process(pid)}
