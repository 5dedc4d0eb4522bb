"""The layout's rules, read from the source: no import cycle in the core, the core never imports
a family, no family imports another, and the serving layers import only downwards
(docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "agentgym"
FAMILIES = ROOT / "environments"
FAMILY_PREFIX = "agentgym.environments"


def module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def imported_names(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside functions (absolute ``agentgym`` names)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name == "agentgym" or name.startswith("agentgym.")}


CORE_MODULES = {module_name(path, CORE, "agentgym"): path for path in sorted(CORE.rglob("*.py"))}


def core_graph() -> dict[str, set[str]]:
    """Core module -> the core modules it imports (a name that is a module's attribute counts as the module)."""
    graph: dict[str, set[str]] = {}
    for module, path in CORE_MODULES.items():
        targets = set()
        for name in imported_names(path):
            if name.startswith(FAMILY_PREFIX):
                continue
            while name not in CORE_MODULES:
                name = name.rpartition(".")[0]
            targets.add(name)
        graph[module] = targets - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while component[-1:] != [node]:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_core_has_no_import_cycle() -> None:
    assert cycles(core_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_core_never_imports_a_family() -> None:
    offenders = {
        module: sorted(name for name in imported_names(path) if name.startswith(FAMILY_PREFIX + "."))
        for module, path in CORE_MODULES.items()
    }
    assert {module: names for module, names in offenders.items() if names} == {}


@pytest.mark.parametrize("family", sorted(path.name for path in FAMILIES.iterdir() if (path / "__init__.py").exists()))
def test_a_family_imports_no_other_family(family: str) -> None:
    own = f"{FAMILY_PREFIX}.{family}"
    foreign = {
        str(path.relative_to(ROOT)): sorted(
            name
            for name in imported_names(path)
            if name.startswith(FAMILY_PREFIX + ".") and name != own and not name.startswith(own + ".")
        )
        for path in (FAMILIES / family).rglob("*.py")
    }
    assert {path: names for path, names in foreign.items() if names} == {}


#: Serving's layers: each module may import only what sits below it.
SERVING_FORBIDDEN = {
    "agentgym.serving.wire": ("agentgym.serving.",),
    "agentgym.serving.calls": ("agentgym.serving.server", "agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.client": ("agentgym.serving.server", "agentgym.serving.backends", "agentgym.serving.calls"),
    "agentgym.serving.server": ("agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.vector_client": (
        "agentgym.serving.server",
        "agentgym.serving.backends",
        "agentgym.serving.calls",
    ),
}


@pytest.mark.parametrize("module", sorted(SERVING_FORBIDDEN))
def test_serving_layers_import_downwards(module: str) -> None:
    imported = imported_names(CORE_MODULES[module])
    assert sorted(name for name in imported if name.startswith(SERVING_FORBIDDEN[module])) == []


def test_backend_modules_never_import_the_backend_table() -> None:
    table = "agentgym.serving.backends"
    backends = [module for module in CORE_MODULES if module.startswith(table + ".")]
    assert {"local", "process", "docker", "ray"} <= {module.rpartition(".")[2] for module in backends}
    assert [module for module in backends if table in imported_names(CORE_MODULES[module])] == []


def test_every_core_folder_with_modules_is_a_package() -> None:
    """A folder of modules without ``__init__.py`` would be left out of the wheel (setup.py's find_packages)."""
    folders = {path.parent for path in CORE.rglob("*.py") if "__pycache__" not in path.parts}
    assert sorted(str(folder.relative_to(ROOT)) for folder in folders if not (folder / "__init__.py").exists()) == []
