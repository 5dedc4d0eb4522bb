"""A self-hosted web application that tasks run on: install, seed, run, and per-env tenants.

Each site (``shop``, ``forum``, ``wiki``, ``forge``, ``mail``) is a sub-package of this family
with a :class:`Site` subclass. A site runs once per machine (or container) and is shared by
every env copy there: its server processes are started on demand, detached, by the first env
that needs them (under a file lock, so concurrent processes start it once) and keep running.

Each env copy leases a *tenant* (:func:`lease_tenant`): a number that names its own isolated
state inside the shared site (its own database, or its own mailbox), reached at its own host
name (``http://t3.shop.localhost:8701/``: Chromium resolves every ``*.localhost`` to loopback,
and the site routes a request to the tenant's state by its ``Host``). ``reset_tenant`` restores
a tenant to the *golden* state: the content generated from the seed, loaded once and kept as a
snapshot.

Everything lives under :func:`webapps_home` (``$AGENTGYM_WEBAPPS_HOME``, default
``$AGENTGYM_CACHE/webapps`` = ``~/.cache/agentgym/webapps``): ``<site>/venv`` (a site's own
Python), ``<site>/golden`` (its snapshot), ``<site>/run`` (pid files, logs, sockets).
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from agentgym.utils.files import cache_root, file_lock

#: How many tenants a site offers (the most env copies one machine runs at once).
MAX_TENANTS = 256
#: The seed of the golden content (every site generates from it).
DEFAULT_SEED = 0


class SiteError(RuntimeError):
    """A site could not be installed, seeded, started or reset; the message says why and where the log is."""


def webapps_home() -> Path:
    """Where sites keep their venvs, snapshots and run files (see the module docstring)."""
    if os.environ.get("AGENTGYM_WEBAPPS_HOME"):
        return Path(os.environ["AGENTGYM_WEBAPPS_HOME"])
    return cache_root() / "webapps"


def reachable_home(home: Path, name: str) -> Path:
    """Where a service run under another user (PostgreSQL, Dovecot) can keep its files: ``home``, or,
    when root runs it and a parent of ``home`` is closed to other users (root's own home is),
    ``/var/lib/agentgym-webapps/<name>-<hash of home>``."""
    if os.geteuid() != 0:
        return home
    for parent in [home, *home.parents]:
        if parent.exists() and not parent.stat().st_mode & 0o001:
            return Path("/var/lib/agentgym-webapps") / f"{name}-{hashlib.sha256(str(home).encode()).hexdigest()[:8]}"
    return home


class TenantLease:
    """Tenant number ``number`` of a site family, held (by an open ``flock``) until :meth:`release`."""

    def __init__(self, number: int, handle: Any) -> None:
        self.number, self._handle = number, handle

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._handle, fcntl.LOCK_UN)
                self._handle.close()
            self._handle = None


def lease_tenant(home: Path | None = None) -> TenantLease:
    """The lowest tenant number no live process holds; it is freed when released or its process ends.

    One number serves every site: an env leases ``t3`` and uses tenant 3 of each site it needs.
    """
    folder = (home or webapps_home()) / "tenants"
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(MAX_TENANTS):
        handle = open(folder / f"{number}.lock", "a+")  # noqa: SIM115 (held open: the lease is the lock)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return TenantLease(number, handle)
    raise SiteError(f"all {MAX_TENANTS} tenants are in use on this machine (close some envs)")


def wait_for_http(
    url: str, *, timeout_s: float, log: Path | None = None, headers: Mapping[str, str] | None = None
) -> None:
    """Wait until ``url`` answers any HTTP status; :class:`SiteError` (with the log's end) if it does not in time."""
    deadline = time.monotonic() + timeout_s
    request = urllib.request.Request(url, headers=dict(headers or {}))
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except (OSError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise SiteError(f"{url} did not answer within {timeout_s:g} s{log_tail(log)}") from None
            time.sleep(0.2)


def log_tail(log: Path | None, lines: int = 20) -> str:
    """The last lines of ``log``, to append to an error message (``""`` without one)."""
    if log is None or not log.exists():
        return ""
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return f"; the end of {log}:\n" + "\n".join(tail)


def run(command: Sequence[str], *, log: Path | None = None, **kwargs: Any) -> None:
    """Run a setup command to completion; :class:`SiteError` with its output when it fails."""
    result = subprocess.run(list(command), capture_output=True, text=True, **kwargs)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as handle:
            handle.write(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}\n")
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()[-3000:]
        raise SiteError(f"{' '.join(command)} failed (exit {result.returncode}):\n{output}")


def start_daemon(command: Sequence[str], *, pid_file: Path, log: Path, **kwargs: Any) -> int:
    """Start ``command`` detached (its own session, output to ``log``), record its pid; return the pid."""
    log.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as output:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            **kwargs,
        )
    pid_file.write_text(str(process.pid))
    return process.pid


def daemon_alive(pid_file: Path) -> bool:
    """Whether the process recorded in ``pid_file`` is still running."""
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    # A zombie (exited, not yet reaped by a parent that is us) is not alive.
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True


def stop_daemon(pid_file: Path, *, timeout_s: float = 10.0) -> None:
    """Stop the process group recorded in ``pid_file`` (TERM, then KILL) and remove the file."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while daemon_alive(pid_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        if daemon_alive(pid_file):
            os.killpg(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)


def content_digest(content: Any) -> str:
    """A short hash of JSON-serialisable content (names a golden snapshot built from it)."""
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


class Site(abc.ABC):
    """One web application (see the module docstring). Subclasses implement the abstract methods.

    Lifecycle, all idempotent: :meth:`ensure_ready` installs (:meth:`install`), seeds the
    golden snapshot from :meth:`content` (:meth:`build_golden`) and starts the servers
    (:meth:`start`) when needed, under a lock. Tenants: :meth:`reset_tenant` (< 2 s),
    :meth:`base_url`, :meth:`session_cookies`; :meth:`state_digest` for tests.
    """

    #: The site's short name, its sub-package and the host name part: ``shop``.
    name: ClassVar[str]
    #: What it is, for instructions and docs: ``"the shop (django-oscar)"``.
    title: ClassVar[str]
    #: The loopback port its web server listens on (``$AGENTGYM_WEBAPPS_<NAME>_PORT`` overrides).
    default_port: ClassVar[int]
    #: Debian packages it runs on (installed by containers/setup-host.sh, and in its image).
    apt_packages: ClassVar[tuple[str, ...]] = ()
    #: A JavaScript function that is true once the site's page has filled itself in (the env waits for
    #: it after opening a task's start page, so that the first observation is the same every time).
    ready_js: ClassVar[str] = "() => true"

    def __init__(self, home: Path | None = None, seed: int = DEFAULT_SEED) -> None:
        self.home = (home or webapps_home()) / self.name
        self.seed = seed
        self.port = int(os.environ.get(f"AGENTGYM_WEBAPPS_{self.name.upper()}_PORT", self.default_port))
        self._content: dict[str, Any] | None = None

    # ---- paths --------------------------------------------------------------------------

    @property
    def run_dir(self) -> Path:
        """Pid files, logs and sockets of the running site."""
        return self.home / "run"

    @property
    def golden_dir(self) -> Path:
        """The snapshot of the seeded state."""
        return self.home / "golden"

    # ---- content ------------------------------------------------------------------------

    def content(self) -> dict[str, Any]:
        """The site's content generated from ``seed`` (cached in memory and on disk)."""
        if self._content is None:
            cache = self.home / f"content-{self.seed}-{self.generator_version()}.json"
            if cache.exists():
                self._content = json.loads(cache.read_text())
            else:
                self._content = self.generate(self.seed)
                cache.parent.mkdir(parents=True, exist_ok=True)
                partial = cache.with_suffix(f".{os.getpid()}.tmp")
                partial.write_text(json.dumps(self._content))
                partial.replace(cache)
        return self._content

    def generator_version(self) -> str:
        """Changes whenever the generator's code or data change (default: a hash of the site's package files;
        a site narrows it to what its content and seeding depend on, so that editing a template keeps the snapshot)."""
        package = Path(sys.modules[type(self).__module__].__file__ or "").parent
        digest = hashlib.sha256()
        for path in sorted(package.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".txt", ".php", ".ini", ".conf"):
                digest.update(path.relative_to(package).as_posix().encode() + path.read_bytes())
        return digest.hexdigest()[:12]

    @abc.abstractmethod
    def generate(self, seed: int) -> dict[str, Any]:
        """Deterministic, JSON-serialisable content from ``seed`` (what :meth:`build_golden` loads)."""

    # ---- lifecycle ----------------------------------------------------------------------

    def ensure_ready(self) -> None:
        """Install, seed and start the site if that is not done yet (safe from many processes at once).

        A site running from an older install or snapshot (its code changed since) is stopped,
        brought up to date and started again.
        """
        if self.running() and self._up_to_date():
            return
        with file_lock(self.home.parent / f"{self.name}.lock"):
            if self.running():
                if self._up_to_date():
                    return
                self.stop()
            install_version, golden_version = self._versions
            marker = self.home / "installed"
            if not marker.exists() or marker.read_text() != install_version:
                self.install()
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(install_version)
            golden_marker = self.golden_dir / "built"
            if not golden_marker.exists() or golden_marker.read_text() != golden_version:
                if self.golden_dir.exists():
                    shutil.rmtree(self.golden_dir)
                self.golden_dir.mkdir(parents=True)
                self.build_golden(self.content())
                golden_marker.write_text(golden_version)
            self.start()

    @functools.cached_property
    def _versions(self) -> tuple[str, str]:
        """(install version, golden snapshot version) of this code."""
        install = self.install_version()
        return install, f"{self.seed}-{self.generator_version()}-{install}"

    def _up_to_date(self) -> bool:
        install_version, golden_version = self._versions
        try:
            return (self.home / "installed").read_text() == install_version and (
                self.golden_dir / "built"
            ).read_text() == golden_version
        except OSError:
            return False

    def install_version(self) -> str:
        """Changes when the install recipe changes (reinstall then); default: the generator version."""
        return self.generator_version()

    @abc.abstractmethod
    def install(self) -> None:
        """Make the site runnable on this machine (its venv, config files); Debian packages are assumed."""

    @abc.abstractmethod
    def build_golden(self, content: dict[str, Any]) -> None:
        """Load ``content`` into a fresh instance and keep it as the snapshot under :attr:`golden_dir`."""

    @abc.abstractmethod
    def start(self) -> None:
        """Start the site's servers detached and wait until they answer."""

    @abc.abstractmethod
    def running(self) -> bool:
        """Whether the site's servers are up (cheap: called before every episode)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the site's servers."""

    # ---- tenants ------------------------------------------------------------------------

    def host(self, tenant: int) -> str:
        """The tenant's host name: ``t3.shop.localhost``."""
        return f"t{tenant}.{self.name}.localhost"

    def base_url(self, tenant: int) -> str:
        """Where the tenant's copy of the site is: ``http://t3.shop.localhost:8701``."""
        return f"http://{self.host(tenant)}:{self.port}"

    @abc.abstractmethod
    def reset_tenant(self, tenant: int) -> None:
        """Make the tenant's state equal the golden snapshot (creating it on first use); < 2 s."""

    def session_cookies(self, tenant: int, user: str) -> list[dict[str, Any]]:
        """Playwright cookies that log the browser in as ``user`` (a task's ``logins``) when an episode starts.

        Sites seed a session per user into the golden state, so every tenant has it and this is
        a cookie, not a login round trip.
        """
        raise SiteError(f"{self.title} has no seeded sessions (user {user!r})")

    @abc.abstractmethod
    def state_digest(self, tenant: int) -> str:
        """A checksum of the tenant's whole state (database rows, mailbox files), for tests."""
