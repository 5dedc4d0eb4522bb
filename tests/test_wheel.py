"""agentgym as a wheel (issue #49): the sdist, and the wheel built from it, hold every file of the packages, and
the wheel, installed into a fresh venv outside the checkout, registers every id and plays each family.

The wheel is built once per session as ``python -m build`` builds it (an sdist from the checkout's files, the wheel
from the unpacked sdist), offline: no build isolation, the build backend is this venv's setuptools. The fresh venv
gets no dependencies: a ``.pth`` line puts this venv's site-packages after its own, so that the wheel's agentgym
shadows the editable checkout (a plain path line: the checkout's editable finder, itself started by a ``.pth`` file
of this venv, is never run there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import agentgym

ROOT = Path(__file__).resolve().parent.parent
#: The folders whose files ship, and where each installs: environments/ as agentgym.environments, the
#: verifiers taskset as its own top-level package (setup.py).
INSTALLED_AS = {
    "agentgym/integrations/agentgym_verifiers/": "agentgym_verifiers/",
    "agentgym/": "agentgym/",
    "environments/": "agentgym/environments/",
}
#: Each family played from the installed wheel, and the id it is played on (its other ids are made and reset).
CHECKED = {
    "agentdojo": "AgentDojo-Banking-v0",
    "alfworld": "ALFWorld-v0",
    "babyai": "BabyAI-Text-GoTo-v0",
    "code": "BugFix-v0",
    "frozenlake": "FrozenLake-v0",
    "household": "Household-v0",
    "maze": "Maze-v0",
    "multiagent": "LeducHoldem-vs-CFR-v0",
    "openspiel": "OpenSpiel-Hanabi-vs-Random-v0",
    "reasoning": "Math-v0",
    "scienceworld": "ScienceWorld-v0",
    "search": "Search-Easy-v0",
    "sokoban": "Sokoban-v0",
    "swe": "SWE-v0",
    "textarena": "TextArena-TicTacToe-vs-Random-v0",
    "textcraft": "TextCraft-v0",
    "textworld": "TextWorld-Cooking-Easy-v0",
    "webshop": "WebShop-v0",
    "wordle": "Wordle-v0",
}
#: Families whose engine makes even a small contract check slow (20 to 80 s each on 2 cores: TextWorld's games, a
#: JVM, sandboxed test runs; tests/test_contract.py checks them): from the wheel, the oracle plays one task instead.
ORACLE_ONLY = {"alfworld", "scienceworld", "swe", "textworld"}
#: The families and ids not played here, and what they need besides the wheel; their files are in the wheel
#: all the same (test_the_wheel_holds_every_file_of_the_packages).
NEEDS = {
    "desktop": "Xvfb and the desktop apps",
    "grounding": "Chromium, and the web apps' sites or a desktop for some ids",
    "miniwob": "Chromium",
    "webapps": "the sites' servers (PostgreSQL, PHP, Dovecot, a Django venv per site) and Chromium",
    "WebShop-Browser-v0": "Chromium",
}
#: Run by the installed wheel's Python: the first id's contract (a small budget: tests/test_contract.py checks it in
#: full), or its oracle's episode on task 0; then make and reset the other ids. Prints where agentgym came from.
PLAY = """
import json, sys
import gymnasium as gym
import agentgym
from agentgym.utils import check_text_env

mode, first, *others = sys.argv[1:]
env = gym.make(first)
if mode == "contract":
    games = agentgym.env_info(first).family in ("multiagent", "openspiel", "textarena")
    checked = check_text_env(
        env, oracle_tasks=2, oracle_must_win=not games, random_replies=4, determinism_tasks=1, determinism_steps=5
    ).checked
else:
    env.reset(seed=0, options={"task_id": 0})
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        done = terminated or truncated
    checked = ["oracle"] if info["success"] else []
env.close()
for env_id in others:
    env = gym.make(env_id)
    env.reset(seed=0, options={"task_id": 0})
    env.close()
print(json.dumps({"agentgym": agentgym.__file__, "checked": checked}))
"""


def run(command: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run ``command``; on failure, fail the test with its output."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{command} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def shipped_files() -> dict[str, Path]:
    """The checkout's files under the installed folders (tracked, or new and not ignored), by installed path."""
    listed = run(["git", "ls-files", "-co", "--exclude-standard", *INSTALLED_AS], cwd=ROOT).stdout.splitlines()
    files = {}
    for name in listed:
        if (ROOT / name).is_file():  # a tracked file deleted in the working tree is listed too
            folder = next(folder for folder in INSTALLED_AS if name.startswith(folder))
            files[INSTALLED_AS[folder] + name.removeprefix(folder)] = ROOT / name
    return files


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the sdist of a copy of the checkout's files (tracked, or new and not ignored)."""
    folder = tmp_path_factory.mktemp("wheel")
    for name in run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT).stdout.splitlines():
        if (ROOT / name).is_file():
            (folder / "checkout" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / "checkout" / name)
    build_sdist = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    name = run([sys.executable, "-c", build_sdist, folder / "sdist"], cwd=folder / "checkout").stdout.split()[-1]
    with tarfile.open(folder / "sdist" / name) as archive:
        archive.extractall(folder / "unpacked", filter="data")
    source = folder / "unpacked" / name.removesuffix(".tar.gz")
    pip_wheel = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", folder / "dist", source]
    run([sys.executable, "-m", "pip", *pip_wheel], cwd=folder)
    return next((folder / "dist").glob("agentgym-*.whl"))


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; this venv's site-packages after its own, for the dependencies."""
    venv = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(site) / "agentgym-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel])
    return venv


@pytest.fixture
def outside(venv: Path, alfworld_games: Path, tmp_path: Path) -> dict[str, object]:
    """How to run the installed wheel's commands: from a folder outside the checkout, without PYTHONPATH, with
    ALFWorld's tiny games."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    return {"cwd": tmp_path, "env": {**env, "ALFWORLD_DATA": str(alfworld_games)}}


def test_every_family_is_played_or_says_why() -> None:
    """A new family is played here, or says what it needs besides the wheel."""
    families = {info.family for info in agentgym.list_envs()}
    assert set(CHECKED) | (families & set(NEEDS)) == families
    assert not set(CHECKED) & set(NEEDS)
    for family, env_id in CHECKED.items():
        assert agentgym.env_info(env_id).family == family


def test_the_wheel_holds_every_file_of_the_packages(wheel: Path) -> None:
    """Every file under agentgym/ and environments/ (modules and data: templates, YAML, JSON, the sites' server
    files, the SWE tasks, the scaffold, the trainer's configs), byte for byte, and nothing else."""
    expected = shipped_files()
    with zipfile.ZipFile(wheel) as archive:
        held = {name for name in archive.namelist() if ".dist-info/" not in name}
        assert sorted(set(expected) - held) == [], "missing from the wheel"
        assert sorted(held - set(expected)) == [], "in the wheel but not in the checkout"
        changed = [name for name, path in expected.items() if archive.read(name) != path.read_bytes()]
    assert changed == []


def test_agentgym_list_from_the_installed_wheel(venv: Path, outside: dict[str, object]) -> None:
    """The installed ``agentgym`` command lists every registered id."""
    table = run([venv / "bin" / "agentgym", "list"], **outside).stdout.splitlines()
    assert [line.split()[0] for line in table[2:]] == [info.id for info in agentgym.list_envs()]


@pytest.mark.parametrize("family", sorted(CHECKED))
def test_the_installed_wheel_plays_the_family(family: str, venv: Path, outside: dict[str, object]) -> None:
    """The family's first id keeps the contract (or its oracle wins), its other ids make and reset, all from the
    installed wheel."""
    mode = "oracle" if family in ORACLE_ONLY else "contract"
    others = [info.id for info in agentgym.list_envs() if info.family == family and info.id not in NEEDS]
    others.remove(CHECKED[family])
    output = run([venv / "bin" / "python", "-c", PLAY, mode, CHECKED[family], *others], **outside).stdout
    played = json.loads(output.splitlines()[-1])
    assert Path(played["agentgym"]).is_relative_to(venv)
    expected = {"oracle"} if mode == "oracle" else {"gymnasium", "oracle", "determinism", "never-raises"}
    assert expected <= set(played["checked"])
