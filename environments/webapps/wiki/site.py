"""The wiki: MediaWiki 1.39 (Debian's package) on PHP's built-in server, one SQLite file per tenant.

Install (:meth:`WikiSite.install`): writes ``LocalSettings.php`` (from ``php/LocalSettings.php``,
with a fresh secret key) and builds the English localisation cache under the site's home;
Debian's ``mediawiki`` package (``/usr/share/mediawiki``) is used as it is.

Golden state (:meth:`WikiSite.build_golden`): MediaWiki's installer makes an empty SQLite
database, ``php/seedUsers.php`` registers the editors (as ``createAndPromote.php`` does, all in
one run), ``importDump.php --no-updates`` loads an XML dump rendered from the generated content
(articles with their revision histories by those editors, infobox templates, category pages,
the Main Page), then the links and categories (``refreshLinks.php``), recent changes, site
statistics and search index are rebuilt. The result is ``golden/wiki.sqlite``.

Serving (:meth:`WikiSite.start`): ``php -S 127.0.0.1:8703`` with ``php/router.php`` (for
``/wiki/<Title>`` URLs) and ``PHP_CLI_SERVER_WORKERS`` worker processes, OPcache on. The
settings pick the database folder ``tenants/t<N>`` from the ``Host`` header
``t<N>.wiki.localhost``; no cache outlives a request except sessions, which live in the
tenant's own ``objectcache`` table.

Tenants: :meth:`reset_tenant` copies the golden file into the tenant's live file with SQLite's
backup API (page by page, under SQLite's own locks, so a connection left open by a PHP worker
sees a consistent database). :meth:`session_cookies` are MediaWiki's "remember me" cookies
(user id, name and the user's token from the tenant's database), so a browser is logged in
without a login round trip.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from agentgym.environments.webapps.site import (
    Site,
    SiteError,
    daemon_alive,
    log_tail,
    run,
    start_daemon,
    stop_daemon,
    wait_for_http,
)
from agentgym.environments.webapps.wiki import content as wiki_content

#: Where Debian's mediawiki package puts MediaWiki.
MEDIAWIKI = Path(os.environ.get("AGENTGYM_MEDIAWIKI_DIR", "/usr/share/mediawiki"))
_PHP_DIR = Path(__file__).parent / "php"
_NAMESPACES = {"Template": 10, "Category": 14}


def _php() -> str:
    php = shutil.which("php")
    if php is None or not (MEDIAWIKI / "index.php").exists():
        raise SiteError(
            "MediaWiki is not installed: apt-get install mediawiki php-sqlite3 php-intl php-mbstring php-xml "
            "(containers/setup-host.sh does)"
        )
    return php


class WikiSite(Site):
    """MediaWiki with generated encyclopedia articles (the role of WebArena's Wikipedia)."""

    name = "wiki"
    title = "the wiki (MediaWiki)"
    default_port = 8703
    apt_packages = ("mediawiki", "php-cli", "php-sqlite3", "php-intl", "php-mbstring", "php-xml")
    #: Worker processes of PHP's built-in server (requests served at once).
    workers = int(os.environ.get("AGENTGYM_WIKI_WORKERS", "8"))

    # ---- paths --------------------------------------------------------------------------

    @property
    def settings_file(self) -> Path:
        return self.home / "LocalSettings.php"

    @property
    def golden_file(self) -> Path:
        return self.golden_dir / "wiki.sqlite"

    def tenant_file(self, tenant: int) -> Path:
        """Tenant ``tenant``'s SQLite database."""
        return self.home / "tenants" / f"t{tenant}" / "wiki.sqlite"

    def _pid_file(self) -> Path:
        return self.run_dir / "php.pid"

    def _log(self) -> Path:
        return self.run_dir / "php.log"

    # ---- content ------------------------------------------------------------------------

    def generate(self, seed: int) -> dict[str, Any]:
        return wiki_content.generate(seed)

    def generator_version(self) -> str:
        """A hash of what the content and the golden database are made from (not the task templates)."""
        package = Path(__file__).parent
        digest = hashlib.sha256()
        for path in [package / "content.py", package / "data.yaml", package / "site.py", *sorted(_PHP_DIR.iterdir())]:
            digest.update(path.name.encode() + path.read_bytes())
        return digest.hexdigest()[:12]

    # ---- install and seed ---------------------------------------------------------------

    def install(self) -> None:
        """Write LocalSettings.php and the router, and build the English localisation cache."""
        _php()
        for folder in (self.home, self.run_dir, self.home / "cache" / "l10n", self.home / "tenants"):
            folder.mkdir(parents=True, exist_ok=True)
        settings = (_PHP_DIR / "LocalSettings.php").read_text()
        for key, value in {
            "@HOME@": str(self.home),
            "@PORT@": str(self.port),
            "@SITENAME@": wiki_content.SITENAME,
            "@SECRET@": secrets.token_hex(32),
            "@UPGRADE@": secrets.token_hex(8),
        }.items():
            settings = settings.replace(key, value)
        self.settings_file.write_text(settings)
        shutil.copyfile(_PHP_DIR / "router.php", self.home / "router.php")
        self._maintenance("rebuildLocalisationCache.php", "--lang=en", "--force", db_dir=self.home)

    def _maintenance(self, script: str | Path, *args: str, db_dir: Path, settings: bool = True) -> None:
        """Run a maintenance script (MediaWiki's by name, or ours by path) on the database in ``db_dir``."""
        env = {**os.environ, "AGENTGYM_WIKI_DB_DIR": str(db_dir), "MW_INSTALL_PATH": str(MEDIAWIKI)}
        if settings:
            env["MW_CONFIG_FILE"] = str(self.settings_file)
        else:
            env.pop("MW_CONFIG_FILE", None)
        path = script if isinstance(script, Path) else MEDIAWIKI / "maintenance" / script
        run([_php(), str(path), *args], log=self.run_dir / "setup.log", env=env)

    def build_golden(self, content: dict[str, Any]) -> None:
        """Install an empty wiki, register the editors, import the articles' histories; keep the file."""
        build = self.golden_dir / "build"
        build.mkdir(parents=True)
        self._maintenance(
            "install.php",
            "--dbtype=sqlite",
            f"--dbpath={build}",
            "--dbname=wiki",
            f"--server=http://localhost:{self.port}",
            "--scriptpath=",
            f"--pass={secrets.token_urlsafe(16)}",
            f"--confpath={build}",
            "--skins=Vector",
            wiki_content.SITENAME,
            "Admin",
            db_dir=build,
            settings=False,
        )
        users = build / "users.json"
        users.write_text(json.dumps(content["users"]))
        self._maintenance(_PHP_DIR / "seedUsers.php", str(users), db_dir=build)
        dump = build / "dump.xml"
        dump.write_text(render_dump(content))
        # Links, categories and the search index are filled once afterwards (faster than per revision).
        self._maintenance("importDump.php", "--no-updates", str(dump), db_dir=build)
        self._maintenance("refreshLinks.php", db_dir=build)
        self._maintenance("rebuildrecentchanges.php", db_dir=build)
        self._maintenance("initSiteStats.php", "--update", db_dir=build)
        self._maintenance("rebuildtextindex.php", db_dir=build)
        with sqlite3.connect(build / "wiki.sqlite") as db:
            db.execute("DELETE FROM objectcache")
            db.execute("DELETE FROM job")
        with sqlite3.connect(build / "wiki.sqlite") as db:
            db.execute("VACUUM")
        (build / "wiki.sqlite").chmod(0o644)  # MediaWiki's installer makes it 0600; images copy it as other uids
        (build / "wiki.sqlite").replace(self.golden_file)
        shutil.rmtree(build)

    # ---- serving ------------------------------------------------------------------------

    def start(self) -> None:
        if self.running():
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "MW_CONFIG_FILE": str(self.settings_file),
            "MW_INSTALL_PATH": str(MEDIAWIKI),
            "PHP_CLI_SERVER_WORKERS": str(self.workers),
        }
        env.pop("AGENTGYM_WIKI_DB_DIR", None)
        command = [
            _php(),
            "-d", "opcache.enable_cli=1",
            "-d", "opcache.memory_consumption=128",
            "-d", "opcache.validate_timestamps=0",
            "-d", "memory_limit=256M",
            "-S", f"127.0.0.1:{self.port}",
            "-t", str(MEDIAWIKI),
            str(self.home / "router.php"),
        ]  # fmt: skip
        start_daemon(command, pid_file=self._pid_file(), log=self._log(), env=env, cwd=str(MEDIAWIKI))
        self.reset_tenant(0)
        # (Python does not resolve *.localhost names as browsers do: name the host in the header.)
        wait_for_http(
            f"http://127.0.0.1:{self.port}/wiki/Main_Page",
            timeout_s=60,
            log=self._log(),
            headers={"Host": self.host(0)},
        )
        if not self.running():
            raise SiteError(f"the wiki's PHP server exited{log_tail(self._log())}")

    def running(self) -> bool:
        return daemon_alive(self._pid_file())

    def stop(self) -> None:
        stop_daemon(self._pid_file())

    # ---- tenants ------------------------------------------------------------------------

    def reset_tenant(self, tenant: int) -> None:
        """Copy the golden database into tenant ``tenant``'s file (SQLite's backup API; a new file at first)."""
        target = self.tenant_file(tenant)
        if not self.golden_file.exists():
            raise SiteError(f"the wiki has no golden snapshot at {self.golden_file} (ensure_ready builds it)")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(self.golden_file, partial)
            partial.replace(target)
            return
        source = sqlite3.connect(f"file:{self.golden_file}?mode=ro", uri=True)
        live = sqlite3.connect(target, timeout=30)
        try:
            source.backup(live, pages=-1)
        finally:
            live.close()
            source.close()

    def session_cookies(self, tenant: int, user: str) -> list[dict[str, Any]]:
        """MediaWiki's remember-me cookies for ``user`` (UserID, UserName, Token) on the tenant's host."""
        with self.connect(tenant) as db:
            row = db.execute("SELECT user_id, user_token FROM user WHERE user_name = ?", (user,)).fetchone()
        if row is None or not row[1]:
            raise SiteError(f"the wiki has no user {user!r} with a login token")
        user_id, token = row[0], row[1].decode() if isinstance(row[1], bytes) else row[1]
        values = {"wikiUserID": str(user_id), "wikiUserName": urllib.parse.quote(user), "wikiToken": token}
        return [
            {"name": name, "value": value, "domain": self.host(tenant), "path": "/", "httpOnly": True,
             "sameSite": "Lax", "expires": int(time.time()) + 30 * 24 * 3600}
            for name, value in values.items()
        ]  # fmt: skip

    def connect(self, tenant: int) -> sqlite3.Connection:
        """A connection to tenant ``tenant``'s database (for checkers; close it when done)."""
        path = self.tenant_file(tenant)
        if not path.exists():
            raise SiteError(f"tenant {tenant} of the wiki has no database yet (reset_tenant makes it)")
        return sqlite3.connect(path, timeout=30)

    def golden_connection(self) -> sqlite3.Connection:
        """A read-only connection to the golden database."""
        return sqlite3.connect(f"file:{self.golden_file}?mode=ro", uri=True)

    def state_digest(self, tenant: int) -> str:
        """SHA-256 of every row of every table of the tenant's database (in rowid order).

        The ``objectcache`` table is left out: it holds the browser sessions that every visit
        makes (a session per episode), not the wiki's content.
        """
        digest = hashlib.sha256()
        with self.connect(tenant) as db:
            tables = [row[0] for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "AND name != 'objectcache' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
            )]  # fmt: skip
            for table in tables:
                digest.update(table.encode())
                for row in db.execute(f'SELECT * FROM "{table}" ORDER BY rowid'):
                    digest.update(repr(row).encode())
        return digest.hexdigest()


def render_dump(content: dict[str, Any]) -> str:
    """MediaWiki's XML export format for the content: every page with its revisions, oldest first."""
    pages: list[tuple[str, list[tuple[str, str, str, str]]]] = []  # title, [(user, time, comment, text)]
    first_user, stamp = content["users"][0]["name"], "2023-01-01T00:00:00Z"
    for kind in ("country", "city", "mountain", "river", "person", "company"):
        pages.append(
            (f"Template:Infobox {kind}", [(first_user, stamp, "Infobox", wiki_content.infobox_template(kind))])
        )
    for category in content["categories"] + content["maintenance_categories"]:
        text = wiki_content.category_text(category)
        pages.append((f"Category:{category['title']}", [(first_user, stamp, "New category", text)]))
    pages.append(("Main Page", [(first_user, "2023-01-02T00:00:00Z", "Welcome", wiki_content.main_page_text(content))]))
    for article in content["articles"]:
        revisions = [
            (r["user"], r["timestamp"], r["comment"],
             wiki_content.article_text(article, r["sections"], old_figures=r["old_figures"]))
            for r in article["revisions"]
        ]  # fmt: skip
        pages.append((article["title"], revisions))
    out = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">']
    for title, revisions in pages:
        namespace = _NAMESPACES.get(title.split(":", 1)[0], 0) if ":" in title else 0
        out.append(f"<page><title>{escape(title)}</title><ns>{namespace}</ns>")
        for user, moment, comment, text in revisions:
            out.append(
                f"<revision><timestamp>{moment}</timestamp><contributor><username>{escape(user)}</username>"
                f"</contributor><comment>{escape(comment)}</comment><model>wikitext</model>"
                f'<format>text/x-wiki</format><text xml:space="preserve">{escape(text)}</text></revision>'
            )
        out.append("</page>")
    out.append("</mediawiki>")
    return "\n".join(out) + "\n"
