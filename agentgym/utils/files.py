"""Files shared by processes: the cache root, an exclusive lock, a folder written aside and renamed into place,
built once.

Caches that several processes fill (pytest workers, vector env workers, servers) use these
three together: :func:`build_once` holds :func:`file_lock` on ``<folder>.lock`` while it
checks for a complete folder and builds a missing one, and the build writes into
:func:`written_aside`'s temporary sibling, so a reader never sees a half-written folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if needed, with its folder) for the duration of the block."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def written_aside(directory: str | os.PathLike[str]) -> Iterator[Path]:
    """A new temporary sibling of ``directory`` to write into, renamed to ``directory`` when the block succeeds.

    What was at ``directory`` is replaced; if another process renamed its own copy into
    place first, that one is kept. The temporary folder is removed whatever happens.
    """
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        yield work
        if directory.exists():
            shutil.rmtree(directory, ignore_errors=True)
        try:
            work.rename(directory)
        except OSError:  # another process renamed its copy first; use that one
            if not directory.is_dir():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def remove_stale_builds(directory: str | os.PathLike[str]) -> None:
    """Remove half-written copies of ``directory`` (:func:`written_aside`'s) left by a build that was killed.

    Call it holding the folder's lock: a build in progress holds it too, so any copy found is stale.
    """
    directory = Path(directory)
    for stale in directory.parent.glob(f".{directory.name}-*"):
        shutil.rmtree(stale, ignore_errors=True)


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where agentgym caches files: ``cache_dir``, else ``$AGENTGYM_CACHE``, else ``~/.cache/agentgym``."""
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get("AGENTGYM_CACHE"):
        return Path(os.environ["AGENTGYM_CACHE"])
    return Path.home() / ".cache" / "agentgym"


def build_once(directory: str | os.PathLike[str], load: Callable[[Path], T | None], build: Callable[[Path], T]) -> T:
    """``load(directory)`` when it gives a usable result, else ``build(directory)``, built by one process at a time.

    ``load`` returns ``None`` for a missing, incomplete or stale folder. The build holds
    :func:`file_lock` on ``<directory>.lock``, so a second process waits for the first
    one's folder (loading it once the lock is free) instead of building its own.
    """
    directory = Path(directory)
    found = load(directory)
    if found is not None:
        return found
    with file_lock(directory.with_name(directory.name + ".lock")):
        found = load(directory)  # another process may have built it meanwhile
        if found is None:
            remove_stale_builds(directory)
            found = build(directory)
    return found
