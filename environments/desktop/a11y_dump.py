"""Print the AT-SPI accessibility tree of the desktop's apps (run by Debian's /usr/bin/python3).

Usage: ``python3 a11y_dump.py MAX_LINES [--json]``. One line per visible node, indented by depth:
``role "name"``; nodes without a name and with one child are skipped through. With ``--json``,
the same nodes as a JSON list of ``{depth, parent, role, name, box, interactive, icon, active}``:
``parent`` is the index in the list of the nearest listed ancestor (-1 for an application), ``box`` the
node's extents on the screen ``[x, y, width, height]`` (null where it has none), ``interactive``
whether it takes input (a control's role, or focusable), for the set-of-marks, ``icon`` whether it
shows a picture rather than its name (an icon, a button with an image of its own, a tool bar's
button), and ``active`` whether it is the active window. Needs PyGObject
and the Atspi typelib (Debian: python3-gi, gir1.2-atspi-2.0) and the session's D-Bus bus in
``DBUS_SESSION_BUS_ADDRESS``.
"""

import json
import sys

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

MAX_DEPTH = 12
MAX_CHILDREN = 60
#: Roles of controls, which take input whether or not they are focusable.
INTERACTIVE_ROLES = {
    "push button",
    "toggle button",
    "check box",
    "radio button",
    "menu item",
    "check menu item",
    "radio menu item",
    "menu",
    "combo box",
    "text",
    "entry",
    "password text",
    "link",
    "page tab",
    "list item",
    "table cell",
    "icon",
    "spin button",
    "slider",
    "tree item",
    "toggle",
    "button",
}


#: Roles of containers whose buttons show their icon, their name only as a tooltip.
ICON_BARS = {"tool bar"}


def extents(node):
    try:
        box = node.get_extents(Atspi.CoordType.SCREEN)
    except Exception:  # a node without the component interface
        return None
    return [box.x, box.y, box.width, box.height] if box.width > 0 and box.height > 0 else None


def shows_image(node):
    """Whether the node draws an image of its own (GTK buttons with an icon report its extents)."""
    try:
        box = Atspi.Image.get_image_extents(node, Atspi.CoordType.SCREEN)
    except Exception:  # no image interface
        return False
    return box.width > 0 and box.height > 0


def walk(node, depth, nodes, limit, boxes, parent=-1, in_bar=False):
    if len(nodes) >= limit or depth > MAX_DEPTH:
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
        entry = {"depth": depth, "role": role, "name": name[:80]}
        if boxes:
            entry["parent"] = parent
            entry["box"] = extents(node)
            entry["interactive"] = role in INTERACTIVE_ROLES or states.contains(Atspi.StateType.FOCUSABLE)
            entry["icon"] = role == "icon" or (role.endswith("button") and (in_bar or shows_image(node)))
            entry["active"] = states.contains(Atspi.StateType.ACTIVE)
        nodes.append(entry)
        parent = len(nodes) - 1
    in_bar = in_bar or role in ICON_BARS
    for index in range(min(count, MAX_CHILDREN)):
        child = node.get_child_at_index(index)
        if child is not None:
            walk(child, depth + 1 if shown else depth, nodes, limit, boxes, parent, in_bar)


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    as_json = "--json" in sys.argv[2:]
    desktop = Atspi.get_desktop(0)
    nodes = []
    for index in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(index)
        if app is not None:
            walk(app, 0, nodes, limit, as_json)
    nodes = nodes[:limit]
    if as_json:
        print(json.dumps(nodes))
        return
    lines = [
        "  " * node["depth"] + (f'{node["role"]} "{node["name"]}"' if node["name"] else node["role"]) for node in nodes
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
