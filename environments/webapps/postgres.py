"""The PostgreSQL cluster that the database-backed sites share (one per machine or container).

Debian's PostgreSQL 15 binaries run a private cluster under ``webapps_home()/postgres``,
listening on a Unix socket only (no TCP port to collide with). A tenant's database is a copy of
the site's golden database (``CREATE DATABASE ... TEMPLATE``), so resetting a tenant is a drop
and a copy, and the copy's contents equal the golden state exactly. The cluster trades
durability for speed (``fsync=off``, no full-page writes): its contents are disposable, made
from the seed again whenever they are lost.

Run as root, the server runs as the ``postgres`` user (PostgreSQL refuses root), from a folder that
user can reach (:func:`~.site.reachable_home`: not under root's private home).
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from agentgym.environments.webapps.site import (
    SiteError,
    daemon_alive,
    file_lock,
    log_tail,
    reachable_home,
    run,
    start_daemon,
    stop_daemon,
    webapps_home,
)

_SETTINGS = {
    "listen_addresses": "''",
    "max_connections": "400",
    "shared_buffers": "128MB",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "checkpoint_timeout": "30min",
    "max_wal_size": "2GB",
    "log_min_messages": "warning",
    "timezone": "'UTC'",
}


def _binaries() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    if not found:
        raise SiteError(
            "PostgreSQL's server is not installed (apt-get install postgresql; containers/setup-host.sh does)"
        )
    return found[-1].parent


class Postgres:
    """The shared cluster: start it, copy databases from templates, connect, checksum."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = reachable_home((home or webapps_home()) / "postgres", "postgres")
        self.data = self.home / "data"
        self.socket_dir = self.home / "socket"
        self.log = self.home / "postgres.log"
        self.pid_file = self.home / "server.pid"
        self.port = 5432  # names the socket file; nothing listens on TCP

    # ---- the server ---------------------------------------------------------------------

    def _as_server_user(self, command: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return command
        return ["runuser", "-u", "postgres", "--", *command]

    def running(self) -> bool:
        return daemon_alive(self.pid_file) and (self.socket_dir / f".s.PGSQL.{self.port}").exists()

    def ensure_running(self) -> None:
        """Create the cluster on first use and start it (idempotent, safe from many processes)."""
        if self.running():
            return
        with file_lock(self.home.parent / "postgres.lock"):
            if self.running():
                return
            bin_dir = _binaries()
            if not (self.data / "PG_VERSION").exists():
                if self.data.exists():
                    shutil.rmtree(self.data)
                self.data.mkdir(parents=True)
                self.socket_dir.mkdir(parents=True, exist_ok=True)
                if os.geteuid() == 0:
                    user = pwd.getpwnam("postgres")
                    for path in (self.home, self.data, self.socket_dir):
                        os.chown(path, user.pw_uid, user.pw_gid)
                run(
                    self._as_server_user(
                        [
                            str(bin_dir / "initdb"),
                            "-D",
                            str(self.data),
                            "-U",
                            "postgres",
                            "-A",
                            "trust",
                            "-E",
                            "UTF8",
                            "--locale=C.UTF-8",
                            "--no-sync",
                        ]
                    ),
                    log=self.log if os.geteuid() != 0 else None,
                )
            options: list[str] = ["-D", str(self.data), "-k", str(self.socket_dir), "-p", str(self.port)]
            for name, value in _SETTINGS.items():
                options += ["-c", f"{name}={value.strip(chr(39))}"]
            self.log.touch()
            if os.geteuid() == 0:
                user = pwd.getpwnam("postgres")
                os.chown(self.log, user.pw_uid, user.pw_gid)
            start_daemon(
                self._as_server_user([str(bin_dir / "postgres"), *options]), pid_file=self.pid_file, log=self.log
            )
            deadline = time.monotonic() + 60
            while not self.running():
                if time.monotonic() > deadline or not daemon_alive(self.pid_file):
                    raise SiteError(f"PostgreSQL did not start{log_tail(self.log)}")
                time.sleep(0.1)
            self._wait_accepting(deadline)

    def _wait_accepting(self, deadline: float) -> None:
        import psycopg

        while True:
            try:
                psycopg.connect(**self.conninfo("postgres")).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise SiteError(f"PostgreSQL does not accept connections{log_tail(self.log)}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        stop_daemon(self.pid_file)

    # ---- databases ----------------------------------------------------------------------

    def conninfo(self, database: str) -> dict[str, Any]:
        """Keyword arguments for ``psycopg.connect`` (and Django's ``DATABASES`` entry)."""
        return {"host": str(self.socket_dir), "port": self.port, "user": "postgres", "dbname": database}

    def connect(self, database: str, *, autocommit: bool = True) -> Any:
        """A psycopg connection to ``database`` (autocommit by default)."""
        import psycopg

        return psycopg.connect(**self.conninfo(database), autocommit=autocommit)

    def exists(self, database: str) -> bool:
        with self.connect("postgres") as connection:
            return (
                connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone() is not None
            )

    def copy_database(self, source: str, target: str) -> None:
        """Make ``target`` an exact copy of ``source`` (dropping it first; open sessions on it are ended)."""
        from psycopg import sql

        with self.connect("postgres") as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(target)))
            connection.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                    sql.Identifier(target), sql.Identifier(source)
                )
            )

    def drop_database(self, database: str) -> None:
        from psycopg import sql

        with self.connect("postgres") as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))

    def digest(self, database: str, *, exclude: Collection[str] = ()) -> str:
        """A checksum of every row of every table of ``database`` (rows in a fixed order) but the ``exclude`` ones.

        A site excludes only bookkeeping that merely viewing a page writes (who is online, session
        expiry), so that two tenants that saw different pages still have the same digest.
        """
        digest = hashlib.sha256()
        with self.connect(database) as connection:
            tables = connection.execute(
                "SELECT schemaname, tablename FROM pg_tables "
                "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
            ).fetchall()
            for schema, table in tables:
                if table in exclude:
                    continue
                digest.update(f"{schema}.{table}\n".encode())
                rows = connection.execute(
                    f'SELECT md5(string_agg(t::text, \'|\' ORDER BY t::text)) FROM "{schema}"."{table}" t'
                ).fetchone()
                digest.update(str(rows[0]).encode())
        return digest.hexdigest()
