"""Test helper: the Python examples of a docs page, for the tests that run them with fixtures of their own."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_block(page: Path, starts_with: str) -> str:
    """The first ```python block of ``page`` that starts with ``starts_with``."""
    blocks = page.read_text().split("```python\n")[1:]
    return next(block.split("```")[0] for block in blocks if block.startswith(starts_with))
