"""The work dir's disk quota (``Limits.disk_mb``): its size measured while a run goes on, the run stopped past it.

Neither bwrap nor a bind-mounted docker volume caps what a directory may hold, and ``file_size_mb`` caps each
file, not their sum: a loop writing files fills the disk until the wall limit (4.3 GB in 10 s, measured). So the
host measures the work dir (the blocks its files take, links not followed) while a run goes on, and stops the run
once it holds more than ``disk_mb`` and more than when the run began (a run that starts over the quota, the
previous run's leftovers, may still delete them). The measure's cost grows with the tree, so it is taken again
after :data:`COST_FACTOR` times as long as the last one took, at least every :data:`MIN_INTERVAL_S`: at most about
5% of a core; a writer may go past the quota by what it writes in that interval.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

#: The shortest time between two measures of a work dir.
MIN_INTERVAL_S = 0.2
#: How many times a measure's own duration passes before the next one (its share of a core: 1 / COST_FACTOR).
COST_FACTOR = 20


def tree_bytes(root: Path) -> int:
    """The bytes ``root``'s files and folders take on disk (their blocks; symlinks not followed; entries that
    vanish while it is walked are skipped)."""
    total, folders = 0, [os.fspath(root)]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # removed meanwhile, or unreadable: what it holds is not counted
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                folders.append(entry.path)
    return total


class DiskWatch:
    """Measures a work dir during one run (see the module docstring); :meth:`over` says when to stop it."""

    def __init__(self, workdir: Path, disk_mb: int) -> None:
        self.workdir = workdir
        self.limit = disk_mb * 1024 * 1024
        self.next_at = 0.0
        self.start = self._measure()
        self.peak = self.start

    def _measure(self) -> int:
        began = time.monotonic()
        size = tree_bytes(self.workdir)
        ended = time.monotonic()
        self.next_at = ended + max(MIN_INTERVAL_S, COST_FACTOR * (ended - began))
        return size

    def due_in(self) -> float:
        """Seconds until the next measure is due (0 when it is)."""
        return max(0.0, self.next_at - time.monotonic())

    def over(self) -> bool:
        """Measure if due; whether the work dir now holds more than its quota and more than at the run's start."""
        if time.monotonic() < self.next_at:
            return False
        size = self._measure()
        self.peak = max(self.peak, size)
        return size > self.limit and size > self.start
