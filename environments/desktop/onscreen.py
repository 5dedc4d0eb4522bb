"""What a click reaches on the desktop: the screen's top layer and the accessibility nodes nothing covers.

AT-SPI gives each node's box on the screen but not what is drawn above it (it has no ``elementFromPoint``),
so this reads it from the tree the helper dumps (``a11y_dump.py --json``: nodes in tree order, each with
its ``parent``'s index):

* The **top layer** is an open menu's popup where one shows (a ``menu`` node with menu items listed under
  it: GTK lists a popup's items as the menu's children, although they are drawn in a window of their own
  over everything); else the active window (a dialog over its main window), else the last window listed.
* A node is **reachable** when it lies in the top layer, has a box on the screen inside its window's box and
  inside the boxes of its scrolling ancestors (:data:`CLIPPING_ROLES`: a row scrolled out of its list's view
  is not; other containers need not hold their children's boxes: a notebook tab's page is drawn below the
  tab, yet is its child), and no other node of the layer
  that is neither its ancestor nor its descendant overlaps its box: then a click anywhere in its box lands
  on it. Nodes of lower layers (the main window under a dialog) are never reachable, even where they show.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Roles of a popup menu's entries: a menu whose listed children include one shows its popup.
MENU_ENTRY_ROLES = frozenset({"menu item", "check menu item", "radio menu item", "tear off menu item", "menu"})
#: Roles of containers that show only the part of their content inside their box (scrolled views).
CLIPPING_ROLES = frozenset({"scroll pane", "viewport"})


def _windows(nodes: Sequence[dict[str, Any]]) -> list[int]:
    """The indices of the top-level windows: the children of the applications."""
    applications = {index for index, node in enumerate(nodes) if node["parent"] == -1}
    return [index for index, node in enumerate(nodes) if node["parent"] in applications]


def _ancestors(nodes: Sequence[dict[str, Any]], index: int) -> list[int]:
    """The indices of node ``index``'s listed ancestors, nearest first."""
    found = []
    parent = nodes[index]["parent"]
    while parent >= 0:
        found.append(parent)
        parent = nodes[parent]["parent"]
    return found


def open_menu(nodes: Sequence[dict[str, Any]]) -> int | None:
    """The index of the open menu drawn topmost (the last listed: a submenu opens after its menu), or None."""
    open_menus = [
        index
        for index, node in enumerate(nodes)
        if 0 <= node["parent"] < index
        and node["role"] in MENU_ENTRY_ROLES - {"menu"}
        and nodes[node["parent"]]["role"] == "menu"
    ]
    return nodes[open_menus[-1]]["parent"] if open_menus else None


def top_layer(nodes: Sequence[dict[str, Any]]) -> tuple[int | None, str]:
    """The root of the screen's top layer (an open menu, or a window; None for an empty tree) and the layer in
    words: ``"<application>: <window title>"`` (its role where it has no title, as a context menu), with
    ``" > <menu>"`` while a menu bar's menu shows."""
    windows = _windows(nodes)
    if not windows:
        return None, "(no window)"
    menu = open_menu(nodes)
    if menu is not None:
        # A menu bar's menu is in a window; a context menu's popup is a top-level window of its own.
        window = next(index for index in [menu, *_ancestors(nodes, menu)] if index in windows)
        root = menu
    else:
        active = [index for index in windows if nodes[index].get("active")]
        window = root = active[-1] if active else windows[-1]
    application = nodes[nodes[window]["parent"]]["name"]
    words = f"{application}: {nodes[window]['name'] or nodes[window]['role']}"
    return root, words + (f" > {nodes[menu]['name']}" if menu is not None and menu != window else "")


def _inside(inner: Sequence[float], outer: Sequence[float]) -> bool:
    return (
        inner[0] >= outer[0]
        and inner[1] >= outer[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def _overlap(first: Sequence[float], second: Sequence[float]) -> bool:
    width = min(first[0] + first[2], second[0] + second[2]) - max(first[0], second[0])
    height = min(first[1] + first[3], second[1] + second[3]) - max(first[1], second[1])
    return width > 0 and height > 0


def reachable(nodes: Sequence[dict[str, Any]], width: int, height: int) -> list[bool]:
    """For each node, whether a click anywhere in its box lands on it (see the module docstring), on a
    ``width`` x ``height`` screen."""
    root, _ = top_layer(nodes)
    result = [False] * len(nodes)
    if root is None:
        return result
    is_menu = nodes[root]["role"] == "menu"
    # The layer: the root's descendants (and a window itself); a menu's own box is in its menu bar, not its popup.
    chains = {index: _ancestors(nodes, index) for index in range(len(nodes))}
    layer = [index for index, chain in chains.items() if root in chain or (index == root and not is_menu)]
    boxed = [index for index in layer if nodes[index].get("box")]
    screen = (0, 0, width, height)
    for index in boxed:
        box = nodes[index]["box"]
        chain = chains[index]
        inner = chain[: chain.index(root)] if root in chain else []
        clips = [a for a in inner if nodes[a]["role"] in CLIPPING_ROLES] + ([] if is_menu or index == root else [root])
        if not _inside(box, screen) or not all(_inside(box, nodes[a]["box"]) for a in clips if nodes[a].get("box")):
            continue
        related = set(chain)
        result[index] = not any(
            other != index
            and other not in related
            and index not in chains[other]
            and _overlap(box, nodes[other]["box"])
            for other in boxed
        )
    return result
