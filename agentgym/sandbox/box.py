"""The :class:`Sandbox`: a private work dir, and each run a fresh bwrap sandbox or docker container on it."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import queue
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path, PurePosixPath
from typing import Any

from agentgym.sandbox.cgroup import MemoryGroup
from agentgym.sandbox.disk import DiskWatch
from agentgym.sandbox.errors import SandboxError, SandboxUnavailable
from agentgym.sandbox.files import (
    chown_tree,
    empty,
    make_parents,
    read_regular,
    remove_tree,
    resolve,
    searchable_by_all,
    write_regular,
)
from agentgym.sandbox.layout import (
    BASE_ENV,
    GROUP,
    HIDDEN,
    HOST_ETC,
    HOSTS,
    INSIDE_GID,
    INSIDE_UID,
    PASSWD,
    SCRIPTS,
    UNPRIVILEGED_GID,
    UNPRIVILEGED_UID,
    WORK,
)
from agentgym.sandbox.limits import Backend, Limits, RunResult
from agentgym.sandbox.probes import DEFAULT_IMAGE, check_backend, run_quietly
from agentgym.sandbox.supervise import new_marker, supervise, timed


class Sandbox:
    """A private work dir and a way to run untrusted commands in it (see the module docstring).

    ``workdir=None`` makes a fresh private directory, removed by :meth:`close`; a given
    ``workdir`` is used in place and kept (when this process is root it is handed to the
    unprivileged sandbox user). ``limits`` are the defaults of every run. ``ro_binds`` maps
    paths inside the sandbox to host paths shown there read-only (e.g. a virtual environment).
    ``image`` is the docker backend's image.
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        limits: Limits | None = None,
        backend: Backend = "bwrap",
        *,
        image: str = DEFAULT_IMAGE,
        ro_binds: Mapping[str, str | os.PathLike[str]] | None = None,
    ) -> None:
        check_backend(backend, image)
        self.backend: Backend = backend
        self.image = image
        self.limits = limits or Limits()
        self.ro_binds = {
            str(PurePosixPath(inside)): str(Path(host).resolve()) for inside, host in (ro_binds or {}).items()
        }
        for inside in self.ro_binds:
            if not inside.startswith("/") or inside in ("/", WORK, SCRIPTS, "/tmp", "/proc", "/dev", "/usr", "/etc"):
                raise ValueError(f"ro_binds: cannot mount over {inside!r}")
        self._lock = threading.Lock()
        self._closed = False
        root_user = os.geteuid() == 0
        self.uid, self.gid = (UNPRIVILEGED_UID, UNPRIVILEGED_GID) if root_user else (os.getuid(), os.getgid())
        self._root = Path(tempfile.mkdtemp(prefix="agentgym-sandbox-"))
        self._root.chmod(0o711)  # the unprivileged sandbox user must reach work/ and scripts/ inside
        self._scripts = self._root / "scripts"
        self._etc = self._root / "etc"
        for directory in (self._scripts, self._etc):
            directory.mkdir(mode=0o755)
        for name, text in (("passwd", PASSWD), ("group", GROUP), ("hosts", HOSTS)):
            (self._etc / name).write_text(text, encoding="utf-8")
        if workdir is None:
            self.workdir = self._root / "work"
            self.workdir.mkdir(mode=0o755)
            owned = True
        else:
            self.workdir = Path(workdir).resolve()
            self.workdir.mkdir(parents=True, exist_ok=True)
            owned = False
        if root_user:
            if backend == "bwrap" and not searchable_by_all(self.workdir.parent):
                shutil.rmtree(self._root)
                raise SandboxError(
                    f"the sandbox runs as nobody (uid {self.uid}), which cannot reach {self.workdir}: "
                    "use a work dir whose parent directories others may enter (e.g. under /tmp)"
                )
            chown_tree(self.workdir, self.uid, self.gid)
        #: The cgroup every run and spawned process of this sandbox starts in (bwrap, where the host allows it).
        self.memory_group = MemoryGroup.create() if backend == "bwrap" else None
        self._finalizer = weakref.finalize(
            self, _clean_up, self._root, self.workdir if owned else None, self.memory_group
        )

    # ---- files -------------------------------------------------------------------------------

    def path(self, relpath: str | os.PathLike[str]) -> Path:
        """The host path of ``relpath`` in the work dir, with symlinks resolved as the sandbox sees them.

        Absolute paths are taken inside the sandbox (``/work/a`` is ``a``). A symlink the
        sandboxed code made is followed as it would be inside (``/work/...`` targets stay in the
        work dir); one that leads anywhere else raises :class:`SandboxError`, so that reading or
        writing through the host path can never reach a host file.
        """
        return resolve(self.workdir, relpath)

    def write_file(self, relpath: str | os.PathLike[str], data: str | bytes, mode: int | None = None) -> Path:
        """Write a file in the work dir (parents made as needed); returns its host path."""
        self._require_open()
        with self._lock:
            target = self.path(relpath)
            if target == self.workdir:
                raise SandboxError("cannot write the work dir itself")
            make_parents(self.workdir, target.parent, self.uid, self.gid)
            payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            write_regular(target, payload, mode, self.uid, self.gid)
            return target

    def read_file(
        self, relpath: str | os.PathLike[str], *, binary: bool = False, max_bytes: int | None = None
    ) -> str | bytes:
        """A file of the work dir (UTF-8 text with invalid bytes replaced, or bytes).

        Anything but a regular file, or a file longer than ``max_bytes``, raises :class:`SandboxError`.
        """
        self._require_open()
        with self._lock:
            data = read_regular(self.path(relpath), max_bytes)
        return data if binary else data.decode("utf-8", "replace")

    def clear(self) -> None:
        """Empty the work dir (links are removed, never followed)."""
        self._require_open()
        with self._lock:
            empty(self.workdir)

    # ---- running -------------------------------------------------------------------------------

    def run(
        self,
        command: Sequence[str] | str,
        stdin: str | bytes | None = None,
        limits: Limits | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run ``command`` (an argv list, or a line for ``/bin/sh -c``) in a fresh sandbox on the work dir.

        ``stdin`` is fed to the command (else it reads end-of-file); ``limits`` replace the
        sandbox's defaults for this run; ``env`` adds variables to :data:`BASE_ENV`. Never raises
        for anything the command does.
        """
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(part) for part in command]
        if not argv:
            raise ValueError("empty command")
        limits = limits or self.limits
        self._require_open()
        with self._lock:
            environment = {**BASE_ENV, **(env or {})}
            if self.backend == "bwrap":
                return self._run_bwrap(argv, stdin, limits, environment)
            return self._run_docker(argv, stdin, limits, environment)

    def run_python(
        self,
        code: str,
        stdin: str | bytes | None = None,
        limits: Limits | None = None,
        *,
        args: Sequence[str] = (),
        filename: str = "main.py",
    ) -> RunResult:
        """Run Python source with the sandbox's ``python3`` (the system's, not this process's).

        The code is a read-only file ``/sandbox/<filename>`` (tracebacks name it), outside the
        work dir, which stays as it was; ``args`` become ``sys.argv[1:]``.
        """
        if "/" in filename or filename in ("", ".", ".."):
            raise ValueError(f"filename must be a plain file name, got {filename!r}")
        self._require_open()
        with self._lock:
            script = self._scripts / filename
            script.write_text(code, encoding="utf-8", errors="surrogateescape")
            script.chmod(0o644)
        try:
            return self.run(["python3", f"{SCRIPTS}/{filename}", *args], stdin=stdin, limits=limits)
        finally:
            script.unlink(missing_ok=True)

    def spawn(
        self, argv: Sequence[str], limits: Limits | None = None, *, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` in a fresh bwrap sandbox on the work dir and leave it running (a long-lived process).

        Its stdin and stdout are pipes and its stderr goes to stdout. It leads its own process group:
        ``os.killpg(process.pid, signal.SIGKILL)`` ends the sandbox and everything in it. The rlimits of
        ``limits`` apply (CPU time to the whole life of the process); wall time, output and the disk quota
        (:class:`~agentgym.sandbox.disk.DiskWatch`) are the caller's to watch. The bwrap backend only (the Python
        interpreter tool's kernel runs so).
        """
        if self.backend != "bwrap":
            raise SandboxError(f"spawn runs on the bwrap backend only, not {self.backend!r}")
        self._require_open()
        if self.memory_group is not None:
            self.memory_group.set_limit((limits or self.limits).run_memory_mb)
        return _SPAWNER.popen(
            self._bwrap_argv([str(part) for part in argv], limits or self.limits, None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**BASE_ENV, **(env or {})},
            start_new_session=True,
            close_fds=True,
        )

    def _bwrap_argv(self, argv: list[str], limits: Limits, marker: str | None) -> list[str]:
        """bwrap's command line for ``argv``; without ``marker``, no shell reports the CPU time after it."""
        command: list[str] = self.memory_group.enter_argv() if self.memory_group is not None else []
        if os.geteuid() == 0:  # root's user namespaces map to host uid 0, exempt from RLIMIT_NPROC
            command += ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        command += ["bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
        command += ["--uid", str(INSIDE_UID), "--gid", str(INSIDE_GID), "--hostname", "sandbox"]
        command += ["--ro-bind", "/usr", "/usr"]
        for path in HIDDEN:  # site-specific software and settings: an empty, read-only directory instead
            command += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            host = Path("/", name)
            if host.is_symlink():
                command += ["--symlink", os.readlink(host), f"/{name}"]
            elif host.is_dir():
                command += ["--ro-bind", str(host), f"/{name}"]
        for path in HOST_ETC:
            if os.path.exists(path):
                command += ["--ro-bind", path, path]
        for name in ("passwd", "group", "hosts"):
            command += ["--ro-bind", str(self._etc / name), f"/etc/{name}"]
        command += ["--proc", "/proc", "--dev", "/dev"]
        for path in ("/tmp", "/dev/shm"):  # the only writable places besides the work dir, and size-capped
            command += ["--size", str(limits.tmp_mb * 2**20), "--tmpfs", path]
        command += ["--remount-ro", "/dev"]  # bwrap's /dev is an uncapped tmpfs
        for inside, host in self.ro_binds.items():
            command += ["--ro-bind", host, inside]
        command += ["--ro-bind", str(self._scripts), SCRIPTS]
        command += ["--bind", str(self.workdir), WORK, "--chdir", WORK]
        command += ["--remount-ro", "/"]  # the root (a tmpfs of bwrap's) too: writes go to /work or /tmp only
        cpu = math.ceil(limits.cpu_s)
        command += [
            "--",
            *(timed(marker) if marker else ()),
            "prlimit",
            f"--cpu={cpu}:{cpu + 1}",
            f"--as={limits.memory_mb * 2**20}",
            f"--nproc={limits.processes}",
            f"--fsize={limits.file_size_mb * 2**20}",
            f"--nofile={limits.open_files}",
            "--core=0",
            "--",
            *argv,
        ]
        return command

    def _run_bwrap(self, argv: list[str], stdin: str | bytes | None, limits: Limits, env: dict[str, str]) -> RunResult:
        marker = new_marker()
        memory_kills = self.memory_kills()
        if self.memory_group is not None:
            self.memory_group.set_limit(limits.run_memory_mb)
        process = subprocess.Popen(
            self._bwrap_argv(argv, limits, marker),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
        )

        kill = functools.partial(kill_sandbox, process)
        result = supervise(process, stdin, limits, kill, "bwrap", marker, DiskWatch(self.workdir, limits.disk_mb))
        # bwrap's own failures come before the timing shell started, so without its CPU report.
        if result.exit_code == 1 and result.cpu_s is None and result.stderr.startswith("bwrap: ") and not result.stdout:
            raise SandboxUnavailable(f"bubblewrap could not start the sandbox: {result.stderr.strip()[:500]}")
        if result.limit_hit is None and self.memory_kills() > memory_kills:  # its processes together, in its cgroup
            result = dataclasses.replace(result, limit_hit="memory")
        return result

    def memory_kills(self) -> int:
        """How many of this sandbox's processes the OOM killer has ended for passing ``run_memory_mb`` together."""
        return self.memory_group.oom_kills() if self.memory_group is not None else 0

    def _docker_argv(
        self, argv: list[str], limits: Limits, env: dict[str, str], name: str, stdin: bool, marker: str
    ) -> list[str]:
        cpu = math.ceil(limits.cpu_s)
        command = ["docker", "run", "--rm", "--name", name, *(["-i"] if stdin else [])]
        command += ["--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        command += ["--user", f"{self.uid}:{self.gid}", "--hostname", "sandbox", "--log-driver", "none"]
        command += ["--memory", f"{limits.memory_mb}m", "--memory-swap", f"{limits.memory_mb}m"]
        command += ["--cpus", str(limits.cpus), "--pids-limit", str(limits.processes)]
        command += ["--ulimit", f"cpu={cpu}:{cpu + 1}", "--ulimit", f"fsize={limits.file_size_mb * 2**20}"]
        command += ["--ulimit", f"nofile={limits.open_files}:{limits.open_files}", "--ulimit", "core=0"]
        command += ["--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.tmp_mb}m,mode=1777"]
        command += ["-v", f"{self.workdir}:{WORK}", "-v", f"{self._scripts}:{SCRIPTS}:ro", "-w", WORK]
        for inside, host in self.ro_binds.items():
            command += ["-v", f"{host}:{inside}:ro"]
        for key, value in env.items():
            command += ["-e", f"{key}={value}"]
        return [*command, self.image, *timed(marker), *argv]

    def _run_docker(self, argv: list[str], stdin: str | bytes | None, limits: Limits, env: dict[str, str]) -> RunResult:
        name = f"agentgym-sandbox-{uuid.uuid4().hex[:16]}"
        marker = new_marker()
        command = self._docker_argv(argv, limits, env, name, stdin is not None, marker)
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )

        def kill() -> None:  # the client, whose unread output may block the daemon, then the container
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                run_quietly(["docker", "kill", name], timeout=30)

        result = supervise(process, stdin, limits, kill, "docker", marker, DiskWatch(self.workdir, limits.disk_mb))
        if result.exit_code == 125 and result.cpu_s is None and result.stderr.startswith("docker: "):
            raise SandboxUnavailable(f"docker could not start the container: {result.stderr.strip()[:500]}")
        if result.limit_hit in ("wall", "output", "disk"):
            with contextlib.suppress(subprocess.TimeoutExpired):  # --rm may lose the race with kill
                run_quietly(["docker", "rm", "-f", name], timeout=30)
        return result

    # ---- lifetime ------------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self._closed:
            raise SandboxError("the sandbox is closed")

    def close(self) -> None:
        """Remove the private directory (and a work dir this sandbox made); safe to call twice."""
        with self._lock:
            self._closed = True
            self._finalizer()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else str(self.workdir)
        return f"Sandbox(backend={self.backend!r}, workdir={state!r})"


def kill_sandbox(process: subprocess.Popen[bytes], gone_within_s: float = 10.0) -> None:
    """SIGKILL the bwrap sandbox that ``process`` leads (its group: setpriv/bwrap and the sandbox's init, whose end
    takes every other process in it), and wait until the init has ended, so that nothing of the run is left
    writing to the work dir when this returns: bwrap itself ends at once, the init as soon as the kernel has
    ended the rest (under load, a writer went on for another 10 MB before). Waits ``gone_within_s`` at most."""
    inits = _children(process.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + gone_within_s
    for pidfd in inits:
        try:
            select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))  # readable once it has ended
        finally:
            os.close(pidfd)


def _children(pid: int) -> list[int]:
    """pidfds of ``pid``'s children (none where the kernel does not list them, or has no pidfds)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    pidfds = []
    for child in children:
        with contextlib.suppress(OSError, AttributeError):
            pidfds.append(os.pidfd_open(int(child)))
    return pidfds


class _Spawner:
    """Starts long-lived processes from one daemon thread of this process.

    bwrap's ``--die-with-parent`` is a parent-death signal, which the kernel sends when the *thread*
    that forked bwrap exits: a sandbox spawned from a worker thread would die with that thread. From
    this thread, which lives as long as the process, it dies with the process only.
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[tuple, dict, Future]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen(*args, **kwargs)``, run on the spawning thread."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():  # none yet, or this is a forked child
                self._thread = threading.Thread(target=self._serve, name="agentgym-sandbox-spawner", daemon=True)
                self._thread.start()
        future: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put((args, kwargs, future))
        return future.result()

    def _serve(self) -> None:
        while True:
            args, kwargs, future = self._requests.get()
            try:
                future.set_result(subprocess.Popen(*args, **kwargs))
            except BaseException as error:  # noqa: BLE001 (handed to the caller)
                future.set_exception(error)


_SPAWNER = _Spawner()


def _clean_up(root: Path, workdir: Path | None, memory_group: MemoryGroup | None) -> None:
    """A closed (or collected) sandbox's leftovers: its private directory, its work dir if it made it, its cgroup."""
    remove_tree(root, workdir)
    if memory_group is not None:
        memory_group.remove()
