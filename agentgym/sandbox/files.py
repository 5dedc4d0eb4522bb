"""Host-side access to a sandbox's files, safe against what the sandboxed code left there: paths resolved
as the sandbox sees them and never out of the work dir, regular files only (no FIFO to block on),
ownership handed to the sandbox's user, and removal even where the code took permissions away."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from agentgym.sandbox.errors import SandboxError
from agentgym.sandbox.layout import WORK


def resolve(workdir: Path, relpath: str | os.PathLike[str]) -> Path:
    """The host path of ``relpath`` in ``workdir``, with symlinks resolved as the sandbox sees them.

    Absolute paths are taken inside the sandbox (``/work/a`` is ``a``); a symlink is followed as
    it would be inside (``/work/...`` targets stay in the work dir); a path or link that leads
    anywhere else raises :class:`SandboxError`.
    """
    parts = list(PurePosixPath(os.fspath(relpath)).parts)
    if parts and parts[0] == "/":
        parts = parts[1:]
        if parts[:1] != [WORK.strip("/")]:
            raise SandboxError(f"{relpath!s} is outside the work dir {WORK}")
        parts = parts[1:]
    resolved: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                raise SandboxError(f"{relpath!s} leads outside the work dir")
            resolved.pop()
            continue
        candidate = workdir.joinpath(*resolved, part)
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                raise SandboxError(f"{relpath!s}: too many levels of symbolic links")
            target = PurePosixPath(os.readlink(candidate))
            if target.is_absolute():
                if target.parts[1:2] != (WORK.strip("/"),):
                    raise SandboxError(f"{relpath!s} is a link to {str(target)!r}, outside the work dir")
                resolved, parts = [], list(target.parts[2:]) + parts
            else:
                parts = list(target.parts) + parts
            continue
        resolved.append(part)
    return workdir.joinpath(*resolved)


def make_parents(workdir: Path, directory: Path, uid: int, gid: int) -> None:
    """Make ``directory`` and its missing parents inside ``workdir`` (given to ``uid``:``gid`` when root)."""
    missing = []
    while not directory.exists() and directory != workdir:
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir(mode=0o755)
        if os.geteuid() == 0:
            os.chown(path, uid, gid, follow_symlinks=False)


def write_regular(target: Path, payload: bytes, mode: int | None, uid: int, gid: int) -> None:
    """Write ``payload`` to ``target``, a regular file or none (exactly ``mode`` if given; given to
    ``uid``:``gid`` when root), never through a final link nor into a FIFO."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
    with open_regular(target, flags, 0o644 if mode is None else mode) as handle:
        handle.write(payload)
        if mode is not None:
            os.fchmod(handle.fileno(), mode)  # exactly mode, whatever the umask
        if os.geteuid() == 0:
            os.fchown(handle.fileno(), uid, gid)


def read_regular(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, never through a final link nor from a FIFO.

    A file longer than ``max_bytes`` raises :class:`SandboxError` (read no further than that).
    """
    with open_regular(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK) as handle:
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise SandboxError(f"{path.name}: larger than {max_bytes} bytes")
    return data


def empty(workdir: Path) -> None:
    """Remove everything in ``workdir`` (links are removed, never followed)."""
    for entry in os.scandir(workdir):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, onerror=make_writable_and_retry)
        else:
            os.unlink(entry.path)


def open_regular(path: Path, flags: int, mode: int = 0o644) -> Any:
    """Open a regular file (binary); anything else the sandboxed code may have put there (a FIFO
    that would block, a socket, a directory) raises :class:`SandboxError`."""
    try:
        descriptor = os.open(path, flags, mode)
    except OSError as error:
        if error.errno in (errno.ENXIO, errno.ELOOP, errno.EISDIR):
            raise SandboxError(f"{path.name}: not a regular file") from error
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise SandboxError(f"{path.name}: not a regular file")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb" if flags & os.O_ACCMODE == os.O_RDONLY else "wb")


def searchable_by_all(directory: Path) -> bool:
    """Whether every user may enter ``directory`` and each of its parents."""
    return all(os.stat(path).st_mode & 0o001 for path in (directory, *directory.parents))


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give ``root`` and everything under it to ``uid``:``gid`` (links themselves, never their targets)."""
    os.chown(root, uid, gid, follow_symlinks=False)
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories + files:
            os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)


def make_writable_and_retry(function: Any, path: str, _: Any) -> None:
    """``shutil.rmtree``'s error handler: give back the permissions the sandboxed code removed, retry."""
    with contextlib.suppress(OSError):
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
        function(path)


def remove_tree(root: Path, workdir: Path | None) -> None:
    """Delete the sandbox's private directory, even where the sandboxed code removed permissions."""
    for path in (workdir, root):
        if path is not None and path.exists():
            shutil.rmtree(path, onerror=make_writable_and_retry)
