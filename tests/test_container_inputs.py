"""containers/build_inputs.py: what an image's up-to-date label hashes.

The web-apps sites image (containers/webapps/build.sh) is rebuilt, minutes on two cores, only when what
the sites are built from changes; every other change only puts the current agentgym wheel on top of it.
These tests check that split on this checkout and on a small made-up one whose files they change.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "containers/build_inputs.py"


def load_build_inputs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_inputs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def hashed_paths(output: str) -> set[str]:
    return {line.split("  ", 1)[1] for line in output.splitlines() if len(line) > 66 and line[64:66] == "  "}


def sites_sources() -> list[str]:
    """SITES_SOURCES of containers/webapps/build.sh: what the sites image's label hashes."""
    found = re.search(r'^SITES_SOURCES="([^"]*)"', (REPO / "containers/webapps/build.sh").read_text(), re.M)
    assert found, "containers/webapps/build.sh sets no SITES_SOURCES"
    return found[1].replace("\\\n", " ").split()


def test_the_sites_inputs_are_their_folders_and_the_core_modules_they_import() -> None:
    result = run("inputs", *sites_sources())
    assert result.returncode == 0, result.stderr
    paths = hashed_paths(result.stdout)
    # The layer on top (the current agentgym wheel) is not what the sites are built from.
    assert "containers/webapps/Dockerfile" not in paths
    for expected in (
        "environments/webapps/sites.yaml",
        "environments/webapps/shop/requirements.txt",
        "containers/webapps/sites.Dockerfile",
        "containers/webapps/context/build_site.py",
        "agentgym/contract/core.py",
        "agentgym/contract/registry.py",
        "agentgym/browser/env.py",
        "environments/__init__.py",
    ):
        assert expected in paths
    for path in paths:
        assert path.startswith(("environments/webapps/", "containers/webapps/", "agentgym/", "environments/__init__"))
        assert not path.startswith(("agentgym/train/", "agentgym/evaluation/", "agentgym/__init__.py"))
    # The packaging settings keep the web apps' package-data and leave out other families'.
    assert '"agentgym.environments.webapps.shop"' in result.stdout
    assert "agentgym.environments.code.bugfix" not in result.stdout


def test_dependencies_follow_the_extras_references() -> None:
    result = run("dependencies", "server,webapps", "environments/webapps/shop/requirements.txt")
    assert result.returncode == 0, result.stderr
    assert "playwright>=" in result.stdout and "psycopg[binary]" in result.stdout and "fastapi" in result.stdout
    assert "torch" not in result.stdout  # the hf extra is not asked for
    assert "django-oscar==" in result.stdout  # the requirements file's text
    unknown = run("dependencies", "server,no-such-extra")
    assert unknown.returncode != 0 and "no extra 'no-such-extra'" in unknown.stderr


PYPROJECT = """\
[project]
name = "agentgym"
requires-python = ">=3.10"
dependencies = ["numpy>=1.24"]

[project.optional-dependencies]
server = ["fastapi>=0.110"]
web = ["agentgym[server]", "playwright>=1.45"]
train = ["torch>=2.4"]

[tool.setuptools]
package-dir = { "agentgym" = "agentgym", "agentgym.environments" = "environments" }

[tool.setuptools.package-data]
"agentgym.environments.sites" = ["data/*.yaml"]
"agentgym.environments.other" = ["data/*.json"]
"""


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, Path]:
    """A made-up checkout: a family that imports the core lazily, and code it does not import."""
    files = {
        "pyproject.toml": PYPROJECT,
        "agentgym/__init__.py": "from agentgym.train import trainer\n",
        "agentgym/contract/core.py": "from agentgym.utils import text\n",
        "agentgym/utils/__init__.py": "",
        "agentgym/utils/text.py": "WIDTH = 80\n",
        "agentgym/train/__init__.py": "",
        "agentgym/train/trainer.py": "STEPS = 10\n",
        "environments/__init__.py": "",
        "environments/sites/__init__.py": "def make():\n    from agentgym.contract.core import TextEnv\n",
        "environments/sites/data/pages.yaml": "pages: 3\n",
        "environments/other/__init__.py": "",
        "README.md": "read me\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    module = load_build_inputs()
    monkeypatch.setattr(module, "REPO", tmp_path)
    return module, tmp_path


def test_a_change_counts_only_where_the_sites_are_built_from(checkout: tuple[ModuleType, Path]) -> None:
    module, root = checkout

    def label() -> str:
        return module.inputs(["environments/sites"]) + module.dependencies("web", [])

    before = label()
    assert {
        "environments/sites/data/pages.yaml",
        "agentgym/contract/core.py",
        "agentgym/utils/text.py",
    } <= hashed_paths(before)
    assert not hashed_paths(before) & {"agentgym/__init__.py", "agentgym/train/trainer.py", "README.md"}
    # Untouched by: code the sites do not import, the README, another family's files or package-data, an
    # extra the image does not install.
    (root / "agentgym/train/trainer.py").write_text("STEPS = 20\n")
    (root / "README.md").write_text("read me again\n")
    (root / "environments/other/__init__.py").write_text("X = 1\n")
    pyproject = (root / "pyproject.toml").read_text()
    pyproject = pyproject.replace('"data/*.json"', '"data/*.csv"').replace('"torch>=2.4"', '"torch>=2.5"')
    (root / "pyproject.toml").write_text(pyproject)
    assert label() == before
    # Changed by: a module the family imports (through another), its data, its package-data, its dependencies.
    changes = [
        ("agentgym/utils/text.py", "WIDTH = 100\n"),
        ("environments/sites/data/pages.yaml", "pages: 4\n"),
        ("pyproject.toml", pyproject.replace('"data/*.yaml"', '"data/*.yml"')),
        ("pyproject.toml", pyproject.replace('"fastapi>=0.110"', '"fastapi>=0.111"')),
    ]
    for name, text in changes:
        previous = label()
        (root / name).write_text(text)
        assert label() != previous, name
