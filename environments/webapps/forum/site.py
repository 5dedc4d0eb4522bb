"""The forum: Misago 0.39.6 (threads, replies, likes, moderation) on the shared PostgreSQL cluster.

- Install: the site's own venv (``<home>/forum/venv``) from ``requirements.txt`` (exact pins),
  Misago's static files (its React front end) collected into ``<home>/forum/static``, and an
  empty migrated database ``forum_migrated`` (made once per install).
- Golden: ``forum_migrated`` copied to ``forum_build`` and filled from the generated content by
  ``app/seed.py`` (bulk ORM inserts, with every counter Misago keeps, and one signed-in session
  per user); then copied to ``forum_golden``.
- Serve: one gunicorn (workers x threads) on ``127.0.0.1:8702`` for every tenant; the Django
  project in ``app/forumproject`` routes ``t<N>.forum.localhost`` to the database ``forum_t<N>``
  (tenancy.py), with no shared cache and sessions in the tenant's database. Misago's background
  tasks (Celery) run eagerly inside the request: no broker, no worker.
- Reset: ``forum_t<N>`` = a template copy of ``forum_golden``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

from agentgym.environments.webapps.forum import content as forum_content
from agentgym.environments.webapps.postgres import Postgres
from agentgym.environments.webapps.site import (
    DEFAULT_SEED,
    Site,
    SiteError,
    daemon_alive,
    run,
    start_daemon,
    stop_daemon,
    wait_for_http,
)

PACKAGE = Path(__file__).parent
APP = PACKAGE / "app"
GOLDEN_DB = "forum_golden"
MIGRATED_DB = "forum_migrated"
BUILD_DB = "forum_build"
#: Tables Misago writes on every page view (who is online, cached ban checks, the session's
#: expiry): left out of the state digest, so viewing pages is not a change of state.
VIEW_BOOKKEEPING = ("misago_users_online", "misago_users_bancache", "django_session")


def _files_digest(*paths: Path) -> str:
    digest = hashlib.sha256()
    for root in paths:
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".txt", ".yaml", ".json") and "__pycache__" not in path.parts:
                digest.update(path.relative_to(PACKAGE).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def tenant_database(tenant: int) -> str:
    """The PostgreSQL database holding tenant ``tenant``'s forum."""
    return f"forum_t{tenant}"


class ForumSite(Site):
    """Misago's forum (see the module docstring); tenants are databases ``forum_t<N>``."""

    name = "forum"
    title = "the forum (Misago)"
    default_port = 8702
    apt_packages: ClassVar[tuple[str, ...]] = ("postgresql", "python3-venv")
    #: Server processes: gunicorn workers and threads per worker.
    workers, threads = 2, 8
    #: Misago's React pages fetch some of their content after the page loads (a search's results read
    #: "Loading results..." until its API call answers; lists show a spinner): none of that on screen.
    ready_js: ClassVar[str] = (
        "() => ![...document.querySelectorAll('p.lead')].some(p => p.textContent.startsWith('Loading'))"
        " && ![...document.querySelectorAll('.loader, .threads-list-loader, .panel-body-loading,"
        " .list-group-loading-message')].some(e => e.offsetParent !== null)"
    )

    def __init__(self, home: Path | None = None, seed: int = DEFAULT_SEED) -> None:
        super().__init__(home, seed)
        self.postgres = Postgres(home)
        self._sessions: dict[str, str] | None = None

    # ---- content ------------------------------------------------------------------------

    def generate(self, seed: int) -> dict[str, Any]:
        return forum_content.generate(seed)

    def generator_version(self) -> str:
        """The generator, its data and the seeder (not the templates: editing them keeps the golden)."""
        return _files_digest(PACKAGE / "content.py", PACKAGE / "data", APP / "seed.py")

    def install_version(self) -> str:
        return _files_digest(PACKAGE / "requirements.txt", APP / "forumproject", APP / "manage.py")

    # ---- lifecycle ----------------------------------------------------------------------

    @property
    def venv(self) -> Path:
        return self.home / "venv"

    @property
    def log(self) -> Path:
        return self.run_dir / "forum.log"

    @property
    def pid_file(self) -> Path:
        return self.run_dir / "gunicorn.pid"

    def _environment(self, database: str = GOLDEN_DB) -> dict[str, str]:
        """The environment the forum's Python runs in (settings.py reads it)."""
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "forumproject.settings",
            "PYTHONPATH": str(APP),
            "FORUM_HOME": str(self.home),
            "FORUM_DB_HOST": str(self.postgres.socket_dir),
            "FORUM_DB_PORT": str(self.postgres.port),
            "FORUM_DB_NAME": database,
            "FORUM_HOST_SUFFIX": f"{self.name}.localhost",
        }

    def _manage(self, *arguments: str, database: str = GOLDEN_DB) -> None:
        run(
            [str(self.venv / "bin" / "python"), str(APP / "manage.py"), *arguments],
            log=self.run_dir / "install.log",
            env=self._environment(database),
            cwd=APP,
        )

    def install(self) -> None:
        """The venv (pip reads PIP_NO_INDEX/PIP_FIND_LINKS for offline builds), static files, a migrated database."""
        self.home.mkdir(parents=True, exist_ok=True)
        log = self.run_dir / "install.log"
        if not (self.venv / "bin" / "python").exists():
            run([sys.executable, "-m", "venv", str(self.venv)], log=log)
        run(
            [str(self.venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(PACKAGE / "requirements.txt")],
            log=log,
        )
        self._manage("collectstatic", "--noinput", "-v0")
        self.postgres.ensure_running()
        self.postgres.drop_database(MIGRATED_DB)
        with self.postgres.connect("postgres") as connection:
            connection.execute(f'CREATE DATABASE "{MIGRATED_DB}"')
        self._manage("migrate", "--noinput", "-v0", database=MIGRATED_DB)

    def build_golden(self, content: dict[str, Any]) -> None:
        """Seed a copy of the migrated database from ``content``; it becomes ``forum_golden``."""
        self.postgres.ensure_running()
        self.postgres.copy_database(MIGRATED_DB, BUILD_DB)
        content_file = self.golden_dir / "content.json"
        content_file.write_text(json.dumps(content))
        run(
            [
                str(self.venv / "bin" / "python"),
                str(APP / "seed.py"),
                str(content_file),
                str(self.golden_dir / "sessions.json"),
                str(self.seed),
            ],
            log=self.run_dir / "install.log",
            env=self._environment(BUILD_DB),
            cwd=APP,
        )
        content_file.unlink()
        self.postgres.copy_database(BUILD_DB, GOLDEN_DB)
        self.postgres.drop_database(BUILD_DB)
        # Tenants copied from an older golden are stale: they are made again on their next reset.
        with self.postgres.connect("postgres") as connection:
            stale = connection.execute("SELECT datname FROM pg_database WHERE datname ~ '^forum_t[0-9]+$'").fetchall()
        for (database,) in stale:
            self.postgres.drop_database(database)
        self._sessions = None

    @property
    def served_version_file(self) -> Path:
        """The install version the running server was started with (a server of older code is restarted)."""
        return self.run_dir / "served-version"

    def _serving_current(self) -> bool:
        file = self.served_version_file
        return daemon_alive(self.pid_file) and file.exists() and file.read_text() == self.install_version()

    def start(self) -> None:
        self.postgres.ensure_running()
        if self._serving_current():
            return
        stop_daemon(self.pid_file)
        command = [
            str(self.venv / "bin" / "gunicorn"),
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.workers),
            "--threads",
            str(self.threads),
            "--worker-class",
            "gthread",
            "--timeout",
            "120",
            "--no-control-socket",
            "--chdir",
            str(APP),
            "forumproject.wsgi",
        ]
        start_daemon(command, pid_file=self.pid_file, log=self.log, env=self._environment(), cwd=APP)
        self.served_version_file.write_text(self.install_version())
        try:
            # Any host that is not a tenant's answers at once (404), without touching a database.
            wait_for_http(f"http://127.0.0.1:{self.port}/", timeout_s=120, log=self.log)
        except SiteError:
            stop_daemon(self.pid_file)
            raise

    def running(self) -> bool:
        return self._serving_current() and self.postgres.running()

    def stop(self) -> None:
        stop_daemon(self.pid_file)

    # ---- tenants ------------------------------------------------------------------------

    def reset_tenant(self, tenant: int) -> None:
        self.postgres.ensure_running()
        self.postgres.copy_database(GOLDEN_DB, tenant_database(tenant))

    def sessions(self) -> dict[str, str]:
        """The seeded session key of every user (written by the seeder)."""
        if self._sessions is None:
            path = self.golden_dir / "sessions.json"
            if not path.exists():
                raise SiteError(f"{self.title} has no golden snapshot yet ({path} is missing): call ensure_ready()")
            self._sessions = json.loads(path.read_text())
        return self._sessions

    def session_cookies(self, tenant: int, user: str) -> list[dict[str, Any]]:
        key = self.sessions().get(user)
        if key is None:
            raise SiteError(f"{self.title} has no user {user!r} with a seeded session")
        return [
            {
                "name": "sessionid",
                "value": key,
                "domain": self.host(tenant),
                "path": "/",
                "httpOnly": True,
                "sameSite": "Lax",
            }
        ]

    def state_digest(self, tenant: int) -> str:
        """The tenant database's checksum, without the rows Misago writes when a page is merely viewed."""
        return self.postgres.digest(tenant_database(tenant), exclude=VIEW_BOOKKEEPING)

    def connect(self, tenant: int) -> Any:
        """A psycopg connection to the tenant's database (what checkers read)."""
        return self.postgres.connect(tenant_database(tenant))
