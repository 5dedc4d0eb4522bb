"""The forge's web server: one threaded WSGI process serving every tenant's Trac environment.

Runs with the site's own venv (Trac installed there), never the main one, so it imports no
agentgym code. A request for ``t<N>.forge.localhost`` is served from the Trac environment
``<tenants>/t<N>``; ``/login`` takes HTTP basic credentials checked against ``--htpasswd``
(tracd's ``--basic-auth`` behaviour), which Trac's own login module turns into its
``trac_auth`` cookie. Any other host gets a one-line health answer.

A reset rewrites a tenant's database in place and touches the tenant's ``reset`` stamp file;
at the tenant's next request this server empties Trac's cache manager for that tenant, so
nothing cached during the episode outlives it (Trac's own generation check would catch most
of it too: a cached value is kept only while the ``cache`` table's generation equals the one it
was read at). Reopening the whole Environment would do the same but costs about a second on
the first page after every reset (components, templates); a changed ``trac.ini`` still does that.

    python server.py --port 8704 --tenants DIR --htpasswd FILE
"""

from __future__ import annotations

import argparse
import mimetypes
import os
import re
import threading
import time
from socketserver import ThreadingMixIn

import trac
from trac.cache import CacheManager
from trac.env import env_cache, env_cache_lock
from trac.web.auth import BasicAuthentication
from trac.web.main import dispatch_request
from trac.web.wsgi import WSGIServer
from tracopt.versioncontrol.git.PyGIT import Storage

TENANT_HOST = re.compile(r"^t(\d{1,4})\.forge\.localhost(?::\d+)?$")
#: Trac's own static files (``/chrome/common/...``), served here without the whole Trac request cycle.
COMMON = os.path.join(os.path.dirname(trac.__file__), "htdocs")


#: The reset stamp each tenant's cached Environment was last cleared for (env path -> mtime in ns).
_stamps: dict[str, int] = {}
_stamps_lock = threading.Lock()


def forget_episode(env_path: str) -> None:
    """Empty Trac's caches for the tenant at ``env_path`` if it was reset since they were filled."""
    try:
        stamp = os.stat(os.path.join(env_path, "reset")).st_mtime_ns
    except OSError:
        stamp = 0
    if _stamps.get(env_path) == stamp:
        return
    with _stamps_lock:
        with env_cache_lock:
            env = env_cache.get(env_path)
        if env is not None:
            manager = CacheManager(env)
            with manager._lock:  # Trac 1.6's cache manager: the shared dict every request copies from
                manager._cache.clear()
        _stamps[env_path] = stamp


_refresh_rev_cache = Storage._refresh_rev_cache


def refresh_rev_cache_until_built(storage: Storage, force: bool = False) -> bool:
    """Trac's git revision cache, refreshed again when a git call failed to fill it.

    PyGIT reads the repository's refs and revisions with ``git`` subprocesses and keeps what it read:
    when one of them fails (seen on a loaded machine), the cache stays empty and every later page
    answers "No node ... at revision None" until the server restarts, since PyGIT refreshes only
    when the refs change. Here an empty cache is refreshed again (forced) a few times, and if it is
    still empty the next request tries once more. The forge's repository is never empty.
    """
    refreshed = False
    for attempt in range(3):
        try:
            refreshed = _refresh_rev_cache(storage, force=force or attempt > 0)
        except Exception:  # an empty rev-list output makes PyGIT's build fail (max() of nothing)
            refreshed = False
        if storage._Storage__rev_cache.youngest_rev is not None:
            return refreshed
        time.sleep(0.2 * (attempt + 1))
    storage._Storage__rev_cache_refresh = True
    return refreshed


Storage._refresh_rev_cache = refresh_rev_cache_until_built


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = 64


def make_app(tenants: str, auth: BasicAuthentication):
    """The WSGI application routing each request to its tenant's environment."""

    def application(environ, start_response):
        match = TENANT_HOST.match(environ.get("HTTP_HOST", ""))
        if match is None:
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"forge: ask for http://t<N>.forge.localhost\n"]
        env_path = os.path.join(tenants, f"t{int(match.group(1))}")
        if not os.path.isfile(os.path.join(env_path, "conf", "trac.ini")):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [f"forge: tenant {match.group(1)} is not set up\n".encode()]
        path = environ.get("PATH_INFO", "")
        if path.startswith("/chrome/common/"):
            return static(path[len("/chrome/common/") :], start_response)
        forget_episode(env_path)
        environ["trac.env_path"] = env_path
        if environ.get("PATH_INFO", "").endswith("/login"):
            user = auth.do_auth(environ, start_response)
            if not user:
                return []  # do_auth answered 401
            environ["REMOTE_USER"] = user
        return dispatch_request(environ, start_response)

    return application


def static(name: str, start_response):
    """A file of Trac's ``htdocs`` (cacheable: the same for every tenant)."""
    path = os.path.realpath(os.path.join(COMMON, name))
    if not path.startswith(COMMON + os.sep) or not os.path.isfile(path):
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]
    with open(path, "rb") as handle:
        body = handle.read()
    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    headers = [("Content-Type", kind), ("Content-Length", str(len(body))), ("Cache-Control", "public, max-age=86400")]
    start_response("200 OK", headers)
    return [body]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tenants", required=True)
    parser.add_argument("--htpasswd", required=True)
    args = parser.parse_args()
    auth = BasicAuthentication(args.htpasswd, "forge")
    server = ThreadingServer(("127.0.0.1", args.port), make_app(os.path.abspath(args.tenants), auth))
    server.serve_forever()


if __name__ == "__main__":
    main()
