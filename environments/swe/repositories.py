"""The real repositories: their pinned list (``repositories.yaml``), the sdists, and one venv each.

:func:`prepare_repository` downloads a repository's pinned sdist (:func:`download_sdist`: straight from the
package index, else with pip), unpacks it, and builds
its virtual environment (``/usr/bin/python3 -m venv``, then pytest and the tests' requirements
from PyPI, then :mod:`pytest_outcomes`, the plugin that reports each test's outcome), once, under
a file lock, in :func:`swe_home`. The repository's own package is not installed: it is the checked-out
source that episodes edit, on ``PYTHONPATH``. The venv is made with the system's Python, the one
the bwrap sandbox sees, and is mounted read-only at :data:`VENV` inside the sandbox.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import httpx
import yaml

from agentgym.sandbox import WORK
from agentgym.utils.files import build_once, cache_root

HERE = Path(__file__).parent
#: Where a repository's venv appears inside the sandbox.
VENV = "/opt/venv"
#: The Python the venvs are made with: the system's, which the sandbox shows under /usr.
SYSTEM_PYTHON = "/usr/bin/python3"
PLUGIN = HERE / "pytest_outcomes.py"
#: Changing this rebuilds every venv (the plugin or the way venvs are built changed).
VENV_FORMAT = "1"
#: The package index whose simple API (PEP 691's JSON) :func:`download_sdist` asks first: ``$PIP_INDEX_URL``, else PyPI.
DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class Repository:
    """One pinned real repository (a row of ``repositories.yaml``)."""

    name: str
    version: str
    license: str
    source: str
    package: str
    tests: tuple[str, ...]
    split: str
    requires: tuple[str, ...] = field(default=())
    #: Variables the tests run with (e.g. wcwidth's suite asserts its C extension is loaded unless
    #: ``WCWIDTH_PYTHON`` is set; the sdist's pure-Python code is what the tasks edit).
    env: tuple[tuple[str, str], ...] = field(default=())

    @property
    def key(self) -> str:
        """``name-version``: the folder names of its source and venv."""
        return f"{self.name}-{self.version}"

    @property
    def requirement(self) -> str:
        """``name==version``: the pinned requirement."""
        return f"{self.name}=={self.version}"

    @property
    def package_path(self) -> str:
        """The package (or module) path relative to the repository root, e.g. ``src/cachetools``."""
        return self.package if self.source == "." else f"{self.source}/{self.package}"

    def pythonpath(self) -> str:
        """``PYTHONPATH`` inside the sandbox: the source folder of the checkout in the work dir."""
        return WORK if self.source == "." else f"{WORK}/{self.source}"


@cache
def repositories() -> dict[str, Repository]:
    """Every repository of ``repositories.yaml`` by name, in the file's order."""
    rows = yaml.safe_load((HERE / "repositories.yaml").read_text(encoding="utf-8"))
    found = {}
    for row in rows:
        row = {**row, "version": str(row["version"])}
        row["tests"] = tuple(row["tests"])
        row["requires"] = tuple(row.get("requires", ()))
        row["env"] = tuple((str(key), str(value)) for key, value in (row.get("env") or {}).items())
        found[row["name"]] = Repository(**row)
    return found


def swe_home() -> Path:
    """The family's cache: ``$AGENTGYM_SWE_HOME``, else ``<agentgym cache>/swe`` when every user may enter it
    (the sandbox runs as ``nobody`` under root and must reach the venvs), else ``/var/tmp/agentgym-swe-<uid>``."""
    if os.environ.get("AGENTGYM_SWE_HOME"):
        return Path(os.environ["AGENTGYM_SWE_HOME"])
    root = cache_root()
    candidate = root / "swe"
    if all(os.stat(path).st_mode & 0o001 for path in (root, *root.parents) if path.exists()):
        return candidate
    return Path(f"/var/tmp/agentgym-swe-{os.getuid()}")


@dataclass(frozen=True)
class Prepared:
    """Where a prepared repository lies on this machine."""

    repository: Repository
    source: Path
    venv: Path
    seconds: float

    def files(self) -> dict[str, bytes]:
        """The repository's files (path relative to its root -> bytes), caches left out."""
        found = {}
        for path in sorted(self.source.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(".pyc"):
                found[path.relative_to(self.source).as_posix()] = path.read_bytes()
        return found


def prepare_repository(repository: Repository, report: Callable[[str], None] = lambda line: None) -> Prepared:
    """The repository's unpacked sdist and venv, downloaded and built on first use (then loaded in a few ms)."""
    home = swe_home()
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)
    started = time.perf_counter()
    source = build_once(
        home / "sources" / repository.key,
        lambda folder: _load_marked(folder, VENV_FORMAT),
        lambda folder: _unpack(repository, folder, report),
    )
    venv = build_once(
        home / "venvs" / repository.key,
        lambda folder: _load_marked(folder, _venv_marker(repository)),
        lambda folder: _build_venv(repository, folder, report),
    )
    _compile_once(venv)
    return Prepared(repository, source, venv, time.perf_counter() - started)


def venv_purelib(python: str | os.PathLike[str]) -> str:
    """The site-packages folder (``purelib``) of the venv whose interpreter is ``python``."""
    return subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _compile_once(venv: Path) -> None:
    """Byte-compile the venv's packages once (the sandbox mounts it read-only, so a venv without ``.pyc``
    files compiled pytest from source in every test run: 1.8 s of each run's 2.8 s on a loaded machine)."""
    stamp = venv / ".agentgym-compiled"
    if stamp.exists():
        return
    python = venv / "bin" / "python"
    purelib = venv_purelib(python)
    subprocess.run([str(python), "-m", "compileall", "-q", "-j", "1", purelib], capture_output=True, check=False)
    _make_readable(purelib)
    stamp.write_text("compiled\n")


def _venv_marker(repository: Repository) -> str:
    """What a finished venv's marker says: the build format and the requirements (a change rebuilds it)."""
    return " ".join((VENV_FORMAT, "pytest", *repository.requires))


def _load_marked(folder: Path, expected: str) -> Path | None:
    marker = folder / ".agentgym-complete"
    return folder if marker.exists() and marker.read_text() == expected else None


def _mark(folder: Path, marker: str = VENV_FORMAT) -> Path:
    (folder / ".agentgym-complete").write_text(marker)
    _make_readable(folder)
    return folder


def _make_readable(root: str | os.PathLike[str]) -> None:
    """Make every folder and file under ``root`` readable by the sandbox's user (links left alone)."""
    for directory, _, files in os.walk(root):
        os.chmod(directory, 0o755)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444)


def _pip(*arguments: str) -> None:
    command = [sys.executable, "-m", "pip", *arguments, "--disable-pip-version-check", "-q"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"pip {' '.join(arguments)} failed:\n{done.stderr[-3000:]}")


def _unpack(repository: Repository, folder: Path, report: Callable[[str], None]) -> Path:
    report(f"{repository.key}: downloading the sdist")
    archive = download_sdist(repository, swe_home() / "sdists")
    staging = folder.with_name(folder.name + ".unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    (top,) = staging.iterdir()
    shutil.rmtree(folder, ignore_errors=True)
    top.rename(folder)
    shutil.rmtree(staging)
    return _mark(folder)


def _canonical(name: str) -> str:
    """A project name as the index compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def download_sdist(repository: Repository, downloads: Path) -> Path:
    """The repository's pinned sdist in ``downloads``, downloaded once: from the index's simple API (the file
    whose name is the project's and the version's, checked against the sha256 the index gives), else, when that
    fails (another index, no JSON API), with ``pip download``. pip prepares the sdist's metadata first, in a build
    environment it installs for each one (about 7 CPU-seconds an sdist); the file alone is all that is needed."""
    downloads.mkdir(parents=True, exist_ok=True)
    for archive in downloads.glob("*.tar.gz"):
        if _names_sdist(archive.name, repository):
            return archive
    try:
        return _download_from_index(repository, downloads, os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX)
    except (httpx.HTTPError, ValueError, KeyError):
        _pip("download", "--no-deps", "--no-binary", repository.name, "-d", str(downloads), repository.requirement)
        return next(archive for archive in downloads.glob("*.tar.gz") if _names_sdist(archive.name, repository))


def _names_sdist(filename: str, repository: Repository) -> bool:
    """Whether ``filename`` is the sdist of the repository's project at its version."""
    if not filename.endswith(".tar.gz"):
        return False
    project, _, version = filename[: -len(".tar.gz")].rpartition("-")
    return _canonical(project) == _canonical(repository.name) and version == repository.version


def _download_from_index(repository: Repository, downloads: Path, index: str) -> Path:
    url = f"{index.rstrip('/')}/{_canonical(repository.name)}/"
    with httpx.Client(follow_redirects=True, timeout=60) as client:
        listing = client.get(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        listing.raise_for_status()
        matches = [entry for entry in listing.json()["files"] if _names_sdist(entry["filename"], repository)]
        if not matches:
            raise ValueError(f"{url} lists no sdist of {repository.requirement}")
        entry = matches[0]
        response = client.get(httpx.URL(url).join(entry["url"]))
        response.raise_for_status()
    if hashlib.sha256(response.content).hexdigest() != entry["hashes"]["sha256"]:
        raise ValueError(f"{entry['filename']} from {url} does not match the index's sha256")
    archive = downloads / entry["filename"]
    partial = archive.with_name(f".{archive.name}.{os.getpid()}")
    partial.write_bytes(response.content)
    os.replace(partial, archive)
    return archive


def _build_venv(repository: Repository, folder: Path, report: Callable[[str], None]) -> Path:
    report(f"{repository.key}: building its venv (pytest{''.join(', ' + name for name in repository.requires)})")
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    python = folder / "bin" / "python"
    _pip("--python", str(python), "install", "--no-compile", "pytest", *repository.requires)
    purelib = venv_purelib(python)
    shutil.copyfile(PLUGIN, Path(purelib) / PLUGIN.name)
    return _mark(folder, _venv_marker(repository))
