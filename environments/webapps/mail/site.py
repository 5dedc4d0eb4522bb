"""The mail site: Roundcube 1.6 webmail over a private Dovecot IMAP server (Debian packages).

Processes (all bound to 127.0.0.1, all run as one *service user*: the caller, or ``mail`` when
the caller is root, because Dovecot refuses to access mail as root):

- Dovecot (``dovecot -F -c <runtime>/etc/dovecot.conf``): IMAP on port ``web+6`` (8711),
  ManageSieve on ``web+8`` (8713); accounts ``<login>@<tenant>`` with their Maildirs in
  ``<runtime>/tenants/<tenant>/mail/<login>/Maildir``.
- A small SMTP server (``server/smtp_server.py``, system Python, port ``web+7`` = 8712) that
  delivers through Dovecot's LDA (Sieve filters apply) to the tenant's accounts, or to its
  ``outbox`` for addresses outside the company.
  It stands in for Postfix, which must start as root (see docs/webapps.md).
- PHP's built-in web server with workers (``php -S 127.0.0.1:8705``) running Debian's Roundcube
  from a private tree (``<runtime>/www``: links to ``/usr/share/roundcube`` plus our config
  and the ``agentgym_tenant`` plugin). The request's host ``t<N>.mail.localhost`` picks tenant
  N's Roundcube database (``tenants/t<N>/roundcube.db``, SQLite) and its IMAP accounts.

A tenant is a directory: reset copies the golden one over it (Maildirs with Dovecot's UID lists
and indexes, Roundcube's database with a logged-in session per account).

``<runtime>`` is the site's home, unless the service user cannot reach it (root's home is
private): then ``/var/lib/agentgym-webapps/mail-<hash of the home>``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pwd
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from agentgym.environments.webapps.mail import content as mail_content
from agentgym.environments.webapps.mail.mailstore import Account, state_digest, write_maildir
from agentgym.environments.webapps.site import (
    Site,
    SiteError,
    daemon_alive,
    log_tail,
    reachable_home,
    start_daemon,
    stop_daemon,
    wait_for_http,
)

ROUNDCUBE = Path("/usr/share/roundcube")
#: The password of every account (the site listens on loopback only).
PASSWORD = "agentgym-mail"
_DAEMONS = ("dovecot", "smtp", "php")


class MailSite(Site):
    """Roundcube + Dovecot (+ a delivering SMTP server), one directory per tenant (see the module docstring)."""

    name: ClassVar[str] = "mail"
    title: ClassVar[str] = "the webmail (Roundcube over Dovecot)"
    default_port: ClassVar[int] = 8705
    apt_packages: ClassVar[tuple[str, ...]] = (  # dovecot-sieve: sieve-test and the LDA's filters
        "roundcube",
        "roundcube-sqlite3",
        "roundcube-plugins",
        "php-cli",
        "php-sqlite3",
        "dovecot-imapd",
        "dovecot-sieve",
        "dovecot-managesieved",
    )
    #: Roundcube fills its lists by script after the page loads: ``rcmail.loaded`` once its init has run (which
    #: starts a list's request), ``rcmail.busy`` while a request runs. A page that sends none (a settings form in
    #: its frame) never sets ``busy``: it is ready once loaded.
    ready_js: ClassVar[str] = "() => !window.rcmail || (rcmail.loaded === true && !rcmail.busy)"
    #: PHP's built-in server workers (each serves one request at a time).
    php_workers: ClassVar[int] = 8

    def __init__(self, home: Path | None = None, seed: int = 0) -> None:
        super().__init__(home, seed)
        self.imap_port, self.smtp_port, self.sieve_port = self.port + 6, self.port + 7, self.port + 8
        try:
            self.service = pwd.getpwnam("mail") if os.geteuid() == 0 else pwd.getpwuid(os.getuid())
        except KeyError:
            raise SiteError(
                f"the mail site runs Dovecot as this user (uid {os.getuid()}), which needs an /etc/passwd entry"
            ) from None
        self.runtime = reachable_home(self.home, self.name)
        self._listings: dict[str, tuple[str, dict[str, tuple[int, int]]]] = {}

    # ---- paths --------------------------------------------------------------------------

    @property
    def run_dir(self) -> Path:
        return self.runtime / "run"

    @property
    def etc(self) -> Path:
        return self.runtime / "etc"

    @property
    def www(self) -> Path:
        return self.runtime / "www"

    @property
    def tenants(self) -> Path:
        return self.runtime / "tenants"

    def tenant_dir(self, tenant: int | str) -> Path:
        """Tenant ``tenant``'s state: ``mail/<login>/Maildir``, ``outbox/``, ``roundcube.db``."""
        return self.tenants / (tenant if isinstance(tenant, str) else f"t{tenant}")

    def account(self, tenant: int, login: str) -> Account:
        """The Maildir of account ``login`` in tenant ``tenant`` (what checkers read)."""
        return Account(self.tenant_dir(tenant) / "mail" / login / "Maildir")

    def golden_account(self, login: str) -> Account:
        """Account ``login`` as the golden snapshot has it (the state every episode starts from)."""
        return Account(self.golden_dir / "state" / "mail" / login / "Maildir")

    # ---- content ------------------------------------------------------------------------

    def generate(self, seed: int) -> dict[str, Any]:
        return mail_content.generate(seed)

    def install_version(self) -> str:
        # The config names the service user: a container running as another uid than the image was built as
        # (the docker backend runs as the caller's uid) installs again, or Dovecot cannot chown its login folder.
        return f"{self.generator_version()}-{self.runtime}-{self.port}-{self.service.pw_uid}:{self.service.pw_gid}"

    # ---- install ------------------------------------------------------------------------

    def _as_service(self, command: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return command
        return [
            "setpriv",
            f"--reuid={self.service.pw_uid}",
            f"--regid={self.service.pw_gid}",
            "--clear-groups",
            *command,
        ]

    def _chown(self, *paths: Path) -> None:
        if os.geteuid() == 0:
            for path in paths:
                subprocess.run(["chown", "-R", f"{self.service.pw_uid}:{self.service.pw_gid}", str(path)], check=True)

    def _render(self, name: str) -> str:
        text = resources.files(__package__).joinpath("server", name).read_text()
        values = {
            "RUN": self.run_dir,
            "ETC": self.etc,
            "TENANTS": self.tenants,
            "USER": self.service.pw_name,
            "GROUP": _group_name(self.service.pw_gid),
            "UID": self.service.pw_uid,
            "GID": self.service.pw_gid,
            "IMAP_PORT": self.imap_port,
            "SMTP_PORT": self.smtp_port,
            "SIEVE_PORT": self.sieve_port,
            "PORT": self.port,
            "SITE": self.name,
            "DOMAIN": self.content()["domain"],
            "PRODUCT": f"{self.content()['company']} Mail",
        }
        return re.sub(r"@@([A-Z_]+)@@", lambda match: str(values[match.group(1)]), text)

    def install(self) -> None:
        """Write the private configuration and Roundcube tree under the runtime root (Debian packages assumed)."""
        needed = (
            "/usr/sbin/dovecot",
            "/usr/lib/dovecot/dovecot-lda",
            "/usr/bin/sieve-test",
            str(ROUNDCUBE / "index.php"),
        )
        missing = [path for path in needed if not Path(path).exists()]
        if missing or shutil.which("php") is None:
            raise SiteError(
                f"the mail site needs Debian's {' '.join(self.apt_packages)} (missing: {missing or ['php']}); "
                "containers/setup-host.sh installs them"
            )
        self.stop()
        for path in (self.etc, self.www):
            if path.exists():
                shutil.rmtree(path)
        for path in (self.etc / "roundcube", self.run_dir / "roundcube-logs", self.run_dir / "roundcube-temp"):
            path.mkdir(parents=True, exist_ok=True)
        self.tenants.mkdir(parents=True, exist_ok=True)
        (self.etc / "dovecot.conf").write_text(self._render("dovecot.conf"))
        (self.etc / "roundcube" / "config.inc.php").write_text(self._render("config.inc.php"))
        for name in ("defaults.inc.php", "mimetypes.php"):
            (self.etc / "roundcube" / name).symlink_to(Path("/etc/roundcube") / name)
        shutil.copy(Path(__file__).parent / "server" / "smtp_server.py", self.etc / "smtp_server.py")
        # Roundcube's tree: Debian's code, our config, plugins and router.
        self.www.mkdir(parents=True)
        for name in ("index.php", "program", "SQL", "skins"):
            (self.www / name).symlink_to(ROUNDCUBE / name)
        (self.www / "config").symlink_to(self.etc / "roundcube")
        shutil.copy(Path(__file__).parent / "server" / "router.php", self.www / "router.php")
        plugins = self.www / "plugins"
        plugins.mkdir()
        for plugin in sorted((ROUNDCUBE / "plugins").iterdir()):
            if plugin.name != "managesieve":
                (plugins / plugin.name).symlink_to(plugin)
        managesieve = plugins / "managesieve"
        managesieve.mkdir()
        for entry in sorted((ROUNDCUBE / "plugins" / "managesieve").iterdir()):
            if entry.name != "config.inc.php":
                (managesieve / entry.name).symlink_to(entry)
        (managesieve / "config.inc.php").write_text(
            "<?php\n// ManageSieve settings are in the main config (config.inc.php).\n$config = [];\n"
        )
        (plugins / "agentgym_tenant").mkdir()
        shutil.copy(
            Path(__file__).parent / "server" / "agentgym_tenant.php",
            plugins / "agentgym_tenant" / "agentgym_tenant.php",
        )
        self._chown(self.runtime)

    # ---- golden -------------------------------------------------------------------------

    def build_golden(self, content: dict[str, Any]) -> None:
        """Write every account's Maildir, create Roundcube's database, log each account in, snapshot."""
        users = "".join(f"{owner['login']}:{{PLAIN}}{PASSWORD}::::::\n" for owner in content["owners"])
        self.etc.mkdir(parents=True, exist_ok=True)
        (self.etc / "users.passwd").write_text(users)
        addresses = "".join(f"{owner['email']} {owner['login']}\n" for owner in content["owners"])
        (self.etc / "addresses").write_text(addresses)
        staging = self.tenant_dir("golden")
        if staging.exists():
            shutil.rmtree(staging)
        for login, mailbox in content["mailboxes"].items():
            write_maildir(staging / "mail" / login / "Maildir", mailbox["folders"])
        (staging / "outbox").mkdir(parents=True)
        with contextlib.closing(sqlite3.connect(staging / "roundcube.db")) as database:
            database.executescript((ROUNDCUBE / "SQL" / "sqlite.initial.sql").read_text())
        self._chown(self.etc, staging)
        self.stop()  # the SMTP server reads the accounts when it starts
        self.start()
        try:
            sessions = {owner["login"]: self._login(owner["login"]) for owner in content["owners"]}
        except BaseException:
            self.stop()
            raise
        with contextlib.closing(sqlite3.connect(staging / "roundcube.db")) as database, database:
            for owner in content["owners"]:
                database.execute(
                    "UPDATE identities SET name = ?, email = ? "
                    "WHERE user_id = (SELECT user_id FROM users WHERE username = ?)",
                    (owner["name"], owner["email"], owner["login"]),
                )
        # Roundcube keeps its SQLite file in WAL mode: fold the log into the file, so that the
        # snapshot is that one file (a tenant's -wal/-shm files are dropped at reset).
        with contextlib.closing(sqlite3.connect(staging / "roundcube.db")) as database:
            database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for suffix in ("-wal", "-shm"):
            (staging / f"roundcube.db{suffix}").unlink(missing_ok=True)
        state = self.golden_dir / "state"
        subprocess.run(["cp", "-a", str(staging), str(state)], check=True)
        shutil.rmtree(staging)
        (self.golden_dir / "sessions.json").write_text(json.dumps(sessions, indent=1))

    def _login(self, login: str) -> dict[str, str]:
        """Log ``login`` in to the golden tenant's Roundcube; its session cookies."""
        host = f"golden.{self.name}.localhost:{self.port}"
        cookies: dict[str, str] = {}

        def request(method: str, path: str, body: str | None = None) -> tuple[int, str]:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            headers = {"Host": host, "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
            if body is not None:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            for header, value in response.getheaders():
                if header.lower() == "set-cookie":
                    name, _, rest = value.partition("=")
                    cookies[name] = rest.split(";", 1)[0]
            text = response.read().decode("utf-8", "replace")
            connection.close()
            return response.status, text

        _, page = request("GET", "/?_task=login")
        token = re.search(r'name="_token" value="([^"]+)"', page)
        if token is None:
            raise SiteError(f"Roundcube's login page has no form{log_tail(self.run_dir / 'php.out')}")
        form = {"_token": token.group(1), "_task": "login", "_action": "login", "_timezone": "UTC", "_url": ""}
        form.update({"_user": login, "_pass": PASSWORD})
        status, page = request("POST", "/?_task=login", urllib.parse.urlencode(form))
        if status != 302 or "roundcube_sessauth" not in cookies or cookies["roundcube_sessauth"] == "-del-":
            errors = log_tail(self.run_dir / "roundcube-logs" / "errors.log")
            raise SiteError(
                f"Roundcube did not log {login} in (HTTP {status}){errors}{log_tail(self.run_dir / 'dovecot.log')}"
            )
        status, page = request("GET", "/?_task=mail&_mbox=INBOX")
        if status != 200 or "messagelist" not in page:
            raise SiteError(f"Roundcube's session for {login} does not open the inbox (HTTP {status})")
        return {name: cookies[name] for name in ("roundcube_sessid", "roundcube_sessauth")}

    # ---- servers ------------------------------------------------------------------------

    def _pid(self, daemon: str) -> Path:
        return self.run_dir / f"{daemon}.pid"

    def running(self) -> bool:
        """Whether the servers are up and serve a built snapshot (a failed build leaves them up, not ready)."""
        return (self.golden_dir / "built").exists() and self.daemons_alive()

    def daemons_alive(self) -> bool:
        return all(daemon_alive(self._pid(daemon)) for daemon in _DAEMONS)

    def start(self) -> None:
        if self.daemons_alive():
            return
        self.stop()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._chown(self.run_dir)
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
        commands = {
            "dovecot": ["dovecot", "-F", "-c", str(self.etc / "dovecot.conf")],
            "smtp": [
                python,
                str(self.etc / "smtp_server.py"),
                "--port",
                str(self.smtp_port),
                "--tenants",
                str(self.tenants),
                "--users",
                str(self.etc / "users.passwd"),
                "--addresses",
                str(self.etc / "addresses"),
                "--dovecot-config",
                str(self.etc / "dovecot.conf"),
            ],
            "php": [
                "php",
                "-d",
                "opcache.enable_cli=1",
                "-d",
                "memory_limit=256M",
                "-d",
                f"error_log={self.run_dir / 'php-errors.log'}",
                "-S",
                f"127.0.0.1:{self.port}",
                "-t",
                str(self.www),
                str(self.www / "router.php"),
            ],
        }
        environment = {**os.environ, "PHP_CLI_SERVER_WORKERS": str(self.php_workers)}
        for daemon, command in commands.items():
            log = self.run_dir / f"{daemon}.out"
            start_daemon(self._as_service(command), pid_file=self._pid(daemon), log=log, env=environment)
        for daemon, port in (("dovecot", self.imap_port), ("smtp", self.smtp_port)):
            _wait_for_port(port, 30, self._pid(daemon), self.run_dir / f"{daemon}.out")
        wait_for_http(f"http://127.0.0.1:{self.port}/", timeout_s=30, log=self.run_dir / "php.out")
        if not self.daemons_alive():
            raise SiteError(f"the mail site's servers did not stay up{log_tail(self.run_dir / 'dovecot.log')}")

    def stop(self) -> None:
        for daemon in _DAEMONS:
            stop_daemon(self._pid(daemon))

    # ---- tenants ------------------------------------------------------------------------

    def reset_tenant(self, tenant: int) -> None:
        """Make the tenant's directory equal the golden one again, copying only what changed.

        A tenant's directory remembers the snapshot it was copied from (``.golden``). The first
        reset (or one after the snapshot was rebuilt) copies the whole directory; later ones
        copy back only the accounts whose files differ from the snapshot's (names, sizes and
        modification times: copies keep those, and Dovecot touches an account's index files as
        soon as it is read), Roundcube's database, and an empty outbox. Replaced directories are
        swapped out by renames and removed in the background.
        """
        golden, target = self.golden_dir / "state", self.tenant_dir(tenant)
        tag = (self.golden_dir / "built").read_text()
        unique = f"{os.getpid()}-{time.monotonic_ns()}"
        trash = self.tenants / ".trash"  # outside every tenant's directory (digests walk those)
        trash.mkdir(exist_ok=True)
        stale: list[Path] = []

        def discard(path: Path) -> None:
            old = trash / f"{unique}-{len(stale)}"
            path.rename(old)
            stale.append(old)

        def swap(source: Path, destination: Path) -> None:
            fresh = trash / f"{unique}-new"
            subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(fresh)], check=True, capture_output=True)
            if destination.exists() or destination.is_symlink():
                discard(destination)
            fresh.rename(destination)

        marker = target / ".golden"
        if not marker.exists() or marker.read_text() != tag:
            swap(golden, target)
            marker.write_text(tag)
            self._chown(marker)
        else:
            for name in {path.name for path in target.iterdir()} - {".golden", *(p.name for p in golden.iterdir())}:
                discard(target / name)
            wanted = {path.name for path in (golden / "mail").iterdir()}
            for path in (target / "mail").iterdir():
                if path.name not in wanted:
                    discard(path)
            for login in sorted(wanted):
                if _listing(target / "mail" / login) != self._golden_listing(login):
                    swap(golden / "mail" / login, target / "mail" / login)
            swap(golden / "roundcube.db", target / "roundcube.db")
            if _listing(target / "outbox") != _listing(golden / "outbox"):
                swap(golden / "outbox", target / "outbox")
        if stale:
            subprocess.Popen(
                ["rm", "-rf", *map(str, stale)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _golden_listing(self, login: str) -> dict[str, tuple[int, int]]:
        tag = (self.golden_dir / "built").read_text()
        if self._listings.get(login, (None,))[0] != tag:
            self._listings[login] = (tag, _listing(self.golden_dir / "state" / "mail" / login))
        return self._listings[login][1]

    def rewrite_message(self, tenant: int, login: str, folder: str, message_id: str, data: bytes) -> None:
        """Replace the message ``message_id`` of ``login``'s ``folder`` in tenant ``tenant`` by ``data``.

        The file keeps its name, so Dovecot's UID list gives it the same UID (its page's URL stays) and its
        flags stay. The folder's Dovecot index files go: Dovecot caches a message's size, headers and MIME
        structure there, and rebuilds them from the files and the UID list when it next opens the folder.
        The tenant's next reset copies the account back (its files differ from the snapshot's).
        """
        stored = [m for m in self.account(tenant, login).messages(folder) if m.message_id == message_id]
        if len(stored) != 1:
            raise SiteError(f"{login}'s {folder} has {len(stored)} messages {message_id}, not one")
        path = stored[0].path
        partial = path.parent.parent / "tmp" / path.name.split(":", 1)[0]
        partial.write_bytes(data)
        self._chown(partial)
        partial.replace(path)
        for index in path.parent.parent.glob("dovecot.index*"):
            index.unlink()

    def sieve_folders(self, tenant: int, login: str, message: bytes) -> list[str]:
        """The folders account ``login``'s active Sieve filters would deliver ``message`` to (``sieve-test``)."""
        home = self.tenant_dir(tenant) / "mail" / login
        script = home / ".dovecot.sieve"
        if not script.exists():
            return ["INBOX"]
        probe = self.run_dir / f"probe-{os.getpid()}-{time.monotonic_ns()}.eml"
        probe.write_bytes(message)
        self._chown(probe)
        try:
            command = ["sieve-test", "-c", str(self.etc / "dovecot.conf"), "-u", f"{login}@t{tenant}"]
            result = subprocess.run(
                self._as_service([*command, str(script.resolve()), str(probe)]), capture_output=True, text=True
            )
        finally:
            probe.unlink(missing_ok=True)
        if result.returncode != 0:
            raise SiteError(f"sieve-test failed on {script}: {(result.stdout + result.stderr).strip()[-1000:]}")
        return re.findall(r"store message in folder: (.+)", result.stdout)

    def session_cookies(self, tenant: int, user: str) -> list[dict[str, Any]]:
        sessions = json.loads((self.golden_dir / "sessions.json").read_text())
        if user not in sessions:
            raise SiteError(f"the mail site has no account {user!r} (accounts: {', '.join(sorted(sessions))})")
        return [
            {"name": name, "value": value, "domain": self.host(tenant), "path": "/", "httpOnly": True}
            for name, value in sessions[user].items()
        ]

    def state_digest(self, tenant: int) -> str:
        """The tenant's mail, folders, filters, outbox and Roundcube rows (not indexes or sessions)."""
        return state_digest(self.tenant_dir(tenant))


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, modification time in ns) of everything under ``root``."""
    found: dict[str, tuple[int, int]] = {}
    for folder, directories, files in os.walk(root):
        for name in directories + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            found[os.path.relpath(path, root)] = (info.st_size, info.st_mtime_ns)
    return found


def _group_name(gid: int) -> str:
    import grp

    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _wait_for_port(port: int, timeout_s: float, pid_file: Path, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline or not daemon_alive(pid_file):
                raise SiteError(f"nothing answers on 127.0.0.1:{port} after {timeout_s:g} s{log_tail(log)}") from None
            time.sleep(0.1)
