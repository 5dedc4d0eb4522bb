"""A memory cap on everything a bwrap sandbox runs, where the host lets this process make cgroups.

bwrap's limits are rlimits, per process: ``memory_mb`` caps each process's address space, so a run of
``processes`` processes could hold that many times as much. Where this process may make a child of its own
memory cgroup (cgroup v1's memory controller, or v2 with ``memory`` enabled for its children: root in most
containers and CI machines), each :class:`~agentgym.sandbox.box.Sandbox` gets one (:class:`MemoryGroup`), capped
at the run's ``Limits.run_memory_mb``, and every run and spawned process of the sandbox starts inside it: the
kernel's OOM killer ends a run whose processes together pass the cap, and the run reports the ``memory`` limit.
Elsewhere :func:`memory_groups` says why not, and runs have the rlimits alone. A group goes with its sandbox
(``close``, or when the sandbox is collected); a process killed outright leaves its groups behind, empty.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import subprocess
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: The shell line that moves itself into the cgroup whose ``cgroup.procs`` is ``$0``, then runs the rest.
ENTER = 'echo $$ > "$0" && exec "$@"'


@functools.cache
def memory_groups() -> tuple[Path, int] | str:
    """(the cgroup under which this process may make memory groups, its cgroup version), or why there is none."""
    found = _own_memory_cgroup()
    if isinstance(found, str):
        return found
    parent, version = found
    probe = parent / f"agentgym-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError as error:
        return f"cannot make a cgroup under {parent}: {error.strerror}"
    try:
        _write_limit(probe, version, 64 * 2**20)
        entered = subprocess.run(["/bin/sh", "-c", ENTER, str(probe / "cgroup.procs"), "true"], capture_output=True)
        if entered.returncode != 0:
            return f"cannot move a process into a cgroup under {parent}: {entered.stderr.decode().strip()[:200]}"
    except OSError as error:
        return f"cannot set a memory limit under {parent}: {error.strerror}"
    finally:
        _remove(probe)
    return parent, version


def _own_memory_cgroup() -> tuple[Path, int] | str:
    """This process's memory cgroup: v1's memory controller where mounted, else v2 with ``memory`` for children."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "no /proc/self/cgroup (not Linux)"
    paths = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        paths[controllers] = path.lstrip("/")
    v1 = next((path for controllers, path in paths.items() if "memory" in controllers.split(",")), None)
    if v1 is not None and (CGROUP_ROOT / "memory" / v1).is_dir():
        return CGROUP_ROOT / "memory" / v1, 1
    if "" in paths:
        for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
            parent = mount / paths[""]
            with contextlib.suppress(OSError):
                if "memory" in (parent / "cgroup.subtree_control").read_text().split():
                    return parent, 2
        return "cgroup v2 without the memory controller enabled for this process's children"
    return "no memory cgroup controller"


class MemoryGroup:
    """One sandbox's memory cgroup: made under :func:`memory_groups`'s parent, removed by :meth:`remove`."""

    def __init__(self, parent: Path, version: int) -> None:
        self.version = version
        self.path = parent / f"agentgym-sandbox-{os.getpid()}-{secrets.token_hex(6)}"
        self.path.mkdir()
        self.limit_mb: int | None = None

    @classmethod
    def create(cls) -> MemoryGroup | None:
        """A new group, or ``None`` where this host has none to give (:func:`memory_groups` says why)."""
        found = memory_groups()
        if isinstance(found, str):
            return None
        try:
            return cls(*found)
        except OSError:
            return None

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to move itself in (:data:`ENTER`)."""
        return self.path / "cgroup.procs"

    def enter_argv(self) -> list[str]:
        """The prefix that starts a command inside the group."""
        return ["/bin/sh", "-c", ENTER, str(self.procs)]

    def set_limit(self, limit_mb: int) -> None:
        """Cap what the group's processes hold together (memory and swap) at ``limit_mb``."""
        if limit_mb != self.limit_mb:
            _write_limit(self.path, self.version, limit_mb * 2**20)
            self.limit_mb = limit_mb

    def oom_kills(self) -> int:
        """How many processes the OOM killer has killed in the group so far (0 where the kernel does not count)."""
        name, key = ("memory.oom_control", "oom_kill") if self.version == 1 else ("memory.events", "oom_kill")
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / name).read_text().splitlines():
                field, _, value = line.partition(" ")
                if field == key:
                    return int(value)
        return 0

    def remove(self) -> None:
        """Remove the group once its processes are gone (they die with their sandbox; a few tries)."""
        _remove(self.path)


def _write_limit(group: Path, version: int, limit: int) -> None:
    if version == 1:
        swap = group / "memory.memsw.limit_in_bytes"  # only with swap accounting; it may not go below the other
        if swap.exists() and int(swap.read_text()) < limit:
            swap.write_text(str(limit))
        (group / "memory.limit_in_bytes").write_text(str(limit))
        if swap.exists():
            swap.write_text(str(limit))
    else:
        (group / "memory.max").write_text(str(limit))
        if (group / "memory.swap.max").exists():
            (group / "memory.swap.max").write_text("0")


def _remove(group: Path) -> None:
    for attempt in range(20):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01 * (attempt + 1))
