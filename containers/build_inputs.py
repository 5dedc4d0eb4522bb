"""What an image is built from: the inputs containers/build.sh hashes to tell whether an image is up to date.

    python3 containers/build_inputs.py dependencies EXTRAS [REQUIREMENTS...]
        the requirements of agentgym[EXTRAS] (comma-separated; `agentgym[...]` references followed),
        agentgym's own dependencies and requires-python, then each requirements file's text: what the
        wheelhouse is downloaded for (not the rest of pyproject.toml)
    python3 containers/build_inputs.py inputs PATH...
        one "sha256  path" line per file of the PATHs (files or folders, relative to the checkout) and of
        every agentgym module their Python files import, directly or through other such modules (with the
        packages holding it; agentgym/__init__.py excepted), then the packaging settings that decide which
        of these files the wheel holds (pyproject.toml's [tool.setuptools] with only the package-data of
        packages inside the PATHs, and setup.py)

Standard library only; run by the host's python3 (3.11 or later reads pyproject.toml with tomllib; an
older one prints the whole pyproject.toml instead, which only means more rebuilds).
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "agentgym"


def load_pyproject() -> dict[str, Any] | None:
    """pyproject.toml as a dict, or None when this Python has no tomllib."""
    try:
        import tomllib
    except ModuleNotFoundError:
        return None
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def extra_requirements(project: dict[str, Any], extras: Iterable[str]) -> dict[str, list[str]]:
    """The requirement lists of ``extras`` and of every extra they name through ``agentgym[...]``."""
    optional = project.get("optional-dependencies", {})
    found: dict[str, list[str]] = {}
    todo = [extra.strip() for extra in extras if extra.strip()]
    while todo:
        extra = todo.pop()
        if extra in found:
            continue
        if extra not in optional:
            raise SystemExit(f"build_inputs.py: pyproject.toml has no extra {extra!r}")
        found[extra] = sorted(optional[extra])
        for requirement in optional[extra]:
            name, _, rest = requirement.partition("[")
            if name.strip() == project["name"] and rest:
                todo.extend(rest.split("]")[0].split(","))
    return dict(sorted(found.items()))


def dependencies(extras: str, requirement_files: list[str]) -> str:
    """The text that decides the wheelhouse's packages (see the module docstring)."""
    pyproject = load_pyproject()
    if pyproject is None:
        text = (REPO / "pyproject.toml").read_text()
    else:
        project = pyproject["project"]
        spec = {
            "requires-python": project.get("requires-python"),
            "dependencies": sorted(project.get("dependencies", [])),
            "extras": extra_requirements(project, extras.split(",")),
        }
        text = json.dumps(spec, indent=1) + "\n"
    for name in requirement_files:
        text += f"--- {name}\n{(REPO / name).read_text()}"
    return text


def files_under(path: Path) -> Iterator[Path]:
    """The files of ``path`` (itself when it is a file), without Python's caches."""
    if path.is_file():
        yield path
        return
    for file in path.rglob("*"):
        if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc":
            yield file


def package_dirs(pyproject: dict[str, Any] | None) -> dict[str, str]:
    """Package name -> folder (pyproject.toml's package-dir; a package not named there is its own path)."""
    mapping = (pyproject or {}).get("tool", {}).get("setuptools", {}).get("package-dir", {})
    return {PACKAGE: PACKAGE, **mapping}


def module_file(module: str, dirs: dict[str, str]) -> Path | None:
    """The source file of ``module`` (``agentgym.x.y``) in this checkout, or None (a name, not a module)."""
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):  # the longest package-dir prefix
        folder = dirs.get(".".join(parts[:depth]))
        if folder is not None:
            base = REPO / folder / Path(*parts[depth:]) if parts[depth:] else REPO / folder
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    return candidate
            return None
    return None


def imported_modules(source: Path) -> set[str]:
    """The agentgym modules (and names, which may be modules) that ``source`` imports, anywhere in it."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] == PACKAGE}


def import_closure(roots: list[Path], dirs: dict[str, str]) -> set[Path]:
    """The agentgym source files that the Python files of ``roots`` import, transitively.

    A module brings the ``__init__.py`` of each package that holds it, except agentgym's own: that one
    registers every family, which shapes nothing an image builds from these sources.
    """
    todo = [file for root in roots for file in files_under(root) if file.suffix == ".py"]
    seen = set(todo)
    found: set[Path] = set()
    while todo:
        for name in imported_modules(todo.pop()):
            parts = name.split(".")
            for depth in range(2, len(parts) + 1):
                file = module_file(".".join(parts[:depth]), dirs)
                if file is not None and file not in seen:
                    seen.add(file)
                    found.add(file)
                    todo.append(file)
    return found


def packaging(pyproject: dict[str, Any] | None, roots: list[Path], dirs: dict[str, str]) -> str:
    """The packaging settings that decide which files of ``roots`` the wheel holds."""
    if pyproject is None:
        return (REPO / "pyproject.toml").read_text()
    setuptools = dict(pyproject.get("tool", {}).get("setuptools", {}))
    package_data = setuptools.pop("package-data", {})

    def inside_roots(package: str) -> bool:
        if package in ("", "*"):  # every package's
            return True
        folder = module_file(package, dirs)
        return folder is not None and any(folder.is_relative_to(root) for root in roots)

    setuptools["package-data"] = {key: value for key, value in package_data.items() if inside_roots(key)}
    text = json.dumps(setuptools, indent=1, sort_keys=True) + "\n"
    if (REPO / "setup.py").is_file():
        text += (REPO / "setup.py").read_text()
    return text


def inputs(paths: list[str]) -> str:
    """The digest lines and packaging text an image built from ``paths`` depends on (see the module docstring)."""
    roots = [REPO / path for path in paths]
    for root in roots:
        if not root.exists():
            raise SystemExit(f"build_inputs.py: no {root.relative_to(REPO)} in {REPO}")
    pyproject = load_pyproject()
    dirs = package_dirs(pyproject)
    files = {file for root in roots for file in files_under(root)} | import_closure(roots, dirs)
    lines = [
        f"{hashlib.sha256(file.read_bytes()).hexdigest()}  {file.relative_to(REPO)}"
        for file in sorted(files, key=lambda file: str(file.relative_to(REPO)))
    ]
    return "\n".join(lines) + "\n" + packaging(pyproject, roots, dirs)


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "dependencies":
        sys.stdout.write(dependencies(argv[1], argv[2:]))
    elif len(argv) >= 2 and argv[0] == "inputs":
        sys.stdout.write(inputs(argv[1:]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
