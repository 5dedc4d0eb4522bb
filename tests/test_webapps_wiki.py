"""The wiki site (MediaWiki on SQLite): deterministic content, a dump MediaWiki imports, tenants that
reset exactly and fast and never see each other's edits, seeded logins, and the checkers' readers.

The generic template tests (every oracle on every split, wrong answers, half-done changes) are in
tests/test_webapps.py (``-k wiki``). The site is installed, seeded and started on first use
(``ensure_ready``: about 1.5 minutes the first time on a machine, then cached).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from agentgym.browser.page import CHROMIUM, LAUNCH_ARGS
from agentgym.environments.webapps.site import TenantLease, lease_tenant
from agentgym.environments.webapps.wiki import state
from agentgym.environments.webapps.wiki.content import LINK_FACTS, article_text, generate, section_texts
from agentgym.environments.webapps.wiki.site import WikiSite, render_dump


@pytest.fixture(scope="module")
def content() -> dict:
    return generate(0)


def test_the_generator_is_deterministic_and_its_links_resolve(content: dict) -> None:
    assert json.dumps(generate(0)) == json.dumps(content)
    assert json.dumps(generate(1)) != json.dumps(content)
    titles = [article["title"] for article in content["articles"]]
    assert len(titles) == len(set(titles)) >= 1000
    for article in content["articles"]:
        for fact, value in article["facts"].items():
            assert fact not in LINK_FACTS or value in set(titles), (article["title"], fact, value)
        # Section editing's pieces put together are the whole article.
        assert "\n\n".join(section_texts(article)) == article_text(article)
    assert len({revision["user"] for a in content["articles"] for revision in a["revisions"]}) == len(content["users"])


def test_the_dump_holds_every_page_and_revision(content: dict) -> None:
    root = ET.fromstring(render_dump(content))
    ns = {"mw": "http://www.mediawiki.org/xml/export-0.11/"}
    pages = root.findall("mw:page", ns)
    expected = len(content["articles"]) + len(content["categories"]) + len(content["maintenance_categories"]) + 7
    assert len(pages) == expected  # + 6 infobox templates + the Main Page
    revisions = sum(len(a["revisions"]) for a in content["articles"])
    assert len(root.findall("mw:page/mw:revision", ns)) == revisions + expected - len(content["articles"])


def test_state_readers() -> None:
    text = "{{Infobox city\n| name = Orham\n| country = [[Velavia]]\n| population = 1,234\n}}\nLead.\n\n" \
           "== History ==\nOld.\n\n[[Category:Cities in Velavia]]\n[[Category:Good_articles|x]]"  # fmt: skip
    assert state.infobox_facts(text) == {"name": "Orham", "country": "[[Velavia]]", "population": "1,234"}
    assert state.unlink("[[Velavia|the country]]") == "Velavia"
    assert state.categories(text) == ["Cities in Velavia", "Good articles"]
    assert [heading for heading, _ in state.sections(text)] == [None, "History"]
    assert state.page_of_url("/wiki/Category:Rivers_of_Velavia") == ("Category:Rivers of Velavia", "view")
    assert state.page_of_url("/index.php?title=orham&action=history") == ("Orham", "history")
    assert state.page_of_url("/wiki/Esme%20Rask") == ("Esme Rask", "view")
    assert state.page_of_url("/load.php?x=1") is None


# ---- on the running site ------------------------------------------------------------------


@pytest.fixture(scope="module")
def site() -> WikiSite:
    handle = WikiSite()
    handle.ensure_ready()
    return handle


@pytest.fixture()
def tenants() -> Iterator[list[int]]:
    leases: list[TenantLease] = [lease_tenant(), lease_tenant()]
    yield [lease.number for lease in leases]
    for lease in leases:
        lease.release()


def _get(site: WikiSite, tenant: int | None, path: str) -> tuple[int, str]:
    host = site.host(tenant) if tenant is not None else "localhost"
    request = urllib.request.Request(f"http://127.0.0.1:{site.port}{path}", headers={"Host": f"{host}:{site.port}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_an_unknown_host_is_refused_with_an_explanation(site: WikiSite) -> None:
    status, body = _get(site, None, "/wiki/Main_Page")
    assert status == 404 and "t<N>.wiki.localhost" in body


def test_an_edit_through_the_browser_stays_in_its_tenant_and_reset_undoes_it(
    site: WikiSite, content: dict, tenants: list[int]
) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    mine, other = tenants
    for tenant in tenants:
        site.reset_tenant(tenant)
    golden = site.state_digest(mine)
    assert site.state_digest(other) == golden
    article = content["articles"][5]
    user = content["users"][2]["name"]
    sentence = "A sentence that only this tenant's edit adds."
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            context = browser.new_context()
            context.add_cookies(site.session_cookies(mine, user))
            page = context.new_page()
            page.goto(f"{site.base_url(mine)}/index.php?title={state.db_title(article['title'])}&action=edit")
            assert page.locator("#pt-userpage").inner_text() == user  # logged in by the seeded cookies
            page.fill("#wpTextbox1", article_text(article) + "\n\n" + sentence)
            page.click("#wpSave")
            page.wait_for_load_state()
            assert sentence in page.locator("#mw-content-text").inner_text()
        finally:
            browser.close()
    with site.connect(mine) as db:
        assert sentence in (state.latest_text(db, article["title"]) or "")
        assert state.editors(db, article["title"])[-1] == user
    assert site.state_digest(mine) != golden
    assert site.state_digest(other) == golden
    assert sentence not in _get(site, other, f"/wiki/{state.db_title(article['title'])}")[1]
    started = time.perf_counter()
    site.reset_tenant(mine)
    elapsed = time.perf_counter() - started
    assert site.state_digest(mine) == golden
    assert elapsed < 2.0, f"reset took {elapsed:.2f} s"
    status, body = _get(site, mine, f"/wiki/{state.db_title(article['title'])}")
    assert status == 200 and sentence not in body and article["facts"]["name"] in body


def test_session_cookies_name_a_seeded_user(site: WikiSite, content: dict, tenants: list[int]) -> None:
    site.reset_tenant(tenants[0])
    cookies = {cookie["name"]: cookie for cookie in site.session_cookies(tenants[0], content["users"][0]["name"])}
    assert set(cookies) == {"wikiUserID", "wikiUserName", "wikiToken"}
    assert all(cookie["domain"] == site.host(tenants[0]) for cookie in cookies.values())
    with pytest.raises(Exception, match="no user"):
        site.session_cookies(tenants[0], "Nobody Here")
