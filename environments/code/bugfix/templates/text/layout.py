"""Laying text out in lines."""


def wrap(text, width):
    """Greedy word wrap into lines of at most ``width`` characters (a longer word stands alone)."""
    if width < 1:
        raise ValueError("width must be positive")
    lines, current = [], ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def truncate(text, limit, suffix="..."):
    """``text`` cut to at most ``limit`` characters, ending in ``suffix`` when it was cut."""
    if len(text) <= limit:
        return text
    if limit <= len(suffix):
        return suffix[:limit]
    return text[: limit - len(suffix)] + suffix


def center(text, width, fill="*"):
    """``text`` centered in ``width`` characters; an odd extra fill character goes right."""
    if len(text) >= width:
        return text
    total = width - len(text)
    left = total // 2
    return fill * left + text + fill * (total - left)


def indent(text, prefix="    "):
    """Every non-blank line of ``text`` with ``prefix`` in front."""
    return "\n".join(prefix + line if line.strip() else line for line in text.split("\n"))


def columns(rows, gap=2):
    """Rows of cells as lines of left-aligned columns, ``gap`` spaces apart."""
    widths = [max(len(row[index]) for row in rows) for index in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        lines.append((" " * gap).join(cells).rstrip())
    return lines
