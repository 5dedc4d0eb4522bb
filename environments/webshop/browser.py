"""WebShop-Browser-v0: the WebShop website in headless Chromium, with WebShop-v0's goals and reward.

The site of :mod:`agentgym.environments.webshop.website` runs in this process (one per
process, on a free local port, shared by every env) over the same shop that ``WebShop-v0``
loads. Task ``task_id`` opens ``/?task_id=N``: the session of WebShop-v0's task ``N``, same
instruction, same goal. The agent acts with the browser commands (type into the search box,
click results, options and Buy Now); when it buys, the episode ends with the engine's own
reward, so a purchase scores exactly as in WebShop-v0.

The oracle is WebShop-v0's (the engine's ``oracle_action`` for the session), translated to
browser commands: ``search[q]`` becomes ``type(box, q)`` then ``click(Search)``, and
``click[X]`` a click on the element whose form posts ``click[X]``.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, ClassVar

from agentgym.browser.env import BrowserEnv
from agentgym.browser.page import BrowserError, Command
from agentgym.contract.core import TaskSplits
from agentgym.environments.webshop import SPLITS


class _Site:
    """The WebShop website served by uvicorn on a background thread of this process."""

    def __init__(self) -> None:
        import uvicorn

        from agentgym.environments.webshop.website import create_app
        from agentgym.utils.sockets import listening_socket

        self.pid = os.getpid()
        self.app = create_app(session_ttl_s=0, max_sessions=100_000)
        sock = listening_socket("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()

    def session(self, session_id: str) -> Any:
        """The engine session behind ``/{session_id}``."""
        return self.app.state.sessions.get(session_id).session


_SITE: _Site | None = None
_SITE_LOCK = threading.Lock()


def shared_site() -> _Site:
    """This process's WebShop site (started on first use; a forked child, such as an
    ``AsyncVectorEnv`` worker, starts its own: the parent's server thread is not in it)."""
    global _SITE
    with _SITE_LOCK:
        if _SITE is None or _SITE.pid != os.getpid():
            _SITE = _Site()
        return _SITE


_COMMAND = re.compile(r"^(search|click)\[(.*)\]$", re.DOTALL)


class WebShopBrowserEnv(BrowserEnv):
    """WebShop through a browser (see the module docstring)."""

    splits: ClassVar[TaskSplits] = SPLITS
    page_exclude: ClassVar[tuple[str, ...]] = ("header",)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.site = shared_site()
        self.session_id: str | None = None

    def _generate(self, task_id: int) -> str:
        url = f"{self.site.url}/?task_id={task_id}"
        try:
            self.tab.run(lambda page: page.goto(url))
            self.session_id = self.tab.page.url.rstrip("/").rsplit("/", 1)[-1]
            return self.site.session(self.session_id).instruction
        except BrowserError as error:
            self._fail(error)
            return "WebShop (the site could not be opened)"

    async def _after_action(self, page: Any, command: Command) -> str:
        await page.wait_for_load_state()
        purchase = self.site.session(self.session_id).purchase if self.session_id else None
        if purchase is None:
            return ""
        self.score, self.success, self.terminated = purchase.reward, purchase.reward == 1.0, True
        return f" Bought; reward {purchase.reward:.3f}."

    def oracle_action(self) -> str:
        if self.session_id is None or self.terminated:
            return "scroll(down)"
        match = _COMMAND.match(self.site.session(self.session_id).oracle_action())
        if match is None:
            return "scroll(down)"
        kind, argument = match.groups()
        if kind == "click":
            bid = self.evaluate(
                "a => document.querySelector(`[data-action=\"${CSS.escape(a)}\"]`)?.getAttribute('data-bid')",
                f"click[{argument}]",
            )
            return f"click({bid})" if bid else "scroll(down)"
        box, button = self.evaluate(
            "() => [document.querySelector('[name=search_query]'), document.querySelector('[name=search_query]')"
            "?.form?.querySelector('button, input[type=submit]')].map(e => e?.getAttribute('data-bid'))"
        )
        value = self.evaluate("() => document.querySelector('[name=search_query]')?.value")
        if value != argument:
            return f"type({box}, {_quoted(argument)})"
        return f"click({button})"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
