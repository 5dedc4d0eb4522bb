"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest


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
