"""The shop: django-oscar 4.2 (storefront, customer accounts, dashboard) on the shared PostgreSQL cluster.

- Install: the site's own venv (``<home>/shop/venv``) from ``requirements.txt`` (exact pins), and
  its static files collected into ``<home>/shop/static`` (whitenoise serves them).
- Golden: an empty database migrated once per install (``shop_migrated``), copied to
  ``shop_golden`` and filled from the generated content by the ``shop_seed`` management command
  (bulk ORM inserts); then the Whoosh search index is built from it (``<home>/shop/golden/whoosh``).
- Serve: one gunicorn (2 workers x 8 threads) on ``127.0.0.1:8701`` for every tenant; the Django
  project in ``server/`` routes ``t<N>.shop.localhost`` to the database ``shop_t<N>``.
- Reset: ``shop_t<N>`` = a template copy of ``shop_golden``.

The search index is shared by every tenant (it is built from the golden catalogue); search results
are loaded from the tenant's own database, so prices and stock are the tenant's.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from agentgym.environments.webapps.postgres import Postgres
from agentgym.environments.webapps.shop import content as shop_content
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
SERVER = PACKAGE / "server"
#: Products the search index takes per batch: more than the catalogue holds, so one batch (see build_golden).
INDEX_BATCH = 100_000


def _files_digest(*paths: Path) -> str:
    digest = hashlib.sha256()
    for root in paths:
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".txt", ".yaml", ".json", ".html"):
                digest.update(path.relative_to(PACKAGE).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()[:12]


class ShopSite(Site):
    """django-oscar's shop (see the module docstring); tenants are databases ``shop_t<N>``."""

    name = "shop"
    title = "the shop (django-oscar)"
    default_port = 8701
    apt_packages: ClassVar[tuple[str, ...]] = ("postgresql", "python3-venv")
    #: Server processes: gunicorn workers and threads per worker.
    workers, threads = 2, 8

    def __init__(self, home: Path | None = None, seed: int = DEFAULT_SEED) -> None:
        super().__init__(home, seed)
        self.postgres = Postgres(home)
        self._spares: dict[int, threading.Thread] = {}  # tenant -> the copy of its next spare

    # ---- content ------------------------------------------------------------------------

    def generate(self, seed: int) -> dict[str, Any]:
        return shop_content.generate(seed)

    def generator_version(self) -> str:
        """The generator, its data and the seeding command (not the templates: editing them keeps the golden)."""
        return _files_digest(PACKAGE / "content.py", PACKAGE / "data", SERVER)

    def install_version(self) -> str:
        return _files_digest(PACKAGE / "requirements.txt", SERVER / "shopapp" / "settings.py")

    # ---- lifecycle ----------------------------------------------------------------------

    @property
    def venv(self) -> Path:
        return self.home / "venv"

    def _env(self, database: str = "shop_golden") -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONHOME")}
        env.update(
            DJANGO_SETTINGS_MODULE="shopapp.settings",
            PYTHONPATH=str(SERVER),
            SHOP_HOME=str(self.home),
            SHOP_PG_HOST=str(self.postgres.socket_dir),
            SHOP_DATABASE=database,
            PATH=f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        return env

    def _django(self, *arguments: str, database: str = "shop_golden") -> None:
        """Run a Django management command with the site's venv (its time goes to ``run/setup.log``)."""
        log = self.run_dir / "setup.log"
        started = time.perf_counter()
        run(
            [str(self.venv / "bin" / "python"), "-m", "django", *arguments],
            log=log,
            env=self._env(database),
            cwd=SERVER,
        )
        with open(log, "a") as handle:
            handle.write(f"# {arguments[0]} took {time.perf_counter() - started:.1f} s\n")

    def install(self) -> None:
        """The venv with django-oscar (pip honours PIP_NO_INDEX/PIP_FIND_LINKS) and the collected static files."""
        log = self.run_dir / "setup.log"
        if not (self.venv / "bin" / "python").exists():
            run([sys.executable, "-m", "venv", str(self.venv)], log=log)
        run(
            [str(self.venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(PACKAGE / "requirements.txt")],
            log=log,
        )
        self._django("collectstatic", "--noinput", "-v", "0")
        (self.home / "migrated").unlink(missing_ok=True)  # a new install migrates again

    def build_golden(self, content: dict[str, Any]) -> None:
        """Migrate (once per install), seed ``shop_golden`` from ``content`` and build the search index."""
        import json

        self.postgres.ensure_running()
        marker = self.home / "migrated"
        if (
            not marker.exists()
            or marker.read_text() != self.install_version()
            or not self.postgres.exists("shop_migrated")
        ):
            self._create_empty("shop_migrated")
            self._django("migrate", "--noinput", "-v", "0", database="shop_migrated")
            marker.write_text(self.install_version())
        self.postgres.copy_database("shop_migrated", "shop_golden")
        data = self.golden_dir / "content.json"
        data.write_text(json.dumps(content))
        self._django("shop_seed", str(data))
        data.unlink()
        # The catalogue in one batch: one Whoosh segment, one commit. In batches of haystack's default 1,000 each
        # document of a later batch is first looked for in the segments before it (the same results and scores;
        # one batch takes 0.70 of the time, benchmarks/shop_index.py).
        self._django("rebuild_index", "--noinput", "-v", "0", "--batch-size", str(INDEX_BATCH))
        with self.postgres.connect("shop_golden") as connection:
            connection.execute("VACUUM ANALYZE")

    def _create_empty(self, database: str) -> None:
        from psycopg import sql

        self.postgres.drop_database(database)
        with self.postgres.connect("postgres") as connection:
            connection.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(database)))

    @property
    def _pid_file(self) -> Path:
        return self.run_dir / "gunicorn.pid"

    def start(self) -> None:
        self.postgres.ensure_running()
        if daemon_alive(self._pid_file):
            return
        log = self.run_dir / "server.log"
        start_daemon(
            [
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
                "shopapp.wsgi:application",
            ],
            pid_file=self._pid_file,
            log=log,
            env=self._env(),
            cwd=SERVER,
        )
        wait_for_http(f"http://127.0.0.1:{self.port}/", timeout_s=60, log=log)

    def running(self) -> bool:
        return daemon_alive(self._pid_file) and self.postgres.running()

    def stop(self) -> None:
        stop_daemon(self._pid_file)

    # ---- tenants ------------------------------------------------------------------------

    def database(self, tenant: int) -> str:
        """The tenant's database name: ``shop_t3``."""
        return f"shop_t{tenant}"

    def spare(self, tenant: int) -> str:
        """The tenant's spare database: a finished copy of the golden one, waiting for the next reset."""
        return f"shop_t{tenant}_spare"

    def reset_tenant(self, tenant: int) -> None:
        """Swap the tenant's spare copy of the golden database in (renames), then copy the next spare behind.

        A copy takes 0.4-3 s on a busy machine (a checkpoint and the files of about 30 MB), and a
        drop up to a few tenths; two renames take milliseconds, so the old database is dropped and
        the next spare copied in a background thread. The spare is used only if it was copied
        from the current golden database (its comment names the golden's oid); otherwise the
        tenant is copied directly.
        """
        import psycopg
        from psycopg import sql

        self.postgres.ensure_running()
        pending = self._spares.pop(tenant, None)
        if pending is not None:
            pending.join()
        name, spare, old = self.database(tenant), self.spare(tenant), f"shop_t{tenant}_old"
        with self.postgres.connect("postgres") as db:
            golden = self._golden_oid(db)
            if self._spare_of(db, tenant) == f"copy of {golden}":
                db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(old)))
                for attempt in range(50):  # end the server's sessions on it (a request may open one meanwhile)
                    db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
                    try:
                        if db.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                            db.execute(
                                sql.SQL("ALTER DATABASE {} RENAME TO {}").format(*map(sql.Identifier, (name, old)))
                            )
                        break
                    except psycopg.errors.ObjectInUse:
                        if attempt == 49:
                            raise
                        time.sleep(0.02)
                db.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(*map(sql.Identifier, (spare, name))))
            else:
                self.postgres.copy_database("shop_golden", name)
        thread = threading.Thread(target=self._next_spare, args=(tenant, golden, old), daemon=True)
        self._spares[tenant] = thread
        thread.start()

    def settle(self, tenant: int) -> None:
        """Wait until the tenant's next spare is copied (so that the next reset is a swap; for tests and benchmarks)."""
        pending = self._spares.get(tenant)
        if pending is not None:
            pending.join()

    @staticmethod
    def _golden_oid(db: Any) -> int:
        row = db.execute("SELECT oid FROM pg_database WHERE datname = 'shop_golden'").fetchone()
        if row is None:
            raise SiteError("the shop has no golden database (shop_golden): run ensure_ready() first")
        return int(row[0])

    def _spare_of(self, db: Any, tenant: int) -> str | None:
        row = db.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", (self.spare(tenant),)
        ).fetchone()
        return None if row is None else row[0]

    def _next_spare(self, tenant: int, golden: int, old: str) -> None:
        import psycopg
        from psycopg import sql

        with contextlib.suppress(psycopg.Error):  # no spare: the next reset copies directly
            self.postgres.drop_database(old)
            self.postgres.copy_database("shop_golden", self.spare(tenant))
            with self.postgres.connect("postgres") as db:
                db.execute(
                    sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                        sql.Identifier(self.spare(tenant)), sql.Literal(f"copy of {golden}")
                    )
                )

    #: What merely viewing pages writes (django-oscar's analytics: product views, searches, per-customer counters).
    VIEW_BOOKKEEPING: ClassVar[tuple[str, ...]] = (
        "analytics_productrecord",
        "analytics_userproductview",
        "analytics_usersearch",
        "analytics_userrecord",
    )

    def state_digest(self, tenant: int) -> str:
        """A checksum of the tenant's database, all but :attr:`VIEW_BOOKKEEPING`."""
        return self.postgres.digest(self.database(tenant), exclude=self.VIEW_BOOKKEEPING)

    def connect(self, tenant: int) -> Any:
        """A psycopg connection (autocommit) to the tenant's database, for checkers."""
        return self.postgres.connect(self.database(tenant))

    def session_cookies(self, tenant: int, user: str) -> list[dict[str, Any]]:
        sessions = self.content()["sessions"]
        if user not in sessions:
            raise SiteError(f"the shop has no seeded session for {user!r} (users: admin and the customers' usernames)")
        return [
            {
                "name": "sessionid",
                "value": sessions[user],
                "domain": self.host(tenant),
                "path": "/",
                "httpOnly": True,
                "sameSite": "Lax",
            }
        ]
