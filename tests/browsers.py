"""The mark of the tests that drive Chromium: skipped where agentgym finds none (``agentgym.browser.page.CHROMIUM``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.browser.page import CHROMIUM

needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs Chromium (apt-get install chromium-headless-shell)"
)
