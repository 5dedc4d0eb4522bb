"""Env families from other packages: the ``agentgym.envs`` entry point group.

A third-party package ships its family as its own distribution and declares, in its
``pyproject.toml``::

    [project.entry-points."agentgym.envs"]
    my_family = "my_family"

The value names the family's registration module: it calls :func:`agentgym.register` with
*string* entry points and imports nothing heavy (as the families shipped with agentgym do
in their ``__init__``). ``import agentgym`` reads the group from the installed packages'
metadata and imports each registration module; the family's env module (its engine, its data)
is imported only when one of its ids is made. ``agentgym new-family NAME`` writes such a
package (see docs/plugins.md).

A broken plugin never breaks ``import agentgym``: a registration module that fails to import,
or an id that is already registered (by agentgym or an earlier plugin), gives a
:class:`~agentgym.contract.registry.PluginWarning` naming the plugin, and the rest loads.
"""

from __future__ import annotations

import importlib.metadata
import warnings

from agentgym.contract.registry import PluginWarning, registering_plugin

#: The entry point group a package declares its families in.
ENTRY_POINT_GROUP = "agentgym.envs"


def plugin_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The installed packages' ``agentgym.envs`` entry points, sorted by name (metadata only: nothing imported)."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(found, key=lambda entry_point: (entry_point.name, entry_point.value))


def plugin_name(entry_point: importlib.metadata.EntryPoint) -> str:
    """``distribution (entry point name)``: how warnings and ``EnvInfo.plugin`` name a plugin."""
    dist = getattr(entry_point, "dist", None)
    owner = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"{entry_point.name} from {owner}"


def load_plugins() -> list[str]:
    """Import every plugin's registration module; returns the names of those that loaded.

    Called once by ``import agentgym``. A plugin that raises while registering is reported
    with a :class:`PluginWarning` (ids it registered before failing stay registered).
    """
    loaded = []
    seen: set[tuple[str, str]] = set()
    for entry_point in plugin_entry_points():
        name = plugin_name(entry_point)
        if (entry_point.name, entry_point.value) in seen:  # the same distribution seen twice on sys.path
            continue
        seen.add((entry_point.name, entry_point.value))
        try:
            with registering_plugin(name):
                entry_point.load()
        except Exception as error:  # a plugin's bug must not break `import agentgym`
            warnings.warn(
                f"agentgym plugin {name!r} ({ENTRY_POINT_GROUP} = {entry_point.value!r}) failed to load, "
                f"its envs are not registered: {type(error).__name__}: {error}",
                PluginWarning,
                stacklevel=2,
            )
            continue
        loaded.append(name)
    return loaded
