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

Which limit ended a run is reported in :attr:`RunResult.limit_hit`. ``wall``, ``output`` and ``disk`` are
certain (this process killed the run; ``disk``: the work dir held more than ``disk_mb``, :mod:`.disk`);
``cpu`` and ``file_size`` come from the signal that ended it (``SIGXCPU``, ``SIGXFSZ``); ``memory`` (bwrap:
``MemoryError``, ``Cannot allocate memory``...; docker: killed by the OOM killer) and ``processes``
(``Resource temporarily unavailable`` on fork) are read from how a failed run ended, so a program can fake
them about itself, never about anything else.

The memory of a bwrap run as a whole (``memory_mb`` is per process: a run could hold ``processes`` times as much)
is capped at ``run_memory_mb`` where the host lets this process make cgroups (:mod:`~agentgym.sandbox.cgroup`: a
memory cgroup per sandbox, which every run and spawned process starts in; the OOM killer ends a run's processes
past it, and the run reports ``memory``); elsewhere it is not. Not contained by the bwrap backend: CPU share (a run
may use every core until its CPU-time limit), and kernel exploits (there is no seccomp filter; use the docker
backend or a VM for hostile code at scale).

Every :class:`Sandbox` is independent and may be used from its own thread; calls on one
sandbox are serialised.

The package, one concern a module: :mod:`~agentgym.sandbox.limits` (:class:`Limits`,
:class:`RunResult`, which limit ended a run), :mod:`~agentgym.sandbox.layout` (what the inside
looks like: ``/work``, the users, :data:`BASE_ENV`), :mod:`~agentgym.sandbox.probes` (whether a
backend can run here), :mod:`~agentgym.sandbox.box` (:class:`Sandbox` and its two backends),
:mod:`~agentgym.sandbox.supervise` (running one sandboxed process to its end, CPU-time
accounting), :mod:`~agentgym.sandbox.disk` (the work dir's disk quota), :mod:`~agentgym.sandbox.files`
(safe host-side file access) and :mod:`~agentgym.sandbox.errors` (:class:`SandboxError`, :class:`SandboxUnavailable`).

Floor: env machinery; it imports only its own floor and those below it: contract (docs/architecture.md).
"""

from agentgym.sandbox.box import Sandbox
from agentgym.sandbox.errors import SandboxError, SandboxUnavailable
from agentgym.sandbox.layout import (
    BASE_ENV,
    HIDDEN,
    INSIDE_GID,
    INSIDE_UID,
    SCRIPTS,
    UNPRIVILEGED_GID,
    UNPRIVILEGED_UID,
    WORK,
)
from agentgym.sandbox.limits import BACKENDS, Backend, LimitName, Limits, RunResult
from agentgym.sandbox.probes import DEFAULT_IMAGE, available

__all__ = [
    "BACKENDS",
    "BASE_ENV",
    "DEFAULT_IMAGE",
    "HIDDEN",
    "INSIDE_GID",
    "INSIDE_UID",
    "SCRIPTS",
    "UNPRIVILEGED_GID",
    "UNPRIVILEGED_UID",
    "WORK",
    "Backend",
    "LimitName",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "available",
]
