"""The forum (Misago): generated content, tenants and reset on the real running site, seeded
sessions, and a checker scoring a change made through Misago's own API.

The generic tests (every template's oracle in a browser, wrong answers, half-done changes) are in
tests/test_webapps.py (``-k forum``). The site is installed and seeded on first use (a few minutes
once; its venv and golden database are kept under the web-apps home).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import random
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from agentgym.environments.webapps import tasks as webapps_tasks
from agentgym.environments.webapps.env import WebAppEnv
from agentgym.environments.webapps.forum import content as forum_content
from agentgym.environments.webapps.forum.site import ForumSite
from agentgym.environments.webapps.forum.templates import TEMPLATES, Reply
from agentgym.environments.webapps.site import lease_tenant
from agentgym.environments.webapps.tasks import Outcome


def test_the_generator_is_deterministic_and_big_enough() -> None:
    first, again, other = forum_content.generate(0), forum_content.generate(0), forum_content.generate(1)
    assert first == again and first != other
    titles = [thread["title"] for thread in first["threads"]]
    assert len(titles) == len(set(titles)) == forum_content.THREADS >= 1000
    posts = [post for thread in first["threads"] for post in thread["posts"]]
    assert len(posts) > 5000 and sum(len(post["likes"]) for post in posts) > 5000
    assert [post["id"] for post in posts] == list(range(1, len(posts) + 1))
    names = {user["username"] for user in first["users"]}
    assert all(post["author"] in names and set(post["likes"]) <= names - {post["author"]} for post in posts)
    assert {user["role"] for user in first["users"]} == {"admin", "moderator", "member"}


DRAWS = 10


def test_templates_cover_the_three_kinds_and_give_thousands_of_distinct_tasks() -> None:
    content = {"forum": forum_content.generate(0)}
    assert len(TEMPLATES) >= 8 and {t.kind for t in TEMPLATES} == {"info", "navigation", "change"}
    distinct = {split: set() for split in ("train", "dev", "test")}
    for template in TEMPLATES:
        titles = {}
        for split in distinct:
            tasks = [template.instantiate(content, random.Random(f"{split}/{n}"), split) for n in range(DRAWS)]
            distinct[split] |= {task.instruction for task in tasks}
            titles[split] = {task.params.get("title") for task in tasks} - {None}
            if template.kind == "change":
                assert template.half_done(tasks[0]), template.id
        if template.id not in ("forum/new-thread",):  # a new thread's title is new by design
            assert not titles["train"] & (titles["dev"] | titles["test"]), f"{template.id} shares threads"
    # Draws per template and split are mostly distinct (the 12 categories repeat): thousands per split.
    assert all(len(instructions) > 0.75 * DRAWS * len(TEMPLATES) for instructions in distinct.values())


@pytest.fixture(scope="module")
def site() -> ForumSite:
    forum = ForumSite()
    forum.ensure_ready()
    return forum


@pytest.fixture
def tenants() -> Iterator[tuple[int, int]]:
    first, second = lease_tenant(), lease_tenant()
    try:
        yield first.number, second.number
    finally:
        first.release()
        second.release()


def request(site: ForumSite, tenant: int, path: str, **kwargs: Any) -> urllib.request.Request:
    """A request for ``path`` on the tenant's host (sent to the loopback: Python does not resolve *.localhost)."""
    request = urllib.request.Request(f"http://127.0.0.1:{site.port}{path}", **kwargs)
    request.add_header("Host", f"{site.host(tenant)}:{site.port}")
    return request


def fetch(site: ForumSite, tenant: int, path: str, cookies: list[dict] | None = None) -> str:
    page = request(site, tenant, path)
    if cookies:
        page.add_header("Cookie", "; ".join(f"{c['name']}={c['value']}" for c in cookies))
    with urllib.request.urlopen(page, timeout=30) as response:
        return response.read().decode()


def test_reset_restores_the_golden_state_exactly_and_fast(site: ForumSite, tenants: tuple[int, int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    golden = site.state_digest(tenant)
    with site.connect(tenant) as connection:
        connection.execute("TRUNCATE misago_threads_postlike")
        connection.execute("UPDATE misago_threads_post SET original = 'vandalised' WHERE thread_id = 1")
        connection.execute("UPDATE misago_users_user SET posts = posts + 1")
    assert site.state_digest(tenant) != golden
    timings = []
    for _ in range(3):  # the best of three: the machine's load, not the reset, makes the others slow
        started = time.perf_counter()
        site.reset_tenant(tenant)
        timings.append(time.perf_counter() - started)
        if len(timings) == 1:
            assert site.state_digest(tenant) == golden
    elapsed = min(timings)
    assert elapsed < 2.0, f"reset took {elapsed:.2f} s"


def test_each_host_sees_its_own_tenant(site: ForumSite, tenants: tuple[int, int]) -> None:
    changed, untouched = tenants
    thread = site.content()["threads"][0]
    for tenant in tenants:
        site.reset_tenant(tenant)
    with site.connect(changed) as connection:
        connection.execute("UPDATE misago_threads_thread SET title = 'Renamed in one tenant only' WHERE id = 1")
    path = f"/t/{thread['slug']}/{thread['id']}/"
    assert "Renamed in one tenant only" in fetch(site, changed, path)
    page = fetch(site, untouched, path)
    assert "Renamed in one tenant only" not in page and thread["title"] in page
    site.reset_tenant(changed)
    # A host that names no tenant is refused with an explanation, not served some tenant's data.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{site.port}/", timeout=30)
    assert refused.value.code == 404 and b"t<N>.forum.localhost" in refused.value.read()
    site.postgres.drop_database("forum_t255")  # a tenant that was never reset has no database
    with pytest.raises(urllib.error.HTTPError) as missing:
        fetch(site, 255, "/")
    assert missing.value.code == 404 and b"forum_t255 is missing" in missing.value.read()


def test_a_seeded_session_logs_the_user_in(site: ForumSite, tenants: tuple[int, int]) -> None:
    tenant = tenants[0]
    site.reset_tenant(tenant)
    user = next(u for u in site.content()["users"] if u["role"] == "moderator")["username"]
    signed_in = fetch(site, tenant, "/", site.session_cookies(tenant, user))
    assert f'"username": "{user}"' in signed_in and '"is_anonymous": false' in signed_in
    assert '"is_anonymous": true' in fetch(site, tenant, "/")
    with pytest.raises(Exception, match="no user"):
        site.session_cookies(tenant, "NoSuchUser")


def test_a_reply_posted_through_misagos_api_satisfies_the_reply_checker(
    site: ForumSite, tenants: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webapps_tasks, "SETTLE_S", 0.0)  # the reply is saved before the checks run
    tenant, other = tenants
    template = Reply()
    task = template.instantiate({"forum": site.content()}, random.Random(7), "dev")
    for number in tenants:
        site.reset_tenant(number)
    outcome = Outcome(answer="done", url="", tenant=tenant, sites={"forum": site})
    assert template.check(task, outcome) == 0.0
    # Misago's front end posts a reply as JSON with the session cookie and the CSRF token.
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    session = site.session_cookies(tenant, task.params["user"])[0]
    headers = {"Cookie": f"sessionid={session['value']}"}
    with opener.open(request(site, tenant, task.params["path"], headers=headers)):
        pass
    csrf = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    thread_id = task.params["path"].rstrip("/").rsplit("/", 1)[1]
    post = request(
        site,
        tenant,
        f"/api/threads/{thread_id}/posts/",
        data=json.dumps({"post": task.params["text"]}).encode(),
        headers={
            "Cookie": f"sessionid={session['value']}; csrftoken={csrf}",
            "X-CSRFToken": csrf,
            "Content-Type": "application/json",
            "Referer": site.base_url(tenant) + task.params["path"],
        },
        method="POST",
    )
    with urllib.request.urlopen(post, timeout=30) as response:
        assert response.status == 200
    assert template.check(task, outcome) == 1.0
    assert template.check(task, Outcome(answer="done", url="", tenant=other, sites={"forum": site})) == 0.0
    site.reset_tenant(tenant)


def test_a_search_whose_results_come_late_is_shown_with_them() -> None:
    """A step waits for the page Misago fills in by script: a thread search whose results answer 12 s late
    is returned with its results and counts (CI captured such a page without them, 10 s after it loaded,
    when the wait was 5 s)."""
    env = WebAppEnv(sites=("forum",))
    try:
        env.reset(options={"task_id": 0})

        async def answer_searches_late(page: Any) -> None:
            async def late(route: Any) -> None:
                await asyncio.sleep(12)
                await route.continue_()

            await page.context.route("**/api/search/**", late)

        env.tab.run(answer_searches_late)
        observation = env.step('goto("/search/threads/?q=fermentation")')[0]["text"]
        assert "Loading results" not in observation
        assert re.search(r"Threads\W+\d+", observation), observation
    finally:
        env.close()
