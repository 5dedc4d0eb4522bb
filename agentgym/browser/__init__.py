"""The shared browser machinery of the browser families (MiniWoB++, WebShop-Browser, live sites):
headless Chromium through Playwright, pages serialised as text with element ids (:mod:`.page`),
and :class:`~agentgym.browser.env.BrowserEnv`, the base env every browser family subclasses.

Floor: env machinery; it imports only its own floor and those below it: contract (docs/architecture.md).
"""
