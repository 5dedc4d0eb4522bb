"""The server's memory probes: resident memory from ``/proc``, glibc malloc's heap through ``ctypes``, and
handing malloc's free memory back to the system.

``GET /metrics`` reports :func:`rss_bytes` and ``GET /memory`` :func:`memory_report` (docs/serving.md); the
server calls :func:`release_free_memory` after sessions close and :func:`limit_malloc_arenas` at start. Linux
and glibc: elsewhere each probe answers ``None`` or ``False``.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys
import threading
from collections import Counter
from typing import Any


def rss_bytes() -> int | None:
    """This process's resident memory (Linux; ``None`` elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (all arenas summed), its fields in order."""

    _FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    _fields_ = [(name, ctypes.c_size_t) for name in (*_FIELDS, "keepcost")]


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    if hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _MallInfo2
    return libc


def malloc_bytes() -> dict[str, int] | None:
    """glibc malloc's heap: bytes held from the system, in use by the program, free inside it.

    ``None`` without glibc 2.33 or later.

    Resident memory that grows while ``in_use`` stays flat is the allocator keeping freed memory (fragmentation),
    not a leak."""
    try:
        mallinfo2 = _libc().mallinfo2
    except (AttributeError, OSError):
        return None
    info = mallinfo2()
    return {
        "held": info.arena + info.hblkhd,
        "in_use": info.uordblks + info.hblkhd,
        "free": info.fordblks,
        "releasable": info.keepcost,
    }


def release_free_memory() -> bool:
    """Return the free memory inside glibc malloc's arenas to the system (``malloc_trim(0)``); whether it did.

    A server's envs live on many threads, each allocating from its own malloc arena; what a closed env freed
    stays in those arenas as free space that malloc keeps resident. In the 256-session soak this took about
    80 MiB off the server's RSS at rest (benchmarks/results/soak_untrimmed.md, soak_trimmed.md); with the arenas
    capped as well (:func:`limit_malloc_arenas`), the 2-hour soak's RSS at rest stayed flat (results/soak.md)."""
    try:
        return bool(_libc().malloc_trim(0))
    except (AttributeError, OSError):
        return False


#: glibc's ``mallopt`` parameter for the most malloc arenas a process makes (``M_ARENA_MAX``).
_M_ARENA_MAX = -8
#: The server's malloc arenas (glibc's default is eight per core). Each thread that allocates gets an arena
#: until there are this many; with one thread per session, hundreds of sessions otherwise spread their memory
#: over the default's 16 arenas on two cores, each keeping its own free space.
SERVER_MALLOC_ARENAS = 2


def limit_malloc_arenas(count: int = SERVER_MALLOC_ARENAS) -> bool:
    """Cap glibc malloc's arenas at ``count`` (``mallopt(M_ARENA_MAX)``) unless ``MALLOC_ARENA_MAX`` is set
    (the user's choice, which glibc reads itself); whether the cap was set. For the start of a process, before
    its threads allocate."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        return bool(_libc().mallopt(_M_ARENA_MAX, count))
    except (AttributeError, OSError):
        return False


def memory_report(top: int = 20) -> dict[str, Any]:
    """Where this process's memory is: resident bytes, glibc malloc's heap, Python's allocated blocks and
    garbage-collected objects by type (the ``top`` most numerous). Walks every object: for a process at rest."""
    objects = gc.get_objects()
    by_type = Counter(type(obj).__qualname__ for obj in objects)
    return {
        "rss_bytes": rss_bytes(),
        "malloc": malloc_bytes(),
        "python_blocks": sys.getallocatedblocks(),
        "gc_objects": len(objects),
        "objects_by_type": dict(by_type.most_common(top)),
        "threads": threading.active_count(),
    }
