"""The forge: Trac 1.6 with its git repository browser, the GitLab role of WebArena.

One threaded WSGI process (``server.py``, in the site's own venv) serves every tenant on
127.0.0.1:8704; the Host ``t<N>.forge.localhost`` selects tenant N's Trac environment
(``<home>/tenants/t<N>``, its own SQLite database). The golden environment is built by
``trac-admin initenv`` and then filled with the generated content by bulk SQL (stdlib
``sqlite3``); the git repository (``golden/harbor.git``, made by ``git fast-import`` with fixed
dates, so its hashes are deterministic) is shared read-only by all tenants.

Reset copies the golden database into the tenant's file in place (SQLite's backup API) and
touches the tenant's ``reset`` stamp, which makes the server empty Trac's caches for that
tenant at its next request (``server.py``).

Users log in with a seeded ``trac_auth`` cookie (the ``auth_cookie`` table) or through
``/login`` with HTTP basic credentials (``golden/htpasswd``).
"""

from __future__ import annotations

import base64
import configparser
import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentgym.environments.webapps.forge import content as forge_content
from agentgym.environments.webapps.site import (
    Site,
    SiteError,
    daemon_alive,
    file_lock,
    run,
    start_daemon,
    stop_daemon,
    wait_for_http,
)

PACKAGE = Path(__file__).parent
#: Far in the future: Trac purges auth cookies older than 10 days when someone logs in.
COOKIE_TIME = 4102444800
#: Trac settings on top of ``initenv``'s defaults (section -> option -> value).
TRAC_SETTINGS: dict[str, dict[str, str]] = {
    "components": {"tracopt.versioncontrol.git.*": "enabled"},
    "git": {"cached_repository": "disabled", "persistent_cache": "disabled", "shortrev_len": "8"},
    "trac": {"default_date_format": "iso8601", "default_timezone": "UTC", "default_language": "en"},
    "logging": {"log_type": "none"},
    "header_logo": {"src": "", "alt": "Harbor"},
    "ticket": {"default_component": "core", "default_priority": "major", "default_type": "defect"},
}


def _micro(seconds: int | None) -> int:
    return int(seconds) * 1_000_000 if seconds else 0


class ForgeSite(Site):
    """Trac with a git repository (see the module docstring)."""

    name = "forge"
    title = "the code forge and issue tracker (Trac)"
    default_port = 8704
    apt_packages = ("git",)

    # ---- paths --------------------------------------------------------------------------

    @property
    def venv(self) -> Path:
        return self.home / "venv"

    @property
    def repo_dir(self) -> Path:
        """The shared bare git repository every tenant's browser reads."""
        return self.golden_dir / "harbor.git"

    @property
    def golden_env(self) -> Path:
        return self.golden_dir / "env"

    @property
    def tenants_dir(self) -> Path:
        return self.home / "tenants"

    def tenant_env(self, tenant: int) -> Path:
        """Tenant ``tenant``'s Trac environment."""
        return self.tenants_dir / f"t{tenant}"

    def database(self, tenant: int | None) -> Path:
        """The SQLite file of ``tenant`` (the golden one for None)."""
        env = self.golden_env if tenant is None else self.tenant_env(tenant)
        return env / "db" / "trac.db"

    # ---- content ------------------------------------------------------------------------

    def generate(self, seed: int) -> dict[str, Any]:
        return forge_content.generate(seed)

    def install_version(self) -> str:
        return hashlib.sha256((PACKAGE / "requirements.txt").read_bytes()).hexdigest()[:12]

    # ---- lifecycle ----------------------------------------------------------------------

    def install(self) -> None:
        """The site's venv with Trac (``requirements.txt``, exact pins)."""
        if shutil.which("git") is None:
            raise SiteError("git is not installed (apt-get install git; containers/setup-host.sh does)")
        log = self.run_dir / "install.log"
        if self.venv.exists():
            shutil.rmtree(self.venv)
        run([sys.executable, "-m", "venv", str(self.venv)], log=log)
        run(
            [str(self.venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(PACKAGE / "requirements.txt")],
            log=log,
        )

    def build_golden(self, content: dict[str, Any]) -> None:
        """The git repository, then a Trac environment filled with ``content`` by bulk SQL."""
        log = self.run_dir / "build.log"
        self._build_repository(content["commits"], log)
        run(
            [
                str(self.venv / "bin" / "trac-admin"),
                str(self.golden_env),
                "initenv",
                content["project"],
                "sqlite:db/trac.db",
            ],
            log=log,
        )
        self._configure(self.golden_env / "conf" / "trac.ini", content)
        with contextlib.closing(sqlite3.connect(self.database(None))) as db:
            with db:
                _load(db, content, self.session_cookie)
            db.execute("VACUUM")
        lines = [
            f"{u['username']}:{{SHA}}{base64.b64encode(hashlib.sha1(u['password'].encode()).digest()).decode()}"
            for u in content["users"]
        ]
        (self.golden_dir / "htpasswd").write_text("\n".join(lines) + "\n")

    def _build_repository(self, commits: list[dict[str, Any]], log: Path) -> None:
        run(["git", "init", "-q", "--bare", "-b", "master", str(self.repo_dir)], log=log)
        stream = bytearray()
        for mark, commit in enumerate(commits, start=1):
            message = commit["message"].encode() + b"\n"
            ident = f"{commit['author']} <{commit['email']}> {commit['time']} +0000".encode()
            stream += b"commit refs/heads/master\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s" % (
                mark,
                ident,
                ident,
                len(message),
                message,
            )
            if mark > 1:
                stream += b"from :%d\n" % (mark - 1)
            for path, text in sorted(commit["files"].items()):
                body = text.encode()
                stream += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(body), body)
            stream += b"\n"
        result = subprocess.run(
            ["git", "fast-import", "--quiet"], input=bytes(stream), cwd=self.repo_dir, capture_output=True
        )
        if result.returncode != 0:
            raise SiteError(f"git fast-import failed: {result.stderr.decode(errors='replace')[-2000:]}")

    def _configure(self, ini: Path, content: dict[str, Any]) -> None:
        parser = configparser.RawConfigParser(interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        parser.read(ini)
        settings = {
            **TRAC_SETTINGS,
            "repositories": {
                ".dir": str(self.repo_dir),
                ".type": "git",
                ".description": f"{content['project']} sources",
            },
            "project": {"name": content["project"], "descr": f"{content['project']}: a job scheduler and blob store"},
        }
        for section, options in settings.items():
            if not parser.has_section(section):
                parser.add_section(section)
            for option, value in options.items():
                parser.set(section, option, value)
        with open(ini, "w") as handle:
            parser.write(handle)

    def start(self) -> None:
        if self.running():
            return
        with file_lock(self.run_dir / "start.lock"):
            if self.running():
                return
            self.tenants_dir.mkdir(parents=True, exist_ok=True)
            log = self.run_dir / "server.log"
            start_daemon(
                [
                    str(self.venv / "bin" / "python"),
                    str(PACKAGE / "server.py"),
                    "--port",
                    str(self.port),
                    "--tenants",
                    str(self.tenants_dir),
                    "--htpasswd",
                    str(self.golden_dir / "htpasswd"),
                ],
                pid_file=self.pid_file,
                log=log,
            )
            wait_for_http(f"http://127.0.0.1:{self.port}/", timeout_s=60, log=log)

    @property
    def pid_file(self) -> Path:
        return self.run_dir / "server.pid"

    def running(self) -> bool:
        return daemon_alive(self.pid_file)

    def stop(self) -> None:
        stop_daemon(self.pid_file)

    # ---- tenants ------------------------------------------------------------------------

    def reset_tenant(self, tenant: int) -> None:
        """Copy the golden database into the tenant's in place and have the server forget the tenant's caches."""
        env = self.tenant_env(tenant)
        with file_lock(self.tenants_dir / f"t{tenant}.lock"):
            if not (env / "conf" / "trac.ini").exists():
                partial = self.tenants_dir / f".t{tenant}.{os.getpid()}"
                shutil.rmtree(partial, ignore_errors=True)
                shutil.copytree(self.golden_env, partial, ignore=shutil.ignore_patterns("trac.db*"))
                shutil.copy2(self.database(None), partial / "db" / "trac.db")
                if env.exists():
                    shutil.rmtree(env)
                partial.rename(env)
                return
            golden = sqlite3.connect(f"file:{self.database(None)}?mode=ro", uri=True)
            target = sqlite3.connect(self.database(tenant), timeout=30)
            try:
                golden.backup(target)
            finally:
                target.close()
                golden.close()
            ini, golden_ini = env / "conf" / "trac.ini", self.golden_env / "conf" / "trac.ini"
            if ini.read_bytes() != golden_ini.read_bytes():
                shutil.copyfile(golden_ini, ini)  # a new golden build: Trac reopens the environment
            self.forget_caches(tenant)

    def forget_caches(self, tenant: int) -> None:
        """Have the server empty Trac's in-process caches for ``tenant`` at its next request (a new stamp)."""
        stamp = self.tenant_env(tenant) / "reset"
        before = stamp.stat().st_mtime_ns if stamp.exists() else 0
        stamp.touch()
        now = time.time_ns()
        os.utime(stamp, ns=(now, max(now, before + 1)))

    def session_cookie(self, user: str) -> str:
        """The value of ``user``'s seeded ``trac_auth`` cookie (the same in every tenant)."""
        return hashlib.sha256(f"forge-{self.seed}-{user}".encode()).hexdigest()[:32]

    def session_cookies(self, tenant: int, user: str) -> list[dict[str, Any]]:
        users = {u["username"] for u in self.content()["users"]}
        if user not in users:
            raise SiteError(f"the forge has no user {user!r} (its users: {', '.join(sorted(users))})")
        return [
            {
                "name": "trac_auth",
                "value": self.session_cookie(user),
                "domain": self.host(tenant),
                "path": "/",
                "httpOnly": True,
            }
        ]

    def state_digest(self, tenant: int) -> str:
        return database_digest(self.database(tenant))

    def connect(self, tenant: int) -> sqlite3.Connection:
        """A read-only connection to the tenant's database (what checkers read)."""
        return sqlite3.connect(f"file:{self.database(tenant)}?mode=ro", uri=True, timeout=30)

    def git(self, *args: str) -> str:
        """The output of a read-only git command on the shared repository."""
        result = subprocess.run(["git", "--git-dir", str(self.repo_dir), *args], capture_output=True, text=True)
        if result.returncode != 0:
            raise SiteError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout


def database_digest(path: Path) -> str:
    """A checksum of every row of every table of the SQLite database at ``path``."""
    digest = hashlib.sha256()
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            digest.update(f"\0{table}\0".encode())
            for row in sorted(repr(row) for row in db.execute(f'SELECT * FROM "{table}"')):
                digest.update(row.encode())
    return digest.hexdigest()


def _load(db: sqlite3.Connection, content: dict[str, Any], cookie: Any) -> None:
    """Fill a fresh Trac database with ``content`` (``cookie(user)``: a user's seeded auth cookie)."""
    for table in ("component", "milestone", "version", "ticket", "ticket_change", "enum"):
        db.execute(f"DELETE FROM {table}")
    # initenv's own wiki pages (TracGuide...) are dated when it ran, and search results and page histories show
    # that date: dated the generator's epoch instead, every build of the site looks the same.
    db.execute("UPDATE wiki SET time = ?", (_micro(forge_content.EPOCH),))
    db.executemany(
        "INSERT INTO enum (type, name, value) VALUES (?, ?, ?)",
        [
            (kind, name, str(i))
            for kind, names in (
                ("priority", ("blocker", "critical", "major", "minor", "trivial")),
                ("resolution", ("fixed", "invalid", "wontfix", "duplicate", "worksforme")),
                ("ticket_type", ("defect", "enhancement", "task")),
            )
            for i, name in enumerate(names, start=1)
        ],
    )
    db.executemany(
        "INSERT INTO component (name, owner, description) VALUES (?, ?, ?)",
        [(c["name"], c["owner"], c["description"]) for c in content["components"]],
    )
    db.executemany(
        "INSERT INTO milestone (name, due, completed, description) VALUES (?, ?, ?, ?)",
        [(m["name"], _micro(m["due"]), _micro(m["completed"]), m["description"]) for m in content["milestones"]],
    )
    db.executemany(
        "INSERT INTO version (name, time, description) VALUES (?, ?, '')",
        [(v["name"], _micro(v["time"])) for v in content["versions"]],
    )
    columns = (
        "id",
        "type",
        "time",
        "changetime",
        "component",
        "priority",
        "owner",
        "reporter",
        "cc",
        "version",
        "milestone",
        "status",
        "resolution",
        "summary",
        "description",
        "keywords",
    )
    rows = []
    for t in content["tickets"]:
        rows.append(tuple(_micro(t[c]) if c in ("time", "changetime") else t[c] for c in columns))
    db.executemany(
        f"INSERT INTO ticket ({', '.join(columns)}, severity) VALUES ({', '.join('?' * len(columns))}, '')", rows
    )
    changes = []
    for t in content["tickets"]:
        for number, change in enumerate(t["changes"], start=1):
            when, author = _micro(change["time"]), change["author"]
            for field, (old, new) in change["fields"].items():
                changes.append((t["id"], when, author, field, old, new))
            changes.append((t["id"], when, author, "comment", str(number), change["comment"]))
    db.executemany(
        "INSERT INTO ticket_change (ticket, time, author, field, oldvalue, newvalue) VALUES (?, ?, ?, ?, ?, ?)", changes
    )
    pages = [
        (page["name"], number, _micro(v["time"]), v["author"], v["text"], v["comment"])
        for page in content["wiki"]
        for number, v in enumerate(page["versions"], start=1)
    ]
    admin = content["roles"]["admin"]
    start = "\n".join(
        [
            f"= Welcome to {content['project']} =",
            "",
            "Components:",
            *(f" * [wiki:Component{c['module'].capitalize()} {c['name']}]" for c in content["components"]),
        ]
    )
    last = max(v["time"] for page in content["wiki"] for v in page["versions"])
    pages.append(("WikiStart", 2, _micro(last), admin, start + "\n", "Project home"))
    db.executemany(
        "INSERT INTO wiki (name, version, time, author, text, comment, readonly) VALUES (?, ?, ?, ?, ?, ?, 0)", pages
    )
    users = content["users"]
    db.executemany(
        "INSERT INTO session (sid, authenticated, last_visit) VALUES (?, 1, 0)", [(u["username"],) for u in users]
    )
    db.executemany(
        "INSERT INTO session_attribute (sid, authenticated, name, value) VALUES (?, 1, ?, ?)",
        [(u["username"], key, u[key]) for u in users for key in ("name", "email")],
    )
    db.executemany(
        "INSERT INTO auth_cookie (cookie, name, ipnr, time) VALUES (?, ?, '127.0.0.1', ?)",
        [(cookie(u["username"]), u["username"], COOKIE_TIME) for u in users],
    )
    db.execute("INSERT INTO permission (username, action) VALUES (?, 'TRAC_ADMIN')", (admin,))
    # The id of the (default, unnamed) git repository, which Trac would otherwise insert on first browse.
    db.execute("INSERT INTO repository (id, name, value) VALUES (1, 'name', '')")
