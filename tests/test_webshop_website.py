"""The WebShop website: a shopper in Chromium (Playwright) buys the goal; sessions, TTL and 4xx pages over httpx."""

from __future__ import annotations

import argparse
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentgym.environments.webshop.engine import Session, Shop
from agentgym.environments.webshop.website import add_arguments, create_app

CATALOG = "generated:3000"


class Clock:
    """A settable clock for the sessions' TTL."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Site:
    url: str
    app: Any
    shop: Shop
    clock: Clock


@contextmanager
def serving(cache_dir: Path, **options: Any) -> Iterator[Site]:
    """The site over the 3,000-product catalog, run by uvicorn in a thread on a free loopback port."""
    import uvicorn

    from agentgym.utils.sockets import listening_socket

    clock = Clock()
    app = create_app(CATALOG, cache_dir=cache_dir, clock=clock, **options)
    sock = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()  # the socket already listens: the first request waits until uvicorn accepts it
    try:
        yield Site(f"http://127.0.0.1:{sock.getsockname()[1]}", app, app.state.shop, clock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("webshop-site-cache")


@pytest.fixture(scope="module")
def site(cache_dir: Path) -> Iterator[Site]:
    with serving(cache_dir) as running:
        yield running


@pytest.fixture
def client(site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site.url, timeout=30) as http:
        yield http


def oracle_plan(shop: Shop, goal_index: int) -> list[str]:
    """The oracle's commands for a goal, played on a session of our own."""
    session, plan = Session(shop, shop.goals[goal_index]), []
    while not session.done:
        plan.append(session.oracle_action())
        session.act(plan[-1])
    assert session.purchase is not None and session.purchase.reward == 1.0
    return plan


def paging_goal(shop: Shop) -> tuple[int, list[str]]:
    """A test goal whose target is on the second results page and that asks for two options."""
    for goal_index in range(shop.splits.test):
        if len(shop.goals[goal_index].goal_options) >= 2:
            plan = oracle_plan(shop, goal_index)
            if plan[1] == "click[next >]":
                return goal_index, plan
    raise AssertionError("no test goal needs a second results page")


def target_click(shop: Shop, goal_index: int) -> str:
    return f"click[{shop.goals[goal_index].asin.lower()}]"


def start(client: httpx.Client, query: str = "") -> str:
    """A new session (``GET /?...``); its id."""
    response = client.get(f"/{query}")
    assert response.status_code == 303, response.text
    return response.headers["location"].strip("/")


def goal_of(client: httpx.Client, session_id: str) -> int:
    return client.get(f"/{session_id}/state").json()["goal_index"]


def post(client: httpx.Client, session_id: str, **form: str) -> httpx.Response:
    return client.post(f"/{session_id}", data=form)


def play(client: httpx.Client, session_id: str, command: str) -> None:
    form = {"search_query": command[7:-1]} if command.startswith("search[") else {"action": command}
    response = post(client, session_id, **form)
    assert response.status_code == 303, response.text


# ---- in Chromium -------------------------------------------------------------------------------


def watched_page(browser: Any, javascript: bool) -> tuple[Any, Any, list[str]]:
    """A fresh page whose console errors, page errors and dialogs land in the returned list."""
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return context, page, problems


def click_command(page: Any, command: str) -> None:
    page.locator(f'[data-action="{command}"]').click()


@pytest.mark.parametrize("javascript", [False, True], ids=["no-js", "js"])
def test_a_shopper_buys_the_goal_in_chromium(browser: Any, site: Site, javascript: bool) -> None:
    from playwright.sync_api import expect

    shop = site.shop
    goal_index, plan = paging_goal(shop)
    goal = shop.goals[goal_index]
    target = shop.product(shop.index_of(goal.asin))
    query = plan[0][len("search[") : -1]
    option_clicks = plan[plan.index(target_click(shop, goal_index)) + 1 : -1]
    context, page, problems = watched_page(browser, javascript)
    main = page.locator("main#page")

    # The start page for a known goal: the search page with the instruction.
    page.goto(f"{site.url}/?goal={goal_index}")
    expect(main).to_have_attribute("data-page", "search")
    expect(page.locator("#instruction-text")).to_contain_text(goal.instruction_text)
    assert re.fullmatch(rf"{re.escape(site.url)}/[A-Za-z0-9_-]+", page.url)

    # Type the query and submit it with Enter.
    page.locator("#search_input").fill(query)
    page.locator("#search_input").press("Enter")
    expect(main).to_have_attribute("data-page", "results")
    expect(page.locator(".feedback")).to_contain_text("You searched for")
    expect(page.locator("#instruction-text")).to_contain_text(goal.instruction_text)

    # The target is on a later page: page on until its link shows.
    link = page.locator(f'button.product-link[data-action="click[{goal.asin.lower()}]"]')
    pages_turned = 0
    while link.count() == 0:
        assert pages_turned < 5
        page.get_by_role("button", name="Next >", exact=True).click()
        pages_turned += 1
        expect(main).to_contain_text(f"Page {pages_turned + 1} (Total results:")
    assert pages_turned == plan.count("click[next >]") >= 1
    link.click()

    # The item page: pick the goal's options.
    expect(main).to_have_attribute("data-page", "item")
    expect(page.locator("h2")).to_have_text(target.title)
    for command in option_clicks:
        click_command(page, command)
        expect(page.locator(f'button.option[data-action="{command}"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator("button.option.selected")).to_have_count(len(option_clicks))

    # Description and back: the options stay selected.
    page.get_by_role("button", name="Description", exact=True).click()
    expect(main).to_have_attribute("data-page", "description")
    expect(page.locator(".product-info")).to_have_text(target.description)
    expect(page.locator("#instruction-text")).to_contain_text(goal.instruction_text)
    page.get_by_role("button", name="< Prev", exact=True).click()
    expect(main).to_have_attribute("data-page", "item")
    expect(page.locator("button.option.selected")).to_have_count(len(option_clicks))

    # Buy Now: the done page shows the reward 1.0 and its breakdown.
    page.get_by_role("button", name="Buy Now", exact=True).click()
    expect(main).to_have_attribute("data-page", "done")
    expect(page.locator("#reward pre")).to_have_text("1.0")
    expect(page.locator("#instruction-text")).to_contain_text(goal.instruction_text)
    expect(page.locator("#breakdown")).to_contain_text("Product type factor (r_type)")
    expect(page.locator("#purchase")).to_contain_text(goal.asin)
    state = httpx.get(f"{page.url}/state").json()
    assert state["reward"] == 1.0 and state["success"] and state["purchase"]["asin"] == goal.asin
    assert sorted(state["purchase"]["options"].values()) == sorted(command[6:-1] for command in option_clicks)

    assert page.locator("script").count() == 0
    assert problems == []
    context.close()


def test_a_wrong_purchase_shows_a_lower_reward_in_chromium(browser: Any, site: Site) -> None:
    from playwright.sync_api import expect

    shop = site.shop
    goal_index, plan = paging_goal(shop)
    goal = shop.goals[goal_index]
    query = plan[0][len("search[") : -1]
    context, page, problems = watched_page(browser, javascript=True)
    page.goto(f"{site.url}/?goal={goal_index}")
    page.locator("#search_input").fill(query)
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("main#page")).to_have_attribute("data-page", "results")
    first = page.locator("button.product-link").first
    asin = first.inner_text()
    assert asin.lower() != goal.asin.lower()  # the target is on page 2
    first.click()
    page.get_by_role("button", name="Buy Now", exact=True).click()
    expect(page.locator("main#page")).to_have_attribute("data-page", "done")

    # The same purchase played on the engine scores the same, below 1.
    session = Session(shop, goal)
    for command in (plan[0], f"click[{asin.lower()}]", "click[buy now]"):
        session.act(command)
    assert session.purchase is not None and session.purchase.reward < 1.0
    expect(page.locator("#reward pre")).to_have_text(str(session.purchase.reward))
    expect(page.locator("#breakdown")).to_contain_text(f"{session.purchase.reward:.3f}")
    assert problems == []
    context.close()


# ---- over HTTP ---------------------------------------------------------------------------------


class Clickables(HTMLParser):
    """Every ``data-action`` of a page, each checked to be a submit button of a POST form posting it."""

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[str] = []
        self.problems: list[str] = []
        self._form: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self._form = {"method": found.get("method"), "action": None}
        elif tag == "input" and found.get("type") == "hidden" and found.get("name") == "action" and self._form:
            self._form["action"] = found.get("value")
        if "data-action" in found:
            command = found["data-action"] or ""
            self.commands.append(command)
            form = self._form or {}
            if tag != "button" or found.get("type") != "submit" or form.get("method") != "post":
                self.problems.append(f"{command}: <{tag}> is not a submit button of a POST form")
            elif form.get("action") != command:
                self.problems.append(f"{command}: its form posts {form.get('action')!r}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None


def check_page(client: httpx.Client, session_id: str) -> str:
    """The session's page, checked: clickables match the engine's, each posts its command."""
    response = client.get(f"/{session_id}")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    parser = Clickables()
    parser.feed(response.text)
    assert parser.problems == []
    state = client.get(f"/{session_id}/state").json()
    assert set(parser.commands) == {f"click[{clickable}]" for clickable in state["available_actions"]["clickables"]}
    assert state["instruction"] in response.text.replace("&#x27;", "'")
    assert ('id="search_input"' in response.text) == state["available_actions"]["has_search_bar"]
    return response.text


def test_every_page_offers_what_the_engine_offers(site: Site, client: httpx.Client) -> None:
    goal_index, plan = paging_goal(site.shop)
    session_id = start(client, f"?goal={goal_index}")
    check_page(client, session_id)
    detour = ["click[description]", "click[< prev]", "click[features]", "click[< prev]", "click[reviews]"]
    detour += ["click[< prev]", "click[attributes]", "click[< prev]"]
    opened = plan.index(target_click(site.shop, goal_index)) + 1
    for command in [*plan[:opened], *detour, *plan[opened:]]:
        play(client, session_id, command)
        text = check_page(client, session_id)
    assert 'id="reward"' in text and "<pre>1.0</pre>" in text and 'id="breakdown"' in text


def test_start_page_picks_the_goal(site: Site, client: httpx.Client, cache_dir: Path) -> None:
    shop = site.shop
    assert goal_of(client, start(client, "?goal=7")) == 7
    task_id = shop.splits.ids("dev").start + 3
    assert goal_of(client, start(client, f"?task_id={task_id}")) == shop.goal_index(task_id) == 503
    drawn = [goal_of(client, start(client)) for _ in range(6)]
    assert all(0 <= goal < shop.splits.test for goal in drawn) and len(set(drawn)) > 1
    with serving(cache_dir, seed=5) as first, serving(cache_dir, seed=5) as second:  # the draws are seeded
        sequences = []
        for running in (first, second):
            with httpx.Client(base_url=running.url) as other:
                sequences.append([goal_of(other, start(other)) for _ in range(4)])
        assert sequences[0] == sequences[1]


def test_invalid_actions_and_bad_input_are_4xx_pages(site: Site, client: httpx.Client) -> None:
    session_id = start(client, "?goal=1")

    def refused(response: httpx.Response, status: int, text: str) -> None:
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("text/html")
        assert text in response.text and "Traceback" not in response.text

    # Commands the page does not offer: 400 with the engine's message, the page unchanged and still usable.
    refused(post(client, session_id, action="click[buy now]"), 400, "Invalid action: &#x27;buy now&#x27; is not")
    refused(post(client, session_id, action="dance"), 400, "expected search[keywords] or click[button text]")
    refused(post(client, session_id, search_query="   "), 400, "search[...] needs keywords")
    refused(post(client, session_id), 400, "neither an action nor a search_query")
    refused(post(client, session_id, other="x"), 400, "neither an action nor a search_query")
    assert client.get(f"/{session_id}/state").json()["page"] == "search"
    play(client, session_id, "search[shampoo]")
    refused(post(client, session_id, search_query="more"), 400, "there is no search bar on this page")
    assert client.get(f"/{session_id}/state").json()["page"] == "results"

    # Malformed requests.
    url = f"/{session_id}"
    refused(client.post(url, content=b"action=" + b"x" * 70_000), 413, "limited to")
    refused(client.post(url, json={"action": "click[next >]"}), 415, "x-www-form-urlencoded")
    refused(client.post(url, content=b"action=\xff\xfe", headers={"content-type": "application/x-www-form-urlencoded"}),
            400, "could not be read")  # fmt: skip
    refused(client.post(url, content="&".join(f"f{k}=1" for k in range(40))), 400, "could not be read")
    for query in ("?goal=abc", "?goal=-1", "?goal=12087", "?task_id=x", "?task_id=99999", "?goal=1&task_id=2"):
        refused(client.get(f"/{query}"), 400, "Bad request")

    # Unknown sessions and pages, wrong methods.
    for method, path in [("GET", "/nosuchsession"), ("POST", "/nosuchsession"), ("GET", "/nosuchsession/state")]:
        response = client.request(method, path, data={"action": "click[buy now]"} if method == "POST" else None)
        refused(response, 404, "does not exist or has expired")
        assert '<a href="/">Start a new shopping session</a>' in response.text
    refused(client.get("/bad%20id!"), 404, "not a session id")
    refused(client.get("/a/b/c"), 404, "no such page")
    refused(client.delete(url), 405, "Method Not Allowed")
    assert client.get(f"/{session_id}/state").json()["page"] == "results"


def test_an_internal_error_is_a_page_without_traceback(site: Site, client: httpx.Client) -> None:
    session_id = start(client, "?goal=2")

    class Broken(Session):
        def render(self, mode: str = "text") -> str:
            raise RuntimeError("boom: secret detail")

    visit = site.app.state.sessions.visits[session_id]
    visit.session = Broken(site.shop, visit.session.goal)
    response = client.get(f"/{session_id}")
    assert response.status_code == 500
    assert "Something went wrong on our side (RuntimeError)" in response.text
    assert "Traceback" not in response.text and "secret detail" not in response.text


def test_sessions_expire_and_are_capped(cache_dir: Path) -> None:
    with serving(cache_dir, max_sessions=3, session_ttl_s=60) as running, httpx.Client(base_url=running.url) as client:
        ids = [start(client, f"?goal={goal}") for goal in range(3)]
        assert len(set(ids)) == 3 and all(re.fullmatch(r"[A-Za-z0-9_-]{16}", i) for i in ids)
        full = client.get("/")
        assert full.status_code == 429 and full.headers["retry-after"] and "Too many sessions" in full.text

        # A finished session makes room for a new one; unfinished ones are kept.
        for command in oracle_plan(running.shop, 1):
            play(client, ids[1], command)
        fourth = start(client)
        assert client.get(f"/{ids[1]}").status_code == 404
        assert client.get(f"/{ids[0]}").status_code == client.get(f"/{ids[2]}").status_code == 200

        # Idle sessions expire after the TTL; using one keeps it alive.
        running.clock.now += 45
        assert client.get(f"/{ids[0]}").status_code == 200
        running.clock.now += 30
        assert client.get(f"/{ids[0]}").status_code == 200
        for gone in (ids[2], fourth):
            response = client.get(f"/{gone}")
            assert response.status_code == 404 and "has expired" in response.text
        health = client.get("/health").json()
        assert health["sessions"] == 1 and health["expired"] == 2 and health["evicted"] == 1
        assert health["created"] == 4 and health["products"] == 3000


def test_command_line_serves_the_site(cache_dir: Path) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = parser.parse_args([])
    assert (defaults.port, defaults.catalog, defaults.max_sessions) == (3000, None, 1024)

    command = [sys.executable, "-m", "agentgym.environments.webshop.website", "--port", "0"]
    command += ["--catalog", CATALOG, "--cache-dir", str(cache_dir), "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()], daemon=True).start()
    try:
        url = None
        while url is None:
            line = lines.get(timeout=120)  # the catalog's index is cached: this takes a few seconds
            found = re.search(r"on (http://127\.0\.0\.1:\d+)/", line)
            url = found and found.group(1)
        health = httpx.get(f"{url}/health", timeout=30).json()
        assert health["catalog"] == "generated-3000-seed0" and health["sessions"] == 0
        assert httpx.get(f"{url}/?goal=0", timeout=30).status_code == 303
    finally:
        process.terminate()
        process.wait(timeout=30)
