"""What the inside of a sandbox looks like: where the work dir and the run's scripts appear, who runs
there, the environment every process starts with, and the few host files it is shown."""

from __future__ import annotations

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
