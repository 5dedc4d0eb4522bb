"""Judging a Bash task: the work dir against the expected tree, or a submitted answer against the truth."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import tarfile
from dataclasses import dataclass

from agentgym.environments.code.bash.tree import Tree
from agentgym.sandbox import Sandbox, SandboxError

#: At most this many entries are scanned when the work dir is checked.
MAX_SCAN_ENTRIES = 20_000
MAX_READ_BYTES = 64 << 20


@dataclass(frozen=True)
class Entry:
    """One path found in the work dir: ``kind`` is "file", "dir", "link" or "other"."""

    kind: str
    mode: int
    digest: str = ""


def read_file(sandbox: Sandbox, path: str) -> bytes | None:
    """The bytes of the regular file ``path`` in the work dir (never through a link), ``None`` if unreadable."""
    try:
        return sandbox.read_file(path, binary=True, max_bytes=MAX_READ_BYTES)
    except (SandboxError, OSError, ValueError):
        return None


def scan(sandbox: Sandbox) -> dict[str, Entry] | None:
    """Every path in ``sandbox``'s work dir (relative), without following links; ``None`` past the entry limit."""
    root = str(sandbox.workdir)
    found: dict[str, Entry] = {}
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            names = sorted(os.listdir(os.path.join(root, relative)))
        except OSError:
            continue
        for name in names:
            path = f"{relative}/{name}" if relative else name
            host = os.path.join(root, path)
            try:
                info = os.lstat(host)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                found[path] = Entry("dir", stat.S_IMODE(info.st_mode))
                pending.append(path)
            elif stat.S_ISREG(info.st_mode):
                data = read_file(sandbox, path)
                digest = hashlib.sha256(data).hexdigest() if data is not None else "unreadable"
                found[path] = Entry("file", stat.S_IMODE(info.st_mode), digest)
            elif stat.S_ISLNK(info.st_mode):
                try:
                    found[path] = Entry("link", 0, os.readlink(host))
                except OSError:
                    found[path] = Entry("link", 0)
            else:
                found[path] = Entry("other", stat.S_IMODE(info.st_mode))
            if len(found) > MAX_SCAN_ENTRIES:
                return None
    return found


def state_digest(sandbox: Sandbox) -> str:
    """A digest of the work dir's paths, kinds, modes and contents (the oracle's plan follows it)."""
    found = scan(sandbox)
    text = "overflow" if found is None else repr(sorted((p, e.kind, e.mode, e.digest) for p, e in found.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def _archive_members(data: bytes) -> dict[str, bytes] | None:
    """The regular files of a .tar.gz (names without a leading ``./``), or ``None`` if it is not one."""
    try:
        members: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for info in archive:
                if info.isfile():
                    handle = archive.extractfile(info)
                    name = info.name[2:] if info.name.startswith("./") else info.name
                    members[name] = handle.read() if handle else b""
                elif not info.isdir():
                    members[info.name] = b"\0not a regular file"
        return members
    except (tarfile.TarError, OSError, EOFError, ValueError):
        return None


def _gunzip(data: bytes) -> bytes | None:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            return stream.read(MAX_READ_BYTES + 1)
    except (OSError, EOFError, ValueError):
        return None


def compare_tree(sandbox: Sandbox, expected: Tree, check_modes: bool) -> list[str]:
    """What differs between ``sandbox``'s work dir and ``expected``: an empty list when they match."""
    found = scan(sandbox)
    if found is None:
        return [f"the work dir holds more than {MAX_SCAN_ENTRIES} entries"]
    wanted = {path: "dir" for path in expected.dirs} | {path: "file" for path in expected.files}
    problems = []
    missing = sorted(set(wanted) - set(found))
    extra = sorted(set(found) - set(wanted))
    if missing:
        problems.append(f"missing: {', '.join(missing[:10])}")
    if extra:
        problems.append(f"unexpected: {', '.join(extra[:10])}")
    changed = []
    for path in sorted(set(wanted) & set(found)):
        entry = found[path]
        if entry.kind != wanted[path]:
            changed.append(f"{path} (a {entry.kind}, expected a {wanted[path]})")
            continue
        if entry.kind == "dir":
            continue
        model = expected.files[path]
        if model.members is not None or model.gzip:
            data = read_file(sandbox, path)
            if model.members is not None:
                good = data is not None and _archive_members(data) == model.members
            else:
                good = data is not None and _gunzip(data) == model.data
        else:
            good = entry.digest == hashlib.sha256(model.data).hexdigest()
        if not good:
            changed.append(f"{path} (content)")
        elif check_modes and entry.mode != model.mode:
            changed.append(f"{path} (mode {entry.mode:o}, expected {model.mode:o})")
    if changed:
        problems.append(f"different: {', '.join(changed[:10])}")
    return problems


def _strip_quotes(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1].strip()
    return text


def answer_matches(kind: str, submitted: str, truth: str, workdir: str) -> bool:
    """Whether ``submitted`` equals ``truth`` as an answer of type ``kind`` (see the module docstring)."""

    def path(text: str) -> str:
        text = _strip_quotes(text.strip().rstrip(",;"))
        if text.startswith(workdir.rstrip("/") + "/"):
            text = text[len(workdir.rstrip("/")) + 1 :]
        while text.startswith("./"):
            text = text[2:]
        return text

    submitted = submitted.strip()
    if kind == "text":
        return _strip_quotes(submitted) == truth
    tokens = _strip_quotes(submitted).replace(",", " ").split()
    if kind == "paths":
        return {path(token) for token in tokens} == set(truth.split())
    if not tokens:
        return False
    first = tokens[0]
    if kind == "path":
        return len(tokens) == 1 and path(first) == truth
    if kind == "int":
        return re.fullmatch(r"[+-]?\d+", first) is not None and int(first) == int(truth)
    if kind == "money":
        try:
            return abs(float(first.lstrip("$")) - float(truth)) < 0.005
        except ValueError:
            return False
    raise ValueError(f"unknown answer kind {kind!r}")
