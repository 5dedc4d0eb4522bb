"""The browser layer: command parsing, the live-site env on a local server, and robustness
(a page that never loads, a crashed renderer, a hung page, a vanished element, 64 episodes at once)."""

from __future__ import annotations

import contextlib
import http.server
import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browsers import needs_chromium

from agentgym.browser import page
from agentgym.browser.commands import Command, parse_command
from agentgym.browser.page import BrowserError, BrowserPool, Tab

pytestmark = needs_chromium

FORM = b"""<!doctype html><html><body>
<h1>Greeting</h1>
<input id="name" placeholder="your name"> <button id="go" onclick="
  document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value">Greet</button>
<p id="out"></p>
<button id="vanish" onclick="this.remove()">Vanish</button>
<button id="hang" onclick="while (true) {}">Hang</button>
<a href="/other">Other page</a>
<a href="/other" target="_blank">Other page in a new tab</a>
</body></html>"""

#: A page whose script adds images after the load, as MiniWoB's order-food does: an <img> and a CSS image.
IMAGES = b"""<!doctype html><html><head><style>.icon { content: url(/late.png?css); height: 16px; }</style>
</head><body><div id="menu"></div><script>
window.onload = () => {
  const image = document.createElement('img');
  image.src = '/late.png?img'; image.alt = 'vegan'; image.style.width = '16px';
  document.getElementById('menu').appendChild(image);
  const icon = document.createElement('span');
  icon.className = 'icon'; icon.setAttribute('role', 'button');
  document.getElementById('menu').appendChild(icon);
};
</script></body></html>"""


#: Ready elements beside ones that refuse an action: a disabled button and a read-only field.
READY = b"""<!doctype html><html><body>
<input id="name" placeholder="your name"> <button onclick="document.title = 'sent'">Send</button>
<button disabled onclick="document.title = 'disabled clicked'">Disabled</button>
<input readonly value="fixed" placeholder="read only">
</body></html>"""


#: A field a script replaces with a new one a moment after the agent first saw it (Misago's reply editor:
#: a disabled text box while the editor loads, then another one): the id the agent saw is gone.
REPLACED = b"""<!doctype html><html><body>
<textarea disabled placeholder="editor loading"></textarea>
<script>
const loading = document.querySelector('textarea');
new MutationObserver(() => setTimeout(() => {
  const editor = document.createElement('textarea');
  editor.placeholder = 'editor';
  loading.replaceWith(editor);
}, 1000)).observe(loading, {attributes: true, attributeFilter: ['data-bid']});
</script></body></html>"""


#: A form whose Send navigates a moment after the click (Roundcube's redirect after sending, late on a loaded
#: machine), and once more from the page it lands on: a goto given meanwhile is cut short, twice.
SENDING = b"""<!doctype html><html><body><button onclick="send()">Send</button><script>
function send() { setTimeout(() => { location.href = location.pathname === '/sending' ? '/sent' : '/done'; }, 300); }
if (location.pathname === '/sent') send();
</script></body></html>"""


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (0, 128, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


PNG = _png()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        if self.path == "/slow":  # headers and half a page, then nothing: the load never finishes
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html><body><p>loading")
            self.wfile.flush()
            time.sleep(20)
            return
        if self.path in ("/sluggish", "/sluggish-target"):  # longer than an action may take, less than a page
            time.sleep(2.0)
        if self.path.startswith("/late.png"):  # an image that arrives after the page has loaded
            time.sleep(1.5)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)
            return
        body = {
            "/": FORM,
            "/images": IMAGES,
            "/ready": READY,
            "/replaced": REPLACED,
            "/sending": SENDING,
            "/sent": SENDING,
        }.get(self.path, b"<html><body><p>The other page</p></body></html>")
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the browser gave up (a timeout test)
            super().handle()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def greeted(page: object) -> bool:
    text = await page.evaluate("document.querySelector('#out')?.textContent || ''")  # type: ignore[attr-defined]
    return text.startswith("Hello, Ada")


def element_id(observation: dict, text: str) -> int:
    line = next(line for line in observation["text"].splitlines() if text in line and line.lstrip().startswith("["))
    return int(line.split("[", 1)[1].split("]", 1)[0])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("click(12)", Command("click", (12,))),
        ('type(3, "hi \\"you\\"")', Command("type", (3, 'hi "you"'))),
        ("select(4, 'b')", Command("select", (4, "b"))),
        ('select(4, ["a", "b"])', Command("select", (4, ["a", "b"]))),
        ("press(Enter)", Command("press", ("Enter",))),
        ('press("Control+a")', Command("press", ("Control+a",))),
        ("scroll(down)", Command("scroll", ("down",))),
        ("click_xy(10, 20.5)", Command("click_xy", (10.0, 20.5))),
    ],
)
def test_parse_command(text: str, expected: Command) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    "text", ["click", "click(a)", "click(1, 2)", "scroll(left)", 'goto("http://x")', "type(1, hi)", "rm(1)", "x" * 999]
)
def test_parse_command_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_command(text)


def test_live_site_with_checker(site: str) -> None:
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/", "Greet Ada.", checker=greeted, screenshot=True)
    observation, info = env.reset()
    assert "Greet Ada." in observation["text"] and "goto(" in observation["text"]
    assert observation["screenshot"].shape == (720, 1280, 3) and observation["screenshot"].dtype.name == "uint8"
    field = element_id(observation, "placeholder=")
    observation, reward, terminated, _, info = env.step(f'type({field}, "Ada")')
    assert 'value="Ada"' in observation["text"] and not terminated
    greet = element_id(observation, '"Greet"')
    observation, reward, terminated, _, info = env.step(f"click({greet})")
    assert terminated and info["success"] and reward == 1.0 and info["browser_error"] is None
    env.reset()
    observation, _, _, _, info = env.step('goto("https://example.com/")')
    assert info["invalid_action"] and "limited to" in observation["text"]
    observation, _, _, _, info = env.step(f'goto("{site}/other")')
    assert "The other page" in observation["text"] and info["url"] == f"{site}/other"
    env.close()


def test_page_that_never_finishes_loading_is_reported(site: str) -> None:
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/", "Wait.", action_timeout_s=1.0, page_timeout_s=3.0)
    env.reset()
    start = time.monotonic()
    observation, _, terminated, _, info = env.step(f'goto("{site}/slow")')
    assert time.monotonic() - start < 15
    assert terminated and "did not answer" in info["browser_error"] and "browser failed" in observation["text"]
    observation, info = env.reset()  # the recycled tab works
    assert info["browser_error"] is None and "Greet" in observation["text"]
    env.close()


def test_a_goto_has_the_page_timeout_not_the_action_timeout(site: str) -> None:
    """A page load slower than an action's actionability limit (a loaded machine) still opens: goto is a
    page load. A page that does not load in time names Playwright's own limit, not the watchdog's."""
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/", "Wait.", action_timeout_s=0.5, page_timeout_s=6.0)
    env.reset()
    observation, _, terminated, _, info = env.step(f'goto("{site}/sluggish")')
    assert not terminated and info["browser_error"] is None and "The other page" in observation["text"]
    env.close()
    env = LiveSiteEnv(site + "/", "Wait.", action_timeout_s=0.5, page_timeout_s=1.0)
    env.reset()
    _, _, terminated, _, info = env.step(f'goto("{site}/sluggish")')
    assert terminated and "did not answer in time (Page.goto: Timeout 1000ms exceeded" in info["browser_error"]
    env.close()


def test_a_goto_the_pages_own_navigations_cut_short_is_tried_until_it_opens(site: str) -> None:
    """A goto given while the page's own navigation is under way (a form's redirect after Send, late on a
    loaded machine: CI failed a mail episode so) is cut short by it, and by the next one: it is tried again
    after each, and opens, instead of ending the episode."""
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/sending", "Send, then go elsewhere.")
    observation, _ = env.reset()
    env.step(f"click({element_id(observation, 'Send')})")
    observation, _, terminated, _, info = env.step(f'goto("{site}/sluggish-target")')
    assert not terminated and info["browser_error"] is None, info["browser_error"]
    assert info["url"] == f"{site}/sluggish-target" and "The other page" in observation["text"]
    env.close()


def test_an_action_timeout_the_machine_used_up_is_not_the_agents(site: str) -> None:
    """Playwright's actionability wait measures wall time: on a loaded machine it can run out before the
    browser even finds a ready element. A 1 ms action timeout (every wait runs out) stands for that: ready
    elements still take clicks, text and keys; a disabled button and a read-only field still refuse them."""
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/ready", "Send your name.", action_timeout_s=0.001, page_timeout_s=20.0)
    observation, _ = env.reset()
    observation, _, _, _, info = env.step(f'type({element_id(observation, "your name")}, "Ada")')
    assert not info["invalid_action"], observation["text"]
    observation, _, _, _, info = env.step("press(End)")  # to the focused field
    assert not info["invalid_action"], observation["text"]
    observation, _, _, _, info = env.step(f"click({element_id(observation, 'Send')})")
    assert not info["invalid_action"] and env.evaluate("document.title") == "sent", observation["text"]
    disabled, read_only = element_id(observation, "Disabled"), element_id(observation, "read only")
    observation, _, _, _, info = env.step(f"click({disabled})")
    assert info["invalid_action"] and "Timeout 1ms exceeded" in observation["text"]
    assert env.evaluate("document.title") == "sent"
    observation, _, _, _, info = env.step(f'type({read_only}, "changed")')
    assert info["invalid_action"] and info["browser_error"] is None
    env.close()


def test_an_element_replaced_during_the_actions_wait_is_reported_at_once(site: str) -> None:
    """Typing into a disabled field that a script then replaces: the action's wait runs out on an element
    that is no longer on the page, and the agent is told so at once (it hung until the page timeout and
    ended the episode: a forum reply in the web apps)."""
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/replaced", "Write a reply.", action_timeout_s=2.0, page_timeout_s=30.0)
    observation, _ = env.reset()
    field = element_id(observation, "textarea")
    start = time.monotonic()
    observation, _, terminated, _, info = env.step(f'type({field}, "hello")')
    assert info["invalid_action"] and not terminated and info["browser_error"] is None, observation["text"]
    assert time.monotonic() - start < 15
    assert element_id(observation, "textarea") != field
    observation, _, _, _, info = env.step(f'type({element_id(observation, "textarea")}, "hello")')
    assert not info["invalid_action"], observation["text"]
    env.close()


def test_a_capture_chromium_refuses_once_is_taken_again(site: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chromium now and then answers a capture with "Unable to capture screenshot" and takes the same picture when
    asked again (seen under load in a MiniWoB++ episode): the tab asks once more, without recycling. The refusal
    is Playwright's own error raised in place of the first capture (Chromium cannot be made to refuse on demand)."""
    from playwright.async_api import Error as PlaywrightError

    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/", "Greet Ada.", checker=greeted)
    env.reset()
    tab = env.tab
    page_class, refusals = type(tab.page), []
    capture = page_class.screenshot

    async def refused_once(page: object, **options: object) -> bytes:
        if not refusals:
            refusals.append(options)
            raise PlaywrightError("Protocol error (Page.captureScreenshot): Unable to capture screenshot")
        return await capture(page, **options)

    monkeypatch.setattr(page_class, "screenshot", refused_once)
    try:
        pixels = tab.screenshot()
        assert len(refusals) == 1 and tab.recycles == 0
        assert pixels.ndim == 3 and pixels.shape[2] == 3 and pixels.any()
    finally:
        env.close()


def test_crashed_renderer_is_recycled_and_reported(site: str) -> None:
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/", "Greet Ada.", checker=greeted)
    env.reset()
    tab = env.tab

    async def crash(page: object) -> None:
        session = await page.context.new_cdp_session(page)  # type: ignore[attr-defined]
        await session.send("Page.crash")

    with pytest.raises(BrowserError):
        tab.run(crash, timeout_s=5)
    assert tab.recycles == 1
    observation, info = env.reset()
    assert "Greet" in observation["text"]
    env.close()


def test_hung_page_and_vanished_element(site: str) -> None:
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/", "Greet Ada.")
    observation, _ = env.reset()
    vanish = element_id(observation, '"Vanish"')
    observation, _, _, _, info = env.step(f"click({vanish})")
    assert not info["invalid_action"]
    observation, reward, terminated, _, info = env.step(f"click({vanish})")  # its id is gone now
    assert info["invalid_action"] and "vanished" in observation["text"] and not terminated
    observation, _, _, _, info = env.step("click(12345)")
    assert info["invalid_action"] and info["browser_error"] is None
    # Short limits for the hanging page only: under a loaded machine's (three pytest workers') load, the clicks
    # above took longer than 3 s, which ended the episode before the checks they are for.
    env.action_timeout_s, env.page_timeout_s = 1.0, 3.0
    env.tab.timeout_s = 3.0
    start = time.monotonic()
    observation, _, terminated, _, info = env.step(f"click({element_id(observation, 'Hang')})")
    assert time.monotonic() - start < 20
    assert terminated and info["browser_error"] and not info["success"]
    observation, info = env.reset()
    assert "Greet" in observation["text"] and info["browser_error"] is None
    env.close()


def test_tabs(site: str) -> None:
    """new_tab / switch_tab / close_tab, a target=_blank link opening a shown tab, and the tab list."""
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(f"{site}/", "Look around.", allow_tabs=True)
    observation, _ = env.reset()
    assert "Tabs:" not in observation["text"] and "switch_tab(n)" in observation["text"]
    observation, _, _, _, info = env.step(f"click({element_id(observation, 'Other page in a new tab')})")
    assert info["url"] == f"{site}/other" and "[1] " in observation["text"] and "(shown)" in observation["text"]
    assert "The other page" in observation["text"]
    observation, _, _, _, info = env.step("switch_tab(0)")
    assert info["url"] == f"{site}/" and "Greeting" in observation["text"]
    for bad in ("switch_tab(2)", "close_tab(1)"):
        assert env.step(bad)[4]["invalid_action"]
    env.step("new_tab()")
    observation, _, _, _, info = env.step(f'goto("{site}/other")')
    assert info["url"] == f"{site}/other" and "[2] " in observation["text"]
    for _ in range(2):
        assert not env.step("close_tab()")[4]["invalid_action"]
    observation, _, _, _, info = env.step("close_tab()")
    assert info["invalid_action"] and "only tab" in observation["text"] and "Tabs:" not in observation["text"]
    env.close()
    # Without allow_tabs the tab commands are not commands.
    plain = LiveSiteEnv(f"{site}/", "Look around.")
    plain.reset()
    assert "unknown command 'new_tab'" in plain.step("new_tab()")[0]["text"]
    plain.close()


def test_the_default_chromium_is_the_configured_one_else_the_first_build_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell, full = tmp_path / "chromium-headless-shell", tmp_path / "chromium"
    monkeypatch.setattr(page, "CHROMIUM_BUILDS", (str(shell), str(full)))
    monkeypatch.delenv("AGENTGYM_CHROMIUM", raising=False)
    assert page.default_chromium() == str(full)  # none installed: the launch error names the last
    full.touch()
    assert page.default_chromium() == str(full)
    shell.touch()
    assert page.default_chromium() == str(shell)
    monkeypatch.setenv("AGENTGYM_CHROMIUM", "/opt/chrome/chrome")
    assert page.default_chromium() == "/opt/chrome/chrome"


def test_the_pool_closes_browsers_left_idle_and_stops_counting_given_up_contexts() -> None:
    """After a peak the pool shrinks back to one Chromium process; a context that would not close
    (given up with ``drop``) no longer holds a browser's room."""
    pool = BrowserPool(contexts_per_browser=1, idle_close_s=0.5)
    try:
        contexts = [pool.call(pool.new_context(), 60) for _ in range(3)]
        assert pool.browser_count() == 3
        for context in contexts:
            pool.call(context.close(), 30)
        deadline = time.monotonic() + 30
        while pool.browser_count() > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pool.browser_count() == 1
        given_up = pool.call(pool.new_context(), 60)
        pool.drop(given_up)
        time.sleep(0.2)
        pool.call(pool.new_context(), 60)  # the room the given-up context held: no second process
        assert pool.browser_count() == 1
    finally:
        pool.close()


def test_a_tab_that_fails_half_open_gives_its_browser_room_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tab whose page fails to open after its context was made (a browser killed, a timeout) closes that
    context: otherwise its browser counts it forever and is never closed when idle."""
    pool = BrowserPool(contexts_per_browser=1, idle_close_s=0.5)
    try:

        def fail(tab: Tab, page: object) -> None:
            raise RuntimeError("opening failed")

        with monkeypatch.context() as failing:
            failing.setattr(Tab, "_watch", fail)
            with pytest.raises(RuntimeError, match="opening failed"):
                Tab(pool=pool)
        tab = Tab(pool=pool)  # the room the failed tab's context held: no second process
        assert pool.browser_count() == 1 and tab.page is not None
        tab.close()
    finally:
        pool.close()


#: Concurrent episodes of the test below: more than one Chromium process holds (BrowserPool's 16 contexts each).
#: benchmarks/web_browser.py measures throughput at higher concurrency.
CONCURRENT_EPISODES = 24


def test_concurrent_episodes_over_several_browser_processes() -> None:
    from agentgym.environments.miniwob.env import MiniWoBEnv

    results: list[tuple[bool, str | None]] = []
    lock = threading.Lock()

    def play(index: int) -> None:
        env = MiniWoBEnv("click-button")
        try:
            env.reset(options={"task_id": index})
            for _ in range(5):
                _, _, terminated, _, info = env.step(env.oracle_action())
                if terminated:
                    break
            with lock:
                results.append((info["success"], info["browser_error"]))
        finally:
            env.close()

    threads = [threading.Thread(target=play, args=(index,)) for index in range(CONCURRENT_EPISODES)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads), "an episode hung"
    assert len(results) == CONCURRENT_EPISODES
    failed = [(success, error) for success, error in results if not success or error is not None]
    assert not failed, failed
    print(f"{CONCURRENT_EPISODES} concurrent click-button episodes in {time.monotonic() - start:.1f} s")


def test_a_read_that_a_navigation_interrupts_is_read_again_on_the_new_page(site: str) -> None:
    """An earlier action's navigation still under way destroys a read's script context ("Execution context
    was destroyed"): the read waits for the new page and runs again, instead of failing the episode."""
    from agentgym.browser.env import LiveSiteEnv
    from agentgym.browser.page import NAVIGATED_AWAY

    # The script navigates away mid-run the first time (its context is destroyed); again, it reads the new page.
    navigates = (
        "() => { if (location.pathname !== '/other') { location.href = '/other'; return new Promise(() => {}); }"
        " return location.pathname; }"
    )
    env = LiveSiteEnv(site + "/", "Read the page.")
    env.reset()
    with pytest.raises(Exception, match=NAVIGATED_AWAY):  # a plain evaluate meets the navigation
        env.tab.run(lambda page: page.evaluate(navigates))
    env.reset()
    assert env.evaluate(navigates) == "/other"
    env.close()


@pytest.mark.parametrize("fake_clock", [False, True])
def test_images_that_load_late_are_waited_for(site: str, fake_clock: bool) -> None:
    """An image still loading has no size and would be left out of the page: the read waits for the page's
    images (<img> and CSS ones), so a slow machine sees the page a fast one sees (issue #27, MiniWoB
    order-food), also on the paused fake clock, where no page timer runs."""
    from agentgym.browser.env import LiveSiteEnv

    env = LiveSiteEnv(site + "/images", "Look.", fake_clock=fake_clock)
    observation, info = env.reset()
    assert info["browser_error"] is None
    assert 'img alt="vegan"' in observation["text"] and "span role=button" in observation["text"]
    assert env.evaluate("() => Array.from(document.images).every(image => image.complete)")
    env.close()
