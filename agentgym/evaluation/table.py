"""Plain-text tables for the terminal."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces, with a rule under the header."""
    cells = [[str(value) for value in row] for row in rows]
    widths = [max(len(text) for text in column) for column in zip(headers, *cells)]
    lines = ["  ".join(text.ljust(width) for text, width in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * width for width in widths))
    lines += ["  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)
