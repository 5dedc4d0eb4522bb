"""What one run may use (:class:`Limits`), how it ended (:class:`RunResult`), and which limit ended it.

A limit this process enforces (``wall``, ``output``, ``disk``) is known for certain; the others are read
from how a failed run ended (:func:`limit_from`): the signal that killed it, or what its stderr
says (:data:`MEMORY_MARKERS`, :data:`FILE_SIZE_MARKERS`, :data:`PROCESS_MARKERS`).
"""

from __future__ import annotations

import signal
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

Backend = Literal["bwrap", "docker"]
LimitName = Literal["wall", "cpu", "memory", "output", "file_size", "processes", "disk"]
BACKENDS: tuple[Backend, ...] = ("bwrap", "docker")

#: How a failed run's stderr shows which limit ended it (checked in this order).
MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory", "memory exhausted")
FILE_SIZE_MARKERS = ("File too large", "File size limit exceeded")
PROCESS_MARKERS = ("Resource temporarily unavailable", "fork: retry", "Cannot fork", "can't fork")


@dataclass(frozen=True)
class Limits:
    """What one run may use. Exceeding one ends the run and sets :attr:`RunResult.limit_hit`.

    ``memory_mb`` is the address space of each process (bwrap: ``RLIMIT_AS``, so programs that
    reserve much virtual memory, such as the JVM or Go, need more) or the container's memory
    (docker). ``processes`` counts processes and threads, the sandbox's own init included.
    ``cpu_s`` is per process (bwrap) and rounded up to whole seconds. ``output_bytes`` caps
    stdout and stderr together; ``tmp_mb`` the private ``/tmp`` (and ``/dev/shm``); ``cpus`` the CPU share of a
    docker container (bwrap has none). ``disk_mb`` is what the work dir may hold while a run goes on (measured by
    this process, :mod:`agentgym.sandbox.disk`; a run that starts over it may not grow it). ``run_memory_mb`` is what
    a bwrap run's processes may hold together, where the host lets this process make cgroups
    (:mod:`agentgym.sandbox.cgroup`; docker's container has ``memory_mb``).
    """

    cpu_s: float = 10.0
    wall_s: float = 20.0
    memory_mb: int = 512
    processes: int = 64
    file_size_mb: int = 64
    output_bytes: int = 1_000_000
    open_files: int = 256
    tmp_mb: int = 64
    cpus: float = 1.0
    disk_mb: int = 1024
    run_memory_mb: int = 4096

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not value > 0:
                raise ValueError(f"Limits.{name} must be positive, got {value!r}")

    def replace(self, **changes: Any) -> Limits:
        """A copy with some limits changed."""
        return replace(self, **changes)


@dataclass(frozen=True)
class RunResult:
    """How a run ended.

    ``exit_code`` follows the shell: 128 + N when a signal N ended the run (137 for a kill).
    ``stdout`` and ``stderr`` are decoded as UTF-8 (invalid bytes replaced) and hold at most
    ``output_bytes`` together (``truncated`` tells when more was cut). ``wall_s`` is the time
    from start to exit, as seen here; ``cpu_s`` the user + system CPU time of the run's processes,
    to 10 ms (``None`` when the run was killed before it could report it). ``limit_hit`` names the
    limit that ended the run, if any.
    """

    exit_code: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float | None
    limit_hit: LimitName | None = None
    truncated: bool = False
    backend: Backend = "bwrap"

    @property
    def ok(self) -> bool:
        """Exit code 0 and no limit hit."""
        return self.exit_code == 0 and self.limit_hit is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def limit_from(status: int, stderr: str, backend: Backend) -> LimitName | None:
    """Which limit ended a run that this process did not kill (see the module docstring)."""
    if status == 0:
        return None
    if status == 128 + signal.SIGXCPU:
        return "cpu"
    if status == 128 + signal.SIGXFSZ:
        return "file_size"
    if backend == "docker" and status == 128 + signal.SIGKILL:
        return "memory"  # the cgroup's OOM killer
    if any(marker in stderr for marker in MEMORY_MARKERS):
        return "memory"
    if any(marker in stderr for marker in FILE_SIZE_MARKERS):
        return "file_size"
    if any(marker in stderr for marker in PROCESS_MARKERS):
        return "processes"
    return None
