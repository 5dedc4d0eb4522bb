"""The forge site (Trac 1.6 + git) on its real server: generated content, reset that also drops Trac's
in-process caches, tenant isolation, seeded logins, and the answer matchers of its templates.

tests/test_webapps.py plays every template's oracle (and the wrong-answer and half-done cases)."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from agentgym.environments.webapps.forge.content import generate
from agentgym.environments.webapps.forge.site import ForgeSite
from agentgym.environments.webapps.forge.templates import date_match
from agentgym.environments.webapps.site import SiteError, TenantLease, lease_tenant


@pytest.fixture(scope="module")
def site() -> ForgeSite:
    forge = ForgeSite()
    forge.ensure_ready()
    return forge


@pytest.fixture
def tenants() -> Iterator[list[int]]:
    leases: list[TenantLease] = [lease_tenant(), lease_tenant()]
    yield [lease.number for lease in leases]
    for lease in leases:
        lease.release()


def fetch(site: ForgeSite, tenant: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict]:
    """Status, body and headers of a GET on the tenant's site (no redirects followed)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    request = urllib.request.Request(
        f"http://127.0.0.1:{site.port}{path}", headers={"Host": site.host(tenant), **(headers or {})}
    )
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace"), dict(error.headers)


def as_developer(site: ForgeSite, tenant: int) -> dict[str, str]:
    """Request headers with the developer's seeded login cookie."""
    cookie = site.session_cookies(tenant, site.content()["roles"]["developer"])[0]
    return {"Cookie": f"trac_auth={cookie['value']}"}


def trac_admin(site: ForgeSite, tenant: int, *args: str) -> None:
    """A change made through Trac's own API (it bumps Trac's cache generations, as the web UI does)."""
    subprocess.run(
        [str(site.venv / "bin" / "trac-admin"), str(site.tenant_env(tenant)), *args], check=True, capture_output=True
    )


def test_the_generator_is_deterministic_and_consistent() -> None:
    first, again, other = generate(0), generate(0), generate(1)
    assert json.dumps(first) == json.dumps(again) and json.dumps(first) != json.dumps(other)
    tickets = first["tickets"]
    assert len(tickets) == 1500 and len({t["summary"] for t in tickets}) == len(tickets)
    assert len(first["commits"]) == 320 and len({c["author"] for c in first["commits"]}) >= 8
    for ticket in tickets:
        assert (ticket["status"] == "closed") == bool(ticket["resolution"]), ticket["id"]
        for change in ticket["changes"]:
            for field, (old, new) in change["fields"].items():
                assert old != new and field in ticket
    assert {t["status"] for t in tickets} == {"new", "assigned", "accepted", "reopened", "closed"}


def test_the_golden_state_holds_the_content(site: ForgeSite) -> None:
    content = site.content()
    assert site.git("rev-list", "--count", "HEAD").strip() == str(len(content["commits"]))
    last = content["commits"][-1]
    assert site.git("log", "-1", "--format=%an|%at|%s").strip() == f"{last['author']}|{last['time']}|{last['message']}"
    db = sqlite3.connect(f"file:{site.database(None)}?mode=ro", uri=True)
    try:
        assert db.execute("SELECT COUNT(*) FROM ticket").fetchone()[0] == len(content["tickets"])
        assert db.execute("SELECT COUNT(DISTINCT name) FROM milestone").fetchone()[0] == len(content["milestones"])
        ticket = content["tickets"][41]
        assert db.execute("SELECT owner, status, summary FROM ticket WHERE id=42").fetchone() == (
            ticket["owner"],
            ticket["status"],
            ticket["summary"],
        )
    finally:
        db.close()


def test_reset_restores_the_state_and_trac_forgets_its_caches(site: ForgeSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    golden = site.state_digest(tenant)
    login = as_developer(site, tenant)
    status, page, _ = fetch(site, tenant, "/newticket", login)
    assert status == 200 and "zz-sentinel" not in page
    # Trac caches the ticket fields (the component list) in the server process.
    trac_admin(site, tenant, "component", "add", "zz-sentinel", "nobody")
    assert "zz-sentinel" in fetch(site, tenant, "/newticket", login)[1]
    assert site.state_digest(tenant) != golden
    started = time.monotonic()
    site.reset_tenant(tenant)
    elapsed = time.monotonic() - started
    assert elapsed < 2.0, f"reset took {elapsed:.2f} s"
    assert site.state_digest(tenant) == golden
    assert "zz-sentinel" not in fetch(site, tenant, "/newticket", login)[1]


def test_a_reset_stamp_empties_tracs_caches(site: ForgeSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    login = as_developer(site, tenant)
    assert "zz-direct" not in fetch(site, tenant, "/newticket", login)[1]  # the component list is cached now
    with sqlite3.connect(site.database(tenant)) as db:  # behind Trac's back: no cache generation bumped
        db.execute("INSERT INTO component (name, owner) VALUES ('zz-direct', 'nobody')")
    db.close()
    assert "zz-direct" not in fetch(site, tenant, "/newticket", login)[1], "Trac did not cache the components"
    site.forget_caches(tenant)
    assert "zz-direct" in fetch(site, tenant, "/newticket", login)[1]
    site.reset_tenant(tenant)
    assert "zz-direct" not in fetch(site, tenant, "/newticket", login)[1]


def test_tenants_do_not_see_each_others_changes(site: ForgeSite, tenants: list[int]) -> None:
    mine, other = tenants
    for tenant in tenants:
        site.reset_tenant(tenant)
    golden = site.state_digest(other)
    trac_admin(site, mine, "milestone", "add", "zz-private")
    assert "zz-private" in fetch(site, mine, "/roadmap")[1]
    assert "zz-private" not in fetch(site, other, "/roadmap")[1]
    assert site.state_digest(other) == golden != site.state_digest(mine)
    site.reset_tenant(mine)
    assert site.state_digest(mine) == golden


def test_seeded_cookies_and_basic_login(site: ForgeSite, tenants: list[int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    users = {user["username"]: user for user in site.content()["users"]}
    developer = users[site.content()["roles"]["developer"]]
    cookie = site.session_cookies(tenant, developer["username"])[0]
    assert cookie["domain"] == site.host(tenant)
    _, page, _ = fetch(site, tenant, "/newticket", {"Cookie": f"trac_auth={cookie['value']}"})
    assert "logged in as" in page and developer["name"] in page
    assert fetch(site, tenant, "/newticket")[0] == 403  # anonymous users may not create tickets
    assert fetch(site, tenant, "/login")[0] == 401
    credentials = base64.b64encode(f"{developer['username']}:{developer['password']}".encode()).decode()
    status, _, headers = fetch(site, tenant, "/login", {"Authorization": f"Basic {credentials}"})
    assert status in (302, 303) and "trac_auth=" in headers.get("Set-Cookie", "")
    with pytest.raises(SiteError, match="no user"):
        site.session_cookies(tenant, "nobody-here")


def test_unknown_tenants_and_hosts(site: ForgeSite) -> None:
    assert fetch(site, 9999, "/")[0] == 404
    request = urllib.request.Request(f"http://127.0.0.1:{site.port}/")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert b"t<N>.forge.localhost" in response.read()


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ("2026-03-04", True),
        ("It is due on 2026-03-04T09:00:00Z.", True),
        ("March 4, 2026", True),
        ("4 Mar 2026", True),
        ("2026-03-05", False),
        ("March 4", False),
        ("2026-03-04 or 2026-04-04", False),
    ],
)
def test_date_answers(answer: str, ok: bool) -> None:
    assert date_match(answer, "2026-03-04") is ok
