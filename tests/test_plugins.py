"""Env families as plugins (issue 32): `agentgym new-family NAME` writes a package that pip installs
into a fresh venv, registers through the ``agentgym.envs`` entry point group without its env module
being imported, passes its own check_text_env test, shows in `agentgym list` and plays in
`agentgym eval`; a broken plugin (an import error, a duplicate id) warns and ``import agentgym`` works.

The fresh venv is ``python -m venv --without-pip`` whose one ``.pth`` line adds this checkout's venv
(agentgym, pip, setuptools, pytest) as a site directory: the plugin is installed into the new venv
only, so only processes of that venv see its entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from agentgym.scaffold import FamilyNames, scaffold_family

ROOT = Path(__file__).resolve().parent.parent


def run(python: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run ``python args...``; its stdout (stderr too on failure, in the assertion)."""
    result = subprocess.run(
        [str(python), *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env or _clean_env()
    )
    assert result.returncode == 0, f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def _clean_env() -> dict[str, str]:
    """This process's environment without what would point a child at another interpreter's packages."""
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}


def agentgym_cli(python: Path, *args: str, cwd: Path | None = None) -> str:
    return run(python, "-c", "import sys; from agentgym.cli import main; sys.exit(main())", *args, cwd=cwd)


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python of a fresh venv with the scaffolded plugin installed, the plugin's folder)."""
    root = tmp_path_factory.mktemp("plugin")
    folder = scaffold_family("guess-number", root / "agentgym-guess-number")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    host_site = sysconfig.get_paths()["purelib"]  # this venv's: agentgym (editable), pip, setuptools, pytest
    (purelib / "agentgym_host.pth").write_text(f"import site; site.addsitedir({host_site!r})\n")
    run(python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", str(folder))
    return python, folder


def test_scaffold_names_and_refusals(tmp_path: Path) -> None:
    names = FamilyNames.of("guess-number")
    assert (names.family, names.module, names.distribution) == (
        "guess_number",
        "agentgym_guess_number",
        "agentgym-guess-number",
    )
    assert (names.class_name, names.env_id) == ("GuessNumberEnv", "GuessNumber-v0")
    with pytest.raises(ValueError, match="starts with a letter"):
        FamilyNames.of("1bad name")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("mine")
    with pytest.raises(FileExistsError):
        scaffold_family("guess", tmp_path / "taken")


def test_the_package_holds_env_tools_splits_test_and_readme(plugin_venv: tuple[Path, Path]) -> None:
    _, folder = plugin_venv
    built = ("build", "agentgym_guess_number.egg-info")  # what pip's in-tree build left beside the sources
    files = sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.relative_to(folder).parts[0] not in built
    )
    assert files == [
        "README.md",
        "agentgym_guess_number/__init__.py",
        "agentgym_guess_number/env.py",
        "agentgym_guess_number/tools.yaml",
        "pyproject.toml",
        "tests/test_agentgym_guess_number.py",
    ]
    env_source = (folder / "agentgym_guess_number" / "env.py").read_text()
    for hook in ("def action_syntax", "def _generate", "def _describe", "def _execute", "def oracle_action"):
        assert hook in env_source
    assert '"agentgym.envs"' in (folder / "pyproject.toml").read_text()


def test_installed_plugin_registers_lazily_and_shows_in_list(plugin_venv: tuple[Path, Path]) -> None:
    python, _ = plugin_venv
    probe = textwrap.dedent(
        """
        import json, sys
        import agentgym
        from gymnasium import make
        info = agentgym.env_info("GuessNumber-v0")
        print(json.dumps({"env_module_imported": "agentgym_guess_number.env" in sys.modules,
                          "plugin": info.plugin, "family": info.family,
                          "tools": [tool["function"]["name"] for tool in make("GuessNumber-v0").unwrapped.tools()]}))
        """
    )
    seen = json.loads(run(python, "-c", probe).strip().splitlines()[-1])
    assert seen == {
        "env_module_imported": False,  # only the registration module is imported by `import agentgym`
        "plugin": "guess_number from agentgym-guess-number 0.1.0",
        "family": "guess_number",
        "tools": ["guess"],  # its tools.yaml, found beside the env module
    }
    listing = agentgym_cli(python, "list", "--family", "guess_number")
    assert "GuessNumber-v0" in listing and "guess_number" in listing
    # The parent venv does not see the plugin: it is installed in the fresh venv only.
    assert "GuessNumber-v0" not in agentgym_cli(Path(sys.executable), "list")


def test_the_plugins_own_test_passes_check_text_env(plugin_venv: tuple[Path, Path]) -> None:
    python, folder = plugin_venv
    out = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=folder)
    assert "3 passed" in out


def test_the_plugin_plays_in_agentgym_eval(plugin_venv: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = plugin_venv
    out = agentgym_cli(
        python, "eval", "--env", "GuessNumber-v0", "--policy", "oracle", "--episodes", "6",
        "--out", str(tmp_path / "run"), "--no-progress",
    )  # fmt: skip
    assert "played 6 episodes (0 errored)" in out
    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(record["success"] for record in records)


BROKEN_REGISTRATION = """
from agentgym import TaskSplits, register
register("Sokoban-v0", entry_point="nowhere:Env", family="thief", description="claims a taken id",
         splits=TaskSplits(train=1, dev=1, test=1), max_episode_steps=5)
register("Thief-v0", entry_point="nowhere:Env", family="thief", description="its own id",
         splits=TaskSplits(train=1, dev=1, test=1), max_episode_steps=5)
"""


def test_the_registration_module_in_the_docs_is_the_one_new_family_writes(tmp_path: Path) -> None:
    """docs/plugins.md shows the registration module of `agentgym new-family guess` as it is written."""
    page = (ROOT / "docs" / "plugins.md").read_text()
    shown = page.split("<!-- run by tests/test_plugins.py -->\n```python\n", 1)[1].split("```", 1)[0]
    folder = scaffold_family("guess", tmp_path / "agentgym-guess")
    assert shown == (folder / "agentgym_guess" / "__init__.py").read_text()


def test_broken_plugins_warn_and_import_agentgym_still_works(tmp_path: Path) -> None:
    """Two plugins on sys.path by their metadata alone: one whose module does not exist, one that
    claims an id agentgym already has (skipped) beside one of its own (kept)."""
    for distribution, name, value in (
        ("broken_plugin", "broken", "no_such_module"),
        ("thief_plugin", "thief", "thief"),
    ):
        dist_info = tmp_path / f"{distribution}-1.0.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
        (dist_info / "entry_points.txt").write_text(f"[agentgym.envs]\n{name} = {value}\n")
    (tmp_path / "thief.py").write_text(BROKEN_REGISTRATION)
    probe = (
        "import agentgym; "
        "print(agentgym.env_info('Sokoban-v0').family, agentgym.env_info('Thief-v0').plugin, "
        "len(agentgym.list_envs()) > 50)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env={**_clean_env(), "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["sokoban", "thief", "from", "thief_plugin", "1.0", "True"]
    assert "agentgym plugin 'broken from broken_plugin 1.0'" in result.stderr
    assert (
        "failed to load" in result.stderr and "ModuleNotFoundError: No module named 'no_such_module'" in result.stderr
    )
    assert "env id 'Sokoban-v0' is already registered by 'agentgym'" in result.stderr
