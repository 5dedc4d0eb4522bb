"""The pixel commands' keys: ``key("ctrl+s")`` read once, with one table (``keys.yaml``), for every env that
performs it: :func:`playwright_keys` for the browser, :func:`xdotool_keys` for the X11 desktop.

A combination is key names joined by ``+`` (``ctrl++`` is control and the plus key); an unknown key or a
malformed combination raises ``ValueError`` with a message for the agent.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Literal

import yaml

Backend = Literal["playwright", "xdotool"]
_FUNCTION_KEY = re.compile(r"^f([1-9]|1[0-2])$")
_KNOWN = "use names such as ctrl, shift, alt, enter, escape, tab, up, a, f2"


@functools.cache
def _table() -> dict[str, dict[str, str]]:
    """Each name an agent may write (lower case) -> the key's first name and its name per backend."""
    rows = yaml.safe_load(Path(__file__).with_name("keys.yaml").read_text(encoding="utf-8"))["keys"]
    return {
        name: {"canonical": row["names"][0], "playwright": row["playwright"], "xdotool": row["xdotool"]}
        for row in rows
        for name in row["names"]
    }


def canonical_key(key: str) -> str:
    """The first name of ``key``'s row (``Return`` -> ``enter``, ``cmd`` -> ``super``); an unknown key lower-cased."""
    known = _table().get(key if key == " " else key.strip().lower())
    return known["canonical"] if known else key.strip().lower()


def split_combination(combination: str) -> list[str]:
    """The keys of ``"ctrl+shift+a"`` (``"ctrl++"``: control and plus); ``ValueError`` if malformed."""
    text = combination.strip()
    parts = [*text[:-2].split("+"), "+"] if text.endswith("++") else text.split("+")
    if not text or any(not part.strip() for part in parts):
        raise ValueError(f"malformed key combination {combination!r}"[:200])
    return [part.strip() for part in parts]


def key_name(key: str, backend: Backend) -> str:
    """``backend``'s name of one key written by an agent; ``ValueError`` for a key it does not know."""
    known = _table().get(key.lower())
    if known is not None:
        return known[backend]
    if _FUNCTION_KEY.match(key.lower()):
        return key.upper()
    if len(key) == 1 and (key.isascii() and key.isalnum() or backend == "playwright" and key.isprintable()):
        return key
    raise ValueError(f"unknown key {key!r}; {_KNOWN}"[:200])


def playwright_keys(combination: str) -> str:
    """Playwright's name of a combination written ``ctrl+a``, ``Return`` or ``shift+Tab``."""
    return "+".join(key_name(key, "playwright") for key in split_combination(combination))


def xdotool_keys(combination: str) -> str:
    """xdotool's ``key`` argument for a combination written ``ctrl+s`` or ``Return``."""
    return "+".join(key_name(key, "xdotool") for key in split_combination(combination))
