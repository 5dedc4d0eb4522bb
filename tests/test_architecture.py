"""The layout's rules, read from the source: the core's floors (each module imports only its own floor
or lower), no import cycle in the core, the core never imports a family, no family imports another, and
the serving layers import only downwards (docs/architecture.md)."""

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


#: The core's floors, bottom first: a module belongs to the floor of the longest name here that is it or
#: holds it (``agentgym`` itself, the package's public face, only by exact name), and imports only its own
#: floor or lower ones (docs/architecture.md draws them).
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "contract",
        ("agentgym.contract",),
    ),
    (
        "env machinery",
        (
            "agentgym.utils",
            "agentgym.images",
            "agentgym.computer_use",
            "agentgym.multiagent",
            "agentgym.browser",
            "agentgym.sandbox",
            "agentgym.retrieval",
            "agentgym.safety",
        ),
    ),
    ("wrappers", ("agentgym.wrappers",)),
    ("serving", ("agentgym.serving", "agentgym")),
    ("llm", ("agentgym.llm",)),
    ("evaluation", ("agentgym.evaluation",)),
    ("training", ("agentgym.train",)),
    ("integrations", ("agentgym.integrations",)),
    ("command line", ("agentgym.cli", "agentgym.scaffold")),
)


def floor_of(module: str) -> int:
    """The index in :data:`FLOORS` of ``module``'s floor; ``KeyError`` for a module no floor holds."""
    best: tuple[int, int] | None = None  # (length of the matching name, floor)
    for floor, (_, names) in enumerate(FLOORS):
        for name in names:
            holds = module == name or (name != "agentgym" and module.startswith(name + "."))
            if holds and (best is None or len(name) > best[0]):
                best = (len(name), floor)
    if best is None:
        raise KeyError(f"{module} is on no floor: add it to FLOORS (and docs/architecture.md)")
    return best[1]


def upward_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Module -> the modules it imports from a floor above its own."""
    found = {
        module: sorted(target for target in targets if floor_of(target) > floor_of(module))
        for module, targets in graph.items()
    }
    return {module: targets for module, targets in found.items() if targets}


def test_every_core_module_is_on_a_floor() -> None:
    unplaced = []
    for module in CORE_MODULES:
        try:
            floor_of(module)
        except KeyError:
            unplaced.append(module)
    assert unplaced == []


def test_no_import_runs_up_the_floors() -> None:
    assert upward_imports(core_graph()) == {}


def floor_sentence(floor: int) -> str:
    """What a package's docstring says of its floor: its name and the floors it may import."""
    name, lower = FLOORS[floor][0], [below for below, _ in FLOORS[:floor]]
    below = f" and those below it: {', '.join(lower)}" if lower else ""
    return f"Floor: {name}; it imports only its own floor{below} (docs/architecture.md)."


@pytest.mark.parametrize("package", sorted(path.parent.name for path in CORE.glob("*/__init__.py")))
def test_each_package_says_its_floor(package: str) -> None:
    docstring = ast.get_docstring(ast.parse((CORE / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert floor_sentence(floor_of(f"agentgym.{package}")) in " ".join(docstring.split())


def test_the_floor_check_finds_an_upward_import() -> None:
    graph = {
        "agentgym.contract.core": {"agentgym.utils.text"},
        "agentgym.utils.text": set(),
        "agentgym.serving.server": {"agentgym"},
        "agentgym": {"agentgym.serving.client"},
    }
    assert upward_imports(graph) == {"agentgym.contract.core": ["agentgym.utils.text"]}
    assert floor_of("agentgym.serving.backends.ray") == floor_of("agentgym") < floor_of("agentgym.evaluation.runner")


#: Serving's layers: each module may import only what sits below it.
SERVER = (
    "agentgym.serving.server",
    "agentgym.serving.app",
    "agentgym.serving.channels",
    "agentgym.serving.monitor",
    "agentgym.serving.sessions",
    "agentgym.serving.memory",
)
SERVING_FORBIDDEN = {
    "agentgym.serving.wire": ("agentgym.serving.",),
    "agentgym.serving.calls": (*SERVER, "agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.client": (*SERVER, "agentgym.serving.backends", "agentgym.serving.calls"),
    "agentgym.serving.memory": ("agentgym.serving.",),
    "agentgym.serving.sessions": (*SERVER[:-1], "agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.channels": (*SERVER[:2], "agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.monitor": (*SERVER[:3], "agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.app": (SERVER[0], "agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.server": ("agentgym.serving.client", "agentgym.serving.backends"),
    "agentgym.serving.vector_client": (*SERVER, "agentgym.serving.backends", "agentgym.serving.calls"),
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


#: The longest a core module may grow before it is split by concern (docs/architecture.md).
MAX_MODULE_LINES = 700


def test_no_core_module_is_over_the_line_limit() -> None:
    lengths = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in CORE.rglob("*.py")}
    assert {path: length for path, length in lengths.items() if length > MAX_MODULE_LINES} == {}


#: The contract's modules that stood at the package root before they moved into agentgym.contract.
MOVED_TO_CONTRACT = ("core", "plugins", "registry", "reply_text", "tool_parsing", "tools", "vector")


def test_the_package_root_holds_only_the_face_the_command_line_and_the_image_module() -> None:
    """The root's loose modules: the package's face, the command line, and the one image module (env machinery);
    everything else stands in a folder of its floor, and no data file lies loose beside them."""
    assert sorted(path.name for path in CORE.iterdir() if path.is_file()) == ["__init__.py", "cli.py", "images.py"]
    assert floor_of("agentgym.images") == [name for name, _ in FLOORS].index("env machinery")


def test_no_code_here_imports_the_contracts_old_names() -> None:
    old = {f"agentgym.{name}" for name in MOVED_TO_CONTRACT}
    paths = [*CORE.rglob("*.py"), *FAMILIES.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    paths += [path for path in (ROOT / "tests").rglob("*.py") if path != Path(__file__).resolve()]
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in imported_names(path) if name in old or name.startswith(tuple(f"{moved}." for moved in old))
        )
        for path in paths
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_contracts_old_names_import_the_same_modules() -> None:
    """Code written before the move (``from agentgym.core import TextEnv``) keeps working, in a fresh process."""
    import subprocess
    import sys

    checks = "; ".join(
        f"import agentgym.{name} as old, agentgym.contract.{name} as new; assert old is new, {name!r}"
        for name in MOVED_TO_CONTRACT
    )
    script = (
        f"from agentgym.core import TextEnv; from agentgym.tools import ToolCall; {checks}; print(TextEnv.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "agentgym.contract.core"), done.stderr
