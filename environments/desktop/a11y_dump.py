"""Print the AT-SPI accessibility tree of the desktop's apps (run by Debian's /usr/bin/python3).

Usage: ``python3 a11y_dump.py MAX_LINES``. One line per visible node, indented by depth:
``role "name"``; nodes without a name and with one child are skipped through. Needs
PyGObject and the Atspi typelib (Debian: python3-gi, gir1.2-atspi-2.0) and the session's
D-Bus bus in ``DBUS_SESSION_BUS_ADDRESS``.
"""

import sys

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

MAX_DEPTH = 12
MAX_CHILDREN = 60


def walk(node, depth, lines, limit):
    if len(lines) >= limit or depth > MAX_DEPTH:
        return
    try:
        role, name = node.get_role_name(), (node.get_name() or "").strip()
        count = node.get_child_count()
        states = node.get_state_set()
    except Exception:  # an app that went away while being read
        return
    if not states.contains(Atspi.StateType.SHOWING) and depth > 1:
        return
    shown = bool(name) or count != 1
    if shown:
        lines.append("  " * depth + (f'{role} "{name[:80]}"' if name else role))
    for index in range(min(count, MAX_CHILDREN)):
        child = node.get_child_at_index(index)
        if child is not None:
            walk(child, depth + 1 if shown else depth, lines, limit)


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    desktop = Atspi.get_desktop(0)
    lines = []
    for index in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(index)
        if app is not None:
            walk(app, 0, lines, limit)
    print("\n".join(lines[:limit]))


if __name__ == "__main__":
    main()
