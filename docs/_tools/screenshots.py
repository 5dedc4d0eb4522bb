"""Screenshots of the docs site in Chromium: its home page and an API page (docs/images/site-*.png).

Run from the repository root: ``.venv/bin/python docs/_tools/screenshots.py``. It builds the site
with ``mkdocs build --strict`` into a temporary folder, serves it on a free loopback port and takes
the screenshots with Playwright on the Chromium agentgym's browser envs launch (``agentgym.browser.page.CHROMIUM``).
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from playwright.async_api import async_playwright

from agentgym.browser.page import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
VIEWPORT = {"width": 1400, "height": 1000}
#: (page of the site, anchor to scroll to or None, file written)
SHOTS = [("/", None, "site-home.png"), ("/api/core/", "agentgym.contract.core.TextEnv", "site-api.png")]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


async def take(base_url: str) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        page = await browser.new_page(viewport=VIEWPORT)
        for path, anchor, name in SHOTS:
            await page.goto(base_url + path)
            await page.wait_for_load_state("networkidle")
            if anchor:
                await page.locator(f"[id='{anchor}']").scroll_into_view_if_needed()
            await page.wait_for_timeout(1500)  # the header's title fades when the page scrolls
            await page.screenshot(path=str(IMAGES / name))
            print(IMAGES / name)
        await browser.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as site:
        build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", site]
        subprocess.run(build, cwd=ROOT, check=True)
        handler = functools.partial(QuietHandler, directory=site)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            asyncio.run(take(f"http://127.0.0.1:{server.server_address[1]}"))
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
