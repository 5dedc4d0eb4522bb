"""Moved: screenshots as chat content live in :mod:`agentgym.images`, the one image module. This name stays
importable for code written before the move (each name read here warns once, then comes from there)."""

from __future__ import annotations

import warnings
from typing import Any

import agentgym.images as _images


def __getattr__(name: str) -> Any:
    value = getattr(_images, name)
    warnings.warn(f"agentgym.wrappers.vision.{name} moved to agentgym.images.{name}", DeprecationWarning, stacklevel=2)
    return value
