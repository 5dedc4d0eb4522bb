"""Run untrusted code: no network, a private work dir, a read-only system, and limits on everything.

The code families (HumanEval, Bash, BugFix) run what an agent wrote through one small API::

    from agentgym.sandbox import Limits, Sandbox

    with Sandbox(limits=Limits(cpu_s=5, wall_s=10)) as box:
        box.write_file("data.txt", "hello\\n")
        result = box.run("wc -c data.txt")          # a shell line, or an argv list
        result.exit_code, result.stdout, result.limit_hit   # 0, "6 data.txt\\n", None
        box.run_python("print(1 + 1)").stdout                # "2\\n"
        box.read_file("data.txt")                            # "hello\\n"
        box.clear()                                          # empty the work dir

Host-side file access (:meth:`Sandbox.path`, ``read_file``, ``write_file``) follows symlinks the
way the sandbox sees them and refuses any that lead out of the work dir, FIFOs and other
non-regular files, so that what the sandboxed code leaves behind cannot make the host read,
write or block on anything else.

Every :meth:`Sandbox.run` is a fresh sandbox around the same work dir: files persist between
runs, processes never do. Inside, the work dir is ``/work`` (read-write, the current directory
and ``$HOME``), ``/tmp`` is private and small, and the rest of the file system is a read-only
view of the system's programs only. Commands run with :data:`BASE_ENV` (``PYTHONHASHSEED=0``,
``TZ=UTC``, ``LC_ALL=C.UTF-8``), so the same command gives the same output.

Two backends:

``bwrap`` (default, embedded): bubblewrap (``apt-get install bubblewrap``). Each run gets new
user, PID, network, IPC, UTS and cgroup namespaces (``--unshare-all``): the only network is an
unconnected loopback, the process tree is invisible and unreachable from inside, and when the
run's first process exits, or this process dies (``--die-with-parent``), every process in it is
killed. The file system inside holds only ``/usr`` (with ``/bin``, ``/lib``... as on the host),
a few harmless files of ``/etc`` (``ld.so.cache``, ``alternatives``; ``passwd``, ``group`` and
``hosts`` are generated), a private ``/proc`` and a read-only ``/dev``, size-capped tmpfs at
``/tmp`` and ``/dev/shm``, the work dir at ``/work`` and the run's scripts read-only at
``/sandbox``: no home directories, no ``/root``, no project files, no ``/etc/shadow``, no
``/run`` or ``/var`` (so no docker socket), and ``/usr/local`` empty (:data:`HIDDEN`). The
root and everything but ``/work``, ``/tmp`` and ``/dev/shm`` are read-only.
``--new-session`` detaches the terminal. Limits are rlimits set by ``prlimit`` inside the
sandbox (CPU seconds, address space, processes, file size, open files, no core dumps); the wall
time and the output size are enforced here, by killing the whole sandbox.

When this process is root, the sandbox runs as the unprivileged user ``nobody`` (via
``setpriv``): a user namespace made by root maps the sandbox to uid 0 on the host, and the
kernel never applies the process limit (``RLIMIT_NPROC``) to uid 0, so a fork bomb would not
be contained. The work dir is then owned by ``nobody``; files written with
:meth:`Sandbox.write_file` are given to it too. Each run's process count is per sandbox: the
limit is set inside the run's own user namespace, so concurrent sandboxes do not share it.

``docker`` (the strong option): each run is ``docker run --rm --network none --read-only
--cap-drop ALL --security-opt no-new-privileges --memory --memory-swap --cpus --pids-limit
--ulimit ... --tmpfs /tmp -v WORKDIR:/work`` on an image with ``python3`` in it, by default
``agentgym/base:bookworm`` built offline by ``containers/base/build.sh``. Memory and processes
are then cgroup limits. Starting a container costs hundreds of milliseconds, against about ten
for bwrap.

On both, a small shell runs the command and reports its CPU time after it (``cpu_s``; ``None``
when the run was killed), so that the command is never PID 1, which ignores ``SIGXCPU``.

Which limit ended a run is reported in :attr:`RunResult.limit_hit`. ``wall`` and ``output`` are
certain (this process killed the run); ``cpu`` and ``file_size`` come from the signal that ended
it (``SIGXCPU``, ``SIGXFSZ``); ``memory`` (bwrap: ``MemoryError``, ``Cannot allocate memory``...;
docker: killed by the OOM killer) and ``processes`` (``Resource temporarily unavailable`` on
fork) are read from how a failed run ended, so a program can fake them about itself, never
about anything else.

Not contained by the bwrap backend: the disk space of the work dir (each file is capped by
``file_size_mb``, their number is not), CPU share (a run may use every core until its CPU-time
limit), and kernel exploits (there is no seccomp filter; use the docker backend or a VM for
hostile code at scale).

Every :class:`Sandbox` is independent and may be used from its own thread; calls on one
sandbox are serialised.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

Backend = Literal["bwrap", "docker"]
LimitName = Literal["wall", "cpu", "memory", "output", "file_size", "processes"]
BACKENDS: tuple[Backend, ...] = ("bwrap", "docker")
DEFAULT_IMAGE = os.environ.get("AGENTGYM_SANDBOX_IMAGE", "agentgym/base:bookworm")

#: Where the work dir and the run's scripts appear inside the sandbox.
WORK = "/work"
SCRIPTS = "/sandbox"
#: The user the sandboxed code runs as inside a bwrap sandbox.
INSIDE_UID = INSIDE_GID = 1000
#: The host user a root process runs sandboxes as (``nobody``).
UNPRIVILEGED_UID = UNPRIVILEGED_GID = 65534
#: The environment every sandboxed process starts with (``run(env=...)`` adds to it).
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
    "HOME": WORK,
    "USER": "sandbox",
    "LOGNAME": "sandbox",
    "SHELL": "/bin/sh",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "TMPDIR": "/tmp",
    "TERM": "dumb",
    "PYTHONHASHSEED": "0",  # same hashes, so the same set order, in every run
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "MALLOC_ARENA_MAX": "2",  # fewer malloc arenas: less address space used against RLIMIT_AS
}
#: Host directories under /usr that the bwrap sandbox sees empty: /usr/local holds what this machine's
#: administrators added (tools, credentials helpers, .pth hooks), not the distribution's system.
HIDDEN = ("/usr/local",)
#: Files of the host's /etc that the bwrap sandbox sees (when they exist): no secrets in them.
HOST_ETC = ("/etc/ld.so.cache", "/etc/alternatives")
PASSWD = f"root:x:0:0:root:/root:/bin/sh\nsandbox:x:{INSIDE_UID}:{INSIDE_GID}:sandbox:{WORK}:/bin/sh\n"
PASSWD += "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = f"root:x:0:\nsandbox:x:{INSIDE_GID}:\nnogroup:x:65534:\n"
HOSTS = "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"

#: How a failed run's stderr shows which limit ended it (checked in this order).
MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory", "memory exhausted")
FILE_SIZE_MARKERS = ("File too large", "File size limit exceeded")
PROCESS_MARKERS = ("Resource temporarily unavailable", "fork: retry", "Cannot fork", "can't fork")
#: After the first process exits, how long to keep reading output that other processes hold open.
DRAIN_GRACE_S = 0.5
READ_CHUNK = 65_536
#: Output read beyond ``output_bytes`` for the CPU-time report that ends stderr (see ``_timed``).
TIMES_RESERVE = 256


class SandboxError(RuntimeError):
    """A sandbox could not do what was asked (a bad path, a closed sandbox)."""


class SandboxUnavailable(SandboxError):
    """The backend cannot run here (bwrap or docker missing, no namespaces, no image); says how to fix it."""


@dataclass(frozen=True)
class Limits:
    """What one run may use. Exceeding one ends the run and sets :attr:`RunResult.limit_hit`.

    ``memory_mb`` is the address space of each process (bwrap: ``RLIMIT_AS``, so programs that
    reserve much virtual memory, such as the JVM or Go, need more) or the container's memory
    (docker). ``processes`` counts processes and threads, the sandbox's own init included.
    ``cpu_s`` is per process (bwrap) and rounded up to whole seconds. ``output_bytes`` caps
    stdout and stderr together; ``tmp_mb`` the private ``/tmp`` (and ``/dev/shm``); ``cpus`` the CPU share of a
    docker container (bwrap has none).
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


# ---- availability checks (once per process) ----------------------------------------------------

_checked: dict[tuple[str, ...], str | None] = {}
_checked_lock = threading.Lock()


def _check_once(key: tuple[str, ...], probe: Any) -> None:
    """Run ``probe()`` (which returns an error message or None) once per key; raise what it said."""
    with _checked_lock:
        if key not in _checked:
            _checked[key] = probe()
        problem = _checked[key]
    if problem:
        raise SandboxUnavailable(problem)


def _run_quietly(argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _probe_bwrap() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    if shutil.which("prlimit") is None:
        return "prlimit is not installed: apt-get install util-linux"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv is not installed (needed to drop root before bwrap): apt-get install util-linux"
    return None


def _probe_docker(image: str) -> str | None:
    if shutil.which("docker") is None:
        return "docker is not installed: apt-get install docker.io (and start dockerd)"
    try:
        info = _run_quietly(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
    except subprocess.TimeoutExpired:
        return "dockerd does not answer (docker info timed out)"
    if info.returncode != 0:
        return f"cannot reach dockerd ({info.stderr.strip()[:200]}); start it, e.g. 'dockerd > /tmp/dockerd.log 2>&1 &'"
    if _run_quietly(["docker", "image", "inspect", image]).returncode != 0:
        return f"docker image {image!r} not found: build it with containers/base/build.sh"
    return None


def available(backend: Backend = "bwrap", image: str = DEFAULT_IMAGE) -> str | None:
    """``None`` when ``backend`` can run here, else why not (and how to fix it)."""
    try:
        _check_backend(backend, image)
    except SandboxUnavailable as error:
        return str(error)
    return None


def _check_backend(backend: Backend, image: str) -> None:
    if backend == "bwrap":
        _check_once(("bwrap",), _probe_bwrap)
    elif backend == "docker":
        _check_once(("docker", image), lambda: _probe_docker(image))
    else:
        raise ValueError(f"unknown sandbox backend {backend!r}; expected one of {BACKENDS}")


# ---- the sandbox ---------------------------------------------------------------------------------


@dataclass
class _Outputs:
    """Bytes read so far from stdout and stderr, capped together at ``limit``."""

    limit: int
    chunks: dict[str, list[bytes]] = field(default_factory=lambda: {"stdout": [], "stderr": []})
    size: int = 0
    truncated: bool = False

    def add(self, stream: str, data: bytes) -> bool:
        """Keep ``data`` (as much as fits); ``False`` once the cap is exceeded."""
        room = self.limit - self.size
        if len(data) > room:
            data, self.truncated = data[:room], True
        self.chunks[stream].append(data)
        self.size += len(data)
        return not self.truncated


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
        _check_backend(backend, image)
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
            if backend == "bwrap" and not _searchable_by_all(self.workdir.parent):
                shutil.rmtree(self._root)
                raise SandboxError(
                    f"the sandbox runs as nobody (uid {self.uid}), which cannot reach {self.workdir}: "
                    "use a work dir whose parent directories others may enter (e.g. under /tmp)"
                )
            _chown_tree(self.workdir, self.uid, self.gid)
        self._finalizer = weakref.finalize(self, _remove_tree, self._root, self.workdir if owned else None)

    # ---- files -------------------------------------------------------------------------------

    def path(self, relpath: str | os.PathLike[str]) -> Path:
        """The host path of ``relpath`` in the work dir, with symlinks resolved as the sandbox sees them.

        Absolute paths are taken inside the sandbox (``/work/a`` is ``a``). A symlink the
        sandboxed code made is followed as it would be inside (``/work/...`` targets stay in the
        work dir); one that leads anywhere else raises :class:`SandboxError`, so that reading or
        writing through the host path can never reach a host file.
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
            candidate = self.workdir.joinpath(*resolved, part)
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
        return self.workdir.joinpath(*resolved)

    def write_file(self, relpath: str | os.PathLike[str], data: str | bytes, mode: int | None = None) -> Path:
        """Write a file in the work dir (parents made as needed); returns its host path."""
        self._require_open()
        with self._lock:
            target = self.path(relpath)
            if target == self.workdir:
                raise SandboxError("cannot write the work dir itself")
            self._make_parents(target.parent)
            payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
            with _open_regular(target, flags, 0o644 if mode is None else mode) as handle:
                handle.write(payload)
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)  # exactly mode, whatever the umask
                if os.geteuid() == 0:
                    os.fchown(handle.fileno(), self.uid, self.gid)
            return target

    def read_file(self, relpath: str | os.PathLike[str], *, binary: bool = False) -> str | bytes:
        """A file of the work dir (UTF-8 text with invalid bytes replaced, or bytes)."""
        self._require_open()
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        with self._lock, _open_regular(self.path(relpath), flags) as handle:
            data = handle.read()
        return data if binary else data.decode("utf-8", "replace")

    def clear(self) -> None:
        """Empty the work dir (links are removed, never followed)."""
        self._require_open()
        with self._lock:
            for entry in os.scandir(self.workdir):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, onerror=_make_writable_and_retry)
                else:
                    os.unlink(entry.path)

    def _make_parents(self, directory: Path) -> None:
        missing = []
        while not directory.exists() and directory != self.workdir:
            missing.append(directory)
            directory = directory.parent
        for path in reversed(missing):
            path.mkdir(mode=0o755)
            if os.geteuid() == 0:
                os.chown(path, self.uid, self.gid, follow_symlinks=False)

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

    def _bwrap_argv(self, argv: list[str], limits: Limits, marker: str) -> list[str]:
        command: list[str] = []
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
            *_timed(marker),
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
        marker = _marker()
        process = subprocess.Popen(
            self._bwrap_argv(argv, limits, marker),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
        )

        def kill() -> None:  # the whole group: setpriv/bwrap and the sandbox's init, which takes the rest
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

        result = _supervise(process, stdin, limits, kill, "bwrap", marker)
        # bwrap's own failures come before the timing shell started, so without its CPU report.
        if result.exit_code == 1 and result.cpu_s is None and result.stderr.startswith("bwrap: ") and not result.stdout:
            raise SandboxUnavailable(f"bubblewrap could not start the sandbox: {result.stderr.strip()[:500]}")
        return result

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
        return [*command, self.image, *_timed(marker), *argv]

    def _run_docker(self, argv: list[str], stdin: str | bytes | None, limits: Limits, env: dict[str, str]) -> RunResult:
        name = f"agentgym-sandbox-{uuid.uuid4().hex[:16]}"
        marker = _marker()
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
                _run_quietly(["docker", "kill", name], timeout=30)

        result = _supervise(process, stdin, limits, kill, "docker", marker)
        if result.exit_code == 125 and result.cpu_s is None and result.stderr.startswith("docker: "):
            raise SandboxUnavailable(f"docker could not start the container: {result.stderr.strip()[:500]}")
        if result.limit_hit in ("wall", "output"):
            with contextlib.suppress(subprocess.TimeoutExpired):  # --rm may lose the race with kill
                _run_quietly(["docker", "rm", "-f", name], timeout=30)
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


def _supervise(
    process: subprocess.Popen[bytes],
    stdin: str | bytes | None,
    limits: Limits,
    kill: Any,
    backend: Backend,
    marker: str,
) -> RunResult:
    """Feed stdin, read output under the caps, kill at the wall limit, reap and report.

    The run's stderr ends with ``marker`` and the CPU times of the run (see :func:`_timed`).
    """
    start = time.monotonic()
    deadline = start + limits.wall_s
    outputs = _Outputs(limits.output_bytes + TIMES_RESERVE)  # room for the CPU-time report
    killed_for: LimitName | None = None
    pending = b""
    if process.stdin is not None:
        pending = stdin.encode("utf-8", "surrogateescape") if isinstance(stdin, str) else bytes(stdin or b"")
        os.set_blocking(process.stdin.fileno(), False)
    pidfd = _pidfd(process.pid)
    selector = selectors.DefaultSelector()
    try:
        assert process.stdout is not None and process.stderr is not None
        selector.register(process.stdout, selectors.EVENT_READ, "stdout")
        selector.register(process.stderr, selectors.EVENT_READ, "stderr")
        if process.stdin is not None:
            if pending:
                selector.register(process.stdin, selectors.EVENT_WRITE, "stdin")
            else:
                process.stdin.close()
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ, "exit")
        exited_at: float | None = None
        pipes = 2
        # Until the output ends, or the process has exited and the grace to drain its output is over.
        while pipes and killed_for is None:
            now = time.monotonic()
            if exited_at is None and pidfd is None and process.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_GRACE_S:
                break  # the run is over; something it left behind holds the pipes open
            if now >= deadline:
                killed_for = "wall"
                break
            timeout = deadline - now
            if exited_at is not None:
                timeout = min(timeout, exited_at + DRAIN_GRACE_S - now)
            elif pidfd is None:
                timeout = min(timeout, 0.02)
            for key, _ in selector.select(timeout):
                if key.data == "exit":
                    selector.unregister(key.fileobj)
                    exited_at = time.monotonic()
                elif key.data == "stdin":
                    try:
                        pending = pending[os.write(key.fd, pending[:READ_CHUNK]) :]
                    except BlockingIOError:
                        pass
                    except OSError:  # the command closed its stdin
                        pending = b""
                    if not pending:
                        selector.unregister(key.fileobj)
                        _close_quietly(process.stdin)
                else:
                    data = os.read(key.fd, READ_CHUNK)
                    if not data:
                        selector.unregister(key.fileobj)
                        pipes -= 1
                    elif not outputs.add(key.data, data):
                        killed_for = "output"
                        break
        if killed_for is None:  # the output has ended: wait for the exit
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                killed_for = "wall"
        if killed_for is not None:
            kill()
    finally:
        selector.close()
        for stream in (process.stdin, process.stdout, process.stderr):
            _close_quietly(stream)
        if pidfd is not None:
            os.close(pidfd)
    status = _reap(process)
    stdout = b"".join(outputs.chunks["stdout"])
    stderr, cpu_s = _split_cpu_times(b"".join(outputs.chunks["stderr"]), marker)
    excess = len(stdout) + len(stderr) - limits.output_bytes
    if excess > 0:  # cut stdout's end first: stderr tends to hold the error that explains the run
        cut = min(excess, len(stdout))
        stdout, stderr = stdout[: len(stdout) - cut], stderr[: len(stderr) - (excess - cut)]
        killed_for = killed_for or "output"
    wall_s = time.monotonic() - start
    return RunResult(
        exit_code=status,
        stdout=stdout.decode("utf-8", "replace"),
        stderr=stderr.decode("utf-8", "replace"),
        wall_s=wall_s,
        cpu_s=cpu_s,
        limit_hit=killed_for or _limit_from(status, stderr.decode("utf-8", "replace"), backend),
        truncated=outputs.truncated or excess > 0,
        backend=backend,
    )


def _limit_from(status: int, stderr: str, backend: Backend) -> LimitName | None:
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


def _reap(process: subprocess.Popen[bytes]) -> int:
    """Wait for the process; its exit status, shell style (128 + N for signal N)."""
    code = process.wait()
    return 128 - code if code < 0 else code


_TIMES = re.compile(r"(\d+)m([\d.]+)s")


def _marker() -> str:
    return f"agentgym-sandbox-cpu-{uuid.uuid4().hex}"


def _timed(marker: str) -> list[str]:
    """The shell that runs a command and then reports its CPU time on stderr.

    bwrap exits before reaping the sandbox's processes, and docker's are not our children, so
    ``wait4`` cannot see their CPU time; the shell's ``times`` (its children's user and system
    time) after a line holding ``marker`` can. It is not PID 1, so the command isn't either: PID 1
    ignores the SIGXCPU and SIGXFSZ that enforce the CPU-time and file-size limits.
    """
    script = 'marker=$1; shift; "$@"; status=$?; printf \'\\n%s\\n\' "$marker" >&2; times >&2; exit $status'
    return ["/bin/sh", "-c", script, "sandbox", marker]


def _split_cpu_times(stderr: bytes, marker: str) -> tuple[bytes, float | None]:
    """The command's own stderr, and the CPU seconds the shell of :func:`_timed` reported (None if absent)."""
    before, found, after = stderr.rpartition(f"\n{marker}\n".encode())
    if not found:
        return stderr.split(f"\n{marker}".encode(), 1)[0], None
    times = _TIMES.findall(after.decode("ascii", "replace"))
    if len(times) != 4:
        return before, None
    return before, round(sum(int(minutes) * 60 + float(seconds) for minutes, seconds in times), 6)


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux 5.3+), or ``None``."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _close_quietly(stream: Any) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()


def _open_regular(path: Path, flags: int, mode: int = 0o644) -> Any:
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


def _searchable_by_all(directory: Path) -> bool:
    """Whether every user may enter ``directory`` and each of its parents."""
    return all(os.stat(path).st_mode & 0o001 for path in (directory, *directory.parents))


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid, follow_symlinks=False)
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories + files:
            os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)


def _make_writable_and_retry(function: Any, path: str, _: Any) -> None:
    """``shutil.rmtree``'s error handler: give back the permissions the sandboxed code removed, retry."""
    with contextlib.suppress(OSError):
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
        function(path)


def _remove_tree(root: Path, workdir: Path | None) -> None:
    """Delete the sandbox's private directory, even where the sandboxed code removed permissions."""
    for path in (workdir, root):
        if path is not None and path.exists():
            shutil.rmtree(path, onerror=_make_writable_and_retry)
