"""Side virtual environments for frameworks that cannot share this environment's packages.

Some frameworks pin versions this environment cannot take (verl 0.9.1 requires
``transformers<5.11`` and hydra's ``omegaconf<2.4``; OpenRLHF 0.11.2 requires flash-attn and
deepspeed, CUDA builds; their full installs pull CUDA torch builds). Their agent-facing
modules still run on CPU with a handful of packages. A side venv, listed in ``venvs.yaml``
next to this file, holds exactly those packages (installed with ``--no-deps``); a ``.pth``
file then adds this environment's site-packages *after* its own, so its pinned packages win
and torch, numpy, ray and agentgym itself (editable or not) come from here: nothing large is
downloaded again.

    python -m agentgym.integrations.venvs verl       # makes it once, prints its python
    python -m agentgym.integrations.venvs openrlhf

The venv lives in ``$AGENTGYM_CACHE/venvs/<name>-<hash of its packages>`` (default cache
``~/.cache/agentgym``), so a changed package list makes a new one.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import subprocess
import sys
import sysconfig
import venv
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from agentgym.utils.files import cache_root

SPECS = Path(__file__).with_name("venvs.yaml")


@cache
def specs() -> dict[str, dict[str, Any]]:
    """The side venvs known: name -> ``{"check": module to import, "packages": [requirement, ...]}``."""
    return yaml.safe_load(SPECS.read_text(encoding="utf-8"))


def spec(name: str) -> dict[str, Any]:
    try:
        return specs()[name]
    except KeyError:
        raise KeyError(f"no side venv {name!r}; known: {', '.join(sorted(specs()))} ({SPECS})") from None


def default_path(name: str) -> Path:
    """``$AGENTGYM_CACHE/venvs/<name>-<hash>``: the hash covers the packages and this Python's version."""
    packages = spec(name)["packages"]
    key = "\n".join([sys.version, sysconfig.get_paths()["purelib"], *packages]).encode()
    return cache_root() / "venvs" / f"{name}-{hashlib.sha256(key).hexdigest()[:12]}"


def venv_python(path: Path) -> Path:
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure(name: str, path: Path | None = None) -> Path:
    """Make the side venv ``name`` (once; later calls reuse it) and return its python.

    Safe from several processes at once (a file lock); a venv whose making stopped half-way
    is made again. Raises ``subprocess.CalledProcessError`` when pip or the import check fails.
    """
    entry = spec(name)
    path = path or default_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    python, ready = venv_python(path), path / ".agentgym-ready"
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists() and python.exists():
            return python
        venv.EnvBuilder(clear=True, with_pip=False).create(path)
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        here = sysconfig.get_paths()["purelib"]
        # addsitedir runs here's own .pth files too (editable installs such as agentgym's).
        Path(purelib, "agentgym-parent-env.pth").write_text(f"import site; site.addsitedir({here!r})\n")
        install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps"]
        subprocess.run([*install, *entry["packages"]], check=True)
        subprocess.run([python, "-c", f"import {entry['check']}"], check=True)
        ready.write_text("\n".join(entry["packages"]) + "\n")
    return python


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=sorted(specs()))
    print(ensure(parser.parse_args(argv).name))


if __name__ == "__main__":
    main()
