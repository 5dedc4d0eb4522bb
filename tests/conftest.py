"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a tiny random chat model and tokenizer (see ``tests/tiny_model.py``)."""
    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_model_with_long_context_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with a 2,048-token context: room for whole agent episodes."""
    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama-2k", context_length=2048)


@pytest.fixture(scope="session")
def tiny_tool_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with a Qwen2.5-style chat template that renders tools and tool calls, 4,096-token context."""
    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-tools", context_length=4096, tools=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright (its own browser download does not work offline)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing (pip install playwright)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def alfworld_games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny set of genuine ALFWorld-format games (the real ones cannot be downloaded here), written once."""
    from agentgym.environments.alfworld.tiny import write_tiny_games

    return write_tiny_games(tmp_path_factory.mktemp("alfworld"))


@pytest.fixture
def alfworld_data(alfworld_games: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$ALFWORLD_DATA`` set to the tiny games for one test, so that ``gym.make("ALFWorld-v0")`` finds them.

    Requested by the tests that make every registered id (``@pytest.mark.usefixtures("alfworld_data")``).
    """
    monkeypatch.setenv("ALFWORLD_DATA", str(alfworld_games))
    return alfworld_games
